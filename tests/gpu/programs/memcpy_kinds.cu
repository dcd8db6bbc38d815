// Every cudaMemcpyKind, synchronous and asynchronous, with pageable memory,
// pinned memory from cudaMallocHost and from cudaHostAlloc (Default and
// Portable), odd sizes and offsets into the middle of allocations, and
// cudaMemcpyDefault letting the runtime infer the direction.
#include <cstdint>
#include <cstring>
#include <vector>

#include "check.cuh"

static void fillPattern(unsigned char* p, size_t n, std::uint32_t seed) {
  for (size_t i = 0; i < n; ++i)
    p[i] = static_cast<unsigned char>(mix32(static_cast<std::uint32_t>(i) + seed));
}

static void report(const char* step, const void* data, size_t n) {
  std::printf("%-34s bytes=%zu fnv=%016llx\n", step, n, static_cast<unsigned long long>(fnv1a64(data, n)));
}

static void expectEqual(const char* step, const unsigned char* got, const unsigned char* want, size_t n) {
  EXPECT_TRUE(std::memcmp(got, want, n) == 0, "%s: data differs", step);
  report(step, got, n);
}

int main() {
  const size_t size = (3u << 20) + 4093;  // odd size
  std::vector<unsigned char> pageA(size), pageB(size, 0);
  fillPattern(pageA.data(), size, 1);

  unsigned char *pinnedA = nullptr, *pinnedB = nullptr, *portable = nullptr;
  CHECK_CUDA(cudaMallocHost(&pinnedA, size));
  CHECK_CUDA(cudaHostAlloc(&pinnedB, size, cudaHostAllocDefault));
  CHECK_CUDA(cudaHostAlloc(&portable, size, cudaHostAllocPortable));
  unsigned char *devA = nullptr, *devB = nullptr;
  CHECK_CUDA(cudaMalloc(&devA, size));
  CHECK_CUDA(cudaMalloc(&devB, size));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));

  // Host to host, explicit and inferred.
  CHECK_CUDA(cudaMemcpy(pageB.data(), pageA.data(), size, cudaMemcpyHostToHost));
  expectEqual("H2H pageable sync", pageB.data(), pageA.data(), size);
  CHECK_CUDA(cudaMemcpy(pinnedA, pageA.data(), size, cudaMemcpyDefault));
  expectEqual("H2H default pageable->pinned", pinnedA, pageA.data(), size);
  CHECK_CUDA(cudaMemcpyAsync(pinnedB, pinnedA, size, cudaMemcpyHostToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  expectEqual("H2H pinned async", pinnedB, pageA.data(), size);

  // Pageable <-> device, synchronous.
  CHECK_CUDA(cudaMemcpy(devA, pageA.data(), size, cudaMemcpyHostToDevice));
  std::memset(pageB.data(), 0, size);
  CHECK_CUDA(cudaMemcpy(pageB.data(), devA, size, cudaMemcpyDeviceToHost));
  expectEqual("H2D+D2H pageable sync", pageB.data(), pageA.data(), size);

  // Device to device, explicit and inferred.
  CHECK_CUDA(cudaMemset(devB, 0, size));
  CHECK_CUDA(cudaMemcpy(devB, devA, size, cudaMemcpyDeviceToDevice));
  std::memset(pageB.data(), 0, size);
  CHECK_CUDA(cudaMemcpy(pageB.data(), devB, size, cudaMemcpyDefault));
  expectEqual("D2D sync + D2H default", pageB.data(), pageA.data(), size);
  CHECK_CUDA(cudaMemset(devB, 0, size));
  CHECK_CUDA(cudaMemcpy(devB, devA, size, cudaMemcpyDefault));
  std::memset(pageB.data(), 0, size);
  CHECK_CUDA(cudaMemcpy(pageB.data(), devB, size, cudaMemcpyDeviceToHost));
  expectEqual("D2D default", pageB.data(), pageA.data(), size);

  // Pinned <-> device, asynchronous, for both kinds of pinned allocation.
  fillPattern(pinnedA, size, 2);
  CHECK_CUDA(cudaMemcpyAsync(devA, pinnedA, size, cudaMemcpyHostToDevice, stream));
  CHECK_CUDA(cudaMemcpyAsync(portable, devA, size, cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  expectEqual("H2D+D2H pinned/portable async", portable, pinnedA, size);
  fillPattern(pinnedB, size, 3);
  CHECK_CUDA(cudaMemcpyAsync(devB, pinnedB, size, cudaMemcpyDefault, stream));
  CHECK_CUDA(cudaMemcpyAsync(devA, devB, size, cudaMemcpyDeviceToDevice, stream));
  CHECK_CUDA(cudaMemcpyAsync(pinnedA, devA, size, cudaMemcpyDefault, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  expectEqual("async default H2D, D2D, D2H", pinnedA, pinnedB, size);

  // Pageable memory with the async API (legal; the runtime stages it).
  fillPattern(pageA.data(), size, 4);
  CHECK_CUDA(cudaMemcpyAsync(devA, pageA.data(), size, cudaMemcpyHostToDevice, stream));
  std::memset(pageB.data(), 0, size);
  CHECK_CUDA(cudaMemcpyAsync(pageB.data(), devA, size, cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  expectEqual("H2D+D2H pageable async", pageB.data(), pageA.data(), size);

  // Offsets into the middle of allocations, odd lengths, on both sides.
  const size_t srcOffset = 1001, dstOffset = 3, len = 777777;
  CHECK_CUDA(cudaMemset(devB, 0x5A, size));
  CHECK_CUDA(cudaMemcpy(devB + dstOffset, pageA.data() + srcOffset, len, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(devA + 17, devB + dstOffset, len, cudaMemcpyDeviceToDevice));
  std::vector<unsigned char> window(len + 2, 0);
  CHECK_CUDA(cudaMemcpy(window.data(), devA + 16, len + 2, cudaMemcpyDeviceToHost));
  EXPECT_TRUE(std::memcmp(window.data() + 1, pageA.data() + srcOffset, len) == 0, "offset copy differs");
  std::vector<unsigned char> before(dstOffset + 1);
  CHECK_CUDA(cudaMemcpy(before.data(), devB, dstOffset + 1, cudaMemcpyDeviceToHost));
  EXPECT_TRUE(before[0] == 0x5A && before[dstOffset - 1] == 0x5A, "bytes before the destination changed");
  unsigned char after = 0;
  CHECK_CUDA(cudaMemcpyAsync(&after, devB + dstOffset + len, 1, cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  EXPECT_TRUE(after == 0x5A, "byte after the destination changed: %u", after);
  report("offset copies", window.data() + 1, len);

  // The last byte of an allocation, and zero-length copies.
  const unsigned char last = 0xC3;
  CHECK_CUDA(cudaMemcpy(devA + size - 1, &last, 1, cudaMemcpyHostToDevice));
  unsigned char lastBack = 0;
  CHECK_CUDA(cudaMemcpy(&lastBack, devA + size - 1, 1, cudaMemcpyDeviceToHost));
  EXPECT_TRUE(lastBack == last, "last byte %u", lastBack);
  CHECK_CUDA(cudaMemcpy(devA, pageA.data(), 0, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpyAsync(pageB.data(), devA, 0, cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  std::printf("last byte and zero-length copies ok\n");

  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFree(devA));
  CHECK_CUDA(cudaFree(devB));
  CHECK_CUDA(cudaFreeHost(pinnedA));
  CHECK_CUDA(cudaFreeHost(pinnedB));
  CHECK_CUDA(cudaFreeHost(portable));
  std::printf("memcpy_kinds OK\n");
  return 0;
}
