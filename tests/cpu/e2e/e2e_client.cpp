// An unmodified-style CUDA runtime program (host code only) run through the
// whole AgileOS stack on a CPU machine: shim -> agileosd -> agileos-worker-fake.
// Each check prints one line; the program exits 1 if any check fails.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

int gFailures = 0;

void check(bool ok, const char* what) {
  std::printf("%s %s\n", ok ? "PASS" : "FAIL", what);
  if (!ok) ++gFailures;
}

void checkError(cudaError_t got, cudaError_t want, const char* what) {
  const bool ok = got == want;
  std::printf("%s %s (got %s, want %s)\n", ok ? "PASS" : "FAIL", what, cudaGetErrorName(got),
              cudaGetErrorName(want));
  if (!ok) ++gFailures;
  cudaGetLastError();  // clear it for the next check
}

}  // namespace

int main() {
  int count = 0;
  checkError(cudaGetDeviceCount(&count), cudaSuccess, "cudaGetDeviceCount");
  check(count == 1, "one device");
  cudaDeviceProp prop{};
  checkError(cudaGetDeviceProperties(&prop, 0), cudaSuccess, "cudaGetDeviceProperties");
  check(prop.major >= 7 && prop.name[0] != '\0', "device properties filled");
  checkError(cudaSetDevice(1), cudaErrorInvalidDevice, "cudaSetDevice(1) refused");

  // Round trips.
  constexpr size_t kBytes = 1 << 20;
  std::vector<unsigned char> in(kBytes), out(kBytes);
  for (size_t i = 0; i < kBytes; ++i) in[i] = static_cast<unsigned char>(i * 7 + 3);
  void* a = nullptr;
  void* b = nullptr;
  checkError(cudaMalloc(&a, kBytes), cudaSuccess, "cudaMalloc a");
  checkError(cudaMalloc(&b, kBytes), cudaSuccess, "cudaMalloc b");
  check(reinterpret_cast<uintptr_t>(a) % 256 == 0, "allocation is 256-byte aligned");
  checkError(cudaMemcpy(a, in.data(), kBytes, cudaMemcpyHostToDevice), cudaSuccess, "H2D");
  checkError(cudaMemcpy(b, a, kBytes, cudaMemcpyDeviceToDevice), cudaSuccess, "D2D");
  checkError(cudaMemcpy(out.data(), b, kBytes, cudaMemcpyDeviceToHost), cudaSuccess, "D2H");
  check(in == out, "bytes survive H2D, D2D, D2H");
  checkError(cudaMemset(static_cast<char*>(a) + 100, 0x5a, 1000), cudaSuccess, "memset interior");
  checkError(cudaMemcpy(out.data(), a, kBytes, cudaMemcpyDefault), cudaSuccess, "D2H via cudaMemcpyDefault");
  bool memsetOk = out[99] == in[99] && out[100] == 0x5a && out[1099] == 0x5a && out[1100] == in[1100];
  check(memsetOk, "memset wrote exactly its range");

  // Large copy: several transport chunks.
  constexpr size_t kLarge = 80u << 20;
  std::vector<unsigned char> big(kLarge), back(kLarge);
  for (size_t i = 0; i < kLarge; ++i) big[i] = static_cast<unsigned char>(i ^ (i >> 13));
  void* large = nullptr;
  checkError(cudaMalloc(&large, kLarge), cudaSuccess, "cudaMalloc 80 MiB");
  checkError(cudaMemcpy(large, big.data(), kLarge, cudaMemcpyHostToDevice), cudaSuccess, "H2D 80 MiB");
  checkError(cudaMemcpy(back.data(), large, kLarge, cudaMemcpyDeviceToHost), cudaSuccess, "D2H 80 MiB");
  check(big == back, "80 MiB round trip");

  // Pinned host memory and async copies on a stream with events.
  void* pinned = nullptr;
  checkError(cudaMallocHost(&pinned, kBytes), cudaSuccess, "cudaMallocHost");
  cudaStream_t stream = nullptr;
  checkError(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess, "cudaStreamCreate");
  cudaEvent_t start = nullptr, stop = nullptr;
  checkError(cudaEventCreate(&start), cudaSuccess, "cudaEventCreate start");
  checkError(cudaEventCreate(&stop), cudaSuccess, "cudaEventCreate stop");
  checkError(cudaEventRecord(start, stream), cudaSuccess, "cudaEventRecord start");
  std::memcpy(pinned, in.data(), kBytes);
  checkError(cudaMemcpyAsync(b, pinned, kBytes, cudaMemcpyHostToDevice, stream), cudaSuccess, "async H2D");
  std::memset(pinned, 0, kBytes);
  checkError(cudaMemcpyAsync(pinned, b, kBytes, cudaMemcpyDeviceToHost, stream), cudaSuccess, "async D2H");
  checkError(cudaEventRecord(stop, stream), cudaSuccess, "cudaEventRecord stop");
  checkError(cudaStreamSynchronize(stream), cudaSuccess, "cudaStreamSynchronize");
  check(std::memcmp(pinned, in.data(), kBytes) == 0, "pinned async round trip");
  float ms = -1;
  checkError(cudaEventElapsedTime(&ms, start, stop), cudaSuccess, "cudaEventElapsedTime");
  unsigned flags = 99;
  checkError(cudaStreamGetFlags(stream, &flags), cudaSuccess, "cudaStreamGetFlags");
  check(flags == cudaStreamNonBlocking, "stream flags remembered");

  // 2D copies.
  void* pitched = nullptr;
  size_t pitch = 0;
  checkError(cudaMallocPitch(&pitched, &pitch, 100, 8), cudaSuccess, "cudaMallocPitch");
  check(pitch >= 100 && pitch % 256 == 0, "pitch is aligned");
  std::vector<unsigned char> rows(100 * 8), rowsBack(100 * 8, 0);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<unsigned char>(i);
  checkError(cudaMemcpy2D(pitched, pitch, rows.data(), 100, 100, 8, cudaMemcpyHostToDevice), cudaSuccess,
             "cudaMemcpy2D H2D");
  checkError(cudaMemcpy2D(rowsBack.data(), 100, pitched, pitch, 100, 8, cudaMemcpyDeviceToHost), cudaSuccess,
             "cudaMemcpy2D D2H");
  check(rows == rowsBack, "2D round trip");

  // Refusals: each is an error and changes nothing.
  char byte = 0;
  checkError(cudaMemcpy(reinterpret_cast<void*>(0xF0000000000ull), &byte, 1, cudaMemcpyHostToDevice),
             cudaErrorInvalidValue, "write into the I/O aperture refused");
  checkError(cudaMemcpy(&byte, reinterpret_cast<void*>(0xF1000000100ull), 1, cudaMemcpyDeviceToHost),
             cudaErrorInvalidValue, "read from the module range refused");
  checkError(cudaMemset(static_cast<char*>(a) + kBytes - 10, 0, 11), cudaErrorInvalidValue,
             "memset one byte past the end refused");
  char source[64] = {};
  checkError(cudaMemcpy(reinterpret_cast<void*>(~0ull - 4), source, sizeof source, cudaMemcpyHostToDevice),
             cudaErrorInvalidValue, "wrapping range refused");
  checkError(cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(0x1234567890ull)),
             cudaErrorInvalidResourceHandle, "forged stream refused");
  checkError(cudaEventSynchronize(reinterpret_cast<cudaEvent_t>(0xdeadbeefull)), cudaErrorInvalidResourceHandle,
             "forged event refused");
  checkError(cudaFree(static_cast<char*>(a) + 256), cudaErrorInvalidValue, "free of an interior pointer refused");
  checkError(cudaMemcpy(out.data(), a, 16, cudaMemcpyDeviceToHost), cudaSuccess, "allocation still usable");
  checkError(cudaFree(a), cudaSuccess, "cudaFree");
  checkError(cudaMemcpy(out.data(), a, 16, cudaMemcpyDeviceToHost), cudaErrorInvalidValue,
             "use after free refused");
  checkError(cudaFree(a), cudaErrorInvalidValue, "double free refused");

  // Last-error semantics.
  cudaMemcpy(&byte, reinterpret_cast<void*>(0xF0000000000ull), 1, cudaMemcpyDeviceToHost);
  check(cudaPeekAtLastError() == cudaErrorInvalidValue, "peek sees the last error");
  check(cudaGetLastError() == cudaErrorInvalidValue, "get returns the last error");
  check(cudaGetLastError() == cudaSuccess, "get cleared it");

  checkError(cudaStreamDestroy(stream), cudaSuccess, "cudaStreamDestroy");
  checkError(cudaStreamSynchronize(stream), cudaErrorInvalidResourceHandle, "destroyed stream is stale");
  checkError(cudaFreeHost(pinned), cudaSuccess, "cudaFreeHost");
  checkError(cudaDeviceSynchronize(), cudaSuccess, "cudaDeviceSynchronize");
  checkError(cudaMallocManaged(&a, 64), cudaErrorNotSupported, "unsupported call fails closed");

  std::printf("%d failed\n", gFailures);
  return gFailures == 0 ? 0 : 1;
}
