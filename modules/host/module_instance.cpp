#include "modules/host/module_instance.h"

#include <cstring>
#include <new>

namespace agileos::modules {
namespace {

// Longest plugin log line passed on; the rest is cut (the plugin's string is read no further).
constexpr std::size_t kMaxLogLine = 4096;

std::string describeSize(std::uint64_t bytes) { return std::to_string(bytes) + " bytes"; }

}  // namespace

ModuleInstance::ModuleInstance(std::shared_ptr<const PluginLibrary> library, ModuleInstanceConfig config,
                               ProtectedMemory& memory)
    : library_(std::move(library)),
      config_(std::move(config)),
      allocations_(memory, config_.protected_limit_bytes) {
  api_.host = this;
  api_.alloc_protected = &ModuleInstance::hostAlloc;
  api_.free_protected = &ModuleInstance::hostFree;
  api_.write_protected = &ModuleInstance::hostWrite;
  api_.read_protected = &ModuleInstance::hostRead;
  api_.service_fd = &ModuleInstance::hostServiceFd;
  api_.log = &ModuleInstance::hostLog;
}

std::unique_ptr<ModuleInstance> ModuleInstance::create(std::shared_ptr<const PluginLibrary> library,
                                                       ModuleInstanceConfig config, ProtectedMemory& memory,
                                                       std::string* error) {
  std::unique_ptr<ModuleInstance> instance(new ModuleInstance(std::move(library), std::move(config), memory));
  std::lock_guard lock(instance->mutex_);
  const ModuleInstanceConfig& c = instance->config_;
  agileos_module_init_context context{};
  context.abi_version = AGILEOS_MODULE_ABI_VERSION;
  context.module_name = c.module_name.c_str();
  context.module_version = c.module_version.c_str();
  context.client_id = c.client_id;
  context.host = &instance->api_;
  context.config_json = c.config_json.c_str();
  int rc;
  {
    ActiveCall active(*instance);
    rc = instance->library_->initModule()(&context, &instance->plugin_instance_);
  }
  if (rc != AGILEOS_MODULE_OK) {
    *error = "module '" + c.module_name + "' (" + instance->library_->path() +
             "): host_init_module for client " + std::to_string(c.client_id) + " failed with code " +
             std::to_string(rc);
    // No cleanup call: init failed, so there is no instance. Its memory is revoked all the same.
    instance->revokeLocked();
    instance->shut_down_ = true;
    return nullptr;
  }
  instance->live_ = true;
  return instance;
}

ModuleInstance::~ModuleInstance() { shutdown(); }

int ModuleInstance::control(std::uint32_t command, std::string_view request, std::string* response,
                            std::string* error) {
  response->clear();
  const CommandSpec* spec = library_->findCommand(command);
  if (spec == nullptr) {
    *error = "module '" + config_.module_name + "' has no command " + std::to_string(command);
    return AGILEOS_MODULE_ENOTSUP;
  }
  if (request.size() < spec->min_request_bytes || request.size() > spec->max_request_bytes) {
    *error = "module '" + config_.module_name + "' command '" + spec->name + "' takes " +
             describeSize(spec->min_request_bytes) + " to " + describeSize(spec->max_request_bytes) +
             " of request, not " + describeSize(request.size());
    return AGILEOS_MODULE_EINVAL;
  }

  std::lock_guard lock(mutex_);
  if (!live_) {
    *error = "module '" + config_.module_name + "' instance for client " + std::to_string(config_.client_id) +
             " is shut down";
    return AGILEOS_MODULE_EPERM;
  }
  // The worker-owned copies: the request is copied once here, so the plugin reads bytes the
  // client can no longer change; the response buffer is private until its size is checked.
  try {
    request_buffer_.assign(request.begin(), request.end());
    if (response_buffer_.size() < spec->max_response_bytes) response_buffer_.resize(spec->max_response_bytes);
  } catch (const std::bad_alloc&) {
    *error = "module '" + config_.module_name + "': no memory for the request and response buffers";
    return AGILEOS_MODULE_ENOMEM;
  }
  const std::uint64_t capacity = spec->max_response_bytes;
  std::uint64_t response_bytes = 0;
  int rc;
  {
    ActiveCall active(*this);
    rc = library_->control()(
        plugin_instance_, command, request_buffer_.empty() ? nullptr : request_buffer_.data(),
        request_buffer_.size(), capacity == 0 ? nullptr : response_buffer_.data(), capacity, &response_bytes);
  }
  if (rc != AGILEOS_MODULE_OK) {
    *error = "module '" + config_.module_name + "' command '" + spec->name + "' failed with code " +
             std::to_string(rc);
    return rc < 0 ? rc : AGILEOS_MODULE_EIO;
  }
  if (response_bytes > capacity) {
    *error = "module '" + config_.module_name + "' command '" + spec->name + "' reported a response of " +
             describeSize(response_bytes) + ", more than its buffer of " + describeSize(capacity) +
             "; response discarded";
    return AGILEOS_MODULE_ERANGE;
  }
  response->assign(reinterpret_cast<const char*>(response_buffer_.data()), response_bytes);
  return AGILEOS_MODULE_OK;
}

RevocationReport ModuleInstance::shutdown() {
  std::lock_guard lock(mutex_);
  if (shut_down_) return {};
  shut_down_ = true;
  if (live_) {
    live_ = false;
    ActiveCall active(*this);
    library_->cleanupModule()(plugin_instance_);
  }
  return revokeLocked();
}

RevocationReport ModuleInstance::revokeLocked() {
  const RevocationReport report = allocations_.revokeAll();
  if (report.allocations != 0) {
    log(AGILEOS_MODULE_LOG_WARN, "module '" + config_.module_name + "' instance for client " +
                                     std::to_string(config_.client_id) + ": revoked " +
                                     std::to_string(report.allocations) + " protected allocation(s), " +
                                     describeSize(report.bytes) + ", the plugin left");
  }
  return report;
}

void ModuleInstance::log(int level, std::string_view message) const {
  if (!config_.log) return;
  try {
    config_.log(level, message);
  } catch (...) {
    // A log line is never worth a failed call or a terminate() in a destructor.
  }
}

ModuleInstance* ModuleInstance::activeOn(void* host) {
  auto* instance = static_cast<ModuleInstance*>(host);
  if (instance == nullptr || instance->active_thread_.load() != std::this_thread::get_id()) return nullptr;
  return instance;
}

// Every callback is entered from plugin (C) frames, so no exception may leave it: a failure
// of the worker's side (bad_alloc in the bookkeeping, a throwing log sink) becomes a code.
template <typename Body>
int ModuleInstance::guarded(void* host, Body body) noexcept {
  ModuleInstance* instance = activeOn(host);
  if (instance == nullptr) return AGILEOS_MODULE_EPERM;
  try {
    return body(*instance);
  } catch (const std::bad_alloc&) {
    return AGILEOS_MODULE_ENOMEM;
  } catch (...) {
    return AGILEOS_MODULE_EIO;
  }
}

int ModuleInstance::hostAlloc(void* host, std::uint64_t bytes, std::uint64_t* device_address) {
  return guarded(host,
                 [&](ModuleInstance& self) { return self.allocations_.allocate(bytes, device_address); });
}

int ModuleInstance::hostFree(void* host, std::uint64_t device_address) {
  return guarded(host, [&](ModuleInstance& self) { return self.allocations_.free(device_address); });
}

int ModuleInstance::hostWrite(void* host, std::uint64_t device_address, const void* src,
                              std::uint64_t bytes) {
  return guarded(host,
                 [&](ModuleInstance& self) { return self.allocations_.write(device_address, src, bytes); });
}

int ModuleInstance::hostRead(void* host, std::uint64_t device_address, void* dst, std::uint64_t bytes) {
  return guarded(host,
                 [&](ModuleInstance& self) { return self.allocations_.read(device_address, dst, bytes); });
}

int ModuleInstance::hostServiceFd(void* host) {
  const int fd = guarded(
      host, [](ModuleInstance& self) { return self.config_.service_fd ? self.config_.service_fd() : -1; });
  return fd >= 0 ? fd : -1;
}

void ModuleInstance::hostLog(void* host, int level, const char* message) {
  if (message == nullptr) return;
  guarded(host, [&](ModuleInstance& self) {
    self.log(level, std::string_view(message, strnlen(message, kMaxLogLine)));
    return 0;
  });
}

}  // namespace agileos::modules
