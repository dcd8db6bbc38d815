// What a context limit costs in device memory, for the client's quota (issue 14: the worker
// "bounds the driver-side allocations it can").
//
// The driver sets device memory aside, outside the worker's memory manager, for some context
// limits a client may raise with cudaDeviceSetLimit: a stack for every thread the device can
// hold resident, the device malloc heap, the printf FIFO, and a slot per pending device-side
// launch. Left uncounted, one client could take gigabytes past its quota with one call (a 64 KiB
// stack on an H200 sets aside 132 SMs x 2048 threads x 64 KiB = 16.5 GiB). The worker charges
// the rise of each limit over the value its context started with (that part is the context's
// own, inside memory.reserve_bytes) to the client's quota before the driver sees the call.
//
// The numbers are the driver's documented reservations where it documents them (stack: per
// resident thread; heap and FIFO: the size asked for) and a stated upper estimate where it
// does not (pending launches). Limits that set no memory aside (L2 settings, sync depth, which
// sm_90 and later do not support) cost 0.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <map>

#include "worker/backend/gpu_backend.h"

namespace agileos::worker {

// Device memory one pending device-side launch slot is charged (an upper estimate: the driver
// does not document it; its launch records are a few hundred bytes).
inline constexpr std::uint64_t kPendingLaunchSlotBytes = 4096;

// Costs saturate here, so sums of costs and charges cannot wrap.
inline constexpr std::uint64_t kMaxLimitCost = std::uint64_t{1} << 62;

// Threads the device can hold resident at once (SMs x resident threads per SM), from the
// device's attributes; 0 when it does not report them.
std::uint64_t residentThreads(const DeviceDescription& device);

// The device memory `limit` set to `value` sets aside on `device` (saturating at kMaxLimitCost).
std::uint64_t driverLimitCost(CUlimit limit, std::size_t value, const DeviceDescription& device);

// A limit a client changed: the context's value before its first change, and the value now.
struct LimitChange {
  std::size_t initial = 0;
  std::size_t current = 0;
};

// What a client's changed limits (keyed by CUlimit) cost its quota: the sum, over the limits,
// of what the current value sets aside beyond what the initial value did (a lowered limit
// earns nothing back: the context's own share is not the client's to spend). Saturating.
std::uint64_t driverLimitCharge(const std::map<int, LimitChange>& changes, const DeviceDescription& device);

}  // namespace agileos::worker
