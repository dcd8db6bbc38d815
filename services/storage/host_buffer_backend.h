// The `host` buffer backend: the lease's data buffer, and each registered buffer, is a mappable
// file (the CPU tests pass memfds), mapped MAP_SHARED; a write is a memcpy from the writer's
// staging. Tests only in practice: production buffers are device memory
// (cuda_buffer_backend.h).
#pragma once

#include <memory>

#include "services/storage/buffer_backend.h"

namespace agileos::services::storage {

std::unique_ptr<BufferBackend> makeHostBufferBackend();

}  // namespace agileos::services::storage
