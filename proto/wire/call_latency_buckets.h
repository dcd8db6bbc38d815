// The latency buckets of the worker's call counts (WorkerUsage.operations in
// proto/agileos/v1/worker_control.proto), shared by the worker, which counts into them, and the
// daemon, which exports them as Prometheus histograms with these bounds.
//
// Invariant: strictly increasing; a report has kCallLatencyBoundsMicros.size() + 1 buckets per
// operation (the last one unbounded), and the daemon ignores an operation whose count differs.
#pragma once

#include <array>
#include <cstdint>

namespace agileos::wire {

// From a few microseconds (a launch sent without waiting) to a second (a synchronize behind long
// kernels, a module compile).
inline constexpr std::array<std::uint64_t, 14> kCallLatencyBoundsMicros = {
    5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 50000, 250000, 1000000};

}  // namespace agileos::wire
