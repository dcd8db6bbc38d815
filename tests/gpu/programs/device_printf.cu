// printf from device code. Output order is made deterministic: one printing
// thread per launch, each launch synchronized before the host prints again, and
// stdout flushed before every launch so host and device lines interleave the
// same way whether the runtime or AgileOS writes the device output.
#include "check.cuh"

__global__ void formats(int launch) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  printf("[device] launch %d: int=%d negative=%d unsigned=%u hex=0x%08x\n", launch, 42 * launch, -7 * launch,
         4000000000u, 0xC0FFEEu + launch);
  printf("[device] launch %d: long long=%lld float=%.3f double=%.6f char=%c string=%s\n", launch,
         -1234567890123ll * launch, 1.5f * launch, 3.25 / (launch + 1), 'A' + launch, "agileos");
}

__global__ void manyLines(int lines) {
  if (threadIdx.x != 0) return;
  for (int i = 0; i < lines; ++i) printf("[device] line %03d of %d, square=%d\n", i, lines, i * i);
}

// Only the last thread of the last block prints, so the line says the grid ran completely.
__global__ void lastThreadReports(int* counter) {
  const int total = gridDim.x * blockDim.x;
  const int done = atomicAdd(counter, 1) + 1;
  if (done == total) printf("[device] all %d threads ran\n", total);
}

int main() {
  for (int launch = 0; launch < 3; ++launch) {
    std::printf("[host] before launch %d\n", launch);
    std::fflush(stdout);
    formats<<<2, 32>>>(launch);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());
    std::printf("[host] after launch %d\n", launch);
  }

  std::printf("[host] 300 lines from one thread follow\n");
  std::fflush(stdout);
  manyLines<<<1, 1>>>(300);
  CHECK_CUDA(cudaDeviceSynchronize());

  int* counter = nullptr;
  CHECK_CUDA(cudaMalloc(&counter, sizeof(int)));
  CHECK_CUDA(cudaMemset(counter, 0, sizeof(int)));
  std::printf("[host] grid report follows\n");
  std::fflush(stdout);
  lastThreadReports<<<64, 128>>>(counter);
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaFree(counter));

  // Output of a kernel synchronized through a stream rather than the device.
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  std::printf("[host] stream launch follows\n");
  std::fflush(stdout);
  formats<<<1, 1, 0, stream>>>(7);
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_CUDA(cudaStreamDestroy(stream));
  // A device synchronize makes sure any output still buffered is out before the final line.
  CHECK_CUDA(cudaDeviceSynchronize());
  std::printf("device_printf OK\n");
  return 0;
}
