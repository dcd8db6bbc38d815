// kvstore's trusted device code: linked by the worker into the kernels of a client admitted with
// the module, where it replaces the placeholders of agileos/kvstore.h. Runs unguarded (it must
// reach the table in protected memory), so every user pointer is checked before use.
#define AGILEOS_MODULE_IMPLEMENTATION
#include "agileos/kvstore.h"
#include "agileos/kvstore_layout.h"
#include "agileos/module_device.h"

// Published by the plugin: the client's table and its number of entries (a power of two).
extern "C" __device__ unsigned long long __agileos_kvstore_const_table(void);
extern "C" __device__ unsigned long long __agileos_kvstore_const_capacity(void);

namespace {

__device__ agileos_kvstore_entry* table() {
  return reinterpret_cast<agileos_kvstore_entry*>(__agileos_kvstore_const_table());
}

// The entry holding `tag`, or (insert) the empty entry that now holds it; null if none.
__device__ agileos_kvstore_entry* findEntry(unsigned long long tag, bool insert) {
  agileos_kvstore_entry* entries = table();
  const unsigned long long mask = __agileos_kvstore_const_capacity() - 1;
  unsigned long long index = agileos_kvstore_hash(tag - 1) & mask;
  for (unsigned long long probe = 0; probe <= mask; ++probe, index = (index + 1) & mask) {
    auto* seen = reinterpret_cast<volatile unsigned long long*>(&entries[index].tag);
    unsigned long long current = *seen;
    if (current == 0) {
      if (!insert) return nullptr;
      current = atomicCAS(reinterpret_cast<unsigned long long*>(&entries[index].tag), 0ull, tag);
      if (current == 0) return &entries[index];
    }
    if (current == tag) return &entries[index];
  }
  return nullptr;
}

__device__ bool validKey(unsigned long long key) { return key <= AGILEOS_KVSTORE_MAX_KEY - 1; }

}  // namespace

extern "C" __device__ int agileos_kvstore_put(unsigned long long key, unsigned long long value) {
  if (!validKey(key)) return AGILEOS_KVSTORE_EINVAL;
  agileos_kvstore_entry* entry = findEntry(key + 1, true);
  if (entry == nullptr) return AGILEOS_KVSTORE_ENOSPC;
  atomicExch(reinterpret_cast<unsigned long long*>(&entry->value), value);
  return 0;
}

extern "C" __device__ int agileos_kvstore_get(unsigned long long key, unsigned long long* value) {
  if (!validKey(key)) return AGILEOS_KVSTORE_EINVAL;
  if (!agileos_user_range_ok(reinterpret_cast<unsigned long long>(value), sizeof *value)) {
    return AGILEOS_KVSTORE_EFAULT;
  }
  agileos_kvstore_entry* entry = findEntry(key + 1, false);
  if (entry == nullptr) return AGILEOS_KVSTORE_ENOENT;
  *value = *reinterpret_cast<volatile unsigned long long*>(&entry->value);
  return 0;
}

extern "C" __device__ int agileos_kvstore_add(unsigned long long key, unsigned long long delta,
                                              unsigned long long* previous) {
  if (!validKey(key)) return AGILEOS_KVSTORE_EINVAL;
  if (previous != nullptr &&
      !agileos_user_range_ok(reinterpret_cast<unsigned long long>(previous), sizeof *previous)) {
    return AGILEOS_KVSTORE_EFAULT;
  }
  agileos_kvstore_entry* entry = findEntry(key + 1, true);
  if (entry == nullptr) return AGILEOS_KVSTORE_ENOSPC;
  const unsigned long long before = atomicAdd(reinterpret_cast<unsigned long long*>(&entry->value), delta);
  if (previous != nullptr) *previous = before;
  return 0;
}

extern "C" __device__ int agileos_kvstore_remove(unsigned long long key) {
  if (!validKey(key)) return AGILEOS_KVSTORE_EINVAL;
  agileos_kvstore_entry* entry = findEntry(key + 1, false);
  if (entry == nullptr) return AGILEOS_KVSTORE_ENOENT;
  const unsigned long long tag = key + 1;
  if (atomicCAS(reinterpret_cast<unsigned long long*>(&entry->tag), tag, AGILEOS_KVSTORE_TOMBSTONE) != tag) {
    return AGILEOS_KVSTORE_ENOENT;  // removed concurrently
  }
  return 0;
}
