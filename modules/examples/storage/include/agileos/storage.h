/*
 * storage: GPU-initiated block reads of host files through a trusted service (example module).
 *
 * The storage service (agileos-storage-service) has access to a directory of host files; the
 * client does not. A client admitted with the module opens a file by name with host control
 * (AGILEOS_STORAGE_CMD_OPEN: the service opens it under its root and the client gets a handle),
 * then its kernels read the file's blocks asynchronously:
 *
 *   if (threadIdx.x == 0) agileos_storage_read_async(slot, file, offset, bytes);
 *   ... overlap other work ...
 *   if (threadIdx.x == 0) result = agileos_storage_wait(slot);   // bytes read, or < 0
 *   __syncthreads();
 *   agileos_storage_copy(slot, dst, bytes, threadIdx.x, blockDim.x);  // every thread: its stripe
 *
 * Each client has AGILEOS_STORAGE_SLOTS slots of AGILEOS_STORAGE_SLOT_BYTES: a slot holds one
 * read in flight, in protected memory shared with the service. A slot's reads are the caller's
 * to order: one read at a time per slot, and copy before the next read on it. Reads are served
 * in parallel across slots. The submission and completion queues are in host memory mapped into
 * the protected I/O aperture; data lands in protected device memory the service imported. Every
 * submission is validated by the service (the file must be one this client opened).
 *
 * Depends on the `queue` module (its device code carries the queue protocol).
 */
#ifndef AGILEOS_STORAGE_H
#define AGILEOS_STORAGE_H

#include <stdint.h>

#include "agileos/module_public.h"

#define AGILEOS_STORAGE_SLOTS 32u
#define AGILEOS_STORAGE_SLOT_BYTES (1u << 20)

#define AGILEOS_STORAGE_EFAULT (-14) /* a destination the module may not write for the caller */
#define AGILEOS_STORAGE_EINVAL (-22) /* bad slot or size */

#if defined(__CUDACC__) && !defined(AGILEOS_MODULE_IMPLEMENTATION)
// Each placeholder macro is a function body, which clang-format cannot lay out.
// clang-format off
/* Starts reading `bytes` (1..AGILEOS_STORAGE_SLOT_BYTES) at `offset` of `file` into `slot`. */
extern "C" __device__ __noinline__ int agileos_storage_read_async(unsigned slot, unsigned file,
                                                                  unsigned long long offset, unsigned bytes)
    AGILEOS_MODULE_PLACEHOLDER(int)
/* Starts reading `bytes` at `offset` of `file` straight into `target_offset` of a registered
 * buffer (`target` from AGILEOS_STORAGE_CMD_REGISTER): the service writes there itself (DMA), no
 * copy needed. `slot` carries the completion (wait/test it as usual); its data area is unused. */
extern "C" __device__ __noinline__ int agileos_storage_read_into(unsigned slot, unsigned file,
                                                                 unsigned long long offset, unsigned bytes,
                                                                 unsigned target, unsigned long long target_offset)
    AGILEOS_MODULE_PLACEHOLDER(int)
/* Waits for `slot`'s read: the bytes read (short at the end of the file) or a negative errno. */
extern "C" __device__ __noinline__ long long agileos_storage_wait(unsigned slot)
    AGILEOS_MODULE_PLACEHOLDER(long long)
/* 1 if `slot`'s read has completed, 0 if not yet. */
extern "C" __device__ __noinline__ int agileos_storage_test(unsigned slot)
    AGILEOS_MODULE_PLACEHOLDER(int)
/* Copies the first `bytes` of `slot` to dst (user memory), the part of lane `lane` of `lanes`
 * cooperating threads (call from all of them; lane 0, lanes 1 copies everything). */
extern "C" __device__ __noinline__ int agileos_storage_copy(unsigned slot, void* dst, unsigned long long bytes,
                                                            unsigned lane, unsigned lanes)
    AGILEOS_MODULE_PLACEHOLDER(int)
AGILEOS_MODULE_PLACEHOLDER_TABLE(agileos_storage_placeholders, (void*)agileos_storage_read_async,
                                 (void*)agileos_storage_read_into, (void*)agileos_storage_wait,
                                 (void*)agileos_storage_test, (void*)agileos_storage_copy);
// clang-format on
#endif

/* Host control commands (agileosModuleControl("storage", command, ...)). */
/* request: the path (1..255 bytes, relative to the service's root); response: agileos_storage_opened */
#define AGILEOS_STORAGE_CMD_OPEN 1
#define AGILEOS_STORAGE_CMD_CLOSE 2 /* request: uint32_t file; response: none */
#define AGILEOS_STORAGE_CMD_STATS 3 /* request: none; response: agileos_storage_stats */
/* Registers one of the client's allocations, EXACTLY as allocated (its start and size; anything
 * else is refused), as a target of agileos_storage_read_into. request: agileos_storage_register;
 * response: uint32_t target. A cudaFree of the allocation ends the registration first. */
#define AGILEOS_STORAGE_CMD_REGISTER 4
#define AGILEOS_STORAGE_CMD_UNREGISTER 5 /* request: uint32_t target; response: none */

typedef struct agileos_storage_register {
  uint64_t device_address;
  uint64_t bytes;
} agileos_storage_register;

typedef struct agileos_storage_opened {
  uint32_t file;
  uint32_t reserved;
  uint64_t file_bytes;
} agileos_storage_opened;

/* Counters of the service (all clients together: counts only, nothing about other clients). */
typedef struct agileos_storage_stats {
  uint64_t active_leases;
  uint64_t leases_served;
  uint64_t reads_completed;
  uint64_t leases_revoked;
} agileos_storage_stats;

#endif /* AGILEOS_STORAGE_H */
