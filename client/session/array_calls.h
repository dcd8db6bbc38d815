// The worker calls behind both shims' arrays and texture and surface objects (untrusted side):
// each sends one ArrayTexture step and records what the queries need (array_registry.h).
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "agileos/v1/client_api.pb.h"
#include "client/session/array_registry.h"

namespace agileos::client {

// An array (levels 0) or a mipmapped array of `levels` levels; *token is its cudaArray_t.
cudaError_t createArrayOnWorker(const ArrayInfo& info, CUarray_format format, unsigned channels,
                                std::uint64_t* token);
// Destroys a plain or mipmapped array (null: nothing) and forgets it.
cudaError_t destroyArrayOnWorker(std::uint64_t token);
// The token of level `level` of a mipmapped array, recorded with the level's extent.
cudaError_t mipmapLevelOnWorker(std::uint64_t token, unsigned level, std::uint64_t* levelToken);
// Sends a TEXTURE_CREATE or SURFACE_CREATE request; *object is the driver's handle.
cudaError_t createObjectOnWorker(const v1::CallRequest& request, std::uint64_t* object);
cudaError_t destroyObjectOnWorker(std::uint64_t object, v1::ArrayTexture::Step step);

}  // namespace agileos::client
