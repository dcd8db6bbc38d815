// Tensor maps and cp.async.bulk.tensor (issue 17). A 2D tiled map over a cudaMalloc'd matrix,
// encoded with the driver's cuTensorMapEncodeTiled (reached through cudaGetDriverEntryPointByVersion,
// as CUDA's own samples do: under AgileOS the driver shim's, which has the worker encode and record
// it), then three kernels that take the map as `const __grid_constant__ CUtensorMap`:
//   - tileLoad: global -> shared with libcu++'s cp_async_bulk_tensor_2d_global_to_shared and a
//     cuda::barrier, written back with ordinary stores;
//   - tileRoundTrip: the same load in inline PTX with an mbarrier (and prefetch.tensormap), the
//     tile changed in shared memory, and written back with a TMA store
//     (cp.async.bulk.tensor.2d.global.shared::cta) through a second map;
//   - tileStore: libcu++'s cp_async_bulk_tensor_2d_shared_to_global of a tile made in shared memory.
// Each result is compared with the CPU and its checksum printed. A last map replaces its address
// (cuTensorMapReplaceAddress) to point at a second matrix. Under AgileOS with the guard on, the
// maps are checked against those the worker issued at every launch (docs/security-model.md,
// "Tensor maps").
#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstdint>
#include <cstring>
#include <cuda/barrier>
#include <vector>

#include "check.cuh"

namespace {

using Barrier = cuda::barrier<cuda::thread_scope_block>;
namespace cde = cuda::device::experimental;

constexpr int kTile = 32;                   // a box of 32 x 32 floats (4 KiB)
constexpr int kWidth = 192, kHeight = 128;  // in tiles: 6 x 4
constexpr int kPitch = kWidth + 16;         // floats per row: rows are padded (a stride that shows)

__global__ void tileLoad(const __grid_constant__ CUtensorMap map, float* out, int pitch) {
  __shared__ alignas(128) float tile[kTile][kTile];
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ Barrier bar;
  const int x = blockIdx.x * kTile, y = blockIdx.y * kTile;
  if (threadIdx.x == 0) {
    init(&bar, blockDim.x);
    cde::fence_proxy_async_shared_cta();
  }
  __syncthreads();
  Barrier::arrival_token token;
  if (threadIdx.x == 0) {
    cde::cp_async_bulk_tensor_2d_global_to_shared(&tile, &map, x, y, bar);
    token = cuda::device::barrier_arrive_tx(bar, 1, sizeof(tile));
  } else {
    token = bar.arrive();
  }
  bar.wait(std::move(token));
  for (int i = threadIdx.x; i < kTile * kTile; i += blockDim.x)
    out[(y + i / kTile) * pitch + x + i % kTile] = tile[i / kTile][i % kTile] * 2.0f + 1.0f;
}

__global__ void tileRoundTrip(const __grid_constant__ CUtensorMap in,
                              const __grid_constant__ CUtensorMap out) {
  __shared__ alignas(128) float tile[kTile][kTile];
  __shared__ alignas(8) std::uint64_t mbar;
  const int x = blockIdx.x * kTile, y = blockIdx.y * kTile;
  const unsigned barAddr = static_cast<unsigned>(__cvta_generic_to_shared(&mbar));
  const unsigned tileAddr = static_cast<unsigned>(__cvta_generic_to_shared(&tile));
  if (threadIdx.x == 0) {
    asm volatile("prefetch.tensormap [%0];" ::"l"(&in) : "memory");
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(barAddr));
    asm volatile("fence.proxy.async.shared::cta;");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(barAddr),
                 "r"(static_cast<unsigned>(sizeof(tile))));
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
        "[%4];" ::"r"(tileAddr),
        "l"(&in), "r"(x), "r"(y), "r"(barAddr)
        : "memory");
  }
  __syncthreads();
  asm volatile(
      "{\n .reg .pred done;\n wait: mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n @!done bra "
      "wait;\n}" ::"r"(barAddr)
      : "memory");
  for (int i = threadIdx.x; i < kTile * kTile; i += blockDim.x) tile[i / kTile][i % kTile] += 0.5f;
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];" ::"l"(&out),
                 "r"(x), "r"(y), "r"(tileAddr)
                 : "memory");
    asm volatile("cp.async.bulk.commit_group;");
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
  }
}

__global__ void tileStore(const __grid_constant__ CUtensorMap out) {
  __shared__ alignas(128) float tile[kTile][kTile];
  for (int i = threadIdx.x; i < kTile * kTile; i += blockDim.x)
    tile[i / kTile][i % kTile] = static_cast<float>(blockIdx.y * 7 + blockIdx.x * 3 + i % 5);
  cde::fence_proxy_async_shared_cta();
  __syncthreads();
  if (threadIdx.x == 0) {
    cde::cp_async_bulk_tensor_2d_shared_to_global(&out, blockIdx.x * kTile, blockIdx.y * kTile, &tile);
    cde::cp_async_bulk_commit_group();
    cde::cp_async_bulk_wait_group_read<0>();
  }
}

PFN_cuTensorMapEncodeTiled_v12000 encodeTiled = nullptr;
PFN_cuTensorMapReplaceAddress_v12000 replaceAddress = nullptr;

void loadDriverEntryPoints() {
  cudaDriverEntryPointQueryResult found{};
  void* function = nullptr;
  CHECK_CUDA(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &function, 12000, cudaEnableDefault,
                                              &found));
  EXPECT_TRUE(found == cudaDriverEntryPointSuccess && function != nullptr,
              "cuTensorMapEncodeTiled not found\n");
  encodeTiled = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(function);
  CHECK_CUDA(cudaGetDriverEntryPointByVersion("cuTensorMapReplaceAddress", &function, 12000,
                                              cudaEnableDefault, &found));
  EXPECT_TRUE(found == cudaDriverEntryPointSuccess && function != nullptr,
              "cuTensorMapReplaceAddress not found\n");
  replaceAddress = reinterpret_cast<PFN_cuTensorMapReplaceAddress_v12000>(function);
}

// A map of the kWidth x kHeight floats at `matrix` (rows kPitch floats apart), 32 x 32 boxes.
CUtensorMap tiledMap(float* matrix) {
  CUtensorMap map{};
  const cuuint64_t dims[2] = {kWidth, kHeight};
  const cuuint64_t strides[1] = {kPitch * sizeof(float)};
  const cuuint32_t box[2] = {kTile, kTile};
  const cuuint32_t elementStrides[2] = {1, 1};
  const CUresult result =
      encodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, matrix, dims, strides, box, elementStrides,
                  CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  EXPECT_TRUE(result == CUDA_SUCCESS, "cuTensorMapEncodeTiled: %d\n", static_cast<int>(result));
  return map;
}

double checksum(const std::vector<float>& m) {
  double sum = 0;
  for (int y = 0; y < kHeight; ++y)
    for (int x = 0; x < kWidth; ++x) sum += m[y * kPitch + x] * (1 + (x + 3 * y) % 11);
  return sum;
}

// Compares the matrix part of `got` with `want` (padding left out); prints the checksum.
void expectMatrix(const char* name, const std::vector<float>& got, const std::vector<float>& want) {
  for (int y = 0; y < kHeight; ++y)
    for (int x = 0; x < kWidth; ++x) {
      const float g = got[y * kPitch + x], w = want[y * kPitch + x];
      EXPECT_TRUE(g == w, "%s: (%d, %d) is %f, want %f\n", name, x, y, g, w);
    }
  std::printf("%s: checksum %.1f\n", name, checksum(got));
}

}  // namespace

int main() {
  loadDriverEntryPoints();
  const std::size_t elements = static_cast<std::size_t>(kPitch) * kHeight;
  const std::size_t bytes = elements * sizeof(float);
  std::vector<float> input(elements), want(elements);
  for (std::size_t i = 0; i < elements; ++i) input[i] = static_cast<float>((i * 37) % 1001) - 500.0f;
  float *a = nullptr, *b = nullptr, *c = nullptr;
  CHECK_CUDA(cudaMalloc(&a, bytes));
  CHECK_CUDA(cudaMalloc(&b, bytes));
  CHECK_CUDA(cudaMalloc(&c, bytes));
  CHECK_CUDA(cudaMemcpy(a, input.data(), bytes, cudaMemcpyHostToDevice));
  const dim3 grid(kWidth / kTile, kHeight / kTile);
  std::vector<float> got(elements);

  const CUtensorMap mapA = tiledMap(a), mapB = tiledMap(b), mapC = tiledMap(c);
  CHECK_CUDA(cudaMemset(b, 0, bytes));
  tileLoad<<<grid, 128>>>(mapA, b, kPitch);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaMemcpy(got.data(), b, bytes, cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < elements; ++i) want[i] = input[i] * 2.0f + 1.0f;
  expectMatrix("tma load", got, want);

  CHECK_CUDA(cudaMemset(c, 0, bytes));
  tileRoundTrip<<<grid, 128>>>(mapA, mapC);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaMemcpy(got.data(), c, bytes, cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < elements; ++i) want[i] = input[i] + 0.5f;
  expectMatrix("tma load and store", got, want);

  tileStore<<<grid, 128>>>(mapB);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaMemcpy(got.data(), b, bytes, cudaMemcpyDeviceToHost));
  for (int y = 0; y < kHeight; ++y)
    for (int x = 0; x < kWidth; ++x)
      want[y * kPitch + x] =
          static_cast<float>((y / kTile) * 7 + (x / kTile) * 3 + (y % kTile * kTile + x % kTile) % 5);
  expectMatrix("tma store", got, want);

  // The map over `a`, moved to `c` (which holds a + 0.5): a load through it reads c.
  CUtensorMap moved = mapA;
  const CUresult replaced = replaceAddress(&moved, c);
  EXPECT_TRUE(replaced == CUDA_SUCCESS, "cuTensorMapReplaceAddress: %d\n", static_cast<int>(replaced));
  tileLoad<<<grid, 128>>>(moved, b, kPitch);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaMemcpy(got.data(), b, bytes, cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < elements; ++i) want[i] = (input[i] + 0.5f) * 2.0f + 1.0f;
  expectMatrix("tma load after replace address", got, want);

  CHECK_CUDA(cudaFree(a));
  CHECK_CUDA(cudaFree(b));
  CHECK_CUDA(cudaFree(c));
  std::printf("tensor_maps: ok\n");
  return 0;
}
