// Kernels for the kernel memory guard's overhead benchmark (guard_overhead.cpp, described in
// docs/performance.md). Compiled by nvcc to PTX only (-arch=compute_90); the benchmark
// guards that PTX with ptx::guardModule and JIT-compiles original and guarded text itself.
//
// Each kernel has a different memory character, because the guard's cost is per global or
// generic access: streaming, strided, indirect, atomic, shared-memory-tiled, asynchronous
// copies, generic pointers, byte-wide and latency-bound accesses. The names are extern "C"
// so that the host finds them unmangled.
//
// Inputs are small integers stored as floats, so every float result is exact: the guarded
// and the original kernel then give bit-identical output even where ptxas contracts a
// mul and an add differently in the two (the guard adds integer code around the accesses).
// No kernel uses float atomics, whose order, and so whose result, varies from run to run.
#include <cuda.h>
#include <mma.h>

#include <cstdint>

#include "guard_kernels.h"

using namespace agileos::guardbench;

namespace {

__device__ inline std::uint64_t globalIndex() {
  return static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline std::uint64_t gridStride() { return static_cast<std::uint64_t>(gridDim.x) * blockDim.x; }

// cp.async (sm_80+) by inline PTX, so that the PTX holds exactly this instruction whatever
// the CUDA headers' helpers expand to: a 16-byte copy global -> shared through L1.
__device__ inline void cpAsync16(void* shared, const void* global) {
  const auto sharedAddress = static_cast<std::uint32_t>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16;\n" ::"r"(sharedAddress),
               "l"(__cvta_generic_to_global(global))
               : "memory");
}
__device__ inline void cpAsyncCommit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int kPending>
__device__ inline void cpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// The compiler cannot see through inline assembly, so the pointer that comes out has no
// known state space: accesses through it are generic (ld/st without .global). Without
// this, nvcc infers .global for every pointer that comes from a kernel parameter, even
// across non-inlined calls.
template <typename T>
__device__ inline T* opaque(T* pointer) {
  asm("mov.b64 %0, %0;" : "+l"(pointer));
  return pointer;
}

// Not inlined: the guard must also cover accesses inside .func bodies.
__device__ __noinline__ void axpyGeneric(float* out, const float* x, const float* z, std::uint64_t i) {
  out[i] = 2.0f * x[i] + z[i];
}

}  // namespace

// Streaming copy, 16-byte vector loads and stores: pure bandwidth, few accesses per byte.
extern "C" __global__ void copy_f4(const float4* __restrict__ in, float4* __restrict__ out,
                                   std::uint64_t n4) {
  for (std::uint64_t i = globalIndex(); i < n4; i += gridStride()) out[i] = in[i];
}

// STREAM triad a = b + s*c, scalar float accesses (two read-only, one store).
extern "C" __global__ void triad(float* __restrict__ a, const float* __restrict__ b,
                                 const float* __restrict__ c, float s, std::uint64_t n) {
  for (std::uint64_t i = globalIndex(); i < n; i += gridStride()) a[i] = b[i] + s * c[i];
}

// 2-D 5-point stencil on an nx x ny grid (row-major); the border is copied.
extern "C" __global__ void stencil5(const float* __restrict__ in, float* __restrict__ out, int nx, int ny) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= nx || y >= ny) return;
  const std::size_t i = static_cast<std::size_t>(y) * nx + x;
  if (x == 0 || y == 0 || x == nx - 1 || y == ny - 1) {
    out[i] = in[i];
    return;
  }
  out[i] = 0.5f * in[i] + 0.125f * (in[i - 1] + in[i + 1] + in[i - nx] + in[i + nx]);
}

// Gather through an index array: a coalesced index load, then a scattered data load.
extern "C" __global__ void gather(const float* __restrict__ source, const std::uint32_t* __restrict__ index,
                                  float* __restrict__ out, std::uint64_t n) {
  for (std::uint64_t i = globalIndex(); i < n; i += gridStride()) out[i] = source[index[i]];
}

// Histogram with global atomics only (no shared-memory privatisation): atom/red on global.
extern "C" __global__ void histogram(const std::uint32_t* __restrict__ data, std::uint64_t n,
                                     std::uint32_t* bins, std::uint32_t binMask) {
  for (std::uint64_t i = globalIndex(); i < n; i += gridStride()) atomicAdd(&bins[data[i] & binMask], 1u);
}

// C = A * B for row-major n x n matrices (n a multiple of kGemmTile), tiles in shared
// memory: compute-bound, few global accesses per flop.
extern "C" __global__ void __launch_bounds__(kGemmThreads)
    sgemm_tiled(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int n) {
  __shared__ float tileA[kGemmDepth][kGemmTile];  // transposed: tileA[k][row]
  __shared__ float tileB[kGemmDepth][kGemmTile];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int rowBase = blockIdx.y * kGemmTile, colBase = blockIdx.x * kGemmTile;
  float acc[kGemmPerThread][kGemmPerThread] = {};
  for (int k0 = 0; k0 < n; k0 += kGemmDepth) {
    for (int i = threadIdx.x; i < kGemmTile * kGemmDepth; i += kGemmThreads) {
      const int row = i / kGemmDepth, k = i % kGemmDepth;
      tileA[k][row] = a[static_cast<std::size_t>(rowBase + row) * n + k0 + k];
      const int kb = i / kGemmTile, col = i % kGemmTile;
      tileB[kb][col] = b[static_cast<std::size_t>(k0 + kb) * n + colBase + col];
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kGemmDepth; ++k) {
      float av[kGemmPerThread], bv[kGemmPerThread];
#pragma unroll
      for (int r = 0; r < kGemmPerThread; ++r) av[r] = tileA[k][ty * kGemmPerThread + r];
#pragma unroll
      for (int q = 0; q < kGemmPerThread; ++q) bv[q] = tileB[k][tx * kGemmPerThread + q];
#pragma unroll
      for (int r = 0; r < kGemmPerThread; ++r)
#pragma unroll
        for (int q = 0; q < kGemmPerThread; ++q) acc[r][q] += av[r] * bv[q];
    }
    __syncthreads();
  }
#pragma unroll
  for (int r = 0; r < kGemmPerThread; ++r)
#pragma unroll
    for (int q = 0; q < kGemmPerThread; ++q)
      c[static_cast<std::size_t>(rowBase + ty * kGemmPerThread + r) * n + colBase + tx * kGemmPerThread + q] =
          acc[r][q];
}

// The same GEMM with its tiles fetched by cp.async into two shared buffers: the next
// k-slice is in flight while the current one is multiplied. The guard checks each
// cp.async's 16-byte global source.
extern "C" __global__ void __launch_bounds__(kGemmThreads)
    gemm_cp_async(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int n) {
  constexpr int kPad = 4;  // keeps rows 16-byte aligned and spreads the banks
  __shared__ __align__(16) float tileA[2][kGemmTile][kGemmDepth + kPad];  // tileA[buf][row][k]
  __shared__ __align__(16) float tileB[2][kGemmDepth][kGemmTile + kPad];  // tileB[buf][k][col]
  const int t = threadIdx.x, tx = t % 16, ty = t / 16;
  const int rowBase = blockIdx.y * kGemmTile, colBase = blockIdx.x * kGemmTile;
  // One 16-byte piece of each tile per thread: A is 64 rows of 4 pieces, B 16 rows of 16.
  const int aRow = t / 4, aPiece = t % 4, bRow = t / 16, bPiece = t % 16;
  auto fetch = [&](int buffer, int k0) {
    cpAsync16(&tileA[buffer][aRow][aPiece * 4],
              a + static_cast<std::size_t>(rowBase + aRow) * n + k0 + aPiece * 4);
    cpAsync16(&tileB[buffer][bRow][bPiece * 4],
              b + static_cast<std::size_t>(k0 + bRow) * n + colBase + bPiece * 4);
    cpAsyncCommit();
  };
  float acc[kGemmPerThread][kGemmPerThread] = {};
  const int slices = n / kGemmDepth;
  fetch(0, 0);
  for (int s = 0; s < slices; ++s) {
    if (s + 1 < slices) {
      fetch((s + 1) & 1, (s + 1) * kGemmDepth);
      cpAsyncWait<1>();  // slice s has landed; s + 1 may still be in flight
    } else {
      cpAsyncWait<0>();
    }
    __syncthreads();
    const int buffer = s & 1;
#pragma unroll
    for (int k = 0; k < kGemmDepth; ++k) {
      float av[kGemmPerThread], bv[kGemmPerThread];
#pragma unroll
      for (int r = 0; r < kGemmPerThread; ++r) av[r] = tileA[buffer][ty * kGemmPerThread + r][k];
#pragma unroll
      for (int q = 0; q < kGemmPerThread; ++q) bv[q] = tileB[buffer][k][tx * kGemmPerThread + q];
#pragma unroll
      for (int r = 0; r < kGemmPerThread; ++r)
#pragma unroll
        for (int q = 0; q < kGemmPerThread; ++q) acc[r][q] += av[r] * bv[q];
    }
    __syncthreads();  // nobody still reads this buffer when it is refilled
  }
#pragma unroll
  for (int r = 0; r < kGemmPerThread; ++r)
#pragma unroll
    for (int q = 0; q < kGemmPerThread; ++q)
      c[static_cast<std::size_t>(rowBase + ty * kGemmPerThread + r) * n + colBase + tx * kGemmPerThread + q] =
          acc[r][q];
}

// Block reduction: a grid-stride sum per thread, then warp shuffles and one shared-memory
// step; one partial sum per block (no atomics, so the result is deterministic).
extern "C" __global__ void __launch_bounds__(kThreads)
    reduce_block(const float* __restrict__ in, std::uint64_t n, float* __restrict__ partial) {
  __shared__ float warpSums[kThreads / 32];
  float sum = 0.0f;
  for (std::uint64_t i = globalIndex(); i < n; i += gridStride()) sum += in[i];
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  if (threadIdx.x % 32 == 0) warpSums[threadIdx.x / 32] = sum;
  __syncthreads();
  if (threadIdx.x < 32) {
    sum = threadIdx.x < kThreads / 32 ? warpSums[threadIdx.x] : 0.0f;
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
    if (threadIdx.x == 0) partial[blockIdx.x] = sum;
  }
}

// out = in^T for a rows x cols matrix (both multiples of kTileDim), through a padded
// shared tile so that both the global load and the global store are coalesced.
extern "C" __global__ void transpose(const float* __restrict__ in, float* __restrict__ out, int rows,
                                     int cols) {
  __shared__ float tile[kTileDim][kTileDim + 1];
  const int x = blockIdx.x * kTileDim + threadIdx.x;
  const int y = blockIdx.y * kTileDim + threadIdx.y;
  for (int j = 0; j < kTileDim; j += kTileRows)
    tile[threadIdx.y + j][threadIdx.x] = in[static_cast<std::size_t>(y + j) * cols + x];
  __syncthreads();
  const int tx = blockIdx.y * kTileDim + threadIdx.x;  // a column of out is a row of in
  const int ty = blockIdx.x * kTileDim + threadIdx.y;
  for (int j = 0; j < kTileDim; j += kTileRows)
    out[static_cast<std::size_t>(ty + j) * rows + tx] = tile[threadIdx.x][threadIdx.y + j];
}

// y = A x for a CSR matrix, one warp per row (the "vector" kernel): coalesced loads of
// the row's columns and values, scattered loads of x, a shuffle reduction.
extern "C" __global__ void spmv_csr(const std::uint32_t* __restrict__ rowStart,
                                    const std::uint32_t* __restrict__ column, const float* __restrict__ value,
                                    const float* __restrict__ x, float* __restrict__ y, std::uint32_t rows) {
  const std::uint64_t row = globalIndex() / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (row >= rows) return;
  float sum = 0.0f;
  for (std::uint32_t k = rowStart[row] + lane; k < rowStart[row + 1]; k += kWarp)
    sum += value[k] * x[column[k]];
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  if (lane == 0) y[row] = sum;
}

// Generic pointers: which of two buffers is x and which is z is chosen at run time per
// 32 elements, and all three pointers are opaque to the compiler, so the accesses (in a
// non-inlined function) are plain ld/st: the guard's generic case.
extern "C" __global__ void generic_ptr(const float* first, const float* second, float* out, std::uint64_t n,
                                       std::uint32_t flip) {
  const float* genericFirst = opaque(first);
  const float* genericSecond = opaque(second);
  float* genericOut = opaque(out);
  for (std::uint64_t i = globalIndex(); i < n; i += gridStride()) {
    const bool swap = (((i >> 5) ^ flip) & 1) != 0;
    axpyGeneric(genericOut, swap ? genericSecond : genericFirst, swap ? genericFirst : genericSecond, i);
  }
}

// Dependent loads: each thread follows `steps` links of a pseudo-random chain, so the
// time is load latency, the case where extra instructions per access show most.
extern "C" __global__ void pointer_chase(const std::uint32_t* __restrict__ next,
                                         std::uint32_t* __restrict__ out, std::uint32_t chains, int steps) {
  const std::uint64_t chain = globalIndex();
  if (chain >= chains) return;
  std::uint32_t at = static_cast<std::uint32_t>(chain), sum = 0;
  for (int s = 0; s < steps; ++s) {
    at = next[at];
    sum += at;
  }
  out[chain] = sum;
}

// One byte per load and per store: the most guard checks per byte moved.
extern "C" __global__ void byte_map(const std::uint8_t* __restrict__ in, std::uint8_t* __restrict__ out,
                                    std::uint64_t n) {
  for (std::uint64_t i = globalIndex(); i < n; i += gridStride())
    out[i] = static_cast<std::uint8_t>(in[i] * 3u + 1u);
}

// A TF32 tensor-core GEMM (C = A * B, n x n, row major) as the simple wmma samples write it: one
// warp per 16 x 16 tile of C, every fragment loaded straight from global memory with a run-time
// leading dimension, so each wmma load and store is checked over its span (issue 17).
extern "C" __global__ void __launch_bounds__(kThreads)
    wmma_tf32(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int n) {
  using namespace nvcuda;
  const int warp = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) / kWarp);
  const int tilesPerRow = n / 16;
  const int tileRow = warp / tilesPerRow * 16, tileCol = warp % tilesPerRow * 16;
  if (tileRow >= n) return;  // a whole warp: the warp index is the same for all its threads
  wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int k = 0; k < n; k += 8) {
    wmma::load_matrix_sync(fa, a + static_cast<std::size_t>(tileRow) * n + k, n);
    wmma::load_matrix_sync(fb, b + static_cast<std::size_t>(k) * n + tileCol, n);
    for (int i = 0; i < fa.num_elements; ++i) fa.x[i] = wmma::__float_to_tf32(fa.x[i]);
    for (int i = 0; i < fb.num_elements; ++i) fb.x[i] = wmma::__float_to_tf32(fb.x[i]);
    wmma::mma_sync(acc, fa, fb, acc);
  }
  wmma::store_matrix_sync(c + static_cast<std::size_t>(tileRow) * n + tileCol, acc, n, wmma::mem_row_major);
}

// A tensor-memory-access copy (issue 17): each block loads a 32 x 32 tile of floats into shared
// memory with one cp.async.bulk.tensor through a map the host encoded (a __grid_constant__
// parameter, as the guard admits them), waits on an mbarrier, and writes the tile scaled to `out`
// with ordinary (guarded) stores. The guard's part is the copy's scope (the map's address
// recomputed from the parameter) and the checks of the stores.
extern "C" __global__ void __launch_bounds__(kThreads)
    tma_tile(const __grid_constant__ CUtensorMap in, float* __restrict__ out, int width) {
  __shared__ alignas(128) float tile[kTmaTile][kTmaTile];
  __shared__ alignas(8) std::uint64_t barrier;
  const int x = static_cast<int>(blockIdx.x) * kTmaTile, y = static_cast<int>(blockIdx.y) * kTmaTile;
  const unsigned barrierAddress = static_cast<unsigned>(__cvta_generic_to_shared(&barrier));
  const unsigned tileAddress = static_cast<unsigned>(__cvta_generic_to_shared(&tile));
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(barrierAddress));
    asm volatile("fence.proxy.async.shared::cta;");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(barrierAddress),
                 "r"(static_cast<unsigned>(sizeof(tile))));
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
        "[%4];" ::"r"(tileAddress),
        "l"(&in), "r"(x), "r"(y), "r"(barrierAddress)
        : "memory");
  }
  __syncthreads();
  asm volatile(
      "{\n .reg .pred done;\n wait: mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n @!done bra "
      "wait;\n}" ::"r"(barrierAddress)
      : "memory");
  for (int i = static_cast<int>(threadIdx.x); i < kTmaTile * kTmaTile; i += static_cast<int>(blockDim.x)) {
    out[static_cast<std::size_t>(y + i / kTmaTile) * width + x + i % kTmaTile] =
        tile[i / kTmaTile][i % kTmaTile] * 2.0f + 1.0f;
  }
}
