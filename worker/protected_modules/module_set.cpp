#include "worker/protected_modules/module_set.h"

#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "modules/host/teardown.h"
#include "ptx/parser.h"

namespace agileos::worker::protected_modules {
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

// How long a worker waits for a module's service to accept (a service being restarted by the
// daemon comes back within its backoff).
constexpr auto kServiceConnectTimeout = std::chrono::seconds(5);

// A connected SOCK_SEQPACKET socket to the service at `path`, or -1 with *error set.
int connectService(const std::string& path, std::string* error) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof address.sun_path) {
    *error = "service socket path '" + path + "' is unusable";
    return -1;
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const auto deadline = std::chrono::steady_clock::now() + kServiceConnectTimeout;
  for (;;) {
    const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      *error = std::string("socket: ") + std::strerror(errno);
      return -1;
    }
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0) return fd;
    const int failure = errno;
    ::close(fd);
    if (std::chrono::steady_clock::now() >= deadline) {
      *error = "cannot connect to its service at " + path + ": " + std::strerror(failure);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

ModuleSet::~ModuleSet() {
  tearDown();
  for (int fd : serviceSockets_) ::close(fd);
}

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
    if (!module.ptxPath.empty() && !set->addDeviceCode(module, error)) return nullptr;
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
  // The service: one connection per instance, made before the plugin's init (which may use
  // it), owned by the set and closed after every instance is gone.
  int serviceFd = -1;
  if (!module.service.empty()) {
    serviceFd = connectService(module.service, &problem);
    if (serviceFd < 0) {
      *error = "module '" + module.name + "' " + module.version + ": " + problem;
      return false;
    }
    serviceSockets_.push_back(serviceFd);
  }
  config.service_fd = [serviceFd] { return serviceFd; };
  config.log = [name = module.name, client = client_](int level, std::string_view message) {
    spdlog::log(toSpdlogLevel(level), "module '{}' (client {}): {}", name, client, message);
  };
  auto instance =
      ModuleInstance::create(std::move(library), std::move(config), memory_, &problem, &resources_);
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

bool ModuleSet::addDeviceCode(const AdmittedModule& module, std::string* error) {
  std::ifstream file(module.ptxPath, std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  if (!file.good() && !file.eof()) {
    *error = "module '" + module.name + "' " + module.version + ": cannot read its PTX " + module.ptxPath;
    return false;
  }
  const ptx::ParseResult parsed = ptx::parse(text.str());
  if (!parsed.ok) {
    *error = "module '" + module.name + "' " + module.version + ": its PTX " + module.ptxPath +
             " does not parse: " + parsed.error;
    return false;
  }
  const std::vector<ptx::DeviceModule> earlier = deviceModulesForLinking();
  // Constants are published by the plugin's init, which ran before (instances are made first):
  // a module whose code needs a constant its plugin did not publish is refused here, not at the
  // client's first kernel load.
  ptx::DeviceModule candidate{module.name, parsed.module, {}};
  if (const auto* instance = find(module.name)) candidate.constants = instance->deviceConstants();
  if (std::string problem = ptx::checkDeviceModule(candidate, earlier); !problem.empty()) {
    *error = "module '" + module.name + "' " + module.version + ": its PTX is refused: " + problem;
    return false;
  }
  deviceCode_.push_back({module.name, module.version, module.ptxPath, parsed.module});
  return true;
}

std::vector<ptx::DeviceModule> ModuleSet::deviceModulesForLinking() const {
  std::vector<ptx::DeviceModule> linked;
  linked.reserve(deviceCode_.size());
  for (const DeviceCodeModule& code : deviceCode_) {
    ptx::DeviceModule device{code.name, code.code, {}};
    if (const auto* instance = find(code.name)) device.constants = instance->deviceConstants();
    linked.push_back(std::move(device));
  }
  return linked;
}

void ModuleSet::revokeDmaFor(std::uint64_t device_address) const {
  for (const auto& instance : instances_) instance->revokeDmaFor(device_address);
}

void ModuleSet::revokeAllDma() const {
  for (const auto& instance : instances_) instance->revokeAllDma();
}

void ModuleSet::tearDown() { agileos::modules::tearDownInOrder(instances_); }

}  // namespace agileos::worker::protected_modules
