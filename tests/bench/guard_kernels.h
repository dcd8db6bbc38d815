// Launch shapes shared by the guard benchmark's kernels (guard_kernels.cu, compiled to PTX
// only) and the host tool that launches them through the driver API (guard_overhead.cpp):
// the kernels' shared-memory tiles are sized by these, so the two sides must agree.
#pragma once

namespace agileos::guardbench {

inline constexpr int kThreads = 256;  // 1-D kernels' block size

// sgemm_tiled and gemm_cp_async: a block of 16x16 threads computes a 64x64 tile of C, each
// thread 4x4 outputs, with a 16-deep k-slice of A and B in shared memory.
inline constexpr int kGemmTile = 64;
inline constexpr int kGemmDepth = 16;
inline constexpr int kGemmPerThread = 4;
inline constexpr int kGemmThreads = 256;

// transpose and stencil5: 32x8 threads per block; transpose moves a 32x32 tile.
inline constexpr int kTileDim = 32;
inline constexpr int kTileRows = 8;

// spmv_csr: one warp per row.
inline constexpr int kWarp = 32;

// tma_tile: a block of kThreads loads a kTmaTile x kTmaTile tile of floats with one tensor copy.
inline constexpr int kTmaTile = 32;

}  // namespace agileos::guardbench
