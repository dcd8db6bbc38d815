// cudaMemcpy3D's copies that name a CUDA array (api_arrays.cpp), for api_memory_3d.cpp.
#pragma once

#include <cuda_runtime_api.h>

#include "client/session/copy_engine.h"

// `p` names an array at one end or both; `kind` is valid. Extent and array positions are in the
// array's elements (as CUDA documents), a linear end's x in bytes. Does not record the error.
cudaError_t agileosMemcpy3DWithArray(const cudaMemcpy3DParms* p, cudaMemcpyKind kind,
                                     agileos::client::CopyTarget target);
