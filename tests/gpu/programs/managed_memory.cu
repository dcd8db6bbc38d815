// cudaMallocManaged the way NVIDIA's managed-memory samples use it (simpleManagedMemory-style
// init on the host, kernel, synchronize, check on the host; UnifiedMemoryStreams-style tasks on
// several streams, each attaching its data with cudaStreamAttachMemAsync): one pointer for host
// and device; prefetch and advice calls succeed; cudaMemcpy (cudaMemcpyDefault and explicit kinds)
// and cudaMemset on managed memory; cudaPointerGetAttributes; the driver's view
// (cudaDevAttrManagedMemory). Under AgileOS managed memory is host memory shared with the worker
// and mapped for the device at the same address (client/session/host_allocations.h): the device
// reaches it over the bus, so this program synchronizes before the host touches it, as programs
// must when concurrentManagedAccess is 0 (its value differs from native and is not printed).
#include <cstdint>
#include <cstring>
#include <vector>

#include "check.cuh"

namespace {

__global__ void saxpy(int n, float a, const float* x, float* y) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[i] = a * x[i] + y[i];
}

__global__ void fillIndex(std::uint32_t* p, int n, std::uint32_t tag) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    p[i] = mix32(i) ^ tag;
}

// Device-wide atomics on a managed counter (conjugateGradient's dot products, systemWideAtomics'
// device half): under AgileOS the counter is host memory, so these atomics cross the bus.
__global__ void countInto(unsigned long long* counter, int perThread) {
  for (int i = 0; i < perThread; ++i) atomicAdd(counter, 1ull);
}

// One UnifiedMemoryStreams-style task: y = M * x for a small dense matrix.
__global__ void gemv(int n, const double* m, const double* x, double* y) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= n) return;
  double sum = 0;
  for (int k = 0; k < n; ++k) sum += m[row * n + k] * x[k];
  y[row] = sum;
}

}  // namespace

int main() {
  int managed = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&managed, cudaDevAttrManagedMemory, 0));
  std::printf("managedMemory: %d\n", managed);
  int concurrent = -1;
  CHECK_CUDA(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, 0));
  std::fprintf(stderr, "concurrentManagedAccess: %d\n", concurrent);

  // Init on the host, a kernel, synchronize, check on the host.
  constexpr int kN = 1 << 20;
  float* x = nullptr;
  float* y = nullptr;
  CHECK_CUDA(cudaMallocManaged(&x, kN * sizeof(float)));
  CHECK_CUDA(cudaMallocManaged(&y, kN * sizeof(float), cudaMemAttachGlobal));
  for (int i = 0; i < kN; ++i) {
    x[i] = static_cast<float>(i % 1000) * 0.5f;
    y[i] = 2.0f;
  }
  cudaMemLocation device{cudaMemLocationTypeDevice, 0};
  cudaMemLocation host{cudaMemLocationTypeHost, 0};
  CHECK_CUDA(cudaMemAdvise(x, kN * sizeof(float), cudaMemAdviseSetReadMostly, device));
  CHECK_CUDA(cudaMemAdvise(y, kN * sizeof(float), cudaMemAdviseSetPreferredLocation, device));
  CHECK_CUDA(cudaMemAdvise(y, kN * sizeof(float), cudaMemAdviseSetAccessedBy, device));
  CHECK_CUDA(cudaMemPrefetchAsync(x, kN * sizeof(float), device, 0, nullptr));
  CHECK_CUDA(cudaMemPrefetchAsync(y, kN * sizeof(float), device, 0, nullptr));
  saxpy<<<256, 256>>>(kN, 3.0f, x, y);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaMemPrefetchAsync(y, kN * sizeof(float), host, 0, nullptr));
  CHECK_CUDA(cudaDeviceSynchronize());
  int wrong = 0;
  for (int i = 0; i < kN; ++i) wrong += y[i] != 3.0f * (static_cast<float>(i % 1000) * 0.5f) + 2.0f;
  EXPECT_TRUE(wrong == 0, "%d saxpy results wrong", wrong);
  std::printf("saxpy on managed memory: %d wrong, checksum %016llx\n", wrong,
              static_cast<unsigned long long>(fnv1a64(y, kN * sizeof(float))));
  // The host updates, the kernel sees it (after the host is done: no concurrent access).
  for (int i = 0; i < kN; ++i) y[i] = 1.0f;
  saxpy<<<256, 256>>>(kN, 1.0f, x, y);
  CHECK_CUDA(cudaDeviceSynchronize());
  wrong = 0;
  for (int i = 0; i < kN; ++i) wrong += y[i] != static_cast<float>(i % 1000) * 0.5f + 1.0f;
  EXPECT_TRUE(wrong == 0, "%d second-pass results wrong", wrong);
  std::printf("host updates seen by the kernel: %d wrong\n", wrong);

  // Pointer attributes: managed, one address.
  cudaPointerAttributes attributes{};
  CHECK_CUDA(cudaPointerGetAttributes(&attributes, y + 7));
  std::printf(
      "managed pointer type: %s, device pointer equals host pointer: %s\n",
      attributes.type == cudaMemoryTypeManaged ? "managed" : "other",
      attributes.devicePointer == attributes.hostPointer && attributes.devicePointer == y + 7 ? "yes" : "no");

  // Copies and fills naming managed memory.
  constexpr int kWords = 300000;
  std::uint32_t* words = nullptr;
  std::uint32_t* plainDevice = nullptr;
  CHECK_CUDA(cudaMallocManaged(&words, kWords * sizeof(std::uint32_t)));
  CHECK_CUDA(cudaMalloc(&plainDevice, kWords * sizeof(std::uint32_t)));
  fillIndex<<<120, 256>>>(plainDevice, kWords, 0x1234u);
  CHECK_CUDA(cudaMemcpy(words, plainDevice, kWords * sizeof(std::uint32_t), cudaMemcpyDefault));
  wrong = 0;
  for (int i = 0; i < kWords; ++i) wrong += words[i] != (mix32(i) ^ 0x1234u);
  EXPECT_TRUE(wrong == 0, "%d words wrong after cudaMemcpyDefault", wrong);
  std::printf("device to managed (default): %d wrong\n", wrong);
  CHECK_CUDA(cudaMemset(words, 0, 1000 * sizeof(std::uint32_t)));
  CHECK_CUDA(cudaMemcpy(plainDevice, words, kWords * sizeof(std::uint32_t), cudaMemcpyHostToDevice));
  std::vector<std::uint32_t> back(kWords);
  CHECK_CUDA(cudaMemcpy(back.data(), plainDevice, kWords * sizeof(std::uint32_t), cudaMemcpyDeviceToHost));
  wrong = 0;
  for (int i = 0; i < kWords; ++i) wrong += back[i] != (i < 1000 ? 0u : (mix32(i) ^ 0x1234u));
  EXPECT_TRUE(wrong == 0, "%d words wrong after memset and copy back", wrong);
  std::printf("cudaMemset of managed, managed to device: %d wrong\n", wrong);
  fillIndex<<<120, 256>>>(words, kWords, 0x99u);  // a kernel writes managed memory ...
  CHECK_CUDA(
      cudaMemcpy(back.data(), words, kWords * sizeof(std::uint32_t), cudaMemcpyDeviceToHost));  // ... ordered
  wrong = 0;
  for (int i = 0; i < kWords; ++i) wrong += back[i] != (mix32(i) ^ 0x99u);
  EXPECT_TRUE(wrong == 0, "%d words wrong in a copy ordered after the kernel", wrong);
  std::printf("copy from managed ordered after a kernel: %d wrong\n", wrong);

  // Atomics from every thread of a grid on one managed word.
  unsigned long long* counter = nullptr;
  CHECK_CUDA(cudaMallocManaged(&counter, sizeof *counter));
  *counter = 5;
  countInto<<<64, 128>>>(counter, 16);
  CHECK_CUDA(cudaDeviceSynchronize());
  EXPECT_TRUE(*counter == 5 + 64ull * 128 * 16, "counter %llu", *counter);
  std::printf("device atomics on managed memory: %llu\n", *counter);
  CHECK_CUDA(cudaFree(counter));

  // UnifiedMemoryStreams: tasks on several streams, each attaching its own data to its stream.
  constexpr int kTasks = 8;
  constexpr int kDim = 64;
  cudaStream_t streams[4];
  for (cudaStream_t& stream : streams) CHECK_CUDA(cudaStreamCreate(&stream));
  std::vector<double*> matrices(kTasks), vectors(kTasks), results(kTasks);
  for (int t = 0; t < kTasks; ++t) {
    CHECK_CUDA(cudaMallocManaged(&matrices[t], kDim * kDim * sizeof(double)));
    CHECK_CUDA(cudaMallocManaged(&vectors[t], kDim * sizeof(double)));
    CHECK_CUDA(cudaMallocManaged(&results[t], kDim * sizeof(double)));
    for (int i = 0; i < kDim * kDim; ++i) matrices[t][i] = static_cast<double>((i + t) % 17) - 8.0;
    for (int i = 0; i < kDim; ++i) vectors[t][i] = static_cast<double>(i % 5 + t);
  }
  double total = 0;
  for (int t = 0; t < kTasks; ++t) {
    cudaStream_t stream = streams[t % 4];
    CHECK_CUDA(cudaStreamAttachMemAsync(stream, matrices[t], 0, cudaMemAttachSingle));
    CHECK_CUDA(cudaStreamAttachMemAsync(stream, vectors[t], 0, cudaMemAttachSingle));
    CHECK_CUDA(cudaStreamAttachMemAsync(stream, results[t], 0, cudaMemAttachSingle));
    gemv<<<1, kDim, 0, stream>>>(kDim, matrices[t], vectors[t], results[t]);
    CHECK_CUDA(cudaStreamSynchronize(stream));
    for (int row = 0; row < kDim; ++row) {
      double expected = 0;
      for (int k = 0; k < kDim; ++k) expected += matrices[t][row * kDim + k] * vectors[t][k];
      EXPECT_TRUE(results[t][row] == expected, "task %d row %d", t, row);
      total += results[t][row];
    }
  }
  std::printf("stream tasks on managed memory: total %.1f\n", total);
  for (int t = 0; t < kTasks; ++t) {
    CHECK_CUDA(cudaFree(matrices[t]));
    CHECK_CUDA(cudaFree(vectors[t]));
    CHECK_CUDA(cudaFree(results[t]));
  }
  for (cudaStream_t stream : streams) CHECK_CUDA(cudaStreamDestroy(stream));

  EXPECT_ERROR("cudaMallocManaged of 0 bytes", cudaMallocManaged(&x, 0), cudaSuccess);  // as natively
  cudaGetLastError();
  CHECK_CUDA(cudaFree(words));
  CHECK_CUDA(cudaFree(plainDevice));
  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaFree(y));
  std::printf("managed_memory done\n");
  return 0;
}
