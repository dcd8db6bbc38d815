// The `cuda` buffer backend: the lease's data buffer, and each registered buffer, is device
// memory the worker exported as a CUDA POSIX-fd shareable handle. import() is
// cuMemImportFromShareableHandle, then cuMemAddressReserve + cuMemMap of the whole size from
// offset 0 + cuMemSetAccess (read-write for this device), all in the service's own primary
// context on `device`; a SlotWriter owns a stream and a pinned staging buffer (cuMemHostAlloc)
// and writes, into a slot or into any buffer of this backend, with cuMemcpyHtoDAsync followed
// by a stream synchronisation. Every import shares the one context, so any writer's stream can
// copy into any of them.
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
