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
                               ProtectedMemory& memory, HostResources* resources)
    : library_(std::move(library)),
      config_(std::move(config)),
      allocations_(memory, config_.protected_limit_bytes),
      resources_(resources) {
  api_.host = this;
  api_.alloc_protected = &ModuleInstance::hostAlloc;
  api_.free_protected = &ModuleInstance::hostFree;
  api_.write_protected = &ModuleInstance::hostWrite;
  api_.read_protected = &ModuleInstance::hostRead;
  api_.service_fd = &ModuleInstance::hostServiceFd;
  api_.log = &ModuleInstance::hostLog;
  api_.export_protected = &ModuleInstance::hostExportProtected;
  api_.map_io = &ModuleInstance::hostMapIo;
  api_.unmap_io = &ModuleInstance::hostUnmapIo;
  api_.register_dma = &ModuleInstance::hostRegisterDma;
  api_.unregister_dma = &ModuleInstance::hostUnregisterDma;
  api_.publish_device_constant = &ModuleInstance::hostPublishConstant;
  api_.export_dma = &ModuleInstance::hostExportDma;
}

std::unique_ptr<ModuleInstance> ModuleInstance::create(std::shared_ptr<const PluginLibrary> library,
                                                       ModuleInstanceConfig config, ProtectedMemory& memory,
                                                       std::string* error, HostResources* resources) {
  std::unique_ptr<ModuleInstance> instance(
      new ModuleInstance(std::move(library), std::move(config), memory, resources));
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
    // No cleanup call: init failed, so there is no instance. Its resources are revoked all the same.
    instance->releaseIoAndDmaLocked();
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
  releaseIoAndDmaLocked();
  return revokeLocked();
}

void ModuleInstance::releaseIoAndDmaLocked() {
  const std::string who =
      "module '" + config_.module_name + "' instance for client " + std::to_string(config_.client_id);
  if (!dma_.empty()) {
    log(AGILEOS_MODULE_LOG_INFO, who + ": revoked " + std::to_string(dma_.size()) + " DMA registration(s)");
    dma_.clear();
  }
  if (!io_mappings_.empty()) {
    log(AGILEOS_MODULE_LOG_INFO,
        who + ": unmapped " + std::to_string(io_mappings_.size()) + " I/O mapping(s)");
    for (const auto& [address, bytes] : io_mappings_) {
      if (resources_ != nullptr && resources_->unmapIo(address) != AGILEOS_MODULE_OK) {
        log(AGILEOS_MODULE_LOG_ERROR, who + ": an I/O mapping could not be unmapped; kept out of use");
      }
    }
    io_mappings_.clear();
  }
}

std::map<std::string, std::uint64_t> ModuleInstance::deviceConstants() const {
  std::lock_guard lock(constants_mutex_);
  return constants_;
}

std::size_t ModuleInstance::revokeDmaFor(std::uint64_t device_address) {
  return revokeDmaWhere([device_address](std::uint64_t address) { return address == device_address; });
}

std::size_t ModuleInstance::revokeAllDma() {
  return revokeDmaWhere([](std::uint64_t) { return true; });
}

std::size_t ModuleInstance::revokeDmaWhere(const std::function<bool(std::uint64_t)>& matches) {
  std::lock_guard lock(mutex_);
  std::size_t revoked = 0;
  for (auto it = dma_.begin(); it != dma_.end();) {
    if (!matches(it->second.address)) {
      ++it;
      continue;
    }
    const std::uint64_t id = it->first;
    it = dma_.erase(it);
    ++revoked;
    if (live_ && library_->dmaRevoked() != nullptr) {
      ActiveCall active(*this);
      library_->dmaRevoked()(plugin_instance_, id);
    }
  }
  if (revoked != 0) {
    log(AGILEOS_MODULE_LOG_INFO, "module '" + config_.module_name + "' instance for client " +
                                     std::to_string(config_.client_id) + ": revoked " +
                                     std::to_string(revoked) + " DMA registration(s) of freed memory");
  }
  return revoked;
}

std::size_t ModuleInstance::liveIoMappings() const {
  std::lock_guard lock(mutex_);
  return io_mappings_.size();
}

std::size_t ModuleInstance::liveDmaRegistrations() const {
  std::lock_guard lock(mutex_);
  return dma_.size();
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

int ModuleInstance::hostExportProtected(void* host, std::uint64_t device_address, int* fd) {
  return guarded(host, [&](ModuleInstance& self) {
    if (fd == nullptr) return AGILEOS_MODULE_EINVAL;
    if (self.resources_ == nullptr) return AGILEOS_MODULE_ENOTSUP;
    if (!self.allocations_.ownsStart(device_address)) return AGILEOS_MODULE_EPERM;
    return self.resources_->exportProtected(device_address, fd);
  });
}

int ModuleInstance::hostMapIo(void* host, int fd, std::uint64_t offset, std::uint64_t bytes,
                              std::uint32_t flags, std::uint64_t* address) {
  return guarded(host, [&](ModuleInstance& self) {
    if (address == nullptr || fd < 0 || bytes == 0 || (flags & ~AGILEOS_MODULE_IO_DEVICE_MEMORY) != 0) {
      return AGILEOS_MODULE_EINVAL;
    }
    if (self.resources_ == nullptr) return AGILEOS_MODULE_ENOTSUP;
    std::uint64_t mapped = 0;
    const int rc =
        self.resources_->mapIo(fd, offset, bytes, (flags & AGILEOS_MODULE_IO_DEVICE_MEMORY) != 0, &mapped);
    if (rc != AGILEOS_MODULE_OK) return rc;
    self.io_mappings_.emplace(mapped, bytes);
    *address = mapped;
    return AGILEOS_MODULE_OK;
  });
}

int ModuleInstance::hostUnmapIo(void* host, std::uint64_t address) {
  return guarded(host, [&](ModuleInstance& self) {
    if (self.resources_ == nullptr) return AGILEOS_MODULE_ENOTSUP;
    auto it = self.io_mappings_.find(address);
    if (it == self.io_mappings_.end()) return AGILEOS_MODULE_EPERM;
    self.io_mappings_.erase(it);
    return self.resources_->unmapIo(address);
  });
}

int ModuleInstance::hostRegisterDma(void* host, std::uint64_t device_address, std::uint64_t bytes,
                                    std::uint64_t* registration) {
  return guarded(host, [&](ModuleInstance& self) {
    if (registration == nullptr || bytes == 0) return AGILEOS_MODULE_EINVAL;
    if (self.resources_ == nullptr) return AGILEOS_MODULE_ENOTSUP;
    if (const int rc = self.resources_->checkExactUserAllocation(device_address, bytes);
        rc != AGILEOS_MODULE_OK) {
      return rc;
    }
    const std::uint64_t id = self.next_dma_id_++;
    self.dma_.emplace(id, DmaRegistration{device_address, bytes});
    *registration = id;
    return AGILEOS_MODULE_OK;
  });
}

int ModuleInstance::hostUnregisterDma(void* host, std::uint64_t registration) {
  return guarded(host, [&](ModuleInstance& self) {
    if (self.resources_ == nullptr) return AGILEOS_MODULE_ENOTSUP;
    return self.dma_.erase(registration) != 0 ? AGILEOS_MODULE_OK : AGILEOS_MODULE_EPERM;
  });
}

int ModuleInstance::hostExportDma(void* host, std::uint64_t registration, int* fd,
                                  std::uint64_t* handle_bytes, std::uint64_t* offset) {
  return guarded(host, [&](ModuleInstance& self) {
    if (fd == nullptr || handle_bytes == nullptr || offset == nullptr) return AGILEOS_MODULE_EINVAL;
    if (self.resources_ == nullptr) return AGILEOS_MODULE_ENOTSUP;
    auto it = self.dma_.find(registration);
    if (it == self.dma_.end()) return AGILEOS_MODULE_EPERM;
    // The registration is live, so its range is still exactly one allocation of the client: a
    // free revokes the registration before the memory goes (revokeDmaFor).
    return self.resources_->exportUserAllocation(it->second.address, it->second.bytes, fd, handle_bytes,
                                                 offset);
  });
}

int ModuleInstance::hostPublishConstant(void* host, const char* name, std::uint64_t value) {
  return guarded(host, [&](ModuleInstance& self) {
    if (name == nullptr) return AGILEOS_MODULE_EINVAL;
    const std::size_t length = strnlen(name, AGILEOS_MODULE_MAX_CONSTANT_NAME + 1);
    if (length == 0 || length > AGILEOS_MODULE_MAX_CONSTANT_NAME) return AGILEOS_MODULE_EINVAL;
    for (std::size_t i = 0; i < length; ++i) {
      const char c = name[i];
      const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
      if (!ok) return AGILEOS_MODULE_EINVAL;
    }
    std::lock_guard lock(self.constants_mutex_);
    self.constants_[std::string(name, length)] = value;
    return AGILEOS_MODULE_OK;
  });
}

void ModuleInstance::hostLog(void* host, int level, const char* message) {
  if (message == nullptr) return;
  guarded(host, [&](ModuleInstance& self) {
    self.log(level, std::string_view(message, strnlen(message, kMaxLogLine)));
    return 0;
  });
}

}  // namespace agileos::modules
