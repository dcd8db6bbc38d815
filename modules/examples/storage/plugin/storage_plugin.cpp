// storage's host part: per client, a lease with the storage service. At init it maps a queue
// region (a memfd) into the I/O aperture, allocates the client's slot buffer in protected memory,
// hands both to the service (the buffer as an exported POSIX descriptor) and publishes their
// addresses to the module's device code. Host control opens and closes files through the
// service; cleanup ends the lease (the service stops touching the memory before it replies).
//
// Nothing the client receives is an address or a descriptor: file handles are the service's
// small integers, statistics are counts.
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <new>

#include "agileos/module_abi.h"
#include "agileos/storage.h"
#include "proto/services/storage_protocol.h"
#include "services/storage/storage_client.h"

namespace {

// A reply within this, or the service is considered gone (the call fails, the worker carries on).
constexpr int kServiceTimeoutMs = 10000;

struct StorageInstance {
  const agileos_module_host_api* host = nullptr;
  int service = -1;     // owned by the worker
  uint64_t queue = 0;   // I/O aperture address of the queue region
  uint64_t buffer = 0;  // protected slot buffer
  bool attached = false;
  std::map<uint32_t, uint64_t> targets;  // the service's buffer id -> the worker's DMA registration
};

const agileos_module_command kCommands[] = {
    {AGILEOS_STORAGE_CMD_OPEN, "open", 1, AGILEOS_STORAGE_MAX_PATH, sizeof(agileos_storage_opened)},
    {AGILEOS_STORAGE_CMD_CLOSE, "close", sizeof(uint32_t), sizeof(uint32_t), 0},
    {AGILEOS_STORAGE_CMD_STATS, "stats", 0, 0, sizeof(agileos_storage_stats)},
    {AGILEOS_STORAGE_CMD_REGISTER, "register", sizeof(agileos_storage_register),
     sizeof(agileos_storage_register), sizeof(uint32_t)},
    {AGILEOS_STORAGE_CMD_UNREGISTER, "unregister", sizeof(uint32_t), sizeof(uint32_t), 0},
};

agileos_storage_request request(uint32_t op) {
  agileos_storage_request r;
  std::memset(&r, 0, sizeof r);
  r.op = op;
  r.version = AGILEOS_STORAGE_PROTOCOL_VERSION;
  return r;
}

// A service status (0 or -errno) as a module code.
int toModuleCode(int status) {
  switch (status) {
    case 0:
      return AGILEOS_MODULE_OK;
    case -ENOMEM:
      return AGILEOS_MODULE_ENOMEM;
    case -EPERM:
    case -EACCES:
    case -ENOENT:
    case -EBADF:
    case -EINVAL:
    case -ENAMETOOLONG:
    case -ELOOP:
    case -EXDEV:
    case -EISDIR:
    case -EMFILE:
      return AGILEOS_MODULE_EINVAL;
    default:
      return AGILEOS_MODULE_EIO;
  }
}

void logLine(const StorageInstance& self, int level, const char* text) {
  self.host->log(self.host->host, level, text);
}

// Sets the lease up (see the file comment). On failure everything made is left to the worker's
// revocation (mapping, protected memory) and the descriptors made here are closed.
int attach(StorageInstance& self, uint64_t clientId) {
  const agileos_module_host_api& host = *self.host;
  agileos_storage_reply reply{};
  agileos_storage_request hello = request(AGILEOS_STORAGE_HELLO);
  int rc =
      agileos::services::storage::storageCall(self.service, hello, nullptr, 0, &reply, kServiceTimeoutMs);
  if (rc != 0 || reply.status != 0) return AGILEOS_MODULE_EIO;

  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t queueBytes = (AGILEOS_STORAGE_QUEUE_BYTES(AGILEOS_STORAGE_SLOTS) + page - 1) / page * page;
  const uint64_t bufferBytes = static_cast<uint64_t>(AGILEOS_STORAGE_SLOTS) * AGILEOS_STORAGE_SLOT_BYTES;
  // Sealable, so that the service can seal it against shrinking (a shrunk mapping would SIGBUS).
  const int queueFd = memfd_create("agileos-storage-queue", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (queueFd < 0) return AGILEOS_MODULE_ENOMEM;
  if (ftruncate(queueFd, static_cast<off_t>(queueBytes)) != 0) {
    close(queueFd);
    return AGILEOS_MODULE_ENOMEM;
  }
  rc = host.map_io(host.host, queueFd, 0, queueBytes, 0, &self.queue);
  if (rc == AGILEOS_MODULE_OK) {
    // The mapping's address is valid in this process too: the header goes in before the service
    // or the device sees the region. The rest is zero (a fresh memfd).
    agileos_storage_queue_header header;
    std::memset(&header, 0, sizeof header);
    header.magic = AGILEOS_STORAGE_QUEUE_MAGIC;
    header.version = AGILEOS_STORAGE_PROTOCOL_VERSION;
    header.slots = AGILEOS_STORAGE_SLOTS;
    header.slot_bytes = AGILEOS_STORAGE_SLOT_BYTES;
    std::memcpy(reinterpret_cast<void*>(self.queue), &header, sizeof header);
    rc = host.alloc_protected(host.host, bufferBytes, &self.buffer);
  }
  int bufferFd = -1;
  if (rc == AGILEOS_MODULE_OK) rc = host.export_protected(host.host, self.buffer, &bufferFd);
  if (rc == AGILEOS_MODULE_OK) {
    agileos_storage_request message = request(AGILEOS_STORAGE_ATTACH);
    message.client_id = clientId;
    message.queue_bytes = queueBytes;
    message.buffer_bytes = bufferBytes;
    const int fds[2] = {queueFd, bufferFd};
    rc = agileos::services::storage::storageCall(self.service, message, fds, 2, &reply, kServiceTimeoutMs);
    rc = rc != 0 ? AGILEOS_MODULE_EIO : toModuleCode(reply.status);
  }
  close(queueFd);  // the worker's mapping and the service hold their own references
  if (bufferFd >= 0) close(bufferFd);
  if (rc != AGILEOS_MODULE_OK) return rc;
  self.attached = true;
  const struct {
    const char* name;
    uint64_t value;
  } constants[] = {{"queue", self.queue},
                   {"buffer", self.buffer},
                   {"slots", AGILEOS_STORAGE_SLOTS},
                   {"slot_bytes", AGILEOS_STORAGE_SLOT_BYTES}};
  for (const auto& constant : constants) {
    rc = host.publish_device_constant(host.host, constant.name, constant.value);
    if (rc != AGILEOS_MODULE_OK) return rc;
  }
  return AGILEOS_MODULE_OK;
}

// Registers the client's allocation [address, address + bytes) as a read target: the worker
// checks it is exactly one live allocation of the client (register_dma) and exports its memory
// (export_dma), which the service imports. *target is the service's id for it.
int registerTarget(StorageInstance& self, const agileos_storage_register& range, uint32_t* target) {
  const agileos_module_host_api& host = *self.host;
  uint64_t registration = 0;
  int rc = host.register_dma(host.host, range.device_address, range.bytes, &registration);
  if (rc != AGILEOS_MODULE_OK) return rc;
  int fd = -1;
  uint64_t handleBytes = 0, offset = 0;
  rc = host.export_dma(host.host, registration, &fd, &handleBytes, &offset);
  if (rc == AGILEOS_MODULE_OK) {
    agileos_storage_request message = request(AGILEOS_STORAGE_REGISTER_BUFFER);
    message.handle_bytes = handleBytes;
    message.buffer_offset = offset;
    message.buffer_bytes = range.bytes;
    agileos_storage_reply reply{};
    rc = agileos::services::storage::storageCall(self.service, message, &fd, 1, &reply, kServiceTimeoutMs);
    rc = rc != 0 ? AGILEOS_MODULE_EIO : toModuleCode(reply.status);
    if (rc == AGILEOS_MODULE_OK) {
      self.targets[reply.buffer] = registration;
      *target = reply.buffer;
    }
    close(fd);
  }
  if (rc != AGILEOS_MODULE_OK) host.unregister_dma(host.host, registration);
  return rc;
}

// Ends the service's use of a target (it replies once no write to it is in flight).
int unregisterTarget(StorageInstance& self, uint32_t target) {
  auto it = self.targets.find(target);
  if (it == self.targets.end()) return AGILEOS_MODULE_EINVAL;
  agileos_storage_request message = request(AGILEOS_STORAGE_UNREGISTER_BUFFER);
  message.buffer = target;
  agileos_storage_reply reply{};
  const int rc =
      agileos::services::storage::storageCall(self.service, message, nullptr, 0, &reply, kServiceTimeoutMs);
  self.host->unregister_dma(self.host->host, it->second);
  self.targets.erase(it);
  return rc != 0 ? AGILEOS_MODULE_EIO : toModuleCode(reply.status);
}

void detach(StorageInstance& self) {
  if (!self.attached) return;
  agileos_storage_reply reply{};
  const int rc = agileos::services::storage::storageCall(self.service, request(AGILEOS_STORAGE_DETACH),
                                                         nullptr, 0, &reply, kServiceTimeoutMs);
  if (rc != 0 || reply.status != 0) {
    // The worker still revokes the memory; the service keeps its imported buffer alive until it
    // lets go, so nothing is reused under it.
    logLine(self, AGILEOS_MODULE_LOG_ERROR, "the storage service did not confirm the end of the lease");
  }
  self.attached = false;
}

}  // namespace

extern "C" {

AGILEOS_MODULE_EXPORT uint32_t host_module_abi_version(void) { return AGILEOS_MODULE_ABI_VERSION; }

AGILEOS_MODULE_EXPORT const agileos_module_command* host_module_commands(uint32_t* count) {
  *count = static_cast<uint32_t>(sizeof kCommands / sizeof kCommands[0]);
  return kCommands;
}

AGILEOS_MODULE_EXPORT int host_init_module(const agileos_module_init_context* context, void** instance) {
  auto* self = new (std::nothrow) StorageInstance;
  if (self == nullptr) return AGILEOS_MODULE_ENOMEM;
  self->host = context->host;
  self->service = self->host->service_fd(self->host->host);
  if (self->service < 0) {
    logLine(*self, AGILEOS_MODULE_LOG_ERROR, "the storage module needs its service, and has none");
    delete self;
    return AGILEOS_MODULE_EIO;
  }
  const int rc = attach(*self, context->client_id);
  if (rc != AGILEOS_MODULE_OK) {
    detach(*self);
    delete self;
    return rc;
  }
  *instance = self;
  return AGILEOS_MODULE_OK;
}

AGILEOS_MODULE_EXPORT int host_module_control(void* instance, uint32_t command, const void* payload,
                                              uint64_t payload_bytes, void* response,
                                              uint64_t response_capacity, uint64_t* response_bytes) {
  auto& self = *static_cast<StorageInstance*>(instance);
  (void)response_capacity;  // sized by the worker from the command table
  *response_bytes = 0;
  agileos_storage_reply reply{};
  switch (command) {
    case AGILEOS_STORAGE_CMD_OPEN: {
      agileos_storage_request message = request(AGILEOS_STORAGE_OPEN);
      message.path_bytes = static_cast<uint32_t>(payload_bytes);  // 1..255, checked by the worker
      std::memcpy(message.path, payload, payload_bytes);
      if (agileos::services::storage::storageCall(self.service, message, nullptr, 0, &reply,
                                                  kServiceTimeoutMs) != 0) {
        return AGILEOS_MODULE_EIO;
      }
      if (reply.status != 0) return toModuleCode(reply.status);
      agileos_storage_opened opened{};
      opened.file = reply.file;
      opened.file_bytes = reply.file_bytes;
      std::memcpy(response, &opened, sizeof opened);
      *response_bytes = sizeof opened;
      return AGILEOS_MODULE_OK;
    }
    case AGILEOS_STORAGE_CMD_CLOSE: {
      agileos_storage_request message = request(AGILEOS_STORAGE_CLOSE);
      std::memcpy(&message.file, payload, sizeof message.file);
      if (agileos::services::storage::storageCall(self.service, message, nullptr, 0, &reply,
                                                  kServiceTimeoutMs) != 0) {
        return AGILEOS_MODULE_EIO;
      }
      return toModuleCode(reply.status);
    }
    case AGILEOS_STORAGE_CMD_STATS: {
      if (agileos::services::storage::storageCall(self.service, request(AGILEOS_STORAGE_STATS), nullptr, 0,
                                                  &reply, kServiceTimeoutMs) != 0) {
        return AGILEOS_MODULE_EIO;
      }
      if (reply.status != 0) return toModuleCode(reply.status);
      agileos_storage_stats stats{reply.active_leases, reply.leases_served, reply.reads_completed,
                                  reply.leases_revoked};
      std::memcpy(response, &stats, sizeof stats);
      *response_bytes = sizeof stats;
      return AGILEOS_MODULE_OK;
    }
    case AGILEOS_STORAGE_CMD_REGISTER: {
      agileos_storage_register range;
      std::memcpy(&range, payload, sizeof range);
      uint32_t target = 0;
      const int rc = registerTarget(self, range, &target);
      if (rc != AGILEOS_MODULE_OK) return rc;
      std::memcpy(response, &target, sizeof target);
      *response_bytes = sizeof target;
      return AGILEOS_MODULE_OK;
    }
    case AGILEOS_STORAGE_CMD_UNREGISTER: {
      uint32_t target = 0;
      std::memcpy(&target, payload, sizeof target);
      return unregisterTarget(self, target);
    }
    default:
      return AGILEOS_MODULE_ENOTSUP;
  }
}

// The client freed a registered allocation: the service must stop writing to it before the
// worker lets the memory go.
AGILEOS_MODULE_EXPORT void host_module_dma_revoked(void* instance, uint64_t registration) {
  auto& self = *static_cast<StorageInstance*>(instance);
  for (auto it = self.targets.begin(); it != self.targets.end(); ++it) {
    if (it->second != registration) continue;
    agileos_storage_request message = request(AGILEOS_STORAGE_UNREGISTER_BUFFER);
    message.buffer = it->first;
    agileos_storage_reply reply{};
    if (agileos::services::storage::storageCall(self.service, message, nullptr, 0, &reply,
                                                kServiceTimeoutMs) != 0 ||
        reply.status != 0) {
      logLine(self, AGILEOS_MODULE_LOG_ERROR,
              "the storage service did not confirm the end of a registration");
    }
    self.targets.erase(it);  // the worker dropped the registration itself
    return;
  }
}

AGILEOS_MODULE_EXPORT void host_cleanup_module(void* instance) {
  auto* self = static_cast<StorageInstance*>(instance);
  detach(*self);  // before the worker unmaps the queue and revokes the buffer
  delete self;
}

}  // extern "C"
