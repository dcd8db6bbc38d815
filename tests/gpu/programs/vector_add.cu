// Vector addition with a grid-stride loop over an odd-sized vector.
// Values are chosen so that every sum is exact in float and can be compared with ==.
#include <vector>

#include "check.cuh"

__global__ void vectorAdd(const float* a, const float* b, float* c, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    c[i] = a[i] + b[i];
  }
}

int main() {
  const int n = 1000003;  // not a multiple of the block size: the bounds check matters
  std::vector<float> a(n), b(n), c(n, -1.0f);
  for (int i = 0; i < n; ++i) {
    a[i] = 0.5f * static_cast<float>(i);  // 2.5 * i < 2^24 * 0.5: all exact
    b[i] = 2.0f * static_cast<float>(i);
  }

  float *dA = nullptr, *dB = nullptr, *dC = nullptr;
  const size_t bytes = n * sizeof(float);
  CHECK_CUDA(cudaMalloc(&dA, bytes));
  CHECK_CUDA(cudaMalloc(&dB, bytes));
  CHECK_CUDA(cudaMalloc(&dC, bytes));
  CHECK_CUDA(cudaMemcpy(dA, a.data(), bytes, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(dB, b.data(), bytes, cudaMemcpyHostToDevice));

  vectorAdd<<<240, 256>>>(dA, dB, dC, n);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaMemcpy(c.data(), dC, bytes, cudaMemcpyDeviceToHost));

  double sum = 0.0;
  for (int i = 0; i < n; ++i) {
    EXPECT_TRUE(c[i] == 2.5f * static_cast<float>(i), "c[%d] = %f, expected %f", i, c[i], 2.5 * i);
    sum += c[i];
  }
  std::printf("vector_add n=%d c[0]=%.1f c[1]=%.1f c[n-1]=%.1f sum=%.1f\n", n, c[0], c[1], c[n - 1], sum);
  std::printf("vector_add fnv=%016llx\n", static_cast<unsigned long long>(fnv1a64(c.data(), bytes)));

  CHECK_CUDA(cudaFree(dA));
  CHECK_CUDA(cudaFree(dB));
  CHECK_CUDA(cudaFree(dC));
  std::printf("vector_add OK\n");
  return 0;
}
