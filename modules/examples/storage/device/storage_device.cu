// storage's trusted device code (see agileos/storage.h): submissions go through the queue
// module's functions into the queue region; data is copied out of the client's protected slot
// buffer into user memory only after the destination is checked.
#define AGILEOS_MODULE_IMPLEMENTATION
#include "agileos/module_device.h"
#include "agileos/storage.h"

// Published by the plugin for this client.
extern "C" __device__ unsigned long long __agileos_storage_const_queue(void);   // I/O aperture
extern "C" __device__ unsigned long long __agileos_storage_const_buffer(void);  // protected
extern "C" __device__ unsigned long long __agileos_storage_const_slots(void);
extern "C" __device__ unsigned long long __agileos_storage_const_slot_bytes(void);

// The queue module's functions (linked before this module: it is a dependency).
extern "C" __device__ unsigned __agileos_queue_submit(unsigned long long region, unsigned slot, unsigned file,
                                                      unsigned long long offset, unsigned bytes);
extern "C" __device__ unsigned __agileos_queue_submit_to(unsigned long long region, unsigned slot,
                                                         unsigned file, unsigned long long offset,
                                                         unsigned bytes, unsigned target,
                                                         unsigned long long target_offset);
extern "C" __device__ unsigned __agileos_queue_submitted(unsigned long long region, unsigned slot);
extern "C" __device__ int __agileos_queue_done(unsigned long long region, unsigned slots, unsigned slot,
                                               unsigned sequence);
extern "C" __device__ long long __agileos_queue_wait(unsigned long long region, unsigned slots, unsigned slot,
                                                     unsigned sequence);

extern "C" __device__ int agileos_storage_read_async(unsigned slot, unsigned file, unsigned long long offset,
                                                     unsigned bytes) {
  if (slot >= __agileos_storage_const_slots()) return AGILEOS_STORAGE_EINVAL;
  if (bytes == 0 || bytes > __agileos_storage_const_slot_bytes()) return AGILEOS_STORAGE_EINVAL;
  // file and offset are the service's to validate: it knows this client's files.
  __agileos_queue_submit(__agileos_storage_const_queue(), slot, file, offset, bytes);
  return 0;
}

extern "C" __device__ int agileos_storage_read_into(unsigned slot, unsigned file, unsigned long long offset,
                                                    unsigned bytes, unsigned target,
                                                    unsigned long long target_offset) {
  if (slot >= __agileos_storage_const_slots()) return AGILEOS_STORAGE_EINVAL;
  if (bytes == 0 || bytes > __agileos_storage_const_slot_bytes() || target == 0)
    return AGILEOS_STORAGE_EINVAL;
  // The target and its bounds are the service's to check: it knows this client's registrations.
  __agileos_queue_submit_to(__agileos_storage_const_queue(), slot, file, offset, bytes, target,
                            target_offset);
  return 0;
}

extern "C" __device__ long long agileos_storage_wait(unsigned slot) {
  const unsigned slots = static_cast<unsigned>(__agileos_storage_const_slots());
  if (slot >= slots) return AGILEOS_STORAGE_EINVAL;
  const unsigned long long queue = __agileos_storage_const_queue();
  return __agileos_queue_wait(queue, slots, slot, __agileos_queue_submitted(queue, slot));
}

extern "C" __device__ int agileos_storage_test(unsigned slot) {
  const unsigned slots = static_cast<unsigned>(__agileos_storage_const_slots());
  if (slot >= slots) return AGILEOS_STORAGE_EINVAL;
  const unsigned long long queue = __agileos_storage_const_queue();
  return __agileos_queue_done(queue, slots, slot, __agileos_queue_submitted(queue, slot));
}

extern "C" __device__ int agileos_storage_copy(unsigned slot, void* dst, unsigned long long bytes,
                                               unsigned lane, unsigned lanes) {
  const unsigned long long slotBytes = __agileos_storage_const_slot_bytes();
  if (slot >= __agileos_storage_const_slots() || bytes > slotBytes || lanes == 0 || lane >= lanes) {
    return AGILEOS_STORAGE_EINVAL;
  }
  if (bytes == 0) return 0;
  const auto target = reinterpret_cast<unsigned long long>(dst);
  if (!agileos_user_range_ok(target, bytes)) return AGILEOS_STORAGE_EFAULT;
  const unsigned long long source = __agileos_storage_const_buffer() + slot * slotBytes;
  if (target % 16 == 0 && bytes % 16 == 0) {
    const auto* from = reinterpret_cast<const uint4*>(source);
    auto* to = reinterpret_cast<uint4*>(target);
    for (unsigned long long i = lane; i < bytes / 16; i += lanes) to[i] = from[i];
  } else {
    const auto* from = reinterpret_cast<const unsigned char*>(source);
    auto* to = reinterpret_cast<unsigned char*>(target);
    for (unsigned long long i = lane; i < bytes; i += lanes) to[i] = from[i];
  }
  return 0;
}
