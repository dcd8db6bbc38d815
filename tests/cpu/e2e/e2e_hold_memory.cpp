// A client for the admin API's end-to-end test (run_e2e_admin.sh): allocates and fills device
// memory through the runtime shim, prints "holding", then keeps its session until the file named
// by argv[1] appears (then frees and exits 0) or a call fails because its session was ended
// (prints the error and exits 3).
#include <cuda_runtime.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: e2e_hold_memory RELEASE_FILE BYTES\n");
    return 2;
  }
  const std::size_t bytes = std::strtoull(argv[2], nullptr, 10);
  void* device = nullptr;
  if (cudaError_t e = cudaMalloc(&device, bytes); e != cudaSuccess) {
    std::printf("cudaMalloc: %s\n", cudaGetErrorName(e));
    return 1;
  }
  std::vector<unsigned char> host(bytes, 0x5a);
  if (cudaError_t e = cudaMemcpy(device, host.data(), bytes, cudaMemcpyHostToDevice); e != cudaSuccess) {
    std::printf("cudaMemcpy: %s\n", cudaGetErrorName(e));
    return 1;
  }
  std::printf("holding %zu bytes\n", bytes);
  std::fflush(stdout);
  for (int i = 0; i < 1200; ++i) {  // at most 120 s
    if (::access(argv[1], F_OK) == 0) {
      cudaFree(device);
      std::printf("released\n");
      return 0;
    }
    if (cudaError_t e = cudaMemset(device, i & 0xff, 4096); e != cudaSuccess) {
      std::printf("session over: %s\n", cudaGetErrorName(e));
      return 3;
    }
    ::usleep(100 * 1000);
  }
  std::printf("never told to release\n");
  return 1;
}
