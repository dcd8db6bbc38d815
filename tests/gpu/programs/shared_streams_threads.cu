// Host threads sharing streams: kThreads threads enqueue work on two shared
// streams concurrently, each into its own pinned buffers, and wait on their own
// events. Thread 0's result also feeds thread 1 through an event recorded on
// one stream and waited on from the other (handed over with a promise), so the
// cross-thread, cross-stream ordering is checked too.
#include <cstdint>
#include <future>
#include <thread>
#include <vector>

#include "check.cuh"

constexpr int kThreads = 6;
constexpr int kElements = 1 << 16;

__global__ void fill(std::uint32_t* data, int n, std::uint32_t salt) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    data[i] = mix32(static_cast<std::uint32_t>(i) + salt);
  }
}

__global__ void combine(const std::uint32_t* other, std::uint32_t* data, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) data[i] ^= other[i];
}

struct Shared {
  cudaStream_t streams[2];
  std::uint32_t* device[kThreads];
  std::promise<cudaEvent_t> threadZeroDone;
};

struct Result {
  cudaError_t error = cudaSuccess;
  std::uint64_t fnv = 0;
  bool ok = false;
};

#define TRY(call)                      \
  do {                                 \
    const cudaError_t try_e_ = (call); \
    if (try_e_ != cudaSuccess) {       \
      result->error = try_e_;          \
      return;                          \
    }                                  \
  } while (0)

static void work(int index, Shared* shared, Result* result) {
  cudaStream_t stream = shared->streams[index % 2];
  std::uint32_t* host = nullptr;
  TRY(cudaMallocHost(&host, kElements * sizeof(std::uint32_t)));
  fill<<<32, 256, 0, stream>>>(shared->device[index], kElements,
                               static_cast<std::uint32_t>(index) * 0x10000u);
  TRY(cudaGetLastError());
  if (index == 0) {
    cudaEvent_t done;
    TRY(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    TRY(cudaEventRecord(done, stream));
    shared->threadZeroDone.set_value(done);
  }
  if (index == 1) {
    // Thread 1 runs on the other stream and must see thread 0's finished buffer.
    cudaEvent_t zeroDone = shared->threadZeroDone.get_future().get();
    TRY(cudaStreamWaitEvent(stream, zeroDone, 0));
    combine<<<32, 256, 0, stream>>>(shared->device[0], shared->device[1], kElements);
    TRY(cudaGetLastError());
  }
  TRY(cudaMemcpyAsync(host, shared->device[index], kElements * sizeof(std::uint32_t), cudaMemcpyDeviceToHost,
                      stream));
  cudaEvent_t mine;
  TRY(cudaEventCreate(&mine));
  TRY(cudaEventRecord(mine, stream));
  TRY(cudaEventSynchronize(mine));
  TRY(cudaEventDestroy(mine));

  bool ok = true;
  for (int i = 0; i < kElements; ++i) {
    std::uint32_t expected =
        mix32(static_cast<std::uint32_t>(i) + static_cast<std::uint32_t>(index) * 0x10000u);
    if (index == 1) expected ^= mix32(static_cast<std::uint32_t>(i));
    ok = ok && host[i] == expected;
  }
  result->ok = ok;
  result->fnv = fnv1a64(host, kElements * sizeof(std::uint32_t));
  TRY(cudaFreeHost(host));
}

int main() {
  Shared shared;
  CHECK_CUDA(cudaStreamCreateWithFlags(&shared.streams[0], cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreate(&shared.streams[1]));
  for (int t = 0; t < kThreads; ++t)
    CHECK_CUDA(cudaMalloc(&shared.device[t], kElements * sizeof(std::uint32_t)));

  std::vector<Result> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(work, t, &shared, &results[t]);
  for (std::thread& thread : threads) thread.join();

  for (int t = 0; t < kThreads; ++t) {
    std::printf("thread %d on stream %d: %s ok=%d fnv=%016llx\n", t, t % 2,
                cudaGetErrorName(results[t].error), results[t].ok ? 1 : 0,
                static_cast<unsigned long long>(results[t].fnv));
    EXPECT_TRUE(results[t].error == cudaSuccess && results[t].ok, "thread %d failed", t);
  }
  for (int s = 0; s < 2; ++s) CHECK_CUDA(cudaStreamSynchronize(shared.streams[s]));
  for (int s = 0; s < 2; ++s) CHECK_CUDA(cudaStreamDestroy(shared.streams[s]));
  for (int t = 0; t < kThreads; ++t) CHECK_CUDA(cudaFree(shared.device[t]));
  std::printf("shared_streams_threads OK\n");
  return 0;
}
