// Host callbacks: cudaLaunchHostFunc and cudaStreamAddCallback run after the work
// enqueued before them on their stream and before the work enqueued after them.
// Two kernels add to a device counter; after each, the counter is copied into the
// same pinned buffer and a callback records what it sees there. A callback that
// ran early would see a stale value, one that ran late the next kernel's value.
#include <vector>

#include "check.cuh"

__global__ void addToCounter(unsigned* counter, unsigned amount) {
  atomicAdd(counter, amount);  // every thread adds: amount * threads in total
}

struct Observation {
  const unsigned* watched = nullptr;
  std::vector<unsigned> seen;
  std::vector<int> statuses;  // cudaError_t passed to stream callbacks
};

void recordHostFunc(void* userData) {
  auto* observation = static_cast<Observation*>(userData);
  observation->seen.push_back(*observation->watched);
}

void recordStreamCallback(cudaStream_t, cudaError_t status, void* userData) {
  auto* observation = static_cast<Observation*>(userData);
  observation->statuses.push_back(status);
  recordHostFunc(userData);
}

int main() {
  unsigned* counter = nullptr;
  unsigned* pinned = nullptr;
  CHECK_CUDA(cudaMalloc(&counter, sizeof(unsigned)));
  CHECK_CUDA(cudaMemset(counter, 0, sizeof(unsigned)));
  CHECK_CUDA(cudaMallocHost(&pinned, sizeof(unsigned)));
  *pinned = 0xFFFFFFFFu;
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  Observation observation;
  observation.watched = pinned;

  addToCounter<<<4, 64, 0, stream>>>(counter, 1);  // counter = 256
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaMemcpyAsync(pinned, counter, sizeof(unsigned), cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaLaunchHostFunc(stream, recordHostFunc, &observation));
  addToCounter<<<4, 64, 0, stream>>>(counter, 10);  // counter = 2816
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaMemcpyAsync(pinned, counter, sizeof(unsigned), cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamAddCallback(stream, recordStreamCallback, &observation, 0));
  addToCounter<<<2, 32, 0, stream>>>(counter, 100);  // counter = 9216
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaMemcpyAsync(pinned, counter, sizeof(unsigned), cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaLaunchHostFunc(stream, recordHostFunc, &observation));
  CHECK_CUDA(cudaStreamSynchronize(stream));

  EXPECT_TRUE(observation.seen.size() == 3, "%zu callbacks ran", observation.seen.size());
  for (std::size_t i = 0; i < observation.seen.size(); ++i) {
    std::printf("callback %zu saw counter %u\n", i, observation.seen[i]);
  }
  EXPECT_TRUE(observation.seen[0] == 256 && observation.seen[1] == 2816 && observation.seen[2] == 9216,
              "callbacks out of order");
  EXPECT_TRUE(observation.statuses.size() == 1, "stream callback ran %zu times", observation.statuses.size());
  std::printf("stream callback status: %s\n", cudaGetErrorName(static_cast<cudaError_t>(observation.statuses[0])));
  std::printf("final counter %u\n", *pinned);

  // The legacy default stream takes callbacks too.
  observation.seen.clear();
  CHECK_CUDA(cudaMemset(counter, 0, sizeof(unsigned)));
  addToCounter<<<1, 32>>>(counter, 3);
  CHECK_CUDA(cudaMemcpyAsync(pinned, counter, sizeof(unsigned), cudaMemcpyDeviceToHost, 0));
  CHECK_CUDA(cudaLaunchHostFunc(0, recordHostFunc, &observation));
  CHECK_CUDA(cudaDeviceSynchronize());
  EXPECT_TRUE(observation.seen.size() == 1 && observation.seen[0] == 96, "legacy-stream callback");
  std::printf("legacy stream callback saw counter %u\n", observation.seen[0]);

  EXPECT_ERROR("cudaStreamAddCallback(flags 1)", cudaStreamAddCallback(stream, recordStreamCallback, &observation, 1),
               cudaErrorInvalidValue);
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFreeHost(pinned));
  CHECK_CUDA(cudaFree(counter));
  std::printf("host_callbacks OK\n");
  return 0;
}
