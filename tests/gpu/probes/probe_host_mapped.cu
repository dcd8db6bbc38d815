// Probe: mapped, write-combined, portable and registered host memory, the way programs use it
// beyond the suite's simpleZeroCopy pattern. The program never calls cudaSetDeviceFlags
// (cudaDeviceMapHost): under unified addressing mapped memory works without it.
//   A  cudaGetDeviceFlags before any allocation;
//   B  cudaHostAlloc with every combination of Portable / Mapped / WriteCombined: cudaHostGetFlags
//      (base and interior pointers), cudaPointerGetAttributes, cudaHostGetDevicePointer, and for
//      mapped memory a kernel that reads the host's values and writes results the host reads after
//      a synchronize;
//   C  copies naming mapped memory: cudaMemcpyAsync both ways, cudaMemsetAsync through the device
//      pointer, host-to-host between pinned buffers, cudaMemcpyDefault between two mapped buffers,
//      a device-to-device copy from a mapped buffer's device pointer;
//   D  a kernel signalling the host through mapped memory while it runs (the host polls without
//      any CUDA call, then answers; the kernel waits for the answer, both with time limits);
//   E  cudaHostRegister of an mmap'd region (Portable|Mapped), of an unaligned sub-range of a
//      malloc'd buffer whose neighbouring bytes the host keeps writing, of a std::vector, two
//      registrations sharing a page, cudaMemcpy2DAsync from registered memory, the error names of
//      common misuses;
//   F  last (it may fault where pinned memory is not mapped for the device): a kernel writing
//      memory from cudaMallocHost directly, as programs under unified addressing do.
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "tests/gpu/programs/check.cuh"

#define SHOW_ERROR(label, call)                                          \
  do {                                                                   \
    const cudaError_t show_error_got_ = (call);                          \
    std::printf("%s: %s\n", (label), cudaGetErrorName(show_error_got_)); \
    (void)cudaGetLastError();                                            \
  } while (0)

namespace {

__global__ void transform(const std::uint32_t* in, std::uint32_t* out, int n, std::uint32_t salt) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = in[i] * 3u + salt;
}

__global__ void increment(std::uint32_t* p, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) p[i] += 1u;
}

__device__ unsigned long long globalNanoseconds() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// flags[0]: set by the kernel (hello); flags[1]: set by the host (answer); flags[2]: the kernel's
// verdict: 42 if it saw the answer in time, -1 otherwise.
__global__ void handshake(volatile int* flags, unsigned long long limitNs) {
  flags[0] = 1;
  __threadfence_system();
  const unsigned long long start = globalNanoseconds();
  while (flags[1] == 0) {
    if (globalNanoseconds() - start > limitNs) {
      flags[2] = -1;
      return;
    }
  }
  flags[2] = 42;
  __threadfence_system();
}

void attributesToStderr() {
  int canMap = -1, canUseHostPointer = -1, unified = -1, pageable = -1, registerSupported = -1;
  CHECK_CUDA(cudaDeviceGetAttribute(&canMap, cudaDevAttrCanMapHostMemory, 0));
  CHECK_CUDA(cudaDeviceGetAttribute(&canUseHostPointer, cudaDevAttrCanUseHostPointerForRegisteredMem, 0));
  CHECK_CUDA(cudaDeviceGetAttribute(&unified, cudaDevAttrUnifiedAddressing, 0));
  CHECK_CUDA(cudaDeviceGetAttribute(&pageable, cudaDevAttrPageableMemoryAccess, 0));
  CHECK_CUDA(cudaDeviceGetAttribute(&registerSupported, cudaDevAttrHostRegisterSupported, 0));
  std::fprintf(stderr,
               "canMapHostMemory=%d canUseHostPointerForRegisteredMem=%d unifiedAddressing=%d "
               "pageableMemoryAccess=%d hostRegisterSupported=%d\n",
               canMap, canUseHostPointer, unified, pageable, registerSupported);
}

const char* typeName(cudaMemoryType type) {
  switch (type) {
    case cudaMemoryTypeUnregistered:
      return "unregistered";
    case cudaMemoryTypeHost:
      return "host";
    case cudaMemoryTypeDevice:
      return "device";
    case cudaMemoryTypeManaged:
      return "managed";
  }
  return "?";
}

// ---------------------------------------------------------------- B
void hostAllocCombinations() {
  struct Combination {
    const char* name;
    unsigned flags;
  } combinations[] = {
      {"Default", cudaHostAllocDefault},
      {"Portable", cudaHostAllocPortable},
      {"Mapped", cudaHostAllocMapped},
      {"WriteCombined", cudaHostAllocWriteCombined},
      {"Mapped|WriteCombined", cudaHostAllocMapped | cudaHostAllocWriteCombined},
      {"Mapped|Portable", cudaHostAllocMapped | cudaHostAllocPortable},
      {"Mapped|Portable|WriteCombined",
       cudaHostAllocMapped | cudaHostAllocPortable | cudaHostAllocWriteCombined},
  };
  constexpr int kN = 1 << 16;  // words in each half
  for (const Combination& c : combinations) {
    std::uint32_t* p = nullptr;
    CHECK_CUDA(cudaHostAlloc(&p, 2 * kN * sizeof(std::uint32_t), c.flags));
    unsigned flags = 0xdead;
    const cudaError_t flagsError = cudaHostGetFlags(&flags, p);
    (void)cudaGetLastError();
    unsigned interiorFlags = 0xdead;
    const cudaError_t interiorError = cudaHostGetFlags(&interiorFlags, p + 1000);
    (void)cudaGetLastError();
    std::printf("B %-30s cudaHostGetFlags: %s 0x%x, interior: %s 0x%x\n", c.name,
                cudaGetErrorName(flagsError), flags, cudaGetErrorName(interiorError), interiorFlags);

    void* device = nullptr;
    const cudaError_t mapError = cudaHostGetDevicePointer(&device, p, 0);
    (void)cudaGetLastError();
    cudaPointerAttributes attributes{};
    CHECK_CUDA(cudaPointerGetAttributes(&attributes, p + 5));
    std::printf(
        "B %-30s attributes: type=%s device=%d hostPointer==p:%d devicePointer==mapped:%s; "
        "cudaHostGetDevicePointer: %s\n",
        c.name, typeName(attributes.type), attributes.device, attributes.hostPointer == p + 5 ? 1 : 0,
        mapError == cudaSuccess
            ? (attributes.devicePointer == static_cast<std::uint32_t*>(device) + 5 ? "1" : "0")
            : "n/a",
        cudaGetErrorName(mapError));
    if ((c.flags & cudaHostAllocMapped) != 0) {
      EXPECT_TRUE(mapError == cudaSuccess, "%s: no device pointer", c.name);
      for (int i = 0; i < kN; ++i) p[i] = mix32(i + c.flags);
      auto* d = static_cast<std::uint32_t*>(device);
      transform<<<64, 256>>>(d, d + kN, kN, c.flags);
      CHECK_CUDA(cudaGetLastError());
      CHECK_CUDA(cudaDeviceSynchronize());
      int wrong = 0;
      for (int i = 0; i < kN; ++i) wrong += p[kN + i] != mix32(i + c.flags) * 3u + c.flags;
      EXPECT_TRUE(wrong == 0, "%s: %d wrong", c.name, wrong);
      std::printf("B %-30s kernel through the mapped pointer: %d wrong, fnv=%016llx\n", c.name, wrong,
                  static_cast<unsigned long long>(fnv1a64(p + kN, kN * sizeof(std::uint32_t))));
    }
    CHECK_CUDA(cudaFreeHost(p));
  }
}

// ---------------------------------------------------------------- C
void copiesWithMappedMemory() {
  constexpr int kN = 300001;  // odd sizes
  constexpr size_t kBytes = kN * sizeof(std::uint32_t);
  std::uint32_t *a = nullptr, *b = nullptr, *plainPinned = nullptr;
  CHECK_CUDA(cudaHostAlloc(&a, kBytes, cudaHostAllocMapped));
  CHECK_CUDA(cudaHostAlloc(&b, kBytes, cudaHostAllocMapped | cudaHostAllocWriteCombined));
  CHECK_CUDA(cudaMallocHost(&plainPinned, kBytes));
  std::uint32_t *dA = nullptr, *dB = nullptr, *device = nullptr;
  CHECK_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dA), a, 0));
  CHECK_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dB), b, 0));
  CHECK_CUDA(cudaMalloc(&device, kBytes));
  for (int i = 0; i < kN; ++i) a[i] = mix32(i + 555);
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  // mapped -> device, kernel on the device copy, device -> write-combined mapped.
  CHECK_CUDA(cudaMemcpyAsync(device, a, kBytes, cudaMemcpyHostToDevice, stream));
  increment<<<64, 256, 0, stream>>>(device, kN);
  CHECK_CUDA(cudaMemcpyAsync(b, device, kBytes, cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  int wrong = 0;
  for (int i = 0; i < kN; ++i) wrong += b[i] != mix32(i + 555) + 1u;
  EXPECT_TRUE(wrong == 0, "async round trip: %d wrong", wrong);
  std::printf("C mapped -> device -> write-combined mapped (async): %d wrong\n", wrong);

  // cudaMemsetAsync through the device pointer of mapped memory, then the host reads it.
  CHECK_CUDA(cudaMemsetAsync(dB + 1000, 0x5A, 4000 * sizeof(std::uint32_t), stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  wrong = 0;
  for (int i = 0; i < kN; ++i) wrong += b[i] != ((i >= 1000 && i < 5000) ? 0x5A5A5A5Au : mix32(i + 555) + 1u);
  EXPECT_TRUE(wrong == 0, "memset through the device pointer: %d wrong", wrong);
  std::printf("C cudaMemsetAsync through a mapped device pointer: %d wrong\n", wrong);

  // Host to host between pinned buffers; cudaMemcpyDefault between two mapped buffers.
  CHECK_CUDA(cudaMemcpy(plainPinned, b, kBytes, cudaMemcpyHostToHost));
  EXPECT_TRUE(std::memcmp(plainPinned, b, kBytes) == 0, "host to host");
  for (int i = 0; i < kN; ++i) a[i] = ~static_cast<std::uint32_t>(i);
  CHECK_CUDA(cudaMemcpyAsync(b, a, kBytes, cudaMemcpyDefault, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  EXPECT_TRUE(std::memcmp(a, b, kBytes) == 0, "default between mapped buffers");
  std::printf("C host-to-host and default copies between pinned/mapped buffers: exact\n");

  // Device to device, naming the mapped buffer by its device pointer.
  CHECK_CUDA(cudaMemset(device, 0, kBytes));
  const cudaError_t d2d =
      cudaMemcpy(device, dA + 7, (kN - 7) * sizeof(std::uint32_t), cudaMemcpyDeviceToDevice);
  std::printf("C device-to-device copy from a mapped device pointer: %s\n", cudaGetErrorName(d2d));
  (void)cudaGetLastError();
  if (d2d == cudaSuccess) {
    CHECK_CUDA(cudaMemcpy(plainPinned, device, kBytes, cudaMemcpyDeviceToHost));
    wrong = 0;
    for (int i = 0; i < kN; ++i)
      wrong += plainPinned[i] != (i < kN - 7 ? ~static_cast<std::uint32_t>(i + 7) : 0u);
    EXPECT_TRUE(wrong == 0, "d2d from mapped: %d wrong", wrong);
    std::printf("C   contents: %d wrong\n", wrong);
  }
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFreeHost(a));
  CHECK_CUDA(cudaFreeHost(b));
  CHECK_CUDA(cudaFreeHost(plainPinned));
  CHECK_CUDA(cudaFree(device));
}

// ---------------------------------------------------------------- D
void kernelSignalsHost() {
  int* flags = nullptr;
  CHECK_CUDA(cudaHostAlloc(&flags, 4096, cudaHostAllocMapped));
  std::memset(flags, 0, 4096);
  int* dFlags = nullptr;
  CHECK_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dFlags), flags, 0));
  handshake<<<1, 1>>>(dFlags, 3000000000ull);  // the kernel waits at most 3 s for the answer
  CHECK_CUDA(cudaGetLastError());
  volatile int* hostView = flags;
  const auto start = std::chrono::steady_clock::now();
  bool hello = false;
  while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(2000)) {
    if (hostView[0] == 1) {
      hello = true;
      break;
    }
    std::this_thread::yield();
  }
  std::fprintf(stderr, "hello after %lld us\n",
               static_cast<long long>(std::chrono::duration_cast<std::chrono::microseconds>(
                                          std::chrono::steady_clock::now() - start)
                                          .count()));
  hostView[1] = 1;
  __sync_synchronize();
  CHECK_CUDA(cudaDeviceSynchronize());
  std::printf("D kernel signalled the host before any synchronizing call: %s\n", hello ? "yes" : "no");
  std::printf("D kernel saw the host's answer: %s (verdict %d)\n", hostView[2] == 42 ? "yes" : "no",
              hostView[2]);
  EXPECT_TRUE(hello && hostView[2] == 42, "handshake through mapped memory");
  CHECK_CUDA(cudaFreeHost(flags));
}

// ---------------------------------------------------------------- E
void registration() {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));

  // E1: an mmap'd anonymous region, Portable|Mapped.
  constexpr int kN = 65536;
  const size_t bytes = kN * sizeof(std::uint32_t);
  void* region = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  EXPECT_TRUE(region != MAP_FAILED, "mmap");
  auto* words = static_cast<std::uint32_t*>(region);
  for (int i = 0; i < kN; ++i) words[i] = mix32(i + 31337);
  CHECK_CUDA(cudaHostRegister(region, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped));
  unsigned flags = 0xdead;
  SHOW_ERROR("E1 cudaHostGetFlags on registered memory", cudaHostGetFlags(&flags, region));
  std::printf("E1   flags=0x%x\n", flags);
  std::uint32_t* dWords = nullptr;
  CHECK_CUDA(cudaHostGetDevicePointer(reinterpret_cast<void**>(&dWords), region, 0));
  cudaPointerAttributes attributes{};
  CHECK_CUDA(cudaPointerGetAttributes(&attributes, words + 9));
  std::printf("E1 registered attributes: type=%s device=%d hostPointer==p:%d devicePointer==mapped:%d\n",
              typeName(attributes.type), attributes.device, attributes.hostPointer == words + 9 ? 1 : 0,
              attributes.devicePointer == dWords + 9 ? 1 : 0);
  increment<<<64, 256>>>(dWords, kN);
  CHECK_CUDA(cudaDeviceSynchronize());
  int wrong = 0;
  for (int i = 0; i < kN; ++i) wrong += words[i] != mix32(i + 31337) + 1u;
  EXPECT_TRUE(wrong == 0, "E1 kernel: %d wrong", wrong);
  std::uint32_t* device = nullptr;
  CHECK_CUDA(cudaMalloc(&device, bytes));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  CHECK_CUDA(cudaMemcpyAsync(device, words, bytes, cudaMemcpyHostToDevice, stream));
  increment<<<64, 256, 0, stream>>>(device, kN);
  CHECK_CUDA(cudaMemcpyAsync(words, device, bytes, cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_CUDA(cudaHostUnregister(region));
  wrong = 0;
  for (int i = 0; i < kN; ++i) wrong += words[i] != mix32(i + 31337) + 2u;
  EXPECT_TRUE(wrong == 0, "E1 after unregister: %d wrong", wrong);
  words[0] = 7;  // still writable
  std::printf(
      "E1 mmap'd region registered Portable|Mapped: kernel + async copies, %d wrong after unregister\n",
      wrong);
  munmap(region, bytes);

  // E2: an unaligned sub-range of a malloc'd buffer; the host writes the bytes around it while
  // it is registered, and they must keep those values.
  constexpr size_t kBuffer = 200000, kStart = 1000 + 3, kLength = 120000;
  auto* buffer = static_cast<unsigned char*>(std::malloc(kBuffer));
  EXPECT_TRUE(buffer != nullptr, "malloc");
  for (size_t i = 0; i < kBuffer; ++i)
    buffer[i] = static_cast<unsigned char>(mix32(static_cast<std::uint32_t>(i)));
  CHECK_CUDA(cudaHostRegister(buffer + kStart, kLength, cudaHostRegisterDefault));
  for (size_t i = 0; i < kStart; ++i) buffer[i] = static_cast<unsigned char>(i * 7);
  for (size_t i = kStart + kLength; i < kBuffer; ++i) buffer[i] = static_cast<unsigned char>(i * 13);
  unsigned char* dBytes = nullptr;
  CHECK_CUDA(cudaMalloc(&dBytes, kLength));
  CHECK_CUDA(cudaMemcpyAsync(dBytes, buffer + kStart, kLength, cudaMemcpyHostToDevice, stream));
  CHECK_CUDA(cudaMemsetAsync(dBytes + 100, 0xAB, 5000, stream));
  CHECK_CUDA(cudaMemcpyAsync(buffer + kStart, dBytes, kLength, cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_CUDA(cudaHostUnregister(buffer + kStart));
  std::vector<unsigned char> want(kBuffer);
  for (size_t i = 0; i < kBuffer; ++i) {
    if (i < kStart) {
      want[i] = static_cast<unsigned char>(i * 7);
    } else if (i >= kStart + kLength) {
      want[i] = static_cast<unsigned char>(i * 13);
    } else if (i - kStart >= 100 && i - kStart < 5100) {
      want[i] = 0xAB;
    } else {
      want[i] = static_cast<unsigned char>(mix32(static_cast<std::uint32_t>(i)));
    }
  }
  size_t wrongBytes = 0;
  for (size_t i = 0; i < kBuffer; ++i) wrongBytes += buffer[i] != want[i];
  EXPECT_TRUE(wrongBytes == 0, "E2: %zu bytes wrong", wrongBytes);
  std::printf(
      "E2 unaligned sub-range of a malloc'd buffer, neighbours written meanwhile: %zu bytes wrong, "
      "fnv=%016llx\n",
      wrongBytes, static_cast<unsigned long long>(fnv1a64(buffer, kBuffer)));
  std::free(buffer);

  // E3: a std::vector's storage, registered and used for a 2D copy with a padded host pitch.
  constexpr int kRows = 50, kCols = 300, kPitchWords = 320;
  std::vector<std::uint32_t> table(kRows * kPitchWords, 0xFFFFFFFFu);
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kCols; ++c) table[r * kPitchWords + c] = mix32(r * 1000 + c);
  CHECK_CUDA(cudaHostRegister(table.data(), table.size() * sizeof(std::uint32_t), cudaHostRegisterDefault));
  std::uint32_t* pitched = nullptr;
  size_t pitch = 0;
  CHECK_CUDA(
      cudaMallocPitch(reinterpret_cast<void**>(&pitched), &pitch, kCols * sizeof(std::uint32_t), kRows));
  CHECK_CUDA(cudaMemcpy2DAsync(pitched, pitch, table.data(), kPitchWords * sizeof(std::uint32_t),
                               kCols * sizeof(std::uint32_t), kRows, cudaMemcpyHostToDevice, stream));
  increment<<<1, 256, 0, stream>>>(pitched, static_cast<int>(pitch / sizeof(std::uint32_t)) * kRows);
  CHECK_CUDA(cudaMemcpy2DAsync(table.data(), kPitchWords * sizeof(std::uint32_t), pitched, pitch,
                               kCols * sizeof(std::uint32_t), kRows, cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_CUDA(cudaHostUnregister(table.data()));
  wrong = 0;
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kPitchWords; ++c)
      wrong += table[r * kPitchWords + c] != (c < kCols ? mix32(r * 1000 + c) + 1u : 0xFFFFFFFFu);
  EXPECT_TRUE(wrong == 0, "E3: %d wrong", wrong);
  std::printf("E3 registered std::vector with cudaMemcpy2DAsync both ways: %d wrong\n", wrong);
  CHECK_CUDA(cudaFree(pitched));

  // E4: two registrations of disjoint ranges that share a page.
  void* shared = nullptr;
  EXPECT_TRUE(posix_memalign(&shared, page, 4 * page) == 0, "posix_memalign");
  std::memset(shared, 0x11, 4 * page);
  auto* s = static_cast<unsigned char*>(shared);
  CHECK_CUDA(cudaHostRegister(s, 1000, cudaHostRegisterDefault));
  const cudaError_t second = cudaHostRegister(s + 2000, 1000, cudaHostRegisterDefault);
  std::printf("E4 second registration on the same page (disjoint bytes): %s\n", cudaGetErrorName(second));
  (void)cudaGetLastError();
  const cudaError_t overlap = cudaHostRegister(s + 500, 1000, cudaHostRegisterDefault);
  std::printf("E4 registration overlapping the first: %s\n", cudaGetErrorName(overlap));
  (void)cudaGetLastError();
  if (overlap == cudaSuccess) CHECK_CUDA(cudaHostUnregister(s + 500));
  if (second == cudaSuccess) CHECK_CUDA(cudaHostUnregister(s + 2000));
  SHOW_ERROR("E4 cudaHostUnregister at an interior pointer", cudaHostUnregister(s + 10));
  CHECK_CUDA(cudaHostUnregister(s));
  bool intact = true;
  for (size_t i = 0; i < 4 * page; ++i) intact = intact && s[i] == 0x11;
  EXPECT_TRUE(intact, "E4 contents changed");
  std::printf("E4 contents after the registrations: intact\n");
  std::free(shared);

  // E5: misuses.
  void* small = nullptr;
  EXPECT_TRUE(posix_memalign(&small, page, page) == 0, "posix_memalign");
  SHOW_ERROR("E5 cudaHostRegister of 0 bytes", cudaHostRegister(small, 0, cudaHostRegisterDefault));
  SHOW_ERROR("E5 cudaHostRegister(nullptr)", cudaHostRegister(nullptr, page, cudaHostRegisterDefault));
  SHOW_ERROR("E5 cudaHostRegister with unknown flag bits", cudaHostRegister(small, page, 0x100));
  SHOW_ERROR("E5 cudaHostUnregister of memory never registered", cudaHostUnregister(small));
  void* mappedPage = nullptr;  // a buffer of its own, whatever the misuses above did to `small`
  EXPECT_TRUE(posix_memalign(&mappedPage, page, page) == 0, "posix_memalign");
  CHECK_CUDA(cudaHostRegister(mappedPage, page, cudaHostRegisterMapped));
  void* dSmall = nullptr;
  SHOW_ERROR("E5 cudaHostGetDevicePointer with flags 1", cudaHostGetDevicePointer(&dSmall, mappedPage, 1));
  std::vector<char> pageable(4096, 1);
  SHOW_ERROR("E5 cudaHostGetDevicePointer of pageable (never registered) memory",
             cudaHostGetDevicePointer(&dSmall, pageable.data(), 0));
  CHECK_CUDA(cudaHostUnregister(mappedPage));
  std::free(mappedPage);
  (void)cudaHostUnregister(small);  // in case one of the misuses registered it
  (void)cudaGetLastError();
  std::free(small);
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFree(device));
  CHECK_CUDA(cudaFree(dBytes));
}

// ---------------------------------------------------------------- F
void plainPinnedInKernel() {
  constexpr int kN = 10000;
  std::uint32_t* pinned = nullptr;
  CHECK_CUDA(cudaMallocHost(&pinned, 2 * kN * sizeof(std::uint32_t)));
  for (int i = 0; i < kN; ++i) pinned[i] = mix32(i + 8);
  void* device = nullptr;
  const cudaError_t mapError = cudaHostGetDevicePointer(&device, pinned, 0);
  std::printf("F cudaHostGetDevicePointer of cudaMallocHost memory: %s, equals the host pointer: %s\n",
              cudaGetErrorName(mapError),
              mapError == cudaSuccess ? (device == pinned ? "yes" : "no") : "n/a");
  (void)cudaGetLastError();
  // The host pointer itself, as programs under unified addressing hand it to kernels.
  transform<<<16, 256>>>(pinned, pinned + kN, kN, 99u);
  const cudaError_t launched = cudaGetLastError();
  const cudaError_t synced = cudaDeviceSynchronize();
  std::printf("F kernel on cudaMallocHost memory through its host pointer: launch %s, sync %s\n",
              cudaGetErrorName(launched), cudaGetErrorName(synced));
  EXPECT_TRUE(launched == cudaSuccess && synced == cudaSuccess, "kernel on pinned memory");
  int wrong = 0;
  for (int i = 0; i < kN; ++i) wrong += pinned[kN + i] != mix32(i + 8) * 3u + 99u;
  EXPECT_TRUE(wrong == 0, "pinned kernel: %d wrong", wrong);
  std::printf("F   results: %d wrong\n", wrong);
  CHECK_CUDA(cudaFreeHost(pinned));
}

}  // namespace

int main() {
  attributesToStderr();
  unsigned deviceFlags = 0;
  CHECK_CUDA(cudaGetDeviceFlags(&deviceFlags));
  std::printf("A cudaGetDeviceFlags before any allocation: 0x%x\n", deviceFlags);
  hostAllocCombinations();
  copiesWithMappedMemory();
  kernelSignalsHost();
  registration();
  plainPinnedInKernel();
  std::printf("probe_host_mapped OK\n");
  return 0;
}
