// The worker's opened plugin libraries, one per path, shared by the module instances of every
// client. A library stays open (and cached) for the worker's lifetime once it opened: the paths
// come from the daemon's module pool, so the set is small and bounded, and a plugin's
// process-wide state survives its clients coming and going. A library that fails to open is
// not cached; the next attach tries again.
//
// Thread-safe: open() may be called concurrently (attaches are serialized today, but nothing
// here relies on it). PluginLibrary is immutable after open, so sharing it needs no lock.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "modules/host/plugin_library.h"

namespace agileos::worker::protected_modules {

class PluginLibraryCache {
 public:
  // The library at `path`, opened now or earlier. Null with *error set if it cannot be opened.
  std::shared_ptr<const agileos::modules::PluginLibrary> open(const std::string& path, std::string* error);

 private:
  std::mutex mutex_;  // guards libraries_; held across dlopen so a path is opened once
  std::map<std::string, std::shared_ptr<const agileos::modules::PluginLibrary>> libraries_;
};

}  // namespace agileos::worker::protected_modules
