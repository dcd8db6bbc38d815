// Several streams overlapping asynchronous copies (from pinned memory) with
// kernels, ordered across streams with events:
// - each of kStreams streams copies its chunk in, transforms it and copies it out;
// - a consumer stream waits (cudaStreamWaitEvent) on an event recorded after a
//   deliberately slow producer kernel and reads the producer's output; without
//   the wait it would read the zeros written by an earlier memset;
// - cudaEventElapsedTime over the whole run must be > 0 (checked, not printed).
#include <cstdint>
#include <vector>

#include "check.cuh"

constexpr int kStreams = 4;
constexpr int kChunk = 1 << 20;  // elements per stream

__global__ void transform(const std::uint32_t* in, std::uint32_t* out, int n, std::uint32_t salt) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    out[i] = in[i] * 3u + salt;
  }
}

// Slow on purpose: many dependent iterations, so the consumer would overtake it without the event.
__global__ void slowProducer(std::uint32_t* out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    std::uint32_t v = static_cast<std::uint32_t>(i);
    for (int r = 0; r < 1000; ++r) v = v * 1664525u + 1013904223u;
    out[i] = v;
  }
}

__global__ void consumer(const std::uint32_t* produced, std::uint32_t* out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    out[i] = produced[i] ^ 0xA5A5A5A5u;
  }
}

static std::uint32_t producerValue(int i) {
  std::uint32_t v = static_cast<std::uint32_t>(i);
  for (int r = 0; r < 1000; ++r) v = v * 1664525u + 1013904223u;
  return v;
}

int main() {
  int leastPriority = 0, greatestPriority = 0;
  CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&leastPriority, &greatestPriority));

  cudaStream_t streams[kStreams];
  CHECK_CUDA(cudaStreamCreate(&streams[0]));
  CHECK_CUDA(cudaStreamCreateWithFlags(&streams[1], cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithPriority(&streams[2], cudaStreamNonBlocking, greatestPriority));
  CHECK_CUDA(cudaStreamCreateWithPriority(&streams[3], cudaStreamDefault, leastPriority));

  std::uint32_t* hostIn = nullptr;
  std::uint32_t* hostOut = nullptr;
  const size_t totalBytes = static_cast<size_t>(kStreams) * kChunk * sizeof(std::uint32_t);
  CHECK_CUDA(cudaMallocHost(&hostIn, totalBytes));
  CHECK_CUDA(cudaHostAlloc(&hostOut, totalBytes, cudaHostAllocDefault));
  for (int i = 0; i < kStreams * kChunk; ++i) hostIn[i] = mix32(static_cast<std::uint32_t>(i));

  std::uint32_t *dIn = nullptr, *dOut = nullptr;
  CHECK_CUDA(cudaMalloc(&dIn, totalBytes));
  CHECK_CUDA(cudaMalloc(&dOut, totalBytes));

  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  CHECK_CUDA(cudaEventRecord(start, streams[0]));
  // Every stream must start after `start`, so the elapsed time covers all of them.
  for (int s = 1; s < kStreams; ++s) CHECK_CUDA(cudaStreamWaitEvent(streams[s], start, 0));

  for (int s = 0; s < kStreams; ++s) {
    const size_t offset = static_cast<size_t>(s) * kChunk;
    CHECK_CUDA(cudaMemcpyAsync(dIn + offset, hostIn + offset, kChunk * sizeof(std::uint32_t),
                               cudaMemcpyHostToDevice, streams[s]));
    transform<<<64, 256, 0, streams[s]>>>(dIn + offset, dOut + offset, kChunk, static_cast<std::uint32_t>(s));
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaMemcpyAsync(hostOut + offset, dOut + offset, kChunk * sizeof(std::uint32_t),
                               cudaMemcpyDeviceToHost, streams[s]));
  }

  // Cross-stream dependency: producer on stream 0, consumer on stream 1.
  const int depN = 1 << 17;
  std::uint32_t *dProduced = nullptr, *dConsumed = nullptr;
  CHECK_CUDA(cudaMalloc(&dProduced, depN * sizeof(std::uint32_t)));
  CHECK_CUDA(cudaMalloc(&dConsumed, depN * sizeof(std::uint32_t)));
  CHECK_CUDA(cudaMemset(dProduced, 0, depN * sizeof(std::uint32_t)));
  cudaEvent_t produced;
  CHECK_CUDA(cudaEventCreateWithFlags(&produced, cudaEventDisableTiming));
  slowProducer<<<8, 128, 0, streams[0]>>>(dProduced, depN);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaEventRecord(produced, streams[0]));
  CHECK_CUDA(cudaStreamWaitEvent(streams[1], produced, 0));
  consumer<<<64, 256, 0, streams[1]>>>(dProduced, dConsumed, depN);
  CHECK_CUDA(cudaGetLastError());
  std::vector<std::uint32_t> consumed(depN);
  CHECK_CUDA(cudaMemcpyAsync(consumed.data(), dConsumed, depN * sizeof(std::uint32_t), cudaMemcpyDeviceToHost,
                             streams[1]));

  for (int s = 1; s < kStreams; ++s) {
    cudaEvent_t done;
    CHECK_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    CHECK_CUDA(cudaEventRecord(done, streams[s]));
    CHECK_CUDA(cudaStreamWaitEvent(streams[0], done, 0));
    CHECK_CUDA(cudaEventDestroy(done));  // legal: destruction is deferred until the event completes
  }
  CHECK_CUDA(cudaEventRecord(stop, streams[0]));
  CHECK_CUDA(cudaEventSynchronize(stop));
  for (int s = 0; s < kStreams; ++s) CHECK_CUDA(cudaStreamSynchronize(streams[s]));

  float ms = 0.0f;
  CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
  EXPECT_TRUE(ms > 0.0f, "elapsed time %f ms is not positive", ms);
  std::fprintf(stderr, "streams_events: %.3f ms\n", ms);

  for (int i = 0; i < kStreams * kChunk; ++i) {
    const std::uint32_t expected = hostIn[i] * 3u + static_cast<std::uint32_t>(i / kChunk);
    EXPECT_TRUE(hostOut[i] == expected, "out[%d] = %u, expected %u", i, hostOut[i], expected);
  }
  for (int i = 0; i < depN; ++i) {
    const std::uint32_t expected = producerValue(i) ^ 0xA5A5A5A5u;
    EXPECT_TRUE(consumed[i] == expected, "consumed[%d] = %u, expected %u (event ordering broken)", i,
                consumed[i], expected);
  }

  std::printf("stream query after sync: %s\n", cudaGetErrorName(cudaStreamQuery(streams[2])));
  std::printf("event query after sync: %s\n", cudaGetErrorName(cudaEventQuery(stop)));
  std::printf("streams=%d out_fnv=%016llx consumed_fnv=%016llx\n", kStreams,
              static_cast<unsigned long long>(fnv1a64(hostOut, totalBytes)),
              static_cast<unsigned long long>(fnv1a64(consumed.data(), depN * sizeof(std::uint32_t))));

  CHECK_CUDA(cudaEventDestroy(produced));
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  for (int s = 0; s < kStreams; ++s) CHECK_CUDA(cudaStreamDestroy(streams[s]));
  CHECK_CUDA(cudaFree(dIn));
  CHECK_CUDA(cudaFree(dOut));
  CHECK_CUDA(cudaFree(dProduced));
  CHECK_CUDA(cudaFree(dConsumed));
  CHECK_CUDA(cudaFreeHost(hostIn));
  CHECK_CUDA(cudaFreeHost(hostOut));
  std::printf("streams_events OK\n");
  return 0;
}
