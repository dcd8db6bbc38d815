#include "worker/handlers/guard_handlers.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <vector>

#include "worker/dispatcher.h"
#include "worker/protected_modules/module_set.h"

namespace agileos::worker {
namespace {

// Reads guard state on the guard's own non-blocking stream, which waits for nothing else.
bool readGuardState(GpuBackend& gpu, SessionGuard& guard, void* out, memmgr::DevicePtr from,
                    std::size_t bytes) {
  return gpu.copyDeviceToHost(out, from, bytes, guard.readStream, true) == CUDA_SUCCESS &&
         gpu.streamSynchronize(guard.readStream) == CUDA_SUCCESS;
}

// The hit count (0 while the client has no guard page).
bool readHits(GpuBackend& gpu, SessionGuard& guard, std::uint64_t* hits) {
  *hits = 0;
  return guard.page == 0 || readGuardState(gpu, guard, hits, guard.page, sizeof *hits);
}

// Reads the test canary; false if it cannot be read (a lost context), which is not the
// same as a damaged canary.
bool readCanary(GpuBackend& gpu, SessionGuard& guard, bool* intact) {
  std::vector<std::uint8_t> bytes(kGuardPageBytes);
  if (!readGuardState(gpu, guard, bytes.data(), guard.canary, bytes.size())) return false;
  *intact = std::all_of(bytes.begin(), bytes.end(), [](std::uint8_t b) { return b == kCanaryByte; });
  return true;
}

void guardStatus(CallContext& ctx, const v1::CallRequest&, v1::CallReply& reply) {
  SessionGuard& guard = ctx.session.guard;
  std::lock_guard lock(guard.mutex);
  // Built aside and attached only when complete: a refused query carries no partial verdict.
  v1::GuardStatus status;
  status.set_policy(policyName(guard.setting));
  std::uint64_t hits = 0;
  if (!readHits(ctx.gpu, guard, &hits)) {
    refuse(reply, cudaErrorUnknown, "the guard's hit count cannot be read");
    return;
  }
  status.set_hits(hits);
  status.set_poisoned(guard.poisoned);
  status.set_applied(guard.applied);
  if (guard.canary != 0) {
    bool intact = false;
    if (!readCanary(ctx.gpu, guard, &intact)) {
      refuse(reply, cudaErrorUnknown, "the guard's test canary cannot be read (the context is lost)");
      return;
    }
    status.set_canary_address(guard.canary);
    status.set_canary_bytes(kGuardPageBytes);
    status.set_canary_intact(intact);
  }
  *reply.mutable_guard_status() = std::move(status);
}

}  // namespace

bool contextHoldsProtectedState(CallContext& ctx) {
  // Protected modules count whatever they hold (instances, device code: fixed at attach); I/O
  // mappings are in no protected allocation, yet a module's queue there must be out of the
  // client's reach all the same, so the memory manager counts them with its kState allocations
  // (the guard's own page excluded).
  return ctx.memory.holdsProtectedState(ctx.session.id()) ||
         (ctx.session.protectedModules && ctx.session.protectedModules->holdsProtectedState());
}

std::string unguardedCodeRefusal() {
  return "this client runs code loaded without the kernel memory guard (a SASS-only module, or a "
         "module loaded while its context held no protected state under guard.require = "
         "protected_state), so its context may not gain protected state while that code is loaded";
}

bool prepareModuleGuard(CallContext& ctx, GuardConfig* effective, std::string* error) {
  SessionGuard& guard = ctx.session.guard;
  *effective = guard.setting;
  if (!guard.setting.enabled) return true;
  std::lock_guard lock(guard.mutex);
  const ClientId client = ctx.session.id();
  // The stream that reads guard state back: made with the first state there is to read.
  auto ensureReadStream = [&] {
    if (guard.readStream == nullptr &&
        ctx.gpu.streamCreate(CU_STREAM_NON_BLOCKING, 0, &guard.readStream) != CUDA_SUCCESS) {
      *error = "cannot create the guard's stream";
      return false;
    }
    return true;
  };
  if (ctx.guard != nullptr && ctx.guard->testCanary && guard.canary == 0) {
    if (!ensureReadStream()) return false;
    memmgr::DevicePtr canary = 0;
    if (const CUresult result = ctx.memory.allocateProtected(client, kGuardPageBytes, &canary);
        result != CUDA_SUCCESS) {
      *error = result == CUDA_ERROR_NOT_PERMITTED
                   ? "cannot set up the guard's test canary: " + unguardedCodeRefusal()
                   : "cannot set up the guard's test canary";
      return false;
    }
    guard.canary = canary;  // freed with the client's protected memory, whatever happens next
    if (ctx.gpu.memsetBytes(canary, kCanaryByte, kGuardPageBytes, nullptr, false) != CUDA_SUCCESS) {
      *error = "cannot fill the guard's test canary";
      return false;
    }
    spdlog::warn("client {}: TEST MODE: a guard canary at {:#x} (--test-guard-canary)", client, canary);
  }
  const bool protectedState = contextHoldsProtectedState(ctx);
  effective->protectedState = protectedState;
  if (!guard.setting.always && !protectedState) {
    if (!guard.notAppliedLogged) {
      spdlog::info(
          "client {}: kernel memory guard ({}) not applied: its context holds no protected state "
          "(guard.require = protected_state), and an access to the unmapped protected range faults",
          client, ptx::toString(guard.setting.ptx.policy));
      guard.notAppliedLogged = true;
    }
    effective->enabled = false;
    return true;
  }
  if (guard.setting.ptx.policy != ptx::GuardPolicy::kTrap && guard.page == 0) {
    if (!ensureReadStream()) return false;
    memmgr::DevicePtr page = 0;
    // The guard's own state, not protected state (memmgr::ProtectedUse::kGuardState).
    if (CUresult result =
            ctx.memory.allocateProtected(client, kGuardPageBytes, &page, memmgr::ProtectedUse::kGuardState);
        result != CUDA_SUCCESS) {
      *error = "cannot allocate the guard's protected page (CUresult " + std::to_string(result) + ")";
      return false;
    }
    guard.page = page;
  }
  effective->ptx = guardOptionsFor(guard.setting.ptx.policy, guard.page);
  if (std::string invalid = ptx::validate(effective->ptx); !invalid.empty()) {
    *error = "internal: guard options: " + invalid;
    return false;
  }
  guard.applied = true;
  return true;
}

void refusePoisoned(v1::CallReply& reply) {
  refuse(reply, cudaErrorIllegalAddress,
         "a kernel of this client accessed protected memory (kernel memory guard, policy poison); "
         "the accesses were not carried out, and every later call fails");
}

void checkGuardAfterSynchronize(CallContext& ctx, v1::CallReply& reply) {
  SessionGuard& guard = ctx.session.guard;
  if (!guard.setting.enabled || guard.setting.ptx.policy == ptx::GuardPolicy::kTrap) return;
  if (!guard.launched.exchange(false)) return;
  std::lock_guard lock(guard.mutex);
  std::uint64_t hits = 0;
  if (!readHits(ctx.gpu, guard, &hits)) {
    spdlog::error("client {}: the guard's hit count cannot be read", ctx.session.id());
    return;
  }
  const std::uint64_t seen = guard.hitsSeen.load();
  if (hits == seen) return;
  const std::uint64_t fresh = hits - seen;
  guard.hitsSeen.store(hits);
  switch (guard.setting.ptx.policy) {
    case ptx::GuardPolicy::kPoison:
      spdlog::warn(
          "client {}: the kernel memory guard redirected {} access(es) to protected memory; the client "
          "is poisoned (every later call fails)",
          ctx.session.id(), fresh);
      guard.poisoned = true;
      refusePoisoned(reply);
      return;
    case ptx::GuardPolicy::kReport:
      spdlog::warn(
          "client {}: {} access(es) to protected memory were counted and NOT stopped (guard policy "
          "report enforces nothing); {} in all",
          ctx.session.id(), fresh, hits);
      return;
    default:
      spdlog::warn(
          "client {}: the kernel memory guard ({}) redirected {} access(es) to protected memory; {} in all",
          ctx.session.id(), ptx::toString(guard.setting.ptx.policy), fresh, hits);
      return;
  }
}

void releaseSessionGuard(GpuBackend& gpu, ClientSession& session) {
  SessionGuard& guard = session.guard;
  std::lock_guard lock(guard.mutex);
  std::uint64_t hits = 0;
  if (guard.page != 0 && readHits(gpu, guard, &hits) && hits != 0) {
    spdlog::info("client {}: kernel memory guard ({}): {} access(es) to protected memory in the session",
                 session.id(), policyName(guard.setting), hits);
  }
  if (guard.readStream != nullptr) gpu.streamDestroy(guard.readStream);
  guard.readStream = nullptr;
  guard.page = 0;
  guard.canary = 0;
}

void registerGuardHandlers(HandlerRegistry& registry) {
  registry.add(v1::CallRequest::kGuardStatusQuery, guardStatus);
}

}  // namespace agileos::worker
