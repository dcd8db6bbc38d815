// CallStatistics: what the worker's calls cost, per operation, since the worker started: calls,
// errors, latency of the calls clients waited for (sum, count and buckets of
// proto/wire/call_latency_buckets.h), and the bytes copied each way. The control channel reports it to the
// daemon (WorkerUsage), which exports it.
//
// record() runs on every call of every client, from any transport thread: one slot of relaxed
// atomics per operation, no lock, no allocation. A report may see a call's count without its
// latency; the next report is exact again (every number is cumulative).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>

#include "agileos/v1/client_api.pb.h"
#include "agileos/v1/worker_control.pb.h"
#include "proto/wire/call_latency_buckets.h"

namespace agileos::worker {

class CallStatistics {
 public:
  // One dispatched call: `request` as received, `reply` as answered, `elapsed` around the dispatch
  // (none for a call its client did not wait for: counted, not timed).
  void record(const v1::CallRequest& request, const v1::CallReply& reply,
              std::optional<std::chrono::nanoseconds> elapsed);

  // Every operation called at least once, and the bytes copied, into `usage` (cumulative).
  void report(v1::internal::WorkerUsage* usage) const;

  static constexpr std::size_t kBuckets = wire::kCallLatencyBoundsMicros.size() + 1;

 private:
  struct Slot {
    std::atomic<std::uint64_t> calls{0};
    std::atomic<std::uint64_t> errors{0};
    std::atomic<std::uint64_t> latencyNsSum{0};  // of the timed calls, which the buckets count
    std::array<std::atomic<std::uint64_t>, kBuckets> buckets{};
  };
  static constexpr std::size_t kSlots = 128;  // > the largest field number of CallRequest.op

  std::array<Slot, kSlots> slots_{};
  std::atomic<std::uint64_t> bytesHostToDevice_{0};
  std::atomic<std::uint64_t> bytesDeviceToHost_{0};
  std::atomic<std::uint64_t> bytesDeviceToDevice_{0};
};

}  // namespace agileos::worker
