#include "worker/protected_modules/plugin_library_cache.h"

namespace agileos::worker::protected_modules {

std::shared_ptr<const agileos::modules::PluginLibrary> PluginLibraryCache::open(const std::string& path,
                                                                                std::string* error) {
  std::lock_guard lock(mutex_);
  if (auto it = libraries_.find(path); it != libraries_.end()) return it->second;
  auto library = agileos::modules::PluginLibrary::open(path, error);
  if (library) libraries_.emplace(path, library);
  return library;
}

}  // namespace agileos::worker::protected_modules
