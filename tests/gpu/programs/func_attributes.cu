// cudaFuncGetAttributes, cudaFuncGetParamInfo, cudaOccupancyMaxActiveBlocksPerMultiprocessor and
// cudaOccupancyAvailableDynamicSMemPerBlock.
// Printed: what depends on the source and the device only (static shared
// memory, PTX/binary versions, occupancy limited by shared memory or by the
// block count). Register counts could change if AgileOS instruments the code,
// so they are checked for plausibility and written to stderr only.
#include "check.cuh"

constexpr int kStaticShared = 40 * 1024;

__global__ void tinyKernel(int* out) { out[threadIdx.x] = threadIdx.x; }

__global__ void sharedHungry(int* out) {
  __shared__ int buffer[kStaticShared / sizeof(int)];
  buffer[threadIdx.x] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = buffer[(threadIdx.x + 1) % blockDim.x];
}

__global__ void __launch_bounds__(128) boundedKernel(float* out, float x) {
  out[threadIdx.x] = x * threadIdx.x;
}

static void describe(const char* name, const void* kernel) {
  cudaFuncAttributes a;
  CHECK_CUDA(cudaFuncGetAttributes(&a, kernel));
  std::printf("%s: sharedSizeBytes=%zu ptxVersion=%d binaryVersion=%d maxDynamicSharedSizeBytes=%d\n", name,
              a.sharedSizeBytes, a.ptxVersion, a.binaryVersion, a.maxDynamicSharedSizeBytes);
  EXPECT_TRUE(a.numRegs > 0 && a.numRegs <= 255, "%s: numRegs %d", name, a.numRegs);
  EXPECT_TRUE(a.maxThreadsPerBlock > 0 && a.maxThreadsPerBlock <= 1024, "%s: maxThreadsPerBlock %d", name,
              a.maxThreadsPerBlock);
  std::fprintf(stderr, "%s: numRegs=%d localSizeBytes=%zu constSizeBytes=%zu maxThreadsPerBlock=%d\n", name,
               a.numRegs, a.localSizeBytes, a.constSizeBytes, a.maxThreadsPerBlock);
}

static int occupancy(const void* kernel, int blockSize, size_t dynamicShared) {
  int blocks = -1;
  // The C entry point (not the template, which calls ...WithFlags).
  CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, blockSize, dynamicShared));
  return blocks;
}

int main() {
  describe("tinyKernel", reinterpret_cast<const void*>(&tinyKernel));
  describe("sharedHungry", reinterpret_cast<const void*>(&sharedHungry));
  describe("boundedKernel", reinterpret_cast<const void*>(&boundedKernel));

  cudaFuncAttributes bounded;
  CHECK_CUDA(cudaFuncGetAttributes(&bounded, reinterpret_cast<const void*>(&boundedKernel)));
  EXPECT_TRUE(bounded.maxThreadsPerBlock <= 128, "launch bounds ignored: %d", bounded.maxThreadsPerBlock);
  std::printf("boundedKernel maxThreadsPerBlock <= 128: yes\n");

  int maxBlocksPerSm = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&maxBlocksPerSm, cudaDevAttrMaxBlocksPerMultiprocessor, 0));
  const int tinyBlocks = occupancy(reinterpret_cast<const void*>(&tinyKernel), 32, 0);
  EXPECT_TRUE(tinyBlocks == maxBlocksPerSm, "tiny kernel occupancy %d != block limit %d", tinyBlocks,
              maxBlocksPerSm);
  std::printf("occupancy tinyKernel(32 threads)=%d (= max blocks per SM)\n", tinyBlocks);

  const int sharedBlocks = occupancy(reinterpret_cast<const void*>(&sharedHungry), 64, 0);
  // 40 KiB static + 8 KiB dynamic is the most this kernel may use without opting in.
  const int sharedBlocksWithDynamic = occupancy(reinterpret_cast<const void*>(&sharedHungry), 64, 8 * 1024);
  EXPECT_TRUE(sharedBlocks > sharedBlocksWithDynamic && sharedBlocksWithDynamic > 0,
              "shared occupancy %d / %d", sharedBlocks, sharedBlocksWithDynamic);
  std::printf("occupancy sharedHungry(64 threads)=%d, with 8 KiB dynamic=%d\n", sharedBlocks,
              sharedBlocksWithDynamic);

  const int full = occupancy(reinterpret_cast<const void*>(&tinyKernel), 1024, 0);
  std::printf("occupancy tinyKernel(1024 threads)=%d\n", full);

  // Parameter places: a pointer at 0, a float at 8; past the last, an error.
  size_t offset = 99, size = 99;
  CHECK_CUDA(cudaFuncGetParamInfo(reinterpret_cast<const void*>(&boundedKernel), 0, &offset, &size));
  std::printf("boundedKernel parameter 0: offset %zu size %zu\n", offset, size);
  CHECK_CUDA(cudaFuncGetParamInfo(reinterpret_cast<const void*>(&boundedKernel), 1, &offset, &size));
  std::printf("boundedKernel parameter 1: offset %zu size %zu\n", offset, size);
  std::printf(
      "boundedKernel parameter 2: %s\n",
      cudaFuncGetParamInfo(reinterpret_cast<const void*>(&boundedKernel), 2, &offset, &size) == cudaSuccess
          ? "success"
          : "error");
  cudaGetLastError();

  // The dynamic shared memory one block (two blocks) of sharedHungry may take: the exact byte count
  // goes to stderr (it may be rounded differently), what it means to stdout.
  size_t one = 0, two = 0;
  const void* hungry = reinterpret_cast<const void*>(&sharedHungry);
  CHECK_CUDA(cudaOccupancyAvailableDynamicSMemPerBlock(&one, hungry, 1, 64));
  CHECK_CUDA(cudaOccupancyAvailableDynamicSMemPerBlock(&two, hungry, 2, 64));
  std::fprintf(stderr, "available dynamic shared memory: %zu (1 block), %zu (2 blocks)\n", one, two);
  int optIn = 0;
  CHECK_CUDA(
      cudaFuncSetAttribute(hungry, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(one)));
  CHECK_CUDA(cudaDeviceGetAttribute(&optIn, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
  std::printf("available for 1 block: %s; for 2 blocks: less: %s; one block of that size fits: %s\n",
              one > 0 && one + kStaticShared <= static_cast<size_t>(optIn) ? "within the opt-in limit" : "no",
              two < one ? "yes" : "no", occupancy(hungry, 64, one) >= 1 ? "yes" : "no");

  // Still callable after all the queries.
  int* out = nullptr;
  CHECK_CUDA(cudaMalloc(&out, 1024 * sizeof(int)));
  sharedHungry<<<1, 64>>>(out);
  CHECK_CUDA(cudaGetLastError());
  int back[64];
  CHECK_CUDA(cudaMemcpy(back, out, sizeof(back), cudaMemcpyDeviceToHost));
  for (int i = 0; i < 64; ++i) EXPECT_TRUE(back[i] == (i + 1) % 64, "back[%d] = %d", i, back[i]);
  CHECK_CUDA(cudaFree(out));
  std::printf("func_attributes OK\n");
  return 0;
}
