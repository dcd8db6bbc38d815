#include "services/storage/queue_region.h"

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstring>

namespace agileos::services::storage {
namespace {

// The layout storage_protocol.h describes, as the service relies on it: every field accessed
// atomically is naturally aligned within its entry, and entries are naturally aligned in the
// (page-aligned) mapping.
static_assert(sizeof(agileos_storage_queue_header) == AGILEOS_STORAGE_SQ_OFFSET);
static_assert(sizeof(agileos_storage_sqe) == 32 && sizeof(agileos_storage_cqe) == 16);
static_assert(offsetof(agileos_storage_sqe, offset) == 0 && offsetof(agileos_storage_sqe, file) == 8 &&
              offsetof(agileos_storage_sqe, bytes) == 12 && offsetof(agileos_storage_sqe, sequence) == 16 &&
              offsetof(agileos_storage_sqe, target) == 20 &&
              offsetof(agileos_storage_sqe, target_offset) == 24);
static_assert(offsetof(agileos_storage_cqe, result) == 0 && offsetof(agileos_storage_cqe, sequence) == 8);
static_assert(std::atomic_ref<std::uint64_t>::is_always_lock_free &&
              std::atomic_ref<std::uint32_t>::is_always_lock_free &&
              std::atomic_ref<std::int64_t>::is_always_lock_free);

template <typename T>
T loadRelaxed(T& field) {
  return std::atomic_ref<T>(field).load(std::memory_order_relaxed);
}

}  // namespace

int QueueRegion::attach(int fd, std::uint64_t queue_bytes, std::uint64_t buffer_bytes, std::string* reason) {
  if (queue_bytes < sizeof(agileos_storage_queue_header)) {
    *reason = "queue_bytes " + std::to_string(queue_bytes) + " smaller than the header";
    return -EINVAL;
  }
  if (int mapped = mapping_.map(fd, queue_bytes, reason); mapped != 0) return mapped;
  std::memcpy(&header_, mapping_.data(), sizeof(header_));
  if (int checked = checkQueueHeader(header_, queue_bytes, buffer_bytes, reason); checked != 0) {
    mapping_.unmap();
    return checked;
  }
  return 0;
}

agileos_storage_sqe* QueueRegion::sq(std::uint32_t slot) const {
  return reinterpret_cast<agileos_storage_sqe*>(mapping_.data() + AGILEOS_STORAGE_SQ_OFFSET) + slot;
}

agileos_storage_cqe* QueueRegion::cq(std::uint32_t slot) const {
  return reinterpret_cast<agileos_storage_cqe*>(mapping_.data() + AGILEOS_STORAGE_CQ_OFFSET(header_.slots)) +
         slot;
}

std::uint32_t QueueRegion::submittedSequence(std::uint32_t slot) const {
  return std::atomic_ref<std::uint32_t>(sq(slot)->sequence).load(std::memory_order_acquire);
}

Submission QueueRegion::readSubmission(std::uint32_t slot, std::uint32_t sequence) const {
  agileos_storage_sqe* entry = sq(slot);
  Submission copy;
  copy.offset = loadRelaxed(entry->offset);
  copy.file = loadRelaxed(entry->file);
  copy.bytes = loadRelaxed(entry->bytes);
  copy.target = loadRelaxed(entry->target);
  copy.target_offset = loadRelaxed(entry->target_offset);
  copy.sequence = sequence;
  return copy;
}

std::uint32_t QueueRegion::completedSequence(std::uint32_t slot) const {
  return std::atomic_ref<std::uint32_t>(cq(slot)->sequence).load(std::memory_order_acquire);
}

void QueueRegion::complete(std::uint32_t slot, std::uint32_t sequence, std::int64_t result) {
  agileos_storage_cqe* entry = cq(slot);
  std::atomic_ref<std::int64_t>(entry->result).store(result, std::memory_order_relaxed);
  std::atomic_ref<std::uint32_t>(entry->sequence).store(sequence, std::memory_order_release);
}

}  // namespace agileos::services::storage
