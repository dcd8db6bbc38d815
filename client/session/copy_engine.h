// Moving bytes between the program and its worker (untrusted side).
//
// Copies are split into chunks; each chunk names the whole copy ([dst,
// dst+total)) so the worker validates the full range every time and a copy that
// is invalid anywhere is refused before any byte moves. How the bytes travel
// depends on the transport and on the host memory:
//   - page-locked memory shared with the worker (cudaMallocHost over shared
//     memory, host_allocations.h): no bytes travel; one request names the
//     segment and the worker DMAs directly. Async copies do not wait.
//   - other host memory over shared memory: pipelined through the connection's
//     staging area (StagedCalls): while the worker DMAs chunk i, this side copies
//     chunk i+1 in (host to device) or chunk i-1 out (device to host).
//   - over gRPC: inside the messages, kCopyChunkBytes at a time.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace agileos::client {

inline constexpr std::uint64_t kCopyChunkBytes = 32ull << 20;

struct CopyTarget {
  std::uint64_t stream = 0;   // worker stream token (0: legacy default stream)
  bool async = false;         // stream-ordered on `stream` (else on the legacy stream, synchronous)
  bool returnsEarly = false;  // an *Async API: may return before the copy is done
};

cudaError_t copyHostToDevice(std::uint64_t dst, const void* src, std::uint64_t bytes, CopyTarget target);
cudaError_t copyDeviceToHost(void* dst, std::uint64_t src, std::uint64_t bytes, CopyTarget target);
cudaError_t copyDeviceToDevice(std::uint64_t dst, std::uint64_t src, std::uint64_t bytes, CopyTarget target);
cudaError_t fillDevice(std::uint64_t dst, int value, std::uint64_t bytes, CopyTarget target);

// True when p is a device address of this client: inside the user range the
// worker announced, or inside a loaded module variable.
bool isDeviceAddress(const void* p);

// cudaMemcpy's dispatch on kind (with cudaMemcpyDefault inferred from the addresses).
cudaError_t copyByKind(void* dst, const void* src, std::uint64_t bytes, cudaMemcpyKind kind,
                       CopyTarget target);

// Pitched rectangles (the 2D and 3D copies and fills): `height` rows of `width`
// bytes, each row `pitch` bytes after the previous one. Rows that are contiguous
// (pitch == width) move in one transfer, others row by row. The caller has checked
// width <= pitch and that `kind` is valid; a rectangle whose total size overflows is
// cudaErrorInvalidValue. Stops at the first failing row.
cudaError_t copyRows(void* dst, std::uint64_t dpitch, const void* src, std::uint64_t spitch,
                     std::uint64_t width, std::uint64_t height, cudaMemcpyKind kind, CopyTarget target);
cudaError_t fillRows(std::uint64_t dst, std::uint64_t pitch, int value, std::uint64_t width,
                     std::uint64_t height, CopyTarget target);

}  // namespace agileos::client
