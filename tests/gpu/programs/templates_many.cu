// Many small kernels: one template instantiated for several element types and
// widths (so the module has many entry points with mangled names), and a
// thousand tiny dependent launches on one stream.
#include <cstdint>
#include <vector>

#include "check.cuh"

template <typename T, int kUnroll>
__global__ void axpy(T alpha, const T* x, T* y, int n) {
  const int base = (blockIdx.x * blockDim.x + threadIdx.x) * kUnroll;
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const int i = base + u;
    if (i < n) y[i] = alpha * x[i] + y[i];
  }
}

__global__ void increment(unsigned long long* counter, int step) {
  if (threadIdx.x == 0) *counter = *counter * 3 + step;  // order-sensitive: checks launch ordering
}

template <typename T, int kUnroll>
static unsigned long long runAxpy(const char* typeName) {
  const int n = 10007;
  std::vector<T> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = static_cast<T>(i % 11);
    y[i] = static_cast<T>(i % 5);
  }
  T *dX = nullptr, *dY = nullptr;
  CHECK_CUDA(cudaMalloc(&dX, n * sizeof(T)));
  CHECK_CUDA(cudaMalloc(&dY, n * sizeof(T)));
  CHECK_CUDA(cudaMemcpy(dX, x.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(dY, y.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  const int threads = 128;
  const int blocks = (n + threads * kUnroll - 1) / (threads * kUnroll);
  axpy<T, kUnroll><<<blocks, threads>>>(static_cast<T>(2), dX, dY, n);
  CHECK_CUDA(cudaGetLastError());
  std::vector<T> out(n);
  CHECK_CUDA(cudaMemcpy(out.data(), dY, n * sizeof(T), cudaMemcpyDeviceToHost));
  unsigned long long sum = 0;
  for (int i = 0; i < n; ++i) {
    const T expected = static_cast<T>(static_cast<T>(2) * x[i] + y[i]);
    EXPECT_TRUE(out[i] == expected, "axpy<%s,%d>[%d] wrong", typeName, kUnroll, i);
    sum += static_cast<unsigned long long>(out[i]);
  }
  CHECK_CUDA(cudaFree(dX));
  CHECK_CUDA(cudaFree(dY));
  std::printf("axpy<%s,%d> sum=%llu\n", typeName, kUnroll, sum);
  return sum;
}

template <typename T>
static unsigned long long runAllWidths(const char* typeName) {
  return runAxpy<T, 1>(typeName) + runAxpy<T, 2>(typeName) + runAxpy<T, 4>(typeName) +
         runAxpy<T, 8>(typeName);
}

int main() {
  unsigned long long total = 0;
  total += runAllWidths<int>("int");
  total += runAllWidths<unsigned char>("uchar");
  total += runAllWidths<float>("float");
  total += runAllWidths<double>("double");
  total += runAllWidths<long long>("longlong");
  std::printf("axpy total=%llu\n", total);

  unsigned long long* counter = nullptr;
  CHECK_CUDA(cudaMalloc(&counter, sizeof(unsigned long long)));
  CHECK_CUDA(cudaMemset(counter, 0, sizeof(unsigned long long)));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  unsigned long long expected = 0;
  for (int step = 0; step < 1000; ++step) {
    increment<<<1, 32, 0, stream>>>(counter, step);
    expected = expected * 3 + step;
  }
  CHECK_CUDA(cudaGetLastError());
  unsigned long long got = 0;
  CHECK_CUDA(cudaMemcpyAsync(&got, counter, sizeof(got), cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  EXPECT_TRUE(got == expected, "1000 launches: %llu, expected %llu", got, expected);
  std::printf("1000 ordered launches: counter=%llu\n", got);
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFree(counter));
  std::printf("templates_many OK\n");
  return 0;
}
