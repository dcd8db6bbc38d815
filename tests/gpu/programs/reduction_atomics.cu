// Reductions with atomics: a block-level shared-memory tree reduction finished
// with a 64-bit atomicAdd, plus atomicMin/atomicMax and a 256-bin histogram.
// Integer arithmetic only, so the results are independent of execution order.
#include <cstdint>
#include <vector>

#include "check.cuh"

constexpr int kBlock = 256;

__global__ void reduce(const std::uint32_t* in, int n, unsigned long long* sum, int* minValue, int* maxValue,
                       unsigned int* histogram) {
  __shared__ unsigned long long partial[kBlock];
  unsigned long long local = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const std::uint32_t v = in[i];
    local += v;
    atomicMin(minValue, static_cast<int>(v >> 4));
    atomicMax(maxValue, static_cast<int>(v >> 4));
    atomicAdd(&histogram[v & 0xFF], 1u);
  }
  partial[threadIdx.x] = local;
  __syncthreads();
  for (int stride = kBlock / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(sum, partial[0]);
}

int main() {
  const int n = (1 << 24) + 17;
  std::vector<std::uint32_t> in(n);
  for (int i = 0; i < n; ++i) in[i] = mix32(static_cast<std::uint32_t>(i));

  std::uint32_t* dIn = nullptr;
  unsigned long long* dSum = nullptr;
  int* dMinMax = nullptr;
  unsigned int* dHist = nullptr;
  CHECK_CUDA(cudaMalloc(&dIn, n * sizeof(std::uint32_t)));
  CHECK_CUDA(cudaMalloc(&dSum, sizeof(unsigned long long)));
  CHECK_CUDA(cudaMalloc(&dMinMax, 2 * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&dHist, 256 * sizeof(unsigned int)));
  CHECK_CUDA(cudaMemcpy(dIn, in.data(), n * sizeof(std::uint32_t), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemset(dSum, 0, sizeof(unsigned long long)));
  const int initMinMax[2] = {0x7FFFFFFF, -1};
  CHECK_CUDA(cudaMemcpy(dMinMax, initMinMax, sizeof(initMinMax), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemset(dHist, 0, 256 * sizeof(unsigned int)));

  reduce<<<132 * 4, kBlock>>>(dIn, n, dSum, dMinMax, dMinMax + 1, dHist);
  CHECK_CUDA(cudaGetLastError());

  unsigned long long sum = 0;
  int minMax[2] = {0, 0};
  std::vector<unsigned int> hist(256);
  CHECK_CUDA(cudaMemcpy(&sum, dSum, sizeof(sum), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(minMax, dMinMax, sizeof(minMax), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(hist.data(), dHist, 256 * sizeof(unsigned int), cudaMemcpyDeviceToHost));

  unsigned long long expectedSum = 0;
  int expectedMin = 0x7FFFFFFF, expectedMax = -1;
  std::vector<unsigned int> expectedHist(256, 0);
  for (int i = 0; i < n; ++i) {
    expectedSum += in[i];
    const int shifted = static_cast<int>(in[i] >> 4);
    expectedMin = shifted < expectedMin ? shifted : expectedMin;
    expectedMax = shifted > expectedMax ? shifted : expectedMax;
    ++expectedHist[in[i] & 0xFF];
  }
  EXPECT_TRUE(sum == expectedSum, "sum %llu != %llu", sum, expectedSum);
  EXPECT_TRUE(minMax[0] == expectedMin && minMax[1] == expectedMax, "min/max %d/%d != %d/%d", minMax[0],
              minMax[1], expectedMin, expectedMax);
  for (int bin = 0; bin < 256; ++bin) {
    EXPECT_TRUE(hist[bin] == expectedHist[bin], "hist[%d] = %u != %u", bin, hist[bin], expectedHist[bin]);
  }
  std::printf("reduction n=%d sum=%llu min=%d max=%d hist[0]=%u hist[255]=%u hist_fnv=%016llx\n", n, sum,
              minMax[0], minMax[1], hist[0], hist[255],
              static_cast<unsigned long long>(fnv1a64(hist.data(), 256 * sizeof(unsigned int))));

  CHECK_CUDA(cudaFree(dIn));
  CHECK_CUDA(cudaFree(dSum));
  CHECK_CUDA(cudaFree(dMinMax));
  CHECK_CUDA(cudaFree(dHist));
  std::printf("reduction_atomics OK\n");
  return 0;
}
