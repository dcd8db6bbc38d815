// The `cuda` buffer backend: the lease's data buffer is device memory the worker exported as a
// CUDA POSIX-fd shareable handle. import() is cuMemImportFromShareableHandle, then
// cuMemAddressReserve + cuMemMap + cuMemSetAccess (read-write for this device) in the service's
// own primary context on `device`; a SlotWriter owns a stream and a pinned staging buffer
// (cuMemHostAlloc) and writes with cuMemcpyHtoDAsync followed by a stream synchronisation.
//
// CUDA is loaded and initialised at the first import (cuda_driver.h); a failure there is kept,
// and refuses every later import with the same reason (-ENODEV).
//
// Needs a GPU: exercised by the GPU tests only; the CPU tests run the host backend.
#pragma once

#include <memory>

#include "services/storage/buffer_backend.h"

namespace agileos::services::storage {

std::unique_ptr<BufferBackend> makeCudaBufferBackend(int device_ordinal);

}  // namespace agileos::services::storage
