// Cooperative launch: cudaLaunchCooperativeKernel with a grid-wide barrier
// (cooperative_groups::this_grid().sync()). Every thread writes its slot, the
// whole grid synchronizes, then every thread reads a slot another block wrote.
// A grid larger than can be resident at once is refused. Grid sizes derived from
// the device are not printed.
#include <cooperative_groups.h>

#include <vector>

#include "check.cuh"

namespace cg = cooperative_groups;

constexpr int kBlocks = 64;
constexpr int kThreads = 256;
constexpr int kElements = kBlocks * kThreads;

__global__ void rotateAcrossTheGrid(unsigned* slots, unsigned* out, int shift) {
  cg::grid_group grid = cg::this_grid();
  const unsigned i = grid.thread_rank();
  slots[i] = mix32(i);
  grid.sync();  // every slot is written before any is read
  const unsigned from = (i + static_cast<unsigned>(shift)) % grid.size();
  out[i] = slots[from] ^ i;
}

int main() {
  int device = 0, cooperative = 0;
  CHECK_CUDA(cudaGetDevice(&device));
  CHECK_CUDA(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device));
  std::printf("cooperative launch supported: %d\n", cooperative);

  unsigned *slots = nullptr, *out = nullptr;
  CHECK_CUDA(cudaMalloc(&slots, kElements * sizeof(unsigned)));
  CHECK_CUDA(cudaMalloc(&out, kElements * sizeof(unsigned)));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  int shift = kThreads * 3 + 17;  // crosses block boundaries
  void* args[] = {&slots, &out, &shift};
  CHECK_CUDA(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(rotateAcrossTheGrid), dim3(kBlocks),
                                         dim3(kThreads), args, 0, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  std::vector<unsigned> host(kElements);
  CHECK_CUDA(cudaMemcpy(host.data(), out, host.size() * sizeof(unsigned), cudaMemcpyDeviceToHost));
  for (unsigned i = 0; i < kElements; ++i) {
    const unsigned expected = mix32((i + static_cast<unsigned>(shift)) % kElements) ^ i;
    EXPECT_TRUE(host[i] == expected, "out[%u] = %08x, expected %08x", i, host[i], expected);
  }
  std::printf("grid-wide exchange of %d elements fnv=%016llx\n", kElements,
              static_cast<unsigned long long>(fnv1a64(host.data(), host.size() * sizeof(unsigned))));

  // On the legacy stream as well.
  shift = 1;
  CHECK_CUDA(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(rotateAcrossTheGrid), dim3(kBlocks),
                                         dim3(kThreads), args, 0, nullptr));
  CHECK_CUDA(cudaMemcpy(host.data(), out, host.size() * sizeof(unsigned), cudaMemcpyDeviceToHost));
  for (unsigned i = 0; i < kElements; ++i) {
    EXPECT_TRUE(host[i] == (mix32((i + 1) % kElements) ^ i), "legacy-stream out[%u]", i);
  }
  std::printf("legacy-stream cooperative launch OK\n");

  // More blocks than can be resident at once.
  int perMultiprocessor = 0, multiprocessors = 0;
  CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
      &perMultiprocessor, reinterpret_cast<const void*>(rotateAcrossTheGrid), kThreads, 0));
  CHECK_CUDA(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device));
  std::fprintf(stderr, "%d blocks per SM, %d SMs\n", perMultiprocessor, multiprocessors);
  const unsigned tooMany = static_cast<unsigned>(perMultiprocessor * multiprocessors + 1);
  EXPECT_ERROR("cooperative launch of one block too many",
               cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(rotateAcrossTheGrid), dim3(tooMany),
                                           dim3(kThreads), args, 0, stream),
               cudaErrorCooperativeLaunchTooLarge);
  EXPECT_TRUE(cudaGetLastError() == cudaErrorCooperativeLaunchTooLarge, "the refusal is the last error");
  CHECK_CUDA(cudaGetLastError());  // cleared, and not sticky
  CHECK_CUDA(cudaStreamSynchronize(stream));

  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFree(slots));
  CHECK_CUDA(cudaFree(out));
  std::printf("cooperative_grid OK\n");
  return 0;
}
