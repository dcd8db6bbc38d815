// The observable semantics of streams and events that do not depend on timing:
// queries on idle streams and unrecorded events, timing-disabled events,
// blocking-sync events, priorities, the legacy default stream waiting on an
// event, stream destruction with work pending, and elapsed time >= 0.
#include <cstdint>

#include "check.cuh"

__global__ void writeValue(int* target, int value) { *target = value; }

__global__ void addTo(int* target, int value) { *target += value; }

int main() {
  cudaStream_t plain, nonBlocking, high, low;
  int least = 0, greatest = 0;
  CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  CHECK_CUDA(cudaStreamCreate(&plain));
  CHECK_CUDA(cudaStreamCreateWithFlags(&nonBlocking, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithPriority(&high, cudaStreamNonBlocking, greatest));
  CHECK_CUDA(cudaStreamCreateWithPriority(&low, cudaStreamNonBlocking, least));

  EXPECT_ERROR("query idle stream", cudaStreamQuery(plain), cudaSuccess);
  EXPECT_ERROR("query legacy stream", cudaStreamQuery(0), cudaSuccess);

  cudaEvent_t unrecorded, timed, timed2, untimed, blocking;
  CHECK_CUDA(cudaEventCreate(&unrecorded));
  CHECK_CUDA(cudaEventCreate(&timed));
  CHECK_CUDA(cudaEventCreate(&timed2));
  CHECK_CUDA(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventCreateWithFlags(&blocking, cudaEventBlockingSync | cudaEventDisableTiming));
  EXPECT_ERROR("query unrecorded event", cudaEventQuery(unrecorded), cudaSuccess);
  EXPECT_ERROR("synchronize unrecorded event", cudaEventSynchronize(unrecorded), cudaSuccess);

  int* value = nullptr;
  CHECK_CUDA(cudaMalloc(&value, sizeof(int)));
  // Chain: high writes 5, low waits on it and adds 10, the legacy stream waits on low and adds 100.
  writeValue<<<1, 1, 0, high>>>(value, 5);
  CHECK_CUDA(cudaEventRecord(untimed, high));
  CHECK_CUDA(cudaStreamWaitEvent(low, untimed, 0));
  addTo<<<1, 1, 0, low>>>(value, 10);
  CHECK_CUDA(cudaEventRecord(blocking, low));
  CHECK_CUDA(cudaStreamWaitEvent(0, blocking, 0));
  addTo<<<1, 1>>>(value, 100);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaEventRecord(timed, 0));
  CHECK_CUDA(cudaEventSynchronize(timed));
  int host = 0;
  CHECK_CUDA(cudaMemcpy(&host, value, sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT_TRUE(host == 115, "chained value %d, expected 115", host);
  std::printf("event chain across priorities and the legacy stream: %d\n", host);
  EXPECT_ERROR("query recorded event after sync", cudaEventQuery(timed), cudaSuccess);
  EXPECT_ERROR("query blocking-sync event after sync", cudaEventQuery(blocking), cudaSuccess);

  // Timing: two timed events; elapsed >= 0 and the reversed order <= 0.
  CHECK_CUDA(cudaEventRecord(timed2, nonBlocking));
  CHECK_CUDA(cudaEventSynchronize(timed2));
  float forward = -1, reverse = 1;
  CHECK_CUDA(cudaEventElapsedTime(&forward, timed, timed2));
  CHECK_CUDA(cudaEventElapsedTime(&reverse, timed2, timed));
  EXPECT_TRUE(forward >= 0.0f && reverse <= 0.0f, "elapsed forward %f reverse %f", forward, reverse);
  std::printf("elapsed forward >= 0 and reverse <= 0: yes\n");
  float ms = 0;
  EXPECT_ERROR("elapsed with a timing-disabled event", cudaEventElapsedTime(&ms, timed, untimed),
               cudaErrorInvalidResourceHandle);
  cudaGetLastError();

  // An event re-recorded on another stream follows the latest record.
  CHECK_CUDA(cudaEventRecord(untimed, plain));
  writeValue<<<1, 1, 0, plain>>>(value, 1);
  CHECK_CUDA(cudaEventRecord(untimed, plain));
  CHECK_CUDA(cudaStreamWaitEvent(nonBlocking, untimed, 0));
  addTo<<<1, 1, 0, nonBlocking>>>(value, 1);
  CHECK_CUDA(cudaStreamSynchronize(nonBlocking));
  CHECK_CUDA(cudaMemcpy(&host, value, sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT_TRUE(host == 2, "re-recorded event value %d", host);
  std::printf("re-recorded event: %d\n", host);

  // Destroying a stream with queued work is legal; the work still completes.
  addTo<<<1, 1, 0, low>>>(value, 40);
  CHECK_CUDA(cudaStreamDestroy(low));
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemcpy(&host, value, sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT_TRUE(host == 42, "work on a destroyed stream: %d", host);
  std::printf("work queued before cudaStreamDestroy completed: %d\n", host);

  // The per-thread default stream handle is accepted in this (legacy) build too.
  addTo<<<1, 1, 0, cudaStreamPerThread>>>(value, 1);
  CHECK_CUDA(cudaStreamSynchronize(cudaStreamPerThread));
  CHECK_CUDA(cudaMemcpy(&host, value, sizeof(int), cudaMemcpyDeviceToHost));
  std::printf("cudaStreamPerThread handle: %d\n", host);
  EXPECT_TRUE(host == 43, "per-thread stream value %d", host);

  CHECK_CUDA(cudaEventDestroy(unrecorded));
  CHECK_CUDA(cudaEventDestroy(timed));
  CHECK_CUDA(cudaEventDestroy(timed2));
  CHECK_CUDA(cudaEventDestroy(untimed));
  CHECK_CUDA(cudaEventDestroy(blocking));
  CHECK_CUDA(cudaStreamDestroy(plain));
  CHECK_CUDA(cudaStreamDestroy(nonBlocking));
  CHECK_CUDA(cudaStreamDestroy(high));
  CHECK_CUDA(cudaFree(value));
  std::printf("stream_event_semantics OK\n");
  return 0;
}
