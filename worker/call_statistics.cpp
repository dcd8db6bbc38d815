#include "worker/call_statistics.h"

#include <algorithm>

#include "proto/wire/wire_operations.h"

namespace agileos::worker {
namespace {

constexpr auto kRelaxed = std::memory_order_relaxed;

std::size_t bucketOf(std::chrono::nanoseconds elapsed) {
  const auto micros = static_cast<std::uint64_t>(std::max<std::int64_t>(elapsed.count(), 0)) / 1000;
  const auto& bounds = wire::kCallLatencyBoundsMicros;
  return static_cast<std::size_t>(std::lower_bound(bounds.begin(), bounds.end(), micros) - bounds.begin());
}

// The bytes a successful copy moved with this message (a copy may come in several messages,
// each counted for its own part).
void countCopied(const v1::CallRequest& request, std::atomic<std::uint64_t>& toDevice,
                 std::atomic<std::uint64_t>& toHost, std::atomic<std::uint64_t>& onDevice) {
  switch (request.op_case()) {
    case v1::CallRequest::kMemcpyHtod: {
      const auto& copy = request.memcpy_htod();
      toDevice.fetch_add(copy.has_source() ? copy.source().size() : copy.data().size(), kRelaxed);
      break;
    }
    case v1::CallRequest::kMemcpyDtoh:
      toHost.fetch_add(request.memcpy_dtoh().size(), kRelaxed);
      break;
    case v1::CallRequest::kMemcpyDtod:
      onDevice.fetch_add(request.memcpy_dtod().size(), kRelaxed);
      break;
    default:
      break;
  }
}

}  // namespace

void CallStatistics::record(const v1::CallRequest& request, const v1::CallReply& reply,
                            std::optional<std::chrono::nanoseconds> elapsed) {
  const auto op = static_cast<std::size_t>(request.op_case());
  if (op == 0 || op >= kSlots) return;
  Slot& slot = slots_[op];
  slot.calls.fetch_add(1, kRelaxed);
  if (elapsed) {
    slot.latencyNsSum.fetch_add(static_cast<std::uint64_t>(std::max<std::int64_t>(elapsed->count(), 0)),
                                kRelaxed);
    slot.buckets[bucketOf(*elapsed)].fetch_add(1, kRelaxed);
  }
  if (reply.error() != 0) {
    slot.errors.fetch_add(1, kRelaxed);
    return;
  }
  countCopied(request, bytesHostToDevice_, bytesDeviceToHost_, bytesDeviceToDevice_);
}

void CallStatistics::report(v1::internal::WorkerUsage* usage) const {
  for (const wire::WireOperation& operation : wire::wireOperations()) {
    const Slot& slot = slots_[static_cast<std::size_t>(operation.op)];
    const std::uint64_t calls = slot.calls.load(kRelaxed);
    if (calls == 0) continue;
    v1::internal::OperationCalls* out = usage->add_operations();
    out->set_operation(std::string(operation.name));
    out->set_calls(calls);
    out->set_errors(slot.errors.load(kRelaxed));
    out->set_latency_ns_sum(slot.latencyNsSum.load(kRelaxed));
    for (const auto& bucket : slot.buckets) out->add_latency_buckets(bucket.load(kRelaxed));
  }
  usage->set_bytes_host_to_device(bytesHostToDevice_.load(kRelaxed));
  usage->set_bytes_device_to_host(bytesDeviceToHost_.load(kRelaxed));
  usage->set_bytes_device_to_device(bytesDeviceToDevice_.load(kRelaxed));
}

}  // namespace agileos::worker
