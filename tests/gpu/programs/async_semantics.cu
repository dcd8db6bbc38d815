// Asynchronous work as CUDA defines it, which AgileOS now sends without waiting for
// replies (issue 3): the results must be those of native CUDA.
// - 10,000 launches in a row on one stream, each depending on the previous: order kept,
//   none lost;
// - cudaStreamQuery answers "not ready" while a long kernel runs and "success" on an idle
//   stream, never "success" for a busy one (the client answers idle queries itself);
// - pinned (cudaMallocHost) memory: async copies in both directions around a kernel on a
//   non-default stream, with events; cudaMemset before a kernel on the legacy stream;
// - async calls the client cannot vouch for still return their error at once: a memset
//   on an address no allocation has.
#include <cstring>
#include <vector>

#include "tests/gpu/programs/check.cuh"

namespace {

__global__ void increment(unsigned* counter) { atomicAdd(counter, 1u); }

// Each launch reads the previous value and writes value * 3 + 1 (mod 2^32): any reordering
// or loss changes the final value.
__global__ void chainStep(unsigned* value) { *value = *value * 3u + 1u; }

__global__ void spin(long long cycles, unsigned* done) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
  *done = 1u;
}

__global__ void scale(float* data, int n, float factor) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = data[i] * factor + 1.0f;
}

}  // namespace

int main() {
  // 1. A dependent chain of launches on the legacy stream.
  unsigned* value = nullptr;
  CHECK_CUDA(cudaMalloc(&value, sizeof(unsigned)));
  CHECK_CUDA(cudaMemset(value, 0, sizeof(unsigned)));
  for (int i = 0; i < 10000; ++i) chainStep<<<1, 1>>>(value);
  CHECK_CUDA(cudaGetLastError());
  unsigned chained = 0;
  CHECK_CUDA(cudaMemcpy(&chained, value, sizeof chained, cudaMemcpyDeviceToHost));
  unsigned expected = 0;
  for (int i = 0; i < 10000; ++i) expected = expected * 3u + 1u;
  std::printf("chain of 10000 launches: %u\n", chained);
  EXPECT_TRUE(chained == expected, "chain %u, expected %u", chained, expected);

  // 2. Many independent launches, counted.
  unsigned* counter = nullptr;
  CHECK_CUDA(cudaMalloc(&counter, sizeof(unsigned)));
  CHECK_CUDA(cudaMemset(counter, 0, sizeof(unsigned)));
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (int i = 0; i < 5000; ++i) increment<<<2, 64, 0, stream>>>(counter);
  CHECK_CUDA(cudaStreamSynchronize(stream));
  unsigned counted = 0;
  CHECK_CUDA(cudaMemcpy(&counted, counter, sizeof counted, cudaMemcpyDeviceToHost));
  std::printf("5000 launches of 128 increments: %u\n", counted);
  EXPECT_TRUE(counted == 5000u * 128u, "counted %u", counted);

  // 3. Stream queries: idle, busy, idle again.
  EXPECT_ERROR("query of a new stream", cudaStreamQuery(stream), cudaSuccess);
  unsigned* done = nullptr;
  CHECK_CUDA(cudaMalloc(&done, sizeof(unsigned)));
  CHECK_CUDA(cudaMemset(done, 0, sizeof(unsigned)));
  int clockKhz = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&clockKhz, cudaDevAttrClockRate, 0));
  const long long cycles = static_cast<long long>(clockKhz) * 300;  // about 300 ms
  spin<<<1, 1, 0, stream>>>(cycles, done);
  EXPECT_ERROR("query while a 300 ms kernel runs", cudaStreamQuery(stream), cudaErrorNotReady);
  EXPECT_ERROR("query again", cudaStreamQuery(stream), cudaErrorNotReady);
  CHECK_CUDA(cudaStreamSynchronize(stream));
  EXPECT_ERROR("query after synchronize", cudaStreamQuery(stream), cudaSuccess);
  unsigned finished = 0;
  CHECK_CUDA(cudaMemcpy(&finished, done, sizeof finished, cudaMemcpyDeviceToHost));
  std::printf("long kernel finished: %u\n", finished);
  spin<<<1, 1>>>(cycles / 3, done);  // the legacy stream busy: a blocking stream's query waits for it
  cudaStream_t blocking = nullptr;
  CHECK_CUDA(cudaStreamCreate(&blocking));
  EXPECT_ERROR("legacy stream busy", cudaStreamQuery(0), cudaErrorNotReady);
  CHECK_CUDA(cudaDeviceSynchronize());
  EXPECT_ERROR("legacy stream idle", cudaStreamQuery(0), cudaSuccess);
  EXPECT_ERROR("blocking stream idle", cudaStreamQuery(blocking), cudaSuccess);

  // 4. Pinned memory, async copies around a kernel, events.
  constexpr int kN = 1 << 22;  // 16 MiB of floats
  float* pinned = nullptr;
  CHECK_CUDA(cudaMallocHost(&pinned, kN * sizeof(float)));
  for (int i = 0; i < kN; ++i) pinned[i] = static_cast<float>(mix32(i) % 1000);
  float* device = nullptr;
  CHECK_CUDA(cudaMalloc(&device, kN * sizeof(float)));
  cudaEvent_t start = nullptr, stop = nullptr;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  CHECK_CUDA(cudaEventRecord(start, stream));
  CHECK_CUDA(cudaMemcpyAsync(device, pinned, kN * sizeof(float), cudaMemcpyHostToDevice, stream));
  scale<<<(kN + 255) / 256, 256, 0, stream>>>(device, kN, 2.0f);
  CHECK_CUDA(cudaMemcpyAsync(pinned, device, kN * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaEventRecord(stop, stream));
  CHECK_CUDA(cudaEventSynchronize(stop));
  EXPECT_ERROR("event query after synchronize", cudaEventQuery(stop), cudaSuccess);
  float elapsed = -1.0f;
  CHECK_CUDA(cudaEventElapsedTime(&elapsed, start, stop));
  EXPECT_TRUE(elapsed > 0.0f, "elapsed %f ms", elapsed);
  bool pinnedOk = true;
  for (int i = 0; i < kN && pinnedOk; ++i) pinnedOk = pinned[i] == static_cast<float>(mix32(i) % 1000) * 2.0f + 1.0f;
  std::printf("pinned async round trip with a kernel: %s, checksum %016llx\n", pinnedOk ? "ok" : "WRONG",
              static_cast<unsigned long long>(fnv1a64(pinned, kN * sizeof(float))));
  EXPECT_TRUE(pinnedOk, "pinned data wrong");

  // 5. cudaMemset (asynchronous for device memory) then a kernel and a copy, in order.
  CHECK_CUDA(cudaMemset(device, 0, kN * sizeof(float)));
  scale<<<(kN + 255) / 256, 256>>>(device, kN, 5.0f);
  std::vector<float> back(kN);
  CHECK_CUDA(cudaMemcpy(back.data(), device, kN * sizeof(float), cudaMemcpyDeviceToHost));
  bool allOnes = true;
  for (float x : back) allOnes = allOnes && x == 1.0f;
  std::printf("memset then kernel: %s\n", allOnes ? "all 1.0" : "WRONG");
  EXPECT_TRUE(allOnes, "memset/kernel order");

  // 6. Errors of async calls the client cannot vouch for come back from the call itself.
  EXPECT_ERROR("memsetAsync of an address no allocation has",
               cudaMemsetAsync(reinterpret_cast<void*>(0x10), 0, sizeof(unsigned), stream), cudaErrorInvalidValue);
  EXPECT_ERROR("last error after it", cudaGetLastError(), cudaErrorInvalidValue);
  // (A destroyed event is not tried here: native cudart may crash on one.)
  EXPECT_ERROR("memsetAsync inside the allocation", cudaMemsetAsync(counter, 0, sizeof(unsigned), stream),
               cudaSuccess);
  EXPECT_ERROR("stream synchronize", cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_ERROR("no error left", cudaGetLastError(), cudaSuccess);

  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  CHECK_CUDA(cudaFreeHost(pinned));
  CHECK_CUDA(cudaFree(device));
  CHECK_CUDA(cudaFree(done));
  CHECK_CUDA(cudaFree(counter));
  CHECK_CUDA(cudaFree(value));
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaStreamDestroy(blocking));
  std::printf("async semantics: all checks passed\n");
  return 0;
}
