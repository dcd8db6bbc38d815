// One lease: a connection's attached queue region and data buffer, its registered buffers, and
// the poller threads that serve its submissions (storage_protocol.h's per-slot protocol).
//
// Poller k of T serves the slots i with i % T == k, so each slot has one consumer and its
// "last served sequence" is private to that poller. A slot's last served sequence starts at
// cq[i].sequence as found at attach: a fresh (zeroed) region starts at 0, and a region reused
// for a new lease neither replays what the previous lease completed nor misses what was
// submitted but not completed.
//
// Serving an entry: copy it (one acquire load of the sequence, then the fields), check the copy
// (checkSubmission, then the handle in this connection's OpenFiles, then for target != 0 the
// registration, -EBADF, and checkTargetRange, -ERANGE), pread into the poller's staging, write
// staging to slot i of the data buffer (target 0) or exactly the bytes read to the registered
// range at target_offset (holding the registration until the write is complete), publish the
// result and then the sequence. A bad entry is answered with a negative result and writes
// nothing; nothing in the region can fail the lease.
//
// Idle pollers spin (with a pause) for kSpinBeforeSleep after their last work, then sleep
// kIdleSleep between scans, and after kDeepIdleAfter without work kDeepIdleSleep: low latency
// while busy or briefly idle, little CPU for a lease that is not being used.
//
// revoke() (also the destructor) stops the pollers, waits for the entry each may be serving,
// then releases the registered buffers, the writers, the imported buffer and the queue mapping:
// once it returns the service never touches the lease's memory again.
//
// Thread-safety: attach, registerBuffer, unregisterBuffer and revoke from the connection's
// thread only.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "services/storage/buffer_backend.h"
#include "services/storage/open_files.h"
#include "services/storage/queue_region.h"
#include "services/storage/registered_buffers.h"
#include "services/storage/service_counters.h"

namespace agileos::services::storage {

// Idle cost: a poller in the short tier wakes every ~55 µs (4 pollers measured ~45% of one core
// on a 2-core VM); in the deep tier every ~1 ms (a few percent). Latency cost: at most one
// sleep of the tier it is in for the first entry after an idle spell.
inline constexpr std::chrono::microseconds kSpinBeforeSleep{50};
inline constexpr std::chrono::microseconds kIdleSleep{50};
inline constexpr std::chrono::milliseconds kDeepIdleAfter{20};
inline constexpr std::chrono::microseconds kDeepIdleSleep{1000};

struct LeaseRequest {
  int queue_fd = -1;   // borrowed: the mapping outlives it
  int buffer_fd = -1;  // borrowed: the import outlives it
  std::uint64_t queue_bytes = 0;
  std::uint64_t buffer_bytes = 0;
  std::uint32_t threads = 1;  // pollers wanted; at most one per slot is started
  std::string name;           // for the log: "connection 3 client 42"
};

struct BufferRegistration {
  int fd = -1;  // borrowed: the import outlives it
  std::uint64_t handle_bytes = 0;
  std::uint64_t buffer_offset = 0;
  std::uint64_t buffer_bytes = 0;
};

class Lease {
 public:
  // Maps, checks and imports, then starts the pollers. Null with *error (a negative errno) and
  // *reason when the lease cannot be set up (nothing is left mapped or imported then).
  // `files`, `backend` and `counters` must outlive the lease.
  static std::unique_ptr<Lease> attach(const LeaseRequest& request, BufferBackend& backend,
                                       const OpenFiles& files, ServiceCounters& counters, int* error,
                                       std::string* reason);

  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  ~Lease() { revoke(); }

  void revoke();

  // Checks the sizes (checkBufferRegistration), imports handle_bytes of fd through the
  // lease's backend and registers [buffer_offset, +buffer_bytes) of it. Its id (>= 1), or a
  // negative errno with *reason (-EMFILE when kMaxRegisteredBuffers are registered); nothing
  // stays imported on failure.
  std::int64_t registerBuffer(const BufferRegistration& registration, std::string* reason);
  // Ends registration `id` once no write to it is in progress (RegisteredBuffers::remove).
  // 0, or -ENOENT.
  int unregisterBuffer(std::uint32_t id) { return registered_.remove(id); }

  const agileos_storage_queue_header& header() const { return queue_.header(); }
  std::size_t pollers() const { return pollers_.size(); }

 private:
  Lease(std::string name, BufferBackend& backend, const OpenFiles& files, ServiceCounters& counters)
      : name_(std::move(name)), backend_(backend), files_(files), counters_(counters) {}

  void poll(std::uint32_t first_slot, std::uint32_t stride, SlotWriter* writer);
  std::int64_t serve(std::uint32_t slot, const Submission& submission, SlotWriter* writer);
  void noteRefusal(std::uint32_t slot, const Submission& submission, std::int64_t result,
                   const std::string& why);

  const std::string name_;
  BufferBackend& backend_;
  const OpenFiles& files_;
  ServiceCounters& counters_;
  QueueRegion queue_;
  std::unique_ptr<ImportedBuffer> buffer_;
  RegisteredBuffers registered_;
  std::vector<std::unique_ptr<SlotWriter>> writers_;  // writers_[k]: poller k's
  std::vector<std::thread> pollers_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> refusal_logged_{false};  // the first refused entry is a warning, the rest debug
};

}  // namespace agileos::services::storage
