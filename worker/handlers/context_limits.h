// Context limits with their device memory charged to the client's quota (issue 14).
//
// The driver sets device memory aside for some context limits (driver_limit_cost.h). It does so
// when a client calls cudaDeviceSetLimit, and also on its own: "The driver automatically
// increases the per-thread stack size for each kernel launch as needed" (cuCtxSetLimit), to the
// kernel's local memory per thread, for every thread the device can hold resident, and keeps it
// after the launch. Measured on an H200: a kernel with 480 KiB of local memory sets aside
// 132.6 GB at its first launch, however small its grid; setting the stack back releases it.
//
// Both ways go through one charged change: the rise is charged to the client's quota before the
// driver sees the new value, the value the driver then reports is what stays charged (it rounds
// a stack up to 16 bytes), and a change that does not fit is refused with
// cudaErrorMemoryAllocation and changes nothing. For a launch, the worker raises the stack itself
// (cuCtxSetLimit) before cuLaunchKernel, so the driver never grows it past what is charged.
//
// Invariant: whenever a launch reaches the driver, the context's stack is at least the kernel's
// local memory and the client's driver charge covers that stack. deviceSetLimit runs alone
// within its client (Exclusivity::kInvalidates), so no launch checks against a stack that a
// concurrent cudaDeviceSetLimit is lowering.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

#include "worker/call_context.h"

namespace agileos::worker {

// cudaDeviceSetLimit: sets `limit` to `value` with the rise charged first.
bool setLimitCharged(CallContext& ctx, CUlimit limit, std::size_t value, v1::CallReply& reply);

// The slow path of coverLocalMemory: raises the stack to `localBytes`, charged.
bool raiseStackForLaunch(CallContext& ctx, std::uint32_t localBytes, v1::CallReply& reply);

// Before a launch of `function`: makes the context's stack cover its local memory, charged.
// One atomic load when it already does (nearly every launch).
inline bool coverLocalMemory(CallContext& ctx, const FunctionRecord& function, v1::CallReply& reply) {
  if (function.localBytes <= ctx.session.stackCovered.load(std::memory_order_acquire)) return true;
  return raiseStackForLaunch(ctx, function.localBytes, reply);
}

}  // namespace agileos::worker
