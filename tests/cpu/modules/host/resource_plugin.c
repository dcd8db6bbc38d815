/* A protected module plugin for the module host tests of the resource callbacks (export_protected,
 * map_io/unmap_io, register_dma/unregister_dma/export_dma, publish_device_constant and the optional
 * host_module_dma_revoked export). Each command calls one callback with arguments taken from the
 * request and answers with the callback's code and outputs, so a test can drive the host side
 * exactly. All integers are in host byte order; codes are int32.
 *
 * Commands (request -> response):
 *   1 publish     u64 value, then the name bytes (0..64, copied and NUL-terminated) -> code
 *   2 export      u64 alloc_bytes, u64 address: if alloc_bytes != 0, alloc_protected(alloc_bytes)
 *                 first and export (allocation + address), else export (address)
 *                 -> alloc code, export code, i64 size of the descriptor (fstat, -1 if none),
 *                    u64 allocation address. The descriptor is closed.
 *   3 map_io      u64 file_bytes, u64 offset, u64 bytes, u32 flags, u32 fd_mode: a fresh memfd of
 *                 file_bytes (fd_mode 1: fd -1 instead) is mapped with map_io and closed
 *                 -> code, u32 0, u64 address
 *   4 unmap_io    u64 address -> code
 *   5 register    u64 address, u64 bytes -> code, u32 0, u64 registration
 *   6 unregister  u64 registration -> code
 *   7 export_dma  u64 registration -> code, u32 0, u64 handle_bytes, u64 offset, i64 descriptor size
 *                 (fstat, -1 if none). The descriptor is closed.
 *   8 revoked     0 bytes -> u32 count, code of unregister_dma(id) called inside the last
 *                 host_module_dma_revoked, then count u64 ids (in call order)
 *   9 spawn       u32 which: calls callback `which` (1..7, as the commands above with fixed
 *                 arguments) from a thread of its own, joined before returning -> its code
 *  10 null_outs   0 bytes: export_protected, map_io, register_dma, export_dma with null output
 *                 pointers and publish_device_constant with a null name -> five codes
 *  11 free        u64 address -> code of free_protected
 * config_json "map_then_fail": host_init_module maps a 4096-byte memfd and then fails.
 * config_json "tidy": host_cleanup_module unmaps every mapping it made (and kept) itself.
 * Built with NO_DMA_REVOKED, the library does not export host_module_dma_revoked.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agileos/module_abi.h"

#define MAX_TRACKED 32

typedef struct resource_instance {
  const agileos_module_host_api* host;
  int tidy;
  uint64_t mapped[MAX_TRACKED]; /* addresses from map_io not yet unmapped by the plugin */
  uint32_t mapped_count;
  uint64_t revoked[MAX_TRACKED];
  uint32_t revoked_count;
  int32_t revoked_unregister_code;
} resource_instance;

static uint64_t g_revocations; /* host_module_dma_revoked calls, all instances */

static const agileos_module_command g_commands[] = {
    {1, "publish", 8, 8 + 64, 4}, {2, "export", 16, 16, 24},
    {3, "map_io", 32, 32, 16},    {4, "unmap_io", 8, 8, 4},
    {5, "register", 16, 16, 16},  {6, "unregister", 8, 8, 4},
    {7, "export_dma", 8, 8, 32},  {8, "revoked", 0, 0, 8 + 8 * MAX_TRACKED},
    {9, "spawn", 4, 4, 4},        {10, "null_outs", 0, 0, 20},
    {11, "free", 8, 8, 4},
};

AGILEOS_MODULE_EXPORT uint64_t resource_plugin_revocations(void) {
  return __atomic_load_n(&g_revocations, __ATOMIC_SEQ_CST);
}

uint32_t host_module_abi_version(void) { return AGILEOS_MODULE_ABI_VERSION; }

const agileos_module_command* host_module_commands(uint32_t* count) {
  *count = (uint32_t)(sizeof g_commands / sizeof g_commands[0]);
  return g_commands;
}

static uint64_t get_u64(const void* from, size_t offset) {
  uint64_t value;
  memcpy(&value, (const unsigned char*)from + offset, sizeof value);
  return value;
}
static uint32_t get_u32(const void* from, size_t offset) {
  uint32_t value;
  memcpy(&value, (const unsigned char*)from + offset, sizeof value);
  return value;
}
static void put_i32(void* to, size_t offset, int32_t value) {
  memcpy((unsigned char*)to + offset, &value, sizeof value);
}
static void put_u32(void* to, size_t offset, uint32_t value) {
  memcpy((unsigned char*)to + offset, &value, sizeof value);
}
static void put_u64(void* to, size_t offset, uint64_t value) {
  memcpy((unsigned char*)to + offset, &value, sizeof value);
}

/* The size of `fd` (closed here), or -1 when it is not an open descriptor. */
static int64_t size_and_close(int fd) {
  if (fd < 0) return -1;
  struct stat status;
  int64_t size = fstat(fd, &status) == 0 ? (int64_t)status.st_size : -1;
  close(fd);
  return size;
}

static void track_mapping(resource_instance* self, uint64_t address) {
  if (self->mapped_count < MAX_TRACKED) self->mapped[self->mapped_count++] = address;
}

static void untrack_mapping(resource_instance* self, uint64_t address) {
  for (uint32_t i = 0; i < self->mapped_count; ++i) {
    if (self->mapped[i] == address) {
      self->mapped[i] = self->mapped[--self->mapped_count];
      return;
    }
  }
}

/* map_io of a fresh memfd of file_bytes (fd_mode 1: of fd -1). */
static int map_memfd(resource_instance* self, uint64_t file_bytes, uint64_t offset, uint64_t bytes,
                     uint32_t flags, uint32_t fd_mode, uint64_t* address) {
  int fd = -1;
  if (fd_mode == 0) {
    fd = memfd_create("resource-plugin", MFD_CLOEXEC);
    if (fd < 0) return AGILEOS_MODULE_EIO;
    if (ftruncate(fd, (off_t)file_bytes) != 0) {
      close(fd);
      return AGILEOS_MODULE_EIO;
    }
  }
  int rc = self->host->map_io(self->host->host, fd, offset, bytes, flags, address);
  if (fd >= 0) close(fd); /* the host keeps its own reference */
  if (rc == AGILEOS_MODULE_OK) track_mapping(self, *address);
  return rc;
}

int host_init_module(const agileos_module_init_context* context, void** instance) {
  if (context->abi_version != AGILEOS_MODULE_ABI_VERSION) return AGILEOS_MODULE_ENOTSUP;
  resource_instance* self = calloc(1, sizeof *self);
  if (self == NULL) return AGILEOS_MODULE_ENOMEM;
  self->host = context->host;
  self->tidy = strcmp(context->config_json, "tidy") == 0;
  self->revoked_unregister_code = 1; /* no revocation yet */
  if (strcmp(context->config_json, "map_then_fail") == 0) {
    uint64_t address = 0;
    map_memfd(self, 4096, 0, 4096, 0, 0, &address);
    free(self);
    return AGILEOS_MODULE_EIO;
  }
  *instance = self;
  return AGILEOS_MODULE_OK;
}

typedef struct spawn_call {
  resource_instance* self;
  uint32_t which;
  int32_t code;
} spawn_call;

static void* spawned(void* argument) {
  spawn_call* call = argument;
  const agileos_module_host_api* api = call->self->host;
  void* h = api->host;
  uint64_t address = 0, registration = 0, handle_bytes = 0, offset = 0;
  int fd = -1;
  switch (call->which) {
    case 1:
      call->code = api->publish_device_constant(h, "from_thread", 1);
      break;
    case 2:
      call->code = api->export_protected(h, 0xF1000000000ull, &fd);
      break;
    case 3: {
      int memfd = memfd_create("resource-plugin-thread", MFD_CLOEXEC);
      if (memfd < 0 || ftruncate(memfd, 4096) != 0) {
        call->code = AGILEOS_MODULE_EIO;
      } else {
        call->code = api->map_io(h, memfd, 0, 4096, 0, &address);
      }
      if (memfd >= 0) close(memfd);
      break;
    }
    case 4:
      call->code = api->unmap_io(h, call->self->mapped_count > 0 ? call->self->mapped[0] : 0);
      break;
    case 5:
      call->code = api->register_dma(h, 0xF8000000000ull, 256, &registration);
      break;
    case 6:
      call->code = api->unregister_dma(h, 1);
      break;
    case 7:
      call->code = api->export_dma(h, 1, &fd, &handle_bytes, &offset);
      break;
    default:
      call->code = AGILEOS_MODULE_ENOTSUP;
  }
  if (fd >= 0) close(fd);
  return NULL;
}

static int control(resource_instance* self, uint32_t command, const void* request, uint64_t request_bytes,
                   void* response, uint64_t* response_bytes) {
  const agileos_module_host_api* api = self->host;
  void* h = api->host;
  switch (command) {
    case 1: {
      char name[64 + 1];
      uint64_t length = request_bytes - 8;
      memcpy(name, (const unsigned char*)request + 8, length);
      name[length] = '\0';
      put_i32(response, 0, api->publish_device_constant(h, name, get_u64(request, 0)));
      *response_bytes = 4;
      return 0;
    }
    case 2: {
      uint64_t alloc_bytes = get_u64(request, 0);
      uint64_t address = get_u64(request, 8);
      uint64_t allocation = 0;
      int alloc_code = 0;
      if (alloc_bytes != 0) {
        alloc_code = api->alloc_protected(h, alloc_bytes, &allocation);
        address += allocation;
      }
      int fd = -1;
      int export_code = alloc_code == 0 ? api->export_protected(h, address, &fd) : AGILEOS_MODULE_EIO;
      put_i32(response, 0, alloc_code);
      put_i32(response, 4, export_code);
      put_u64(response, 8, (uint64_t)size_and_close(export_code == 0 ? fd : -1));
      put_u64(response, 16, allocation);
      *response_bytes = 24;
      return 0;
    }
    case 3: {
      uint64_t address = 0;
      int rc = map_memfd(self, get_u64(request, 0), get_u64(request, 8), get_u64(request, 16),
                         get_u32(request, 24), get_u32(request, 28), &address);
      put_i32(response, 0, rc);
      put_u32(response, 4, 0);
      put_u64(response, 8, address);
      *response_bytes = 16;
      return 0;
    }
    case 4: {
      uint64_t address = get_u64(request, 0);
      int rc = api->unmap_io(h, address);
      if (rc == AGILEOS_MODULE_OK) untrack_mapping(self, address);
      put_i32(response, 0, rc);
      *response_bytes = 4;
      return 0;
    }
    case 5: {
      uint64_t registration = 0;
      put_i32(response, 0, api->register_dma(h, get_u64(request, 0), get_u64(request, 8), &registration));
      put_u32(response, 4, 0);
      put_u64(response, 8, registration);
      *response_bytes = 16;
      return 0;
    }
    case 6:
      put_i32(response, 0, api->unregister_dma(h, get_u64(request, 0)));
      *response_bytes = 4;
      return 0;
    case 7: {
      int fd = -1;
      uint64_t handle_bytes = 0, offset = 0;
      int rc = api->export_dma(h, get_u64(request, 0), &fd, &handle_bytes, &offset);
      put_i32(response, 0, rc);
      put_u32(response, 4, 0);
      put_u64(response, 8, handle_bytes);
      put_u64(response, 16, offset);
      put_u64(response, 24, (uint64_t)size_and_close(rc == 0 ? fd : -1));
      *response_bytes = 32;
      return 0;
    }
    case 8:
      put_u32(response, 0, self->revoked_count);
      put_i32(response, 4, self->revoked_unregister_code);
      for (uint32_t i = 0; i < self->revoked_count; ++i)
        put_u64(response, 8 + 8 * (size_t)i, self->revoked[i]);
      *response_bytes = 8 + 8 * (uint64_t)self->revoked_count;
      return 0;
    case 9: {
      spawn_call call = {self, get_u32(request, 0), AGILEOS_MODULE_EIO};
      pthread_t thread;
      if (pthread_create(&thread, NULL, spawned, &call) != 0) return AGILEOS_MODULE_EIO;
      pthread_join(thread, NULL);
      put_i32(response, 0, call.code);
      *response_bytes = 4;
      return 0;
    }
    case 10: {
      uint64_t out = 0;
      int fd = -1;
      put_i32(response, 0, api->export_protected(h, 0xF1000000000ull, NULL));
      put_i32(response, 4, api->map_io(h, 0, 0, 4096, 0, NULL));
      put_i32(response, 8, api->register_dma(h, 0xF8000000000ull, 256, NULL));
      put_i32(response, 12, api->export_dma(h, 1, &fd, NULL, &out));
      put_i32(response, 16, api->publish_device_constant(h, NULL, 1));
      if (fd >= 0) close(fd);
      *response_bytes = 20;
      return 0;
    }
    case 11:
      put_i32(response, 0, api->free_protected(h, get_u64(request, 0)));
      *response_bytes = 4;
      return 0;
    default:
      return AGILEOS_MODULE_ENOTSUP;
  }
}

int host_module_control(void* instance, uint32_t command, const void* request, uint64_t request_bytes,
                        void* response, uint64_t response_capacity, uint64_t* response_bytes) {
  (void)response_capacity; /* every response fits the command's max_response_bytes */
  *response_bytes = 0;
  return control(instance, command, request, request_bytes, response, response_bytes);
}

void host_cleanup_module(void* instance) {
  resource_instance* self = instance;
  self->host->log(self->host->host, AGILEOS_MODULE_LOG_INFO, "cleanup");
  if (self->tidy) {
    for (uint32_t i = 0; i < self->mapped_count; ++i) self->host->unmap_io(self->host->host, self->mapped[i]);
    self->mapped_count = 0;
  }
  /* Mappings and registrations are otherwise left on purpose: the worker must undo them. */
  free(self);
}

#ifndef NO_DMA_REVOKED
void host_module_dma_revoked(void* instance, uint64_t registration) {
  resource_instance* self = instance;
  __atomic_add_fetch(&g_revocations, 1, __ATOMIC_SEQ_CST);
  if (self->revoked_count < MAX_TRACKED) self->revoked[self->revoked_count++] = registration;
  /* The registration must be gone already: dropping it again is refused. */
  self->revoked_unregister_code = self->host->unregister_dma(self->host->host, registration);
}
#endif
