// CUDA arrays, copies to, from and between them, and texture and surface objects (proto
// ArrayTexture). Every array, range and object a request names is resolved against the calling
// client's own (ArrayTable, MemoryManager) before the driver sees it.
#pragma once

#include "memmgr/memory_manager.h"
#include "worker/backend/gpu_backend.h"
#include "worker/call_context.h"
#include "worker/client_session.h"
#include "worker/dispatcher.h"

namespace agileos::worker {

// The steps that end something another call may have resolved (destroying an array or an
// object) run alone within their client; creations and copies run concurrently.
Exclusivity arrayTextureExclusivity(const v1::ArrayTexture& request);

// Destroys every texture and surface object of the client, then its arrays, and gives their
// charge back (session end and cudaDeviceReset). The caller has synchronized the context.
void releaseArraysAndObjects(GpuBackend& gpu, memmgr::MemoryManager& memory, ClientSession& session);

// Texture and surface objects (texture_object_handlers.cpp), steps of the same operation.
void createTextureObject(CallContext& ctx, const v1::ArrayTexture& args, v1::CallReply& reply);
void createSurfaceObject(CallContext& ctx, const v1::ArrayTexture& args, v1::CallReply& reply);
void destroyObject(CallContext& ctx, const v1::ArrayTexture& args, ObjectKind kind, v1::CallReply& reply);
// Gives a retired array's records to the driver and its charge back (arrays no object views).
void destroyArrayRecords(GpuBackend& gpu, memmgr::MemoryManager& memory, ClientSession& session,
                         const std::vector<ArrayRecord>& records);

}  // namespace agileos::worker
