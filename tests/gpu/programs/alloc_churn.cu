// Allocation churn: many allocations of mixed sizes (sub-page to tens of MiB),
// freed in a scrambled order while others stay live, each filled with its own
// pattern by a kernel and verified; a live allocation must never see another's
// data. Also 1000 small alloc/free pairs, as frameworks do.
#include <cstdint>
#include <vector>

#include "check.cuh"

__global__ void stamp(std::uint32_t* p, size_t words, std::uint32_t tag) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < words;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    p[i] = tag ^ static_cast<std::uint32_t>(i);
  }
}

__global__ void verify(const std::uint32_t* p, size_t words, std::uint32_t tag, unsigned int* mismatches) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < words;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    if (p[i] != (tag ^ static_cast<std::uint32_t>(i))) atomicAdd(mismatches, 1u);
  }
}

struct Block {
  std::uint32_t* p = nullptr;
  size_t words = 0;
  std::uint32_t tag = 0;
};

int main() {
  unsigned int* mismatches = nullptr;
  CHECK_CUDA(cudaMalloc(&mismatches, sizeof(unsigned int)));
  CHECK_CUDA(cudaMemset(mismatches, 0, sizeof(unsigned int)));

  std::vector<Block> live;
  size_t totalAllocated = 0;
  int allocations = 0, frees = 0;
  for (int round = 0; round < 200; ++round) {
    const std::uint32_t r = mix32(static_cast<std::uint32_t>(round));
    // Sizes from 4 bytes to ~24 MiB, skewed small.
    const size_t bytes = (r % 4 == 0) ? (size_t{1} << (12 + r % 13)) + (r & 0xFFF) * 4 : 4 + (r % 5000) * 4;
    Block block;
    block.words = bytes / sizeof(std::uint32_t);
    block.tag = mix32(r);
    CHECK_CUDA(cudaMalloc(&block.p, block.words * sizeof(std::uint32_t)));
    stamp<<<64, 256>>>(block.p, block.words, block.tag);
    CHECK_CUDA(cudaGetLastError());
    live.push_back(block);
    totalAllocated += bytes;
    ++allocations;
    if (r % 3 == 0 && !live.empty()) {  // free a scrambled victim, after checking it
      const size_t victim = mix32(r + 1) % live.size();
      verify<<<64, 256>>>(live[victim].p, live[victim].words, live[victim].tag, mismatches);
      CHECK_CUDA(cudaFree(live[victim].p));
      live.erase(live.begin() + static_cast<long>(victim));
      ++frees;
    }
  }
  for (const Block& block : live) verify<<<64, 256>>>(block.p, block.words, block.tag, mismatches);
  CHECK_CUDA(cudaGetLastError());
  unsigned int bad = 0;
  CHECK_CUDA(cudaMemcpy(&bad, mismatches, sizeof(bad), cudaMemcpyDeviceToHost));
  EXPECT_TRUE(bad == 0, "%u words were overwritten by another allocation", bad);
  std::printf("churn: %d allocations (%zu bytes), %d freed early, %zu live, mismatches=%u\n", allocations,
              totalAllocated, frees, live.size(), bad);
  for (const Block& block : live) CHECK_CUDA(cudaFree(block.p));

  for (int i = 0; i < 1000; ++i) {
    void* p = nullptr;
    CHECK_CUDA(cudaMalloc(&p, 256 + (i % 7) * 64));
    CHECK_CUDA(cudaFree(p));
  }
  std::printf("1000 small malloc/free pairs ok\n");
  CHECK_CUDA(cudaFree(mismatches));
  std::printf("alloc_churn OK\n");
  return 0;
}
