/* kvstore's host part: one table per client in protected memory, published to the module's
 * device code, and host control commands that read or reset it. Built with the module SDK. */
#include <stdlib.h>
#include <string.h>

#include "agileos/kvstore.h"
#include "agileos/kvstore_layout.h"
#include "agileos/module_abi.h"

#define TABLE_BYTES ((uint64_t)AGILEOS_KVSTORE_CAPACITY * sizeof(agileos_kvstore_entry))

typedef struct kvstore_instance {
  const agileos_module_host_api* host;
  uint64_t table; /* device address in protected memory: never leaves the worker */
  uint64_t control_calls;
} kvstore_instance;

static const agileos_module_command kCommands[] = {
    {AGILEOS_KVSTORE_CMD_STATS, "stats", 0, 0, sizeof(agileos_kvstore_stats)},
    {AGILEOS_KVSTORE_CMD_CLEAR, "clear", 0, 0, 0},
    {AGILEOS_KVSTORE_CMD_GET, "get", sizeof(uint64_t), sizeof(uint64_t), sizeof(agileos_kvstore_lookup)},
};

AGILEOS_MODULE_EXPORT uint32_t host_module_abi_version(void) { return AGILEOS_MODULE_ABI_VERSION; }

AGILEOS_MODULE_EXPORT const agileos_module_command* host_module_commands(uint32_t* count) {
  *count = (uint32_t)(sizeof kCommands / sizeof kCommands[0]);
  return kCommands;
}

AGILEOS_MODULE_EXPORT int host_init_module(const agileos_module_init_context* context, void** instance) {
  kvstore_instance* self = calloc(1, sizeof *self);
  if (self == NULL) return AGILEOS_MODULE_ENOMEM;
  self->host = context->host;
  const agileos_module_host_api* host = self->host;
  /* alloc_protected zero-fills: every entry starts empty. */
  int rc = host->alloc_protected(host->host, TABLE_BYTES, &self->table);
  if (rc == AGILEOS_MODULE_OK) rc = host->publish_device_constant(host->host, "table", self->table);
  if (rc == AGILEOS_MODULE_OK) {
    rc = host->publish_device_constant(host->host, "capacity", AGILEOS_KVSTORE_CAPACITY);
  }
  if (rc != AGILEOS_MODULE_OK) {
    free(self); /* the worker revokes the table */
    return rc;
  }
  *instance = self;
  return AGILEOS_MODULE_OK;
}

/* Reads the whole table into a fresh buffer (the caller frees it), or NULL. */
static agileos_kvstore_entry* readTable(kvstore_instance* self) {
  agileos_kvstore_entry* entries = malloc(TABLE_BYTES);
  if (entries == NULL) return NULL;
  if (self->host->read_protected(self->host->host, self->table, entries, TABLE_BYTES) != AGILEOS_MODULE_OK) {
    free(entries);
    return NULL;
  }
  return entries;
}

static int stats(kvstore_instance* self, agileos_kvstore_stats* out) {
  agileos_kvstore_entry* entries = readTable(self);
  if (entries == NULL) return AGILEOS_MODULE_EIO;
  memset(out, 0, sizeof *out);
  out->capacity = AGILEOS_KVSTORE_CAPACITY;
  for (uint64_t i = 0; i < AGILEOS_KVSTORE_CAPACITY; ++i) {
    if (entries[i].tag == AGILEOS_KVSTORE_TOMBSTONE) {
      ++out->removed_keys;
    } else if (entries[i].tag != 0) {
      ++out->live_keys;
    }
  }
  free(entries);
  return AGILEOS_MODULE_OK;
}

static int lookup(kvstore_instance* self, uint64_t key, agileos_kvstore_lookup* out) {
  memset(out, 0, sizeof *out);
  if (key > AGILEOS_KVSTORE_MAX_KEY - 1) return AGILEOS_MODULE_EINVAL;
  agileos_kvstore_entry* entries = readTable(self);
  if (entries == NULL) return AGILEOS_MODULE_EIO;
  const uint64_t tag = key + 1, mask = AGILEOS_KVSTORE_CAPACITY - 1;
  uint64_t index = agileos_kvstore_hash(key) & mask;
  for (uint64_t probe = 0; probe <= mask; ++probe, index = (index + 1) & mask) {
    if (entries[index].tag == 0) break;
    if (entries[index].tag == tag) {
      out->found = 1;
      out->value = entries[index].value;
      break;
    }
  }
  free(entries);
  return AGILEOS_MODULE_OK;
}

AGILEOS_MODULE_EXPORT int host_module_control(void* instance, uint32_t command, const void* request,
                                              uint64_t request_bytes, void* response,
                                              uint64_t response_capacity, uint64_t* response_bytes) {
  kvstore_instance* self = instance;
  ++self->control_calls;
  (void)request_bytes;
  (void)response_capacity; /* the worker sized both from the command table */
  *response_bytes = 0;
  switch (command) {
    case AGILEOS_KVSTORE_CMD_STATS: {
      agileos_kvstore_stats out;
      const int rc = stats(self, &out);
      if (rc != AGILEOS_MODULE_OK) return rc;
      out.control_calls = self->control_calls;
      memcpy(response, &out, sizeof out);
      *response_bytes = sizeof out;
      return AGILEOS_MODULE_OK;
    }
    case AGILEOS_KVSTORE_CMD_CLEAR: {
      void* zeros = calloc(1, TABLE_BYTES);
      if (zeros == NULL) return AGILEOS_MODULE_ENOMEM;
      const int rc = self->host->write_protected(self->host->host, self->table, zeros, TABLE_BYTES);
      free(zeros);
      return rc;
    }
    case AGILEOS_KVSTORE_CMD_GET: {
      uint64_t key;
      memcpy(&key, request, sizeof key);
      agileos_kvstore_lookup out;
      const int rc = lookup(self, key, &out);
      if (rc != AGILEOS_MODULE_OK) return rc;
      memcpy(response, &out, sizeof out);
      *response_bytes = sizeof out;
      return AGILEOS_MODULE_OK;
    }
    default:
      return AGILEOS_MODULE_ENOTSUP; /* unreachable: the worker checks the table */
  }
}

AGILEOS_MODULE_EXPORT void host_cleanup_module(void* instance) {
  kvstore_instance* self = instance;
  /* The table is revoked (scrubbed and freed) by the worker after this returns. */
  self->host->free_protected(self->host->host, self->table);
  free(self);
}
