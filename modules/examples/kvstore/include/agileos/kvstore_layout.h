/* kvstore's table in protected memory, shared by its plugin and its device code (private to the
 * module: applications never see it). AGILEOS_KVSTORE_CAPACITY entries of 16 bytes. */
#ifndef AGILEOS_KVSTORE_LAYOUT_H
#define AGILEOS_KVSTORE_LAYOUT_H

#include <stdint.h>

typedef struct agileos_kvstore_entry {
  uint64_t tag; /* 0: empty; AGILEOS_KVSTORE_TOMBSTONE: removed; else key + 1 */
  uint64_t value;
} agileos_kvstore_entry;

#define AGILEOS_KVSTORE_TOMBSTONE 0xFFFFFFFFFFFFFFFFull

/* The probe sequence starts here (a 64-bit mix, so that sequential keys spread). */
static inline
#ifdef __CUDACC__
    __host__ __device__
#endif
        uint64_t
        agileos_kvstore_hash(uint64_t key) {
  key ^= key >> 33;
  key *= 0xff51afd7ed558ccdull;
  key ^= key >> 33;
  key *= 0xc4ceb9fe1a85ec53ull;
  key ^= key >> 33;
  return key;
}

#endif /* AGILEOS_KVSTORE_LAYOUT_H */
