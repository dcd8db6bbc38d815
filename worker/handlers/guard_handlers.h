// The kernel memory guard's work inside calls (worker/session_guard.h): preparing the
// client's guard state before a module is guarded, reading the hit count after
// synchronising calls, the GuardStatus call, and the guard's part of session teardown.
#pragma once

#include <string>

#include "worker/call_context.h"

namespace agileos::worker {

// Whether the client's context holds protected state: what the guard is there to protect.
// The one definition (the gate in module_loading.h and prepareModuleGuard use it): the
// client's kState protected allocations (protected modules' memory, cuFFT work areas, the
// test canary) and I/O placements in the memory manager, and its protected modules (any
// instance or device code). The guard's own page (hit count, quarantine) does not count: it
// holds only the guard's account of this client's own kernels.
bool contextHoldsProtectedState(CallContext& ctx);

// The reason given when a step that would give a client protected state is refused because it
// runs unguarded code (memmgr::MemoryManager::admitUnguardedCode).
std::string unguardedCodeRefusal();

// The guard setting the client's next module is prepared with: off unless the client's
// policy is on and (guard.require = always, or contextHoldsProtectedState), with
// protectedState filled in. Creates what the policy needs (the guard page; the test canary,
// which is protected state) on first use. False and *error on failure.
bool prepareModuleGuard(CallContext& ctx, GuardConfig* effective, std::string* error);

// After a successful synchronizing call: reads the hit count if a kernel ran since the
// last read and acts per policy (poison fails `reply`).
void checkGuardAfterSynchronize(CallContext& ctx, v1::CallReply& reply);

// The reply every call of a poisoned client gets.
void refusePoisoned(v1::CallReply& reply);

// At session end: logs the final count; the memory goes with releaseProtected.
void releaseSessionGuard(GpuBackend& gpu, ClientSession& session);

}  // namespace agileos::worker
