/* A well-formed protected module plugin for the module host tests, written in C against the
 * public SDK header only. It counts every host_module_control call it receives (exported as
 * counter_plugin_calls) so a test can assert that refused calls never reached it, and it
 * misbehaves on request (commands 4, 5, 8) so the host's checks can be exercised.
 *
 * Commands:
 *   1 echo     0..4096 bytes -> the same bytes
 *   2 add      8 bytes (two uint32) -> 8 bytes (their uint64 sum)
 *   3 store    1..1024 bytes: allocate protected memory, write the bytes, read them back into
 *              the response; the allocation is kept (and deliberately never freed by cleanup)
 *   4 overflow 0 bytes: reports one byte more response than the capacity
 *   5 probe    8 bytes (a device address): tries free, read and write on it, returns the three
 *              int32 codes; then a read running 1 byte past the end of the instance's last
 *              store, returns its code as a fourth int32
 *   6 release  0 bytes: frees every allocation the instance kept, returns the count (uint32)
 *   7 slow     0 bytes: spins briefly, detecting a second thread inside the same instance
 *   8 spawn    0 bytes: calls alloc_protected from a thread of its own, returns its code
 * config_json "fail": host_init_module allocates protected memory and then fails.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "agileos/module_abi.h"

#define MAX_KEPT 64

typedef struct counter_instance {
  const agileos_module_host_api* host;
  uint64_t kept[MAX_KEPT];
  uint64_t kept_bytes[MAX_KEPT];
  uint32_t kept_count;
  int busy;
} counter_instance;

static uint64_t g_calls;
static uint64_t g_overlaps;

static const agileos_module_command g_commands[] = {
    {1, "echo", 0, 4096, 4096}, {2, "add", 8, 8, 8},    {3, "store", 1, 1024, 1024},
    {4, "overflow", 0, 0, 16},  {5, "probe", 8, 8, 16}, {6, "release", 0, 0, 4},
    {7, "slow", 0, 0, 0},       {8, "spawn", 0, 0, 4},
};

AGILEOS_MODULE_EXPORT uint64_t counter_plugin_calls(void) {
  return __atomic_load_n(&g_calls, __ATOMIC_SEQ_CST);
}
AGILEOS_MODULE_EXPORT uint64_t counter_plugin_overlaps(void) {
  return __atomic_load_n(&g_overlaps, __ATOMIC_SEQ_CST);
}

uint32_t host_module_abi_version(void) { return AGILEOS_MODULE_ABI_VERSION; }

const agileos_module_command* host_module_commands(uint32_t* count) {
  *count = (uint32_t)(sizeof g_commands / sizeof g_commands[0]);
  return g_commands;
}

int host_init_module(const agileos_module_init_context* context, void** instance) {
  if (context->abi_version != AGILEOS_MODULE_ABI_VERSION) return AGILEOS_MODULE_ENOTSUP;
  if (strcmp(context->config_json, "fail") == 0) {
    uint64_t address = 0;
    context->host->alloc_protected(context->host->host, 256, &address);
    return AGILEOS_MODULE_ENOMEM;
  }
  counter_instance* self = calloc(1, sizeof *self);
  if (self == NULL) return AGILEOS_MODULE_ENOMEM;
  self->host = context->host;
  *instance = self;
  return AGILEOS_MODULE_OK;
}

static void put_i32(unsigned char* out, int32_t value) { memcpy(out, &value, sizeof value); }

static int store(counter_instance* self, const void* request, uint64_t bytes, void* response,
                 uint64_t* response_bytes) {
  if (self->kept_count == MAX_KEPT) return AGILEOS_MODULE_ENOMEM;
  void* h = self->host->host;
  uint64_t address = 0;
  int rc = self->host->alloc_protected(h, bytes, &address);
  if (rc != 0) return rc;
  self->kept[self->kept_count] = address;
  self->kept_bytes[self->kept_count] = bytes;
  ++self->kept_count;
  rc = self->host->write_protected(h, address, request, bytes);
  if (rc != 0) return rc;
  rc = self->host->read_protected(h, address, response, bytes);
  if (rc != 0) return rc;
  *response_bytes = bytes;
  return 0;
}

static int probe(counter_instance* self, const void* request, unsigned char* response,
                 uint64_t* response_bytes) {
  void* h = self->host->host;
  uint64_t address;
  unsigned char scratch[8] = {0};
  memcpy(&address, request, sizeof address);
  put_i32(response, self->host->free_protected(h, address));
  put_i32(response + 4, self->host->read_protected(h, address, scratch, sizeof scratch));
  put_i32(response + 8, self->host->write_protected(h, address, scratch, sizeof scratch));
  int32_t past_end = AGILEOS_MODULE_EINVAL;
  if (self->kept_count > 0) {
    uint32_t last = self->kept_count - 1;
    past_end = self->host->read_protected(h, self->kept[last], scratch, self->kept_bytes[last] + 1);
  }
  put_i32(response + 12, past_end);
  *response_bytes = 16;
  return 0;
}

static void* spawned(void* argument) {
  counter_instance* self = argument;
  uint64_t address = 0;
  intptr_t rc = self->host->alloc_protected(self->host->host, 64, &address);
  return (void*)rc;
}

int host_module_control(void* instance, uint32_t command, const void* request, uint64_t request_bytes,
                        void* response, uint64_t response_capacity, uint64_t* response_bytes) {
  counter_instance* self = instance;
  __atomic_add_fetch(&g_calls, 1, __ATOMIC_SEQ_CST);
  if (__atomic_exchange_n(&self->busy, 1, __ATOMIC_SEQ_CST) != 0)
    __atomic_add_fetch(&g_overlaps, 1, __ATOMIC_SEQ_CST);
  int rc = 0;
  *response_bytes = 0;
  switch (command) {
    case 1:
      if (request_bytes > 0) memcpy(response, request, request_bytes);
      *response_bytes = request_bytes;
      break;
    case 2: {
      uint32_t a, b;
      memcpy(&a, request, 4);
      memcpy(&b, (const unsigned char*)request + 4, 4);
      uint64_t sum = (uint64_t)a + b;
      memcpy(response, &sum, sizeof sum);
      *response_bytes = sizeof sum;
      break;
    }
    case 3:
      rc = store(self, request, request_bytes, response, response_bytes);
      break;
    case 4:
      *response_bytes = response_capacity + 1;
      break;
    case 5:
      rc = probe(self, request, response, response_bytes);
      break;
    case 6: {
      uint32_t freed = 0;
      for (uint32_t i = 0; i < self->kept_count; ++i) {
        if (self->host->free_protected(self->host->host, self->kept[i]) == 0) ++freed;
      }
      self->kept_count = 0;
      memcpy(response, &freed, sizeof freed);
      *response_bytes = sizeof freed;
      break;
    }
    case 7:
      for (volatile int spin = 0; spin < 20000; ++spin) {
      }
      break;
    case 8: {
      pthread_t thread;
      void* result = NULL;
      if (pthread_create(&thread, NULL, spawned, self) != 0) {
        rc = AGILEOS_MODULE_EIO;
        break;
      }
      pthread_join(thread, &result);
      int32_t code = (int32_t)(intptr_t)result;
      put_i32(response, code);
      *response_bytes = 4;
      break;
    }
    default:
      rc = AGILEOS_MODULE_ENOTSUP;
  }
  __atomic_store_n(&self->busy, 0, __ATOMIC_SEQ_CST);
  return rc;
}

void host_cleanup_module(void* instance) {
  counter_instance* self = instance;
  self->host->log(self->host->host, AGILEOS_MODULE_LOG_INFO, "cleanup");
  /* The kept allocations are deliberately not freed: the worker must revoke them. */
  free(self);
}
