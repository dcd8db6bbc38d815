#include "worker/modules/module_set.h"

#include <spdlog/spdlog.h>

#include <set>

#include "modules/host/teardown.h"

namespace agileos::worker::modules {
namespace {

using agileos::modules::ModuleInstance;
using agileos::modules::ModuleInstanceConfig;

spdlog::level::level_enum toSpdlogLevel(int level) {
  switch (level) {
    case AGILEOS_MODULE_LOG_DEBUG:
      return spdlog::level::debug;
    case AGILEOS_MODULE_LOG_INFO:
      return spdlog::level::info;
    case AGILEOS_MODULE_LOG_WARN:
      return spdlog::level::warn;
    default:
      return spdlog::level::err;
  }
}

}  // namespace

std::unique_ptr<ModuleSet> ModuleSet::create(memmgr::ClientId client,
                                             const std::vector<AdmittedModule>& admitted,
                                             PluginLibraryCache& libraries, memmgr::MemoryManager& memory,
                                             GpuBackend& gpu, std::string* error) {
  std::unique_ptr<ModuleSet> set(new ModuleSet(memory, gpu, client));
  std::set<std::string_view> names;
  for (const AdmittedModule& module : admitted) {
    if (module.name.empty() || !names.insert(module.name).second) {
      *error = module.name.empty() ? "an admitted module has no name"
                                   : "module '" + module.name + "' is admitted twice";
      return nullptr;  // ~ModuleSet tears down what was made, in reverse order
    }
    if (!module.hostLibraryPath.empty() && !set->addInstance(module, libraries, error)) return nullptr;
    if (!module.ptxPath.empty()) set->deviceCode_.push_back({module.name, module.version, module.ptxPath});
    if (module.hostLibraryPath.empty() && module.ptxPath.empty()) {
      spdlog::warn("client {}: module '{}' has neither device code nor a host library; nothing to load",
                   client, module.name);
    }
  }
  return set;
}

bool ModuleSet::addInstance(const AdmittedModule& module, PluginLibraryCache& libraries, std::string* error) {
  std::string problem;
  auto library = libraries.open(module.hostLibraryPath, &problem);
  if (!library) {
    *error = "module '" + module.name + "' " + module.version + ": " + problem;
    return false;
  }
  ModuleInstanceConfig config;
  config.module_name = module.name;
  config.module_version = module.version;
  config.client_id = client_;
  config.config_json = "{}";
  // Services come later: until the worker connects a module's service, the plugin sees none.
  config.service_fd = [] { return -1; };
  if (!module.service.empty()) {
    spdlog::warn("client {}: module '{}' uses service '{}', which the worker does not connect yet", client_,
                 module.name, module.service);
  }
  config.log = [name = module.name, client = client_](int level, std::string_view message) {
    spdlog::log(toSpdlogLevel(level), "module '{}' (client {}): {}", name, client, message);
  };
  auto instance = ModuleInstance::create(std::move(library), std::move(config), memory_, &problem);
  if (!instance) {
    *error = std::move(problem);
    return false;
  }
  instances_.push_back(std::move(instance));
  return true;
}

ModuleInstance* ModuleSet::find(std::string_view name) const {
  for (const auto& instance : instances_) {
    if (instance->moduleName() == name) return instance.get();
  }
  return nullptr;
}

void ModuleSet::tearDown() { agileos::modules::tearDownInOrder(instances_); }

}  // namespace agileos::worker::modules
