#include "modules/host/plugin_library.h"

#include <dlfcn.h>

namespace agileos::modules {
namespace {

// dlerror() text, or a fallback when the loader left none.
std::string loaderError() {
  const char* text = dlerror();
  return text != nullptr ? std::string(text) : std::string("unknown loader error");
}

// Resolves `name` as a T; null with *problem set if the library does not export it.
template <typename T>
T resolve(void* handle, const char* name, std::string* problem) {
  dlerror();  // clear any earlier error
  void* symbol = dlsym(handle, name);
  if (symbol == nullptr) {
    *problem = std::string("it does not export ") + name;
    return nullptr;
  }
  return reinterpret_cast<T>(symbol);
}

}  // namespace

std::shared_ptr<const PluginLibrary> PluginLibrary::open(const std::string& path, std::string* error) {
  auto refuse = [&](const std::string& problem) {
    *error = "module plugin '" + path + "' refused: " + problem;
    return nullptr;
  };
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return refuse("dlopen failed: " + loaderError());
  // From here the handle is owned by `library`, whose destructor closes it on every refusal.
  std::shared_ptr<PluginLibrary> library(new PluginLibrary(path, handle));

  std::string problem;
  auto abi_version = resolve<agileos_host_module_abi_version_fn>(handle, "host_module_abi_version", &problem);
  auto commands = resolve<agileos_host_module_commands_fn>(handle, "host_module_commands", &problem);
  library->init_ = resolve<agileos_host_init_module_fn>(handle, "host_init_module", &problem);
  library->control_ = resolve<agileos_host_module_control_fn>(handle, "host_module_control", &problem);
  library->cleanup_ = resolve<agileos_host_cleanup_module_fn>(handle, "host_cleanup_module", &problem);
  if (!problem.empty()) return refuse(problem);
  // Optional: a plugin that never registers DMA need not export it.
  dlerror();
  library->dma_revoked_ =
      reinterpret_cast<agileos_host_module_dma_revoked_fn>(dlsym(handle, "host_module_dma_revoked"));

  const std::uint32_t version = abi_version();
  if (version != AGILEOS_MODULE_ABI_VERSION) {
    return refuse("it was built for module ABI version " + std::to_string(version) +
                  ", this worker supports " + std::to_string(AGILEOS_MODULE_ABI_VERSION));
  }

  std::uint32_t count = 0;
  const agileos_module_command* table = commands(&count);
  auto copied = copyCommandTable(table, count, &problem);
  if (!copied) return refuse(problem);
  library->commands_ = std::move(*copied);
  return library;
}

PluginLibrary::~PluginLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

const CommandSpec* PluginLibrary::findCommand(std::uint32_t id) const {
  return modules::findCommand(commands_, id);
}

}  // namespace agileos::modules
