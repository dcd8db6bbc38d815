// A 256 MiB round trip through the device, from pageable memory and from pinned
// memory, plus a 256 MiB device-to-device copy. A kernel transforms the data in
// between so a copy that skipped the device would be caught. Bandwidth goes to stderr.
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "check.cuh"

constexpr size_t kBytes = 256ull << 20;
constexpr size_t kWords = kBytes / sizeof(std::uint32_t);

__global__ void scramble(std::uint32_t* words, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    words[i] = (words[i] ^ 0x9E3779B9u) + static_cast<std::uint32_t>(i);
  }
}

static double gbPerSecond(std::chrono::steady_clock::time_point start) {
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return static_cast<double>(kBytes) / seconds / 1e9;
}

static void roundTrip(const char* label, std::uint32_t* hostIn, std::uint32_t* hostOut, std::uint32_t* dev) {
  for (size_t i = 0; i < kWords; ++i) hostIn[i] = mix32(static_cast<std::uint32_t>(i)) ^ label[0];
  std::memset(hostOut, 0, kBytes);
  auto start = std::chrono::steady_clock::now();
  CHECK_CUDA(cudaMemcpy(dev, hostIn, kBytes, cudaMemcpyHostToDevice));
  const double h2d = gbPerSecond(start);
  scramble<<<1024, 256>>>(dev, kWords);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  start = std::chrono::steady_clock::now();
  CHECK_CUDA(cudaMemcpy(hostOut, dev, kBytes, cudaMemcpyDeviceToHost));
  const double d2h = gbPerSecond(start);
  for (size_t i = 0; i < kWords; ++i) {
    const std::uint32_t expected = (hostIn[i] ^ 0x9E3779B9u) + static_cast<std::uint32_t>(i);
    EXPECT_TRUE(hostOut[i] == expected, "%s: word %zu = %08x, expected %08x", label, i, hostOut[i], expected);
  }
  std::printf("%s 256 MiB round trip fnv=%016llx\n", label,
              static_cast<unsigned long long>(fnv1a64(hostOut, kBytes)));
  std::fprintf(stderr, "%s: H2D %.2f GB/s, D2H %.2f GB/s\n", label, h2d, d2h);
}

int main() {
  std::uint32_t *dev = nullptr, *dev2 = nullptr;
  CHECK_CUDA(cudaMalloc(&dev, kBytes));
  CHECK_CUDA(cudaMalloc(&dev2, kBytes));

  auto* pageIn = static_cast<std::uint32_t*>(std::malloc(kBytes));
  auto* pageOut = static_cast<std::uint32_t*>(std::malloc(kBytes));
  EXPECT_TRUE(pageIn != nullptr && pageOut != nullptr, "host malloc failed");
  roundTrip("pageable", pageIn, pageOut, dev);

  std::uint32_t *pinIn = nullptr, *pinOut = nullptr;
  CHECK_CUDA(cudaMallocHost(&pinIn, kBytes));
  CHECK_CUDA(cudaHostAlloc(&pinOut, kBytes, cudaHostAllocDefault));
  roundTrip("pinned", pinIn, pinOut, dev);

  // Device to device: the pinned round trip left the scrambled data in dev.
  CHECK_CUDA(cudaMemset(dev2, 0, kBytes));
  const auto start = std::chrono::steady_clock::now();
  CHECK_CUDA(cudaMemcpy(dev2, dev, kBytes, cudaMemcpyDeviceToDevice));
  CHECK_CUDA(cudaDeviceSynchronize());
  std::fprintf(stderr, "D2D %.2f GB/s\n", gbPerSecond(start));
  std::memset(pageOut, 0, kBytes);
  CHECK_CUDA(cudaMemcpy(pageOut, dev2, kBytes, cudaMemcpyDeviceToHost));
  EXPECT_TRUE(std::memcmp(pageOut, pinOut, kBytes) == 0, "D2D copy differs");
  std::printf("D2D 256 MiB fnv=%016llx\n", static_cast<unsigned long long>(fnv1a64(pageOut, kBytes)));

  CHECK_CUDA(cudaFreeHost(pinIn));
  CHECK_CUDA(cudaFreeHost(pinOut));
  std::free(pageIn);
  std::free(pageOut);
  CHECK_CUDA(cudaFree(dev));
  CHECK_CUDA(cudaFree(dev2));
  std::printf("large_copy OK\n");
  return 0;
}
