// cudaHostRegister / cudaHostUnregister the way NVIDIA's simpleZeroCopy sample uses them: ordinary
// page-aligned malloc'd arrays are registered (cudaHostRegisterMapped), kernels read and write them
// through cudaHostGetDevicePointer, and the host sees the kernels' writes without any copy; copies
// from and to registered memory; after cudaHostUnregister the memory stays valid with its contents.
// Also a registration that is not page aligned (a buffer from new[]), and the error names of the
// common misuses. Under AgileOS the registered pages move into memory shared with the worker
// (client/session/page_swap.h); the device's address is the worker's, so the program must use
// cudaHostGetDevicePointer, as this one (and simpleZeroCopy) does.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "check.cuh"

namespace {

__global__ void vectorAdd(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

__global__ void scaleInPlace(float* a, float factor, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) a[i] *= factor;
}

__global__ void sumWords(const std::uint32_t* p, int n, unsigned long long* sum) {
  unsigned long long local = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) local += p[i];
  atomicAdd(sum, local);
}

float* alignedFloats(size_t count) {
  void* p = nullptr;
  EXPECT_TRUE(posix_memalign(&p, 4096, count * sizeof(float)) == 0, "posix_memalign");
  return static_cast<float*>(p);
}

}  // namespace

int main() {
  int canMap = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&canMap, cudaDevAttrCanMapHostMemory, 0));
  std::printf("canMapHostMemory: %d\n", canMap);
  int registerSupported = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&registerSupported, cudaDevAttrHostRegisterSupported, 0));
  std::printf("hostRegisterSupported: %d\n", registerSupported);
  CHECK_CUDA(cudaSetDeviceFlags(cudaDeviceMapHost));

  // simpleZeroCopy: three page-aligned arrays, registered and mapped.
  constexpr int kN = 1 << 20;
  constexpr size_t kBytes = kN * sizeof(float);
  float* a = alignedFloats(kN);
  float* b = alignedFloats(kN);
  float* c = alignedFloats(kN);
  for (int i = 0; i < kN; ++i) {
    a[i] = static_cast<float>(mix32(i) % 1000) / 8.0f;
    b[i] = static_cast<float>(mix32(i + kN) % 1000) / 4.0f;
    c[i] = -1.0f;
  }
  CHECK_CUDA(cudaHostRegister(a, kBytes, cudaHostRegisterMapped));
  CHECK_CUDA(cudaHostRegister(b, kBytes, cudaHostRegisterMapped));
  CHECK_CUDA(cudaHostRegister(c, kBytes, cudaHostRegisterMapped));
  bool intact = true;
  for (int i = 0; i < kN; ++i) intact = intact && a[i] == static_cast<float>(mix32(i) % 1000) / 8.0f;
  EXPECT_TRUE(intact, "registration changed the contents");
  std::printf("contents kept by registration: yes\n");

  float *dA = nullptr, *dB = nullptr, *dC = nullptr;
  CHECK_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dA), a, 0));
  CHECK_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dB), b, 0));
  CHECK_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dC), c, 0));
  std::fprintf(stderr, "host %p device %p\n", static_cast<void*>(a), static_cast<void*>(dA));
  vectorAdd<<<(kN + 255) / 256, 256>>>(dA, dB, dC, kN);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  int wrong = 0;
  for (int i = 0; i < kN; ++i) wrong += c[i] != a[i] + b[i];
  EXPECT_TRUE(wrong == 0, "%d sums wrong", wrong);
  std::printf("zero-copy vectorAdd: %d wrong, checksum %016llx\n", wrong,
              static_cast<unsigned long long>(fnv1a64(c, kBytes)));

  // The kernel writes registered memory; the host reads it without a copy.
  scaleInPlace<<<120, 256>>>(dA, 2.0f, kN);
  CHECK_CUDA(cudaDeviceSynchronize());
  wrong = 0;
  for (int i = 0; i < kN; ++i) wrong += a[i] != static_cast<float>(mix32(i) % 1000) / 4.0f;
  EXPECT_TRUE(wrong == 0, "%d scaled values wrong", wrong);
  std::printf("kernel writes seen by the host: %d wrong\n", wrong);

  // The host writes; the kernel reads.
  auto* words = reinterpret_cast<std::uint32_t*>(b);
  unsigned long long expected = 0;
  for (int i = 0; i < kN; ++i) {
    words[i] = mix32(i) & 0xffff;
    expected += words[i];
  }
  unsigned long long* dSum = nullptr;
  CHECK_CUDA(cudaMalloc(&dSum, sizeof *dSum));
  CHECK_CUDA(cudaMemset(dSum, 0, sizeof *dSum));
  sumWords<<<120, 256>>>(reinterpret_cast<const std::uint32_t*>(dB), kN, dSum);
  unsigned long long sum = 0;
  CHECK_CUDA(cudaMemcpy(&sum, dSum, sizeof sum, cudaMemcpyDeviceToHost));
  EXPECT_TRUE(sum == expected, "sum %llu, expected %llu", sum, expected);
  std::printf("host writes seen by the kernel: sum %llu\n", sum);

  // Copies from and to registered memory.
  float* device = nullptr;
  CHECK_CUDA(cudaMalloc(&device, kBytes));
  CHECK_CUDA(cudaMemcpy(device, a, kBytes, cudaMemcpyHostToDevice));
  std::memset(c, 0, kBytes);
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreate(&stream));
  CHECK_CUDA(cudaMemcpyAsync(c, device, kBytes, cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  EXPECT_TRUE(std::memcmp(a, c, kBytes) == 0, "copy round trip through registered memory");
  std::printf("copies through registered memory: exact\n");

  cudaPointerAttributes attributes{};
  CHECK_CUDA(cudaPointerGetAttributes(&attributes, a));
  std::printf("registered memory type: %s, has device pointer: %s\n",
              attributes.type == cudaMemoryTypeHost ? "host" : "other",
              attributes.devicePointer != nullptr ? "yes" : "no");

  EXPECT_ERROR("register twice", cudaHostRegister(a, kBytes, cudaHostRegisterMapped),
               cudaErrorHostMemoryAlreadyRegistered);

  // Unregister: the memory stays the program's, with its contents.
  CHECK_CUDA(cudaHostUnregister(a));
  CHECK_CUDA(cudaHostUnregister(b));
  CHECK_CUDA(cudaHostUnregister(c));
  EXPECT_ERROR("unregister twice", cudaHostUnregister(a), cudaErrorHostMemoryNotRegistered);
  wrong = 0;
  for (int i = 0; i < kN; ++i) wrong += a[i] != static_cast<float>(mix32(i) % 1000) / 4.0f;
  a[0] = 12.5f;
  EXPECT_TRUE(wrong == 0 && a[0] == 12.5f, "memory changed by cudaHostUnregister");
  std::printf("memory valid after unregister: yes\n");

  // A buffer that is not page aligned (new[]): registered, used by a kernel, unregistered.
  constexpr int kSmall = 5000;
  auto* small = new float[kSmall];
  for (int i = 0; i < kSmall; ++i) small[i] = static_cast<float>(i);
  CHECK_CUDA(cudaHostRegister(small, kSmall * sizeof(float), cudaHostRegisterDefault));
  float* dSmall = nullptr;
  CHECK_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dSmall), small, 0));
  scaleInPlace<<<8, 128>>>(dSmall, 3.0f, kSmall);
  CHECK_CUDA(cudaDeviceSynchronize());
  wrong = 0;
  for (int i = 0; i < kSmall; ++i) wrong += small[i] != 3.0f * static_cast<float>(i);
  EXPECT_TRUE(wrong == 0, "%d unaligned values wrong", wrong);
  CHECK_CUDA(cudaHostUnregister(small));
  std::printf("unaligned registration: %d wrong\n", wrong);
  delete[] small;

  // cudaHostAlloc(cudaHostAllocMapped) under unified addressing: the host pointer itself works in
  // a kernel (no cudaHostGetDevicePointer), and the device pointer equals it.
  float* pinned = nullptr;
  CHECK_CUDA(cudaHostAlloc(&pinned, kSmall * sizeof(float), cudaHostAllocMapped));
  for (int i = 0; i < kSmall; ++i) pinned[i] = static_cast<float>(i) + 0.5f;
  scaleInPlace<<<8, 128>>>(pinned, 2.0f, kSmall);
  CHECK_CUDA(cudaDeviceSynchronize());
  wrong = 0;
  for (int i = 0; i < kSmall; ++i) wrong += pinned[i] != 2.0f * (static_cast<float>(i) + 0.5f);
  EXPECT_TRUE(wrong == 0, "%d mapped values wrong", wrong);
  float* pinnedDevice = nullptr;
  CHECK_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&pinnedDevice), pinned, 0));
  std::printf("mapped cudaHostAlloc through its host pointer: %d wrong, device pointer is the host's: %s\n",
              wrong, pinnedDevice == pinned ? "yes" : "no");
  CHECK_CUDA(cudaFreeHost(pinned));

  CHECK_CUDA(cudaFree(device));
  CHECK_CUDA(cudaFree(dSum));
  CHECK_CUDA(cudaStreamDestroy(stream));
  std::free(a);
  std::free(b);
  std::free(c);
  std::printf("host_register done\n");
  return 0;
}
