// CUDA's error paths, printed by error NAME so that native and AgileOS runs can
// be compared line by line:
// - cudaGetLastError / cudaPeekAtLastError semantics (peek keeps, get clears);
// - invalid launch configurations, forged kernel pointers;
// - cudaFree of bad pointers, copies and memsets past the end of an allocation;
// - allocation failures, invalid devices, invalid memcpy directions, timing on
//   a timing-disabled event;
// - cudaGetErrorName / cudaGetErrorString for known and unknown codes.
// None of these errors is sticky, so a valid round trip must work at the end.
#include <cstring>

#include "check.cuh"

// Prints the error name and requires only that the call failed (CUDA does not
// document the exact code for these cases; the native run is the reference).
#define EXPECT_FAILS(label, call)                                                      \
  do {                                                                                 \
    const cudaError_t expect_fails_got_ = (call);                                      \
    std::printf("%s: %s\n", (label), cudaGetErrorName(expect_fails_got_));             \
    EXPECT_TRUE(expect_fails_got_ != cudaSuccess, "%s unexpectedly succeeded", #call); \
  } while (0)

__global__ void addOne(int* data, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1;
}

static void hostOnlyFunction() {}

int main() {
  EXPECT_ERROR("initial cudaGetLastError", cudaGetLastError(), cudaSuccess);

  int* dev = nullptr;
  CHECK_CUDA(cudaMalloc(&dev, 1024 * sizeof(int)));
  CHECK_CUDA(cudaMemset(dev, 0, 1024 * sizeof(int)));

  // Invalid configuration; peek keeps the error, get returns and clears it. (CUDA 13 reports
  // cudaErrorInvalidValue for an oversized block; the names are compared with the native run.)
  addOne<<<1, 2048>>>(dev, 1024);
  const cudaError_t launchError = cudaPeekAtLastError();
  std::printf("peek after 2048-thread block: %s\n", cudaGetErrorName(launchError));
  EXPECT_TRUE(launchError != cudaSuccess, "a 2048-thread block was accepted");
  EXPECT_ERROR("peek again", cudaPeekAtLastError(), launchError);
  EXPECT_ERROR("get", cudaGetLastError(), launchError);
  EXPECT_ERROR("get after get", cudaGetLastError(), cudaSuccess);
  EXPECT_ERROR("peek after get", cudaPeekAtLastError(), cudaSuccess);

  addOne<<<dim3(1, 70000), 1>>>(dev, 1024);
  EXPECT_FAILS("grid.y = 70000", cudaGetLastError());
  addOne<<<1, dim3(1024, 2)>>>(dev, 1024);
  EXPECT_FAILS("block 1024x2", cudaGetLastError());
  addOne<<<1, dim3(1, 1, 65)>>>(dev, 1024);
  EXPECT_FAILS("block.z = 65", cudaGetLastError());
  addOne<<<0, 32>>>(dev, 1024);
  EXPECT_FAILS("grid 0", cudaGetLastError());
  addOne<<<1, 32, 1u << 30>>>(dev, 1024);
  EXPECT_FAILS("1 GiB dynamic shared memory", cudaGetLastError());

  // Kernel entry points that are not kernels. (CUDA 13 answers cudaLaunchKernel with
  // cudaErrorInvalidResourceHandle here: it also accepts cudaKernel_t handles.)
  void* args[] = {&dev};
  EXPECT_FAILS(
      "cudaLaunchKernel(host function)",
      cudaLaunchKernel(reinterpret_cast<const void*>(&hostOnlyFunction), dim3(1), dim3(1), args, 0, nullptr));
  cudaGetLastError();
  cudaFuncAttributes attributes;
  EXPECT_FAILS("cudaFuncGetAttributes(host function)",
               cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(&hostOnlyFunction)));
  cudaGetLastError();

  // Bad pointers.
  int onStack = 0;
  EXPECT_FAILS("cudaFree(stack address)", cudaFree(&onStack));
  EXPECT_FAILS("cudaFree(0x1234)", cudaFree(reinterpret_cast<void*>(0x1234)));
  EXPECT_FAILS("cudaFree(interior pointer)", cudaFree(dev + 1));
  EXPECT_ERROR("cudaFree(nullptr)", cudaFree(nullptr), cudaSuccess);
  int* freed = nullptr;
  CHECK_CUDA(cudaMalloc(&freed, 4096));
  CHECK_CUDA(cudaFree(freed));
  EXPECT_FAILS("cudaFree twice", cudaFree(freed));
  cudaGetLastError();

  // Past the end of a live allocation.
  static int host[2048];
  EXPECT_FAILS("H2D 2048 ints into 1024", cudaMemcpy(dev, host, sizeof(host), cudaMemcpyHostToDevice));
  EXPECT_FAILS("D2H 2048 ints from 1024", cudaMemcpy(host, dev, sizeof(host), cudaMemcpyDeviceToHost));
  EXPECT_FAILS("D2H 1 int at the end", cudaMemcpy(host, dev + 1024, sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT_FAILS("memset 1 byte past the end", cudaMemset(dev, 0, 1024 * sizeof(int) + 1));
  EXPECT_FAILS("memcpy into freed memory", cudaMemcpy(freed, host, 16, cudaMemcpyHostToDevice));
  EXPECT_FAILS("memcpy direction 7", cudaMemcpy(dev, host, 16, static_cast<cudaMemcpyKind>(7)));
  EXPECT_FAILS("memcpy to nullptr", cudaMemcpy(nullptr, dev, 16, cudaMemcpyDeviceToHost));
  cudaGetLastError();

  // Resources and devices.
  void* huge = nullptr;
  EXPECT_ERROR("cudaMalloc(2^50)", cudaMalloc(&huge, 1ull << 50), cudaErrorMemoryAllocation);
  EXPECT_ERROR("last error after failed malloc", cudaGetLastError(), cudaErrorMemoryAllocation);
  EXPECT_FAILS("cudaMallocHost(2^50)", cudaMallocHost(&huge, 1ull << 50));
  cudaGetLastError();
  int deviceCount = 0;
  CHECK_CUDA(cudaGetDeviceCount(&deviceCount));
  EXPECT_ERROR("cudaSetDevice(count)", cudaSetDevice(deviceCount), cudaErrorInvalidDevice);
  EXPECT_ERROR("cudaSetDevice(-1)", cudaSetDevice(-1), cudaErrorInvalidDevice);
  cudaGetLastError();
  EXPECT_ERROR("cudaSetDevice(0)", cudaSetDevice(0), cudaSuccess);
  EXPECT_FAILS("cudaDeviceSetLimit(99)", cudaDeviceSetLimit(static_cast<cudaLimit>(99), 1));
  EXPECT_FAILS("cudaMemcpyToSymbol(non-symbol)", cudaMemcpyToSymbol(&onStack, host, sizeof(int)));
  cudaGetLastError();

  // Timing on events that cannot time.
  cudaEvent_t a, b;
  CHECK_CUDA(cudaEventCreateWithFlags(&a, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventCreateWithFlags(&b, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventRecord(a, 0));
  CHECK_CUDA(cudaEventRecord(b, 0));
  CHECK_CUDA(cudaEventSynchronize(b));
  float ms = 0;
  EXPECT_ERROR("elapsed time on timing-disabled events", cudaEventElapsedTime(&ms, a, b),
               cudaErrorInvalidResourceHandle);
  cudaGetLastError();
  CHECK_CUDA(cudaEventDestroy(a));
  CHECK_CUDA(cudaEventDestroy(b));

  // Names and strings of error codes.
  const int codes[] = {0,   1,   2,   3,   9,   11,  13,  17,  98,  100,
                       101, 200, 209, 400, 600, 700, 719, 801, 999, 12345};
  for (int code : codes) {
    const cudaError_t error = static_cast<cudaError_t>(code);
    const char* name = cudaGetErrorName(error);
    const char* text = cudaGetErrorString(error);
    EXPECT_TRUE(name != nullptr && text != nullptr && std::strlen(text) > 0, "no name or string for %d",
                code);
    std::printf("error %d name=%s\n", code, name);
    std::fprintf(stderr, "error %d string=%s\n", code, text);
  }

  // None of the above is sticky: the device still works.
  EXPECT_ERROR("cudaDeviceSynchronize after errors", cudaDeviceSynchronize(), cudaSuccess);
  addOne<<<4, 256>>>(dev, 1024);
  CHECK_CUDA(cudaGetLastError());
  int back[1024];
  CHECK_CUDA(cudaMemcpy(back, dev, sizeof(back), cudaMemcpyDeviceToHost));
  for (int i = 0; i < 1024; ++i) EXPECT_TRUE(back[i] == 1, "back[%d] = %d", i, back[i]);
  std::printf("round trip after errors ok\n");
  CHECK_CUDA(cudaFree(dev));
  std::printf("error_paths OK\n");
  return 0;
}
