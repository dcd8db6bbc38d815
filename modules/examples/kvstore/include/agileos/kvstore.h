/*
 * kvstore: a protected per-client key-value store (example module).
 *
 * Each client admitted with the module gets its own table in protected GPU memory. User kernels
 * use it only through the device functions below; a kernel that computes the table's address
 * and touches it directly is stopped by the kernel memory guard. The host side offers control
 * commands through agileosModuleControl("kvstore", ...).
 *
 * Keys: any 64-bit value below AGILEOS_KVSTORE_MAX_KEY. Concurrency: puts and removes of one key
 * from many threads are atomic per field; a get racing the FIRST put of a key may see its value
 * as 0. A table holds AGILEOS_KVSTORE_CAPACITY keys over its lifetime between clears (removed
 * keys keep their slot until a clear).
 */
#ifndef AGILEOS_KVSTORE_H
#define AGILEOS_KVSTORE_H

#include <stdint.h>

#include "agileos/module_public.h"

#define AGILEOS_KVSTORE_CAPACITY 65536u
#define AGILEOS_KVSTORE_MAX_KEY 0xFFFFFFFFFFFFFFFEull

/* Device function results besides 0. */
#define AGILEOS_KVSTORE_ENOENT (-2)  /* no such key */
#define AGILEOS_KVSTORE_EFAULT (-14) /* a pointer the module may not write for the caller */
#define AGILEOS_KVSTORE_EINVAL (-22) /* key out of range */
#define AGILEOS_KVSTORE_ENOSPC (-28) /* the table is full */

/* The placeholders; the module's own device code defines AGILEOS_MODULE_IMPLEMENTATION to get
 * only the constants. */
#if defined(__CUDACC__) && !defined(AGILEOS_MODULE_IMPLEMENTATION)
// Each placeholder macro is a function body, which clang-format cannot lay out.
// clang-format off
/* Inserts or replaces key -> value. */
extern "C" __device__ __noinline__ int agileos_kvstore_put(unsigned long long key, unsigned long long value)
    AGILEOS_MODULE_PLACEHOLDER(int)
/* Stores key's value in *value (user memory). */
extern "C" __device__ __noinline__ int agileos_kvstore_get(unsigned long long key, unsigned long long* value)
    AGILEOS_MODULE_PLACEHOLDER(int)
/* Adds delta to key's value (creating it at 0), returns the previous value in *previous (may be null). */
extern "C" __device__ __noinline__ int agileos_kvstore_add(unsigned long long key, unsigned long long delta,
                                                           unsigned long long* previous)
    AGILEOS_MODULE_PLACEHOLDER(int)
/* Removes key. */
extern "C" __device__ __noinline__ int agileos_kvstore_remove(unsigned long long key)
    AGILEOS_MODULE_PLACEHOLDER(int)
AGILEOS_MODULE_PLACEHOLDER_TABLE(agileos_kvstore_placeholders, (void*)agileos_kvstore_put,
                                 (void*)agileos_kvstore_get, (void*)agileos_kvstore_add,
                                 (void*)agileos_kvstore_remove);
// clang-format on
#endif

/* Host control commands (agileosModuleControl("kvstore", command, ...)). */
#define AGILEOS_KVSTORE_CMD_STATS 1 /* request: none; response: agileos_kvstore_stats */
#define AGILEOS_KVSTORE_CMD_CLEAR 2 /* request: none; response: none */
#define AGILEOS_KVSTORE_CMD_GET 3   /* request: uint64_t key; response: agileos_kvstore_lookup */

typedef struct agileos_kvstore_stats {
  uint64_t capacity;
  uint64_t live_keys;
  uint64_t removed_keys;
  uint64_t control_calls; /* control calls this instance's plugin has run, this one included */
} agileos_kvstore_stats;

typedef struct agileos_kvstore_lookup {
  uint64_t found; /* 1 or 0 */
  uint64_t value;
} agileos_kvstore_lookup;

#endif /* AGILEOS_KVSTORE_H */
