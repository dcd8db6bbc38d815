// queue: per-slot submission/completion queues in host memory the GPU can reach (example module,
// device code only). It offers no function to applications: its functions are for other modules
// (__agileos_queue_*), which pass the queue region their plugin mapped into the I/O aperture. The
// layout and the protocol are the storage service's (proto/services/storage_protocol.h); a
// slot has one producer (the device) and one consumer (the service).
#include "agileos/module_device.h"
#include "proto/services/storage_protocol.h"

namespace {

__device__ agileos_storage_sqe* submissions(unsigned long long region) {
  return reinterpret_cast<agileos_storage_sqe*>(region + AGILEOS_STORAGE_SQ_OFFSET);
}

__device__ agileos_storage_cqe* completions(unsigned long long region, unsigned slots) {
  return reinterpret_cast<agileos_storage_cqe*>(region + AGILEOS_STORAGE_CQ_OFFSET(slots));
}

}  // namespace

// Submits (file, offset, bytes) on `slot`, into `target` at `target_offset` (0: the slot's own
// data area): the fields first, a system-scope fence, then the new sequence number, which is
// what the service polls. Returns the sequence submitted.
extern "C" __device__ unsigned __agileos_queue_submit_to(unsigned long long region, unsigned slot,
                                                         unsigned file, unsigned long long offset,
                                                         unsigned bytes, unsigned target,
                                                         unsigned long long target_offset) {
  volatile agileos_storage_sqe* entry = submissions(region) + slot;
  const unsigned sequence = entry->sequence + 1;
  entry->offset = offset;
  entry->file = file;
  entry->bytes = bytes;
  entry->target = target;
  entry->target_offset = target_offset;
  __threadfence_system();
  entry->sequence = sequence;
  __threadfence_system();
  return sequence;
}

// __agileos_queue_submit_to into the slot's own data area.
extern "C" __device__ unsigned __agileos_queue_submit(unsigned long long region, unsigned slot, unsigned file,
                                                      unsigned long long offset, unsigned bytes) {
  return __agileos_queue_submit_to(region, slot, file, offset, bytes, 0, 0);
}

// The sequence last submitted on `slot`.
extern "C" __device__ unsigned __agileos_queue_submitted(unsigned long long region, unsigned slot) {
  return static_cast<volatile agileos_storage_sqe*>(submissions(region) + slot)->sequence;
}

// 1 when `slot`'s completion for `sequence` has arrived, else 0.
extern "C" __device__ int __agileos_queue_done(unsigned long long region, unsigned slots, unsigned slot,
                                               unsigned sequence) {
  volatile agileos_storage_cqe* entry = completions(region, slots) + slot;
  return entry->sequence == sequence ? 1 : 0;
}

// Waits for `slot`'s completion for `sequence` and returns its result.
extern "C" __device__ long long __agileos_queue_wait(unsigned long long region, unsigned slots, unsigned slot,
                                                     unsigned sequence) {
  volatile agileos_storage_cqe* entry = completions(region, slots) + slot;
  while (entry->sequence != sequence) {
    __nanosleep(256);
  }
  __threadfence_system();  // the result (and the data) are read after the sequence
  return entry->result;
}
