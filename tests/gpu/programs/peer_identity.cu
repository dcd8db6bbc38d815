// Device identity and peer queries on one device: peer access (a device is not its
// own peer), cudaMemcpyPeer within device 0, the PCI bus id and its reverse lookup,
// stream ids and devices, the device cache configuration, cudaFuncGetName and the
// profiler controls (no profiler is attached in either run).
#include <cuda_profiler_api.h>

#include <cctype>
#include <cstring>
#include <vector>

#include "check.cuh"

__global__ void fillPattern(unsigned* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = mix32(static_cast<unsigned>(i));
}

extern "C" __global__ void plainCKernel(int* out) { *out = 1; }

int main() {
  int count = 0;
  CHECK_CUDA(cudaGetDeviceCount(&count));
  int can = -1;
  CHECK_CUDA(cudaDeviceCanAccessPeer(&can, 0, 0));
  std::printf("cudaDeviceCanAccessPeer(0, 0) = %d\n", can);
  EXPECT_ERROR("cudaDeviceCanAccessPeer(0, count)", cudaDeviceCanAccessPeer(&can, 0, count), cudaErrorInvalidDevice);
  EXPECT_ERROR("cudaDeviceEnablePeerAccess(count)", cudaDeviceEnablePeerAccess(count, 0), cudaErrorInvalidDevice);
  // The refused calls above left their error as the last error (native CUDA does that too).
  std::printf("last error after the refusals: %s\n", cudaGetErrorName(cudaGetLastError()));

  // cudaMemcpyPeer between device 0 and itself is a device-to-device copy.
  constexpr int kCount = 1 << 16;
  unsigned *a = nullptr, *b = nullptr;
  CHECK_CUDA(cudaMalloc(&a, kCount * sizeof(unsigned)));
  CHECK_CUDA(cudaMalloc(&b, kCount * sizeof(unsigned)));
  fillPattern<<<(kCount + 255) / 256, 256>>>(a, kCount);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaMemcpyPeer(b, 0, a, 0, kCount * sizeof(unsigned)));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  CHECK_CUDA(cudaMemcpyPeerAsync(a, 0, b + kCount / 2, 0, kCount / 2 * sizeof(unsigned), stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  std::vector<unsigned> host(kCount);
  CHECK_CUDA(cudaMemcpy(host.data(), a, kCount * sizeof(unsigned), cudaMemcpyDeviceToHost));
  for (int i = 0; i < kCount; ++i) {
    const unsigned expected = mix32(static_cast<unsigned>(i < kCount / 2 ? i + kCount / 2 : i));
    EXPECT_TRUE(host[i] == expected, "a[%d] = %08x, expected %08x", i, host[i], expected);
  }
  std::printf("cudaMemcpyPeer fnv=%016llx\n",
              static_cast<unsigned long long>(fnv1a64(host.data(), host.size() * sizeof(unsigned))));
  EXPECT_ERROR("cudaMemcpyPeer from device count", cudaMemcpyPeer(b, 0, a, count, 16), cudaErrorInvalidDevice);

  // The PCI bus id names the same physical GPU in both runs.
  char busId[32] = {};
  CHECK_CUDA(cudaDeviceGetPCIBusId(busId, sizeof busId, 0));
  std::printf("cudaDeviceGetPCIBusId(0) = %s\n", busId);
  int device = -1;
  CHECK_CUDA(cudaDeviceGetByPCIBusId(&device, busId));
  std::printf("cudaDeviceGetByPCIBusId(%s) = %d\n", busId, device);
  char lower[32] = {};
  for (std::size_t i = 0; busId[i] != '\0'; ++i) lower[i] = static_cast<char>(std::tolower(busId[i]));
  device = -1;
  CHECK_CUDA(cudaDeviceGetByPCIBusId(&device, lower));
  std::printf("cudaDeviceGetByPCIBusId(lower case) = %d\n", device);
  EXPECT_ERROR("cudaDeviceGetPCIBusId(count)", cudaDeviceGetPCIBusId(busId, sizeof busId, count),
               cudaErrorInvalidDevice);

  // Streams: the device they belong to, and ids that are stable and distinct.
  CHECK_CUDA(cudaStreamGetDevice(stream, &device));
  std::printf("cudaStreamGetDevice(stream) = %d\n", device);
  CHECK_CUDA(cudaStreamGetDevice(0, &device));
  std::printf("cudaStreamGetDevice(0) = %d\n", device);
  cudaStream_t other;
  CHECK_CUDA(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  unsigned long long id = 0, again = 0, otherId = 0, legacyId = 0;
  CHECK_CUDA(cudaStreamGetId(stream, &id));
  CHECK_CUDA(cudaStreamGetId(stream, &again));
  CHECK_CUDA(cudaStreamGetId(other, &otherId));
  CHECK_CUDA(cudaStreamGetId(cudaStreamLegacy, &legacyId));
  std::fprintf(stderr, "stream ids %llu %llu legacy %llu\n", id, otherId, legacyId);
  std::printf("stream id stable: %d, distinct: %d, distinct from legacy: %d\n", id == again, id != otherId,
              id != legacyId && otherId != legacyId);
  CHECK_CUDA(cudaStreamDestroy(other));

  // The device's cache preference.
  cudaFuncCache config;
  CHECK_CUDA(cudaDeviceGetCacheConfig(&config));
  std::printf("cudaDeviceGetCacheConfig = %d\n", static_cast<int>(config));
  CHECK_CUDA(cudaDeviceSetCacheConfig(cudaFuncCachePreferShared));
  CHECK_CUDA(cudaDeviceGetCacheConfig(&config));
  std::printf("after cudaDeviceSetCacheConfig(PreferShared): %d\n", static_cast<int>(config));
  CHECK_CUDA(cudaDeviceSetCacheConfig(cudaFuncCachePreferNone));

  // Registered kernel names.
  const char* name = nullptr;
  CHECK_CUDA(cudaFuncGetName(&name, reinterpret_cast<const void*>(fillPattern)));
  std::printf("cudaFuncGetName(fillPattern) = %s\n", name);
  CHECK_CUDA(cudaFuncGetName(&name, reinterpret_cast<const void*>(plainCKernel)));
  std::printf("cudaFuncGetName(plainCKernel) = %s\n", name);

  EXPECT_ERROR("cudaProfilerStart", cudaProfilerStart(), cudaSuccess);
  EXPECT_ERROR("cudaProfilerStop", cudaProfilerStop(), cudaSuccess);

  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFree(a));
  CHECK_CUDA(cudaFree(b));
  std::printf("peer_identity OK\n");
  return 0;
}
