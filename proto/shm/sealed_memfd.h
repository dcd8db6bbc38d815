// Sealed memfds: shared memory one process creates and hands to a less trusted one.
//
// The creator reserves every page up front (posix_fallocate), so touching the memory
// can never SIGBUS it for lack of memory, and seals the size (F_SEAL_SHRINK,
// F_SEAL_GROW, F_SEAL_SEAL), so the receiver cannot ftruncate the file under the
// creator's mappings. Used for the call regions (mapped_region.h) and for the worker's
// shared page-locked host memory (worker/host_memory/shared_host_segment.h).
#pragma once

#include <cstdint>
#include <string>

namespace agileos::shm {

// Returns the fd (close-on-exec) of a sealed memfd of exactly `bytes` bytes, or -1 with
// *error set.
int createSealedMemfd(const char* name, std::uint64_t bytes, std::string* error);

// True if `fd` is a memfd whose size cannot change (both size seals set).
bool sizeIsSealed(int fd);

}  // namespace agileos::shm
