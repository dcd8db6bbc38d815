#include "worker/handlers/context_limits.h"

#include <map>
#include <string>

#include "worker/driver_limit_cost.h"

namespace agileos::worker {
namespace {

constexpr memmgr::DriverShare kLimits = memmgr::DriverShare::kContextLimits;

// Sets `limit` to `value` for the client, charged: the caller holds session.limitsMutex.
// `what` names the change for the refusal ("limit 0 = 65536", "kernel local memory ...").
bool changeLimitLocked(CallContext& ctx, CUlimit limit, std::size_t value, const std::string& what,
                       v1::CallReply& reply) {
  std::map<int, LimitChange> proposed = ctx.session.changedLimits;
  std::size_t before = 0;  // the context's value now, restored if the change cannot stand
  if (auto it = proposed.find(limit); it != proposed.end()) {
    before = it->second.current;
  } else {
    if (!succeeded(ctx, ctx.gpu.getLimit(limit, &before), reply, "cuCtxGetLimit")) return false;
    proposed[limit].initial = before;
  }
  proposed[limit].current = value;
  const ClientId client = ctx.session.id();
  const std::uint64_t previousCharge = ctx.memory.driverCharge(client, kLimits);
  const DeviceDescription& device = ctx.gpu.device();
  const auto refuseOverQuota = [&](std::uint64_t charge) {
    return refuse(reply, cudaErrorMemoryAllocation,
                  what + " sets aside " + std::to_string(charge - previousCharge) +
                      " more bytes of device memory than the client's quota has left");
  };
  std::uint64_t charge = driverLimitCharge(proposed, device);
  if (!ctx.memory.setDriverCharge(client, kLimits, charge)) return refuseOverQuota(charge);
  if (!succeeded(ctx, ctx.gpu.setLimit(limit, value), reply, "cuCtxSetLimit")) {
    ctx.memory.setDriverCharge(client, kLimits, previousCharge);
    return false;
  }
  // What stays charged is the value the driver reports, which it may have rounded up.
  std::size_t actual = value;
  if (ctx.gpu.getLimit(limit, &actual) == CUDA_SUCCESS && actual != value) {
    proposed[limit].current = actual;
    charge = driverLimitCharge(proposed, device);
    if (!ctx.memory.setDriverCharge(client, kLimits, charge)) {
      ctx.gpu.setLimit(limit, before);
      ctx.memory.setDriverCharge(client, kLimits, previousCharge);
      return refuseOverQuota(charge);
    }
  }
  if (limit == CU_LIMIT_STACK_SIZE) ctx.session.stackCovered.store(actual, std::memory_order_release);
  ctx.session.changedLimits = std::move(proposed);
  return true;
}

}  // namespace

bool setLimitCharged(CallContext& ctx, CUlimit limit, std::size_t value, v1::CallReply& reply) {
  std::lock_guard lock(ctx.session.limitsMutex);
  return changeLimitLocked(ctx, limit, value,
                           "limit " + std::to_string(limit) + " = " + std::to_string(value), reply);
}

bool raiseStackForLaunch(CallContext& ctx, std::uint32_t localBytes, v1::CallReply& reply) {
  std::lock_guard lock(ctx.session.limitsMutex);
  std::size_t stack = 0;
  if (auto it = ctx.session.changedLimits.find(CU_LIMIT_STACK_SIZE); it != ctx.session.changedLimits.end()) {
    stack = it->second.current;
  } else if (!succeeded(ctx, ctx.gpu.getLimit(CU_LIMIT_STACK_SIZE, &stack), reply, "cuCtxGetLimit")) {
    return false;
  }
  if (localBytes <= stack) {  // the context's own stack covers it (or a launch raced here first)
    ctx.session.stackCovered.store(stack, std::memory_order_release);
    return true;
  }
  return changeLimitLocked(
      ctx, CU_LIMIT_STACK_SIZE, localBytes,
      "the kernel's " + std::to_string(localBytes) +
          " bytes of local memory per thread (the driver's stack for every resident thread)",
      reply);
}

}  // namespace agileos::worker
