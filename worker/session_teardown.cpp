#include "worker/session_teardown.h"

#include <spdlog/spdlog.h>

#include "worker/adapters/library_adapter.h"
#include "worker/handlers/array_texture_handlers.h"
#include "worker/handlers/guard_handlers.h"

namespace agileos::worker {

void releaseStreamsAndEvents(GpuBackend& gpu, ClientSession& session) {
  session.launchChains.dropAll(gpu);
  // Pending stream-ordered frees' events and the pools; the memory goes with the client's.
  session.streamOrdered.dropAll(gpu);
  session.graphMemory.dropEvents([&gpu](CUevent event) { gpu.eventDestroy(event); });
  for (auto& [token, stream] : session.streams.drain()) gpu.streamDestroy(stream.stream);
  for (auto& [token, event] : session.events.drain()) gpu.eventDestroy(event.event);
}

void releaseUserMemory(memmgr::MemoryManager& memory, ClientSession& session) {
  memory.releaseClient(session.id());
  session.graphMemory.clear();  // the reservations were the client's memory
  // releaseClient forgets module globals too; the modules stay loaded, so their
  // globals are registered again.
  for (const auto& [token, module] : session.modules.snapshot()) {
    for (const GlobalRange& global : module.globals) {
      memory.registerModuleGlobal(session.id(), global.base, global.size);
    }
  }
}

bool restoreContextLimits(GpuBackend& gpu, memmgr::MemoryManager& memory, ClientSession& session) {
  std::lock_guard lock(session.limitsMutex);
  std::map<int, LimitChange> kept;
  for (const auto& [limit, change] : session.changedLimits) {
    const CUresult result = gpu.setLimit(static_cast<CUlimit>(limit), change.initial);
    if (result == CUDA_SUCCESS) continue;
    // The driver keeps it (it refuses to change the malloc heap once a kernel used it): the
    // memory stays set aside, so its record and charge stay, at the value the context has.
    std::size_t actual = change.current;
    if (gpu.getLimit(static_cast<CUlimit>(limit), &actual) != CUDA_SUCCESS) actual = change.current;
    spdlog::warn(
        "client {}: the driver keeps context limit {} at {} (restoring {} failed: {}); it stays charged",
        session.id(), limit, actual, change.initial, int(result));
    kept[limit] = {change.initial, actual};
  }
  session.changedLimits = kept;
  // Unknown again: the next launch of a kernel with local memory reads it.
  session.stackCovered.store(0, std::memory_order_release);
  // Lower or equal unless the driver rounded a kept value up; then the old charge stays.
  memory.setDriverCharge(session.id(), memmgr::DriverShare::kContextLimits,
                         driverLimitCharge(kept, gpu.device()));
  return kept.empty();
}

void unloadModule(GpuBackend& gpu, memmgr::MemoryManager& memory, ClientSession& session,
                  const ModuleRecord& module) {
  // Kept launch chains may name the module's functions: they go before it does.
  session.launchChains.dropAll(gpu);
  for (Token function : module.functions) session.functions.erase(function);
  for (const GlobalRange& global : module.globals) memory.forgetModuleGlobal(session.id(), global.base);
  releaseManagedVariables(session, module);
  const CUresult result = gpu.moduleUnload(module.module);
  if (result != CUDA_SUCCESS) {
    // The driver may still hold the module's memory: it stays charged until the session ends.
    spdlog::warn("client {}: cuModuleUnload failed ({})", session.id(), int(result));
    return;
  }
  memory.subtractDriverCharge(session.id(), memmgr::DriverShare::kModuleImages, module.deviceBytes);
}

void releaseSession(GpuBackend& gpu, memmgr::MemoryManager& memory, ClientSession& session) {
  const CUresult sync = gpu.synchronizeContext();
  if (sync != CUDA_SUCCESS) {
    spdlog::warn("client {}: context synchronize at teardown failed ({}); releasing anyway", session.id(),
                 int(sync));
  }
  // Library objects first: a plan's destructor may still name the client's streams.
  session.libraryObjects.drain();
  session.libraryStates.clear();
  // Then the protected module instances, last created first (dependencies outlive their
  // dependents): after the library objects, so no client-made object still works when a
  // plugin's cleanup runs; before the client's streams, modules and memory, so the cleanup
  // sees the context as the client's calls left it; and before releaseProtected, so each
  // plugin's cleanup still finds its protected memory and what it leaves is revoked through
  // its own instance (and reported) rather than pulled from under a live instance.
  if (session.protectedModules) session.protectedModules->tearDown();
  // Objects and arrays before the streams: nothing of the client runs any more (synchronized).
  releaseArraysAndObjects(gpu, memory, session);
  releaseStreamsAndEvents(gpu, session);
  session.hostSegments.drain();  // after the synchronize: no copy still targets them
  session.hostSegmentBytes = 0;
  for (auto& [token, module] : session.modules.drain()) unloadModule(gpu, memory, session, module);
  session.functions.drain();
  releaseSessionGuard(gpu, session);
  if (!restoreContextLimits(gpu, memory, session)) {
    // Only a context that serves one client after another would care (dedicated placement
    // retires the worker after its client); such a placement must retire it as well.
    spdlog::warn("client {}: the context keeps a limit the client raised", session.id());
  }
  for (auto share : {memmgr::DriverShare::kContextLimits, memmgr::DriverShare::kModuleImages,
                     memmgr::DriverShare::kArrays})
    memory.setDriverCharge(session.id(), share, 0);
  memory.releaseClient(session.id());
  memory.releaseProtected(session.id());
  memory.setQuota(session.id(), 0);
}

}  // namespace agileos::worker
