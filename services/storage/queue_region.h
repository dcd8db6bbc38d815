// The service's view of one lease's queue region (storage_protocol.h): the memfd mapped
// shared, the header copied once at attach and checked, and per-slot access to sq[] and cq[].
//
// Every access to the shared entries is an atomic access (std::atomic_ref): the device writes
// them concurrently, and a plain read could be torn or merged by the compiler. The sequence
// loads are acquire and the completion store is release, which pairs with the device's
// "fields, system fence, sequence" and "wait for sequence, then result" (the protocol's order).
//
// Thread-safety: after attach(), one thread per slot may call the slot accessors (the poller
// that owns the slot).
#pragma once

#include <cstdint>
#include <string>

#include "proto/services/storage_protocol.h"
#include "services/storage/shared_file_mapping.h"
#include "services/storage/storage_validation.h"

namespace agileos::services::storage {

class QueueRegion {
 public:
  // Maps queue_bytes of fd, copies the header and checks it (checkQueueHeader). 0, or a
  // negative errno with *reason; on failure nothing stays mapped.
  int attach(int fd, std::uint64_t queue_bytes, std::uint64_t buffer_bytes, std::string* reason);
  void detach() { mapping_.unmap(); }

  // The copy taken at attach; the region's header is never read again.
  const agileos_storage_queue_header& header() const { return header_; }

  std::uint32_t submittedSequence(std::uint32_t slot) const;
  // Copies sq[slot] after submittedSequence returned `sequence` (the copy carries it).
  Submission readSubmission(std::uint32_t slot, std::uint32_t sequence) const;
  std::uint32_t completedSequence(std::uint32_t slot) const;
  // result first, then sequence with release: the device never sees the sequence before the result.
  void complete(std::uint32_t slot, std::uint32_t sequence, std::int64_t result);

 private:
  agileos_storage_sqe* sq(std::uint32_t slot) const;
  agileos_storage_cqe* cq(std::uint32_t slot) const;

  SharedFileMapping mapping_;
  agileos_storage_queue_header header_{};
};

}  // namespace agileos::services::storage
