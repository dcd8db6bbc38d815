// parallelCopy: memcpy of large blocks by several threads (untrusted side).
//
// Pageable copies move every byte through the staging area with the CPU (copy_engine.cpp),
// and one core's memcpy (~6-8 GB/s for cold data) is slower than the DMA behind it
// (~50 GB/s), so large blocks are split among a few helper threads. The helpers are
// started on first use and live for the rest of the process (they are never joined:
// CUDA programs copy from atexit handlers too). Blocks under kParallelCopyMin bytes, or
// with AGILEOS_COPY_THREADS=1, are copied by the caller alone.
//
// Thread-safety: callable from any thread; concurrent callers take turns with the pool.
#pragma once

#include <cstddef>

namespace agileos::client {

inline constexpr std::size_t kParallelCopyMin = 1u << 20;

void parallelCopy(void* dst, const void* src, std::size_t bytes);

}  // namespace agileos::client
