// Built with --default-stream per-thread: every host thread's default stream is
// its own (cudaStreamPerThread), and the runtime calls compile to their _ptds /
// _ptsz variants. Several host threads each run a dependent sequence on their
// default stream; results are gathered and printed by the main thread in a
// fixed order. The legacy stream is also used explicitly once.
#include <cstdint>
#include <thread>
#include <vector>

#include "check.cuh"

constexpr int kThreads = 6;
constexpr int kElements = 1 << 18;

__global__ void seed(std::uint32_t* data, int n, std::uint32_t base) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) data[i] = base + i;
}

__global__ void square(std::uint32_t* data, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) data[i] *= data[i];
}

struct ThreadResult {
  unsigned long long sum = 0;
  bool ok = false;
  cudaError_t error = cudaSuccess;
};

static void worker(int index, ThreadResult* result) {
  std::uint32_t* dev = nullptr;
  std::vector<std::uint32_t> host(kElements);
  cudaError_t e = cudaMalloc(&dev, kElements * sizeof(std::uint32_t));
  if (e == cudaSuccess) e = cudaMemsetAsync(dev, 0xFF, kElements * sizeof(std::uint32_t), 0);
  if (e == cudaSuccess) {
    // Stream 0 is this thread's own default stream here, so these are ordered after the memset.
    const std::uint32_t base = 1000u * static_cast<std::uint32_t>(index);
    seed<<<32, 256>>>(dev, kElements, base);
    square<<<32, 256, 0, cudaStreamPerThread>>>(dev, kElements);
    e = cudaGetLastError();
  }
  if (e == cudaSuccess) {
    e = cudaMemcpyAsync(host.data(), dev, kElements * sizeof(std::uint32_t), cudaMemcpyDeviceToHost, 0);
  }
  if (e == cudaSuccess) e = cudaStreamSynchronize(cudaStreamPerThread);
  if (e == cudaSuccess) {
    bool ok = true;
    unsigned long long sum = 0;
    const std::uint32_t base = 1000u * static_cast<std::uint32_t>(index);
    for (int i = 0; i < kElements; ++i) {
      const std::uint32_t v = base + static_cast<std::uint32_t>(i);
      ok = ok && host[i] == v * v;
      sum += host[i];
    }
    result->ok = ok;
    result->sum = sum;
  }
  if (dev != nullptr) {
    const cudaError_t freeError = cudaFree(dev);
    if (e == cudaSuccess) e = freeError;
  }
  result->error = e;
}

int main() {
  std::vector<ThreadResult> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t, &results[t]);
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) {
    std::printf("thread %d: %s ok=%d sum=%llu\n", t, cudaGetErrorName(results[t].error),
                results[t].ok ? 1 : 0, results[t].sum);
    EXPECT_TRUE(results[t].error == cudaSuccess && results[t].ok, "thread %d failed", t);
  }

  // The legacy default stream, named explicitly, still works and synchronizes with the per-thread streams.
  std::uint32_t* dev = nullptr;
  CHECK_CUDA(cudaMalloc(&dev, 1024 * sizeof(std::uint32_t)));
  seed<<<4, 256, 0, cudaStreamLegacy>>>(dev, 1024, 7);
  CHECK_CUDA(cudaGetLastError());
  square<<<4, 256>>>(dev, 1024);
  std::uint32_t host[1024];
  CHECK_CUDA(cudaMemcpy(host, dev, sizeof(host), cudaMemcpyDeviceToHost));
  for (int i = 0; i < 1024; ++i)
    EXPECT_TRUE(host[i] == (7u + i) * (7u + i), "legacy host[%d] = %u", i, host[i]);
  std::printf("legacy stream then per-thread stream ok, host[1023]=%u\n", host[1023]);
  CHECK_CUDA(cudaFree(dev));
  std::printf("per_thread_stream OK\n");
  return 0;
}
