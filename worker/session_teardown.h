// Releasing what a client holds: on cudaDeviceReset, on module unload, and when
// the client's session ends (disconnect, crash, or worker retirement).
// Callers must have synchronized the context first, so nothing in flight still
// uses what is released.
#pragma once

#include "memmgr/memory_manager.h"
#include "worker/backend/gpu_backend.h"
#include "worker/client_session.h"

namespace agileos::worker {

void releaseStreamsAndEvents(GpuBackend& gpu, ClientSession& session);

// Frees the client's user allocations; the globals of its loaded modules stay valid.
void releaseUserMemory(memmgr::MemoryManager& memory, ClientSession& session);

// Puts every context limit the client changed back to its value before the client's first
// change, and drops the charge for them. A limit the driver will not restore (the malloc heap
// once a kernel used it) keeps its record, at the value the context has, and its charge; false
// then.
bool restoreContextLimits(GpuBackend& gpu, memmgr::MemoryManager& memory, ClientSession& session);

// Unloads one module that has already been removed from the session's table.
void unloadModule(GpuBackend& gpu, memmgr::MemoryManager& memory, ClientSession& session,
                  const ModuleRecord& module);

// Everything: synchronize, library objects, protected module instances (reverse order), streams,
// events, modules, context limits, memory, protected memory. Never fails; problems are logged.
void releaseSession(GpuBackend& gpu, memmgr::MemoryManager& memory, ClientSession& session);

}  // namespace agileos::worker
