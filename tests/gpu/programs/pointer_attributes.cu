// cudaPointerGetAttributes for device, interior, pinned and pageable pointers;
// cudaMalloc(0); cudaMemGetInfo consistency; and cudaDeviceReset followed by
// fresh allocations and a launch (the device is usable again after a reset).
#include <cstdint>
#include <cstdlib>

#include "check.cuh"

__global__ void store(int* p, int v) { *p = v; }

static void show(const char* label, const void* pointer, cudaMemoryType expectedType) {
  cudaPointerAttributes a;
  CHECK_CUDA(cudaPointerGetAttributes(&a, pointer));
  // devicePointer is compared for device memory only: natively, pinned host memory is
  // also mapped for the device at the same address; AgileOS maps host memory for the device
  // only when asked (cudaHostAllocMapped: at the same address; cudaHostRegister: at the
  // worker's address).
  std::printf("%s: type=%d device=%d devicePointer==p:%s hostPointer==p:%d\n", label,
              static_cast<int>(a.type), a.type == cudaMemoryTypeUnregistered ? -1 : a.device,
              a.type == cudaMemoryTypeDevice ? (a.devicePointer == pointer ? "1" : "0") : "n/a",
              a.hostPointer == pointer ? 1 : 0);
  EXPECT_TRUE(a.type == expectedType, "%s: type %d, expected %d", label, static_cast<int>(a.type),
              static_cast<int>(expectedType));
}

int main() {
  char* dev = nullptr;
  CHECK_CUDA(cudaMalloc(&dev, 1 << 20));
  show("device allocation", dev, cudaMemoryTypeDevice);
  show("interior device pointer", dev + 4096, cudaMemoryTypeDevice);
  char* pinned = nullptr;
  CHECK_CUDA(cudaMallocHost(&pinned, 1 << 20));
  show("cudaMallocHost", pinned, cudaMemoryTypeHost);
  char* portable = nullptr;
  CHECK_CUDA(cudaHostAlloc(&portable, 4096, cudaHostAllocPortable));
  show("cudaHostAlloc portable", portable, cudaMemoryTypeHost);
  char* pageable = static_cast<char*>(std::malloc(4096));
  show("malloc", pageable, cudaMemoryTypeUnregistered);
  std::free(pageable);

  void* zero = reinterpret_cast<void*>(0x1);
  EXPECT_ERROR("cudaMalloc(0)", cudaMalloc(&zero, 0), cudaSuccess);
  std::printf("cudaMalloc(0) pointer is null: %d\n", zero == nullptr ? 1 : 0);

  size_t freeBefore = 0, total = 0, freeAfter = 0, total2 = 0;
  CHECK_CUDA(cudaMemGetInfo(&freeBefore, &total));
  char* big = nullptr;
  CHECK_CUDA(cudaMalloc(&big, 512ull << 20));
  CHECK_CUDA(cudaMemGetInfo(&freeAfter, &total2));
  EXPECT_TRUE(total == total2 && freeBefore <= total && freeAfter <= total, "memGetInfo inconsistent");
  std::fprintf(stderr, "free before %zu, after 512 MiB %zu, total %zu\n", freeBefore, freeAfter, total);
  std::printf("cudaMemGetInfo consistent: yes\n");
  CHECK_CUDA(cudaFree(big));

  CHECK_CUDA(cudaFree(dev));
  CHECK_CUDA(cudaFreeHost(pinned));
  CHECK_CUDA(cudaFreeHost(portable));

  // A reset destroys everything of this process on the device; new work must still run.
  CHECK_CUDA(cudaDeviceReset());
  int* after = nullptr;
  CHECK_CUDA(cudaMalloc(&after, sizeof(int)));
  store<<<1, 1>>>(after, 314159);
  CHECK_CUDA(cudaGetLastError());
  int host = 0;
  CHECK_CUDA(cudaMemcpy(&host, after, sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT_TRUE(host == 314159, "after reset: %d", host);
  std::printf("after cudaDeviceReset: %d\n", host);
  show("allocation after reset", after, cudaMemoryTypeDevice);
  CHECK_CUDA(cudaFree(after));
  std::printf("pointer_attributes OK\n");
  return 0;
}
