// adversary_api: a hostile CUDA program, run through the AgileOS shim only.
//
// Every case below feeds the CUDA runtime API something a well-behaved program
// never would: forged or stale stream/event handles, pointers into the
// protected I/O aperture and module range or into unallocated user space,
// freed pointers, ranges that overflow 64 bits or end one byte past a live
// allocation, bad cudaFree targets, forged kernel pointers, and hand-made
// fatbins registered through __cudaRegisterFatBinary. Each case must come back
// with an error (a specific one where CUDA's behaviour is known), immediately
// or at the next synchronization; and after each case a normal allocate / copy /
// launch / copy back round trip must still work, proving the worker still
// serves this client.
//
// Usage: adversary_api [--fake-gpu]
//   --fake-gpu  for a worker with a fake GPU backend (CPU CI): kernels do not run
//               there, so the round trip checks the copies but not the kernel's effect.
// Output: a table "case | expected | got | PASS/FAIL" and a closing line
// "adversary_api: N passed, M failed". Exit status 0 only if every case passed;
// 3 if the program crashed (the case is named on stderr).
#include <cuda.h>
#include <sys/mman.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "tests/gpu/adversary/fatbin_section.h"

// The registration entry points nvcc's generated code calls; declared here (identically to
// crt/host_runtime.h) so that the program can call them with hand-made arguments.
extern "C" void** __cudaRegisterFatBinary(void* fatCubin);
extern "C" void __cudaRegisterFatBinaryEnd(void** fatCubinHandle);
extern "C" void __cudaRegisterFunction(void** fatCubinHandle, const char* hostFun, char* deviceFun,
                                       const char* deviceName, int thread_limit, uint3* tid, uint3* bid,
                                       dim3* bDim, dim3* gDim, int* wSize);

namespace {

using agileos::adversary::Bytes;

constexpr const char* kKernelName = "agileos_adversary_increment";

// The I/O aperture, protected module range and user range of the AgileOS layout (paper, Table I).
constexpr std::uint64_t kIoAperture = 0xF0000000000ull;
constexpr std::uint64_t kModuleRange = 0xF1000000000ull;
constexpr std::uint64_t kUserRange = 0xF8000000000ull;

// Sentinel meaning "any error, CUDA does not define which one".
constexpr cudaError_t kAnyError = static_cast<cudaError_t>(-1);

}  // namespace

extern "C" __global__ void agileos_adversary_increment(unsigned* data, unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1u;
}

__device__ unsigned adversaryDeviceWord[4];

namespace {

void* deviceAddress(std::uint64_t address) {
  return reinterpret_cast<void*>(static_cast<std::uintptr_t>(address));
}

template <typename T>
T forgedHandle(std::uint64_t value) {
  return reinterpret_cast<T>(static_cast<std::uintptr_t>(value));
}

// --------------------------------------------------------------- crash reporting

const char* volatile currentCase = "start-up";

void onFatalSignal(int) {
  // Only async-signal-safe calls here.
  const char* prefix = "adversary_api: CRASH (signal) during case: ";
  ssize_t ignored = write(STDERR_FILENO, prefix, std::strlen(prefix));
  ignored = write(STDERR_FILENO, currentCase, std::strlen(currentCase));
  ignored = write(STDERR_FILENO, "\n", 1);
  (void)ignored;
  _exit(3);
}

void installCrashHandlers() {
  for (int fatal : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL}) std::signal(fatal, onFatalSignal);
}

// --------------------------------------------------------------- the round trip

bool fakeGpu = false;  // --fake-gpu: kernels have no effect

// A complete, valid use of the device. Returns an empty string on success, or what went wrong.
std::string roundTrip() {
  constexpr unsigned kWords = 1u << 18;
  std::vector<unsigned> host(kWords), back(kWords, 0);
  for (unsigned i = 0; i < kWords; ++i) host[i] = i * 2654435761u;
  unsigned* device = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t event = nullptr;
  std::string failure;
  auto step = [&](cudaError_t e, const char* what) {
    if (e != cudaSuccess && failure.empty()) failure = std::string(what) + " -> " + cudaGetErrorName(e);
    return failure.empty();
  };
  if (step(cudaMalloc(&device, kWords * sizeof(unsigned)), "cudaMalloc") &&
      step(cudaStreamCreate(&stream), "cudaStreamCreate") &&
      step(cudaEventCreate(&event), "cudaEventCreate") &&
      step(cudaMemcpyAsync(device, host.data(), kWords * sizeof(unsigned), cudaMemcpyHostToDevice, stream),
           "cudaMemcpyAsync H2D")) {
    agileos_adversary_increment<<<kWords / 256, 256, 0, stream>>>(device, kWords);
    if (step(cudaGetLastError(), "launch") && step(cudaEventRecord(event, stream), "cudaEventRecord") &&
        step(cudaEventSynchronize(event), "cudaEventSynchronize") &&
        step(cudaMemcpy(back.data(), device, kWords * sizeof(unsigned), cudaMemcpyDeviceToHost),
             "cudaMemcpy D2H")) {
      for (unsigned i = 0; i < kWords && failure.empty(); ++i) {
        const bool expected = back[i] == host[i] + 1u || (fakeGpu && back[i] == host[i]);
        if (!expected) failure = "wrong data at word " + std::to_string(i);
      }
    }
  }
  if (event != nullptr) step(cudaEventDestroy(event), "cudaEventDestroy");
  if (stream != nullptr) step(cudaStreamDestroy(stream), "cudaStreamDestroy");
  if (device != nullptr) step(cudaFree(device), "cudaFree");
  return failure;
}

// --------------------------------------------------------------- the table

int passed = 0;
int failed = 0;

std::string errorName(cudaError_t e) { return e == kAnyError ? "any error" : cudaGetErrorName(e); }

// The end of every case: the round trip must still work after it, then one table row is printed
// and counted.
void recordRow(const std::string& name, const std::string& expected, std::string gotText, bool ok) {
  const std::string afterwards = roundTrip();
  if (!afterwards.empty()) {
    ok = false;
    gotText += "; round trip after it failed: " + afterwards;
  }
  std::printf("%-64s | %-32s | %-40s | %s\n", name.c_str(), expected.c_str(), gotText.c_str(),
              ok ? "PASS" : "FAIL");
  std::fflush(stdout);
  (ok ? passed : failed) += 1;
  currentCase = "between cases";
}

// Runs one case. `body` returns the error of the offending call. A case that reports success
// immediately may still report its error at the next synchronization (asynchronous calls);
// that counts, and the row says "at sync".
void runCase(const std::string& name, cudaError_t expected, const std::function<cudaError_t()>& body) {
  currentCase = name.c_str();
  cudaError_t got = body();
  bool atSync = false;
  if (got == cudaSuccess && expected != cudaSuccess) {
    got = cudaDeviceSynchronize();
    atSync = got != cudaSuccess;
  }
  cudaGetLastError();  // none of these errors may be sticky; clear the last-error slot
  const bool ok = expected == kAnyError ? got != cudaSuccess : got == expected;
  recordRow(name, errorName(expected), std::string(cudaGetErrorName(got)) + (atSync ? " (at sync)" : ""), ok);
}

// --------------------------------------------------------------- fatbin registration attacks

// What __cudaRegisterFatBinary receives (nvcc's __fatBinC_Wrapper_t).
struct FatbinWrapper {
  int magic;
  int version;
  const void* data;
  void* filenameOrFatbins;
};

// Distinct host addresses to register device functions against; never called.
char hostStubs[32];
int nextStub = 0;

// Registers `container` as a module with one function, then launches that function.
cudaError_t registerAndLaunch(const void* containerData, int wrapperMagic, const char* functionName) {
  static std::vector<FatbinWrapper*> keepAlive;  // the runtime may keep the wrapper pointer
  auto* wrapper = new FatbinWrapper{wrapperMagic, 1, containerData, nullptr};
  keepAlive.push_back(wrapper);
  const char* stub = &hostStubs[nextStub++ % 32];
  void** handle = __cudaRegisterFatBinary(wrapper);
  __cudaRegisterFunction(handle, stub, const_cast<char*>(functionName), functionName, -1, nullptr, nullptr,
                         nullptr, nullptr, nullptr);
  __cudaRegisterFatBinaryEnd(handle);
  unsigned* device = nullptr;
  unsigned n = 1;
  cudaError_t e = cudaMalloc(&device, sizeof(unsigned));
  if (e != cudaSuccess) return e;
  void* args[] = {&device, &n};
  e = cudaLaunchKernel(stub, dim3(1), dim3(1), args, 0, nullptr);
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  cudaFree(device);
  return e;
}

// A heap copy that lives as long as the process (the runtime may read it lazily).
const unsigned char* persist(const Bytes& bytes) {
  auto* copy = new Bytes(bytes);
  copy->resize(copy->size() + 64, 0);  // slack so that a reader overshooting by a little stays in bounds
  return copy->data();
}

void patch64(Bytes& bytes, std::size_t offset, std::uint64_t value) {
  std::memcpy(bytes.data() + offset, &value, sizeof value);
}

// Malformed ELF images (this program's own SASS, damaged) through cudaLibraryLoadData, which hands
// an ELF image to the worker as a cubin: the worker bounds-checks it before the driver's closed
// parser sees it (worker/fatbin/elf_image_check.h). Every case must fail cleanly.
void elfCases(const Bytes& real, const std::vector<agileos::adversary::FatbinEntryLocation>& entries) {
  Bytes elf;
  for (const auto& entry : entries) {
    const std::size_t payload = entry.offset + entry.prefix.headerSize;
    if (entry.prefix.kind == 2 && entry.prefix.payloadSize >= sizeof(Elf64_Ehdr) &&
        std::memcmp(real.data() + payload, ELFMAG, SELFMAG) == 0) {
      elf.assign(real.begin() + static_cast<std::ptrdiff_t>(payload),
                 real.begin() + static_cast<std::ptrdiff_t>(payload + entry.prefix.payloadSize));
      break;
    }
  }
  if (elf.empty()) {
    std::printf("%-64s | %-32s | %-40s | %s\n", "locate this program's own SASS (ELF)", "found", "not found",
                "FAIL");
    ++failed;
    return;
  }
  Elf64_Ehdr header;
  std::memcpy(&header, elf.data(), sizeof header);
  auto load = [](const Bytes& image) {
    cudaLibrary_t library = nullptr;
    const cudaError_t e =
        cudaLibraryLoadData(&library, persist(image), nullptr, nullptr, 0, nullptr, nullptr, 0);
    if (e == cudaSuccess) cudaLibraryUnload(library);
    return e;
  };
  auto patched = [&](auto edit) {
    Bytes copy = elf;
    edit(copy);
    return copy;
  };
  auto sectionAt = [&](std::size_t index) { return header.e_shoff + index * sizeof(Elf64_Shdr); };
  runCase("ELF: section header table past the end", kAnyError, [&] {
    return load(patched([&](Bytes& b) { patch64(b, offsetof(Elf64_Ehdr, e_shoff), b.size() + 4096); }));
  });
  runCase("ELF: 65535 section headers", kAnyError, [&] {
    return load(patched([&](Bytes& b) {
      const std::uint16_t count = 0xffff;
      std::memcpy(b.data() + offsetof(Elf64_Ehdr, e_shnum), &count, sizeof count);
    }));
  });
  runCase("ELF: a section at offset 2^63 (offset + size wraps)", kAnyError, [&] {
    return load(patched([&](Bytes& b) {
      patch64(b, sectionAt(1) + offsetof(Elf64_Shdr, sh_offset), std::uint64_t{1} << 63);
    }));
  });
  runCase("ELF: a section 1 TiB long", kAnyError, [&] {
    return load(patched([&](Bytes& b) {
      patch64(b, sectionAt(header.e_shnum - 1) + offsetof(Elf64_Shdr, sh_size), std::uint64_t{1} << 40);
    }));
  });
  runCase("ELF: section-name table index out of range", kAnyError, [&] {
    return load(patched([&](Bytes& b) {
      const std::uint16_t index = static_cast<std::uint16_t>(header.e_shnum + 5);
      std::memcpy(b.data() + offsetof(Elf64_Ehdr, e_shstrndx), &index, sizeof index);
    }));
  });
  runCase("ELF: truncated to three quarters", kAnyError, [&] {
    return load(Bytes(elf.begin(), elf.begin() + static_cast<std::ptrdiff_t>(elf.size() * 3 / 4)));
  });
}

void fatbinCases(const Bytes& real) {
  using agileos::adversary::FatbinContainerHeader;
  using agileos::adversary::FatbinEntryPrefix;
  if (real.empty()) {
    std::printf("%-64s | %-32s | %-40s | %s\n", "locate this program's own fatbin", "found", "not found",
                "FAIL");
    ++failed;
    return;
  }
  const auto entries = agileos::adversary::fatbinEntries(real);

  runCase("fatbin: wrapper magic wrong", kAnyError,
          [&] { return registerAndLaunch(persist(real), 0x12345678, kKernelName); });
  runCase("fatbin: wrapper with a null fatbin pointer", kAnyError, [&] {
    return registerAndLaunch(nullptr, static_cast<int>(agileos::adversary::kFatbinWrapperMagic), kKernelName);
  });
  const int wrapperMagic = static_cast<int>(agileos::adversary::kFatbinWrapperMagic);

  Bytes badMagic = real;
  badMagic[0] ^= 0xFF;
  runCase("fatbin: container magic wrong", kAnyError,
          [&] { return registerAndLaunch(persist(badMagic), wrapperMagic, kKernelName); });

  Bytes huge(4096, 0);
  std::memcpy(huge.data(), real.data(), sizeof(FatbinContainerHeader));
  patch64(huge, 8, 1ull << 40);
  runCase("fatbin: container size 1 TiB (buffer 4 KiB)", kAnyError,
          [&] { return registerAndLaunch(persist(huge), wrapperMagic, kKernelName); });
  patch64(huge, 8, ~0ull - 15);
  runCase("fatbin: container size 2^64-16 (header+size overflows)", kAnyError,
          [&] { return registerAndLaunch(persist(huge), wrapperMagic, kKernelName); });

  Bytes bigHeader = real;
  bigHeader[6] = 0xFF;
  bigHeader[7] = 0xFF;  // header size 0xFFFF
  runCase("fatbin: container header size 65535", kAnyError,
          [&] { return registerAndLaunch(persist(bigHeader), wrapperMagic, kKernelName); });

  Bytes empty(real.begin(), real.begin() + sizeof(FatbinContainerHeader));
  patch64(empty, 8, 0);
  runCase("fatbin: container with no entries", kAnyError,
          [&] { return registerAndLaunch(persist(empty), wrapperMagic, kKernelName); });

  if (!entries.empty()) {
    const std::size_t first = entries.front().offset;
    Bytes hugeEntry = real;
    patch64(hugeEntry, first + 8, 1ull << 40);
    runCase("fatbin: entry payload size 1 TiB", kAnyError,
            [&] { return registerAndLaunch(persist(hugeEntry), wrapperMagic, kKernelName); });
    Bytes zeroEntry = real;
    std::memset(zeroEntry.data() + first + 4, 0, 12);  // header size 0, payload 0: a naive parser spins
    runCase("fatbin: entry header size 0 (parser loop)", kAnyError,
            [&] { return registerAndLaunch(persist(zeroEntry), wrapperMagic, kKernelName); });
    Bytes wrapEntry = real;
    patch64(wrapEntry, first + 8, ~0ull - 8);
    runCase("fatbin: entry offset+size wraps around", kAnyError,
            [&] { return registerAndLaunch(persist(wrapEntry), wrapperMagic, kKernelName); });
  }

  Bytes garbage(4096);
  for (std::size_t i = 0; i < garbage.size(); ++i)
    garbage[i] = static_cast<unsigned char>((i * 131u + 7u) ^ (i >> 3));
  std::memcpy(garbage.data(), real.data(), 8);  // valid magic, version and header size
  patch64(garbage, 8, garbage.size() - 16);
  runCase("fatbin: valid header, 4 KiB of garbage entries", kAnyError,
          [&] { return registerAndLaunch(persist(garbage), wrapperMagic, kKernelName); });

  Bytes truncated = real;
  FatbinContainerHeader header;
  std::memcpy(&header, real.data(), sizeof header);
  patch64(truncated, 8, header.fatSize / 2);
  truncated.resize(header.headerSize + header.fatSize / 2);
  runCase("fatbin: real fatbin truncated to half", kAnyError,
          [&] { return registerAndLaunch(persist(truncated), wrapperMagic, kKernelName); });

  bool hasPtx = false;
  Bytes corruptPtx = real;
  for (const auto& entry : entries) {
    if (entry.prefix.kind != agileos::adversary::kEntryKindPtx) continue;
    hasPtx = true;
    const std::size_t payload = entry.offset + entry.prefix.headerSize;
    for (std::size_t i = 0; i < entry.prefix.payloadSize; i += 7) corruptPtx[payload + i] ^= 0x5A;
  }
  // This program is built for sm_75 (SASS that an sm_90 device cannot run) plus PTX, so with the
  // PTX corrupted nothing loadable is left.
  if (hasPtx) {
    runCase("fatbin: real fatbin with corrupted PTX", kAnyError,
            [&] { return registerAndLaunch(persist(corruptPtx), wrapperMagic, kKernelName); });
  }

  elfCases(real, entries);

  runCase("fatbin: real fatbin, unknown function name", kAnyError,
          [&] { return registerAndLaunch(persist(real), wrapperMagic, "agileos_no_such_kernel"); });
  runCase("fatbin: real fatbin registered a second time (legal)", cudaSuccess,
          [&] { return registerAndLaunch(persist(real), wrapperMagic, kKernelName); });
}

// --------------------------------------------------------------- the cases

void handleCases() {
  const cudaError_t bad = cudaErrorInvalidResourceHandle;
  cudaEvent_t valid;
  cudaEventCreate(&valid);
  unsigned* dev = nullptr;
  cudaMalloc(&dev, 4096);
  static unsigned host[1024];

  for (std::uint64_t value : {0x5eed5eed12345678ull, 3ull, 7ull, 0x1000ull, 0xF8000000000ull, ~0ull}) {
    char name[96];
    std::snprintf(name, sizeof name, "cudaStreamSynchronize(forged stream 0x%llx)",
                  static_cast<unsigned long long>(value));
    runCase(name, bad, [&] { return cudaStreamSynchronize(forgedHandle<cudaStream_t>(value)); });
  }
  const auto forgedStream = forgedHandle<cudaStream_t>(0x5eed5eed12345678ull);
  const auto forgedEvent = forgedHandle<cudaEvent_t>(0x0bad0bad0bad0badull);
  runCase("cudaStreamSynchronize(cudaStreamLegacy) (legal)", cudaSuccess,
          [] { return cudaStreamSynchronize(cudaStreamLegacy); });
  runCase("cudaStreamSynchronize(cudaStreamPerThread) (legal)", cudaSuccess,
          [] { return cudaStreamSynchronize(cudaStreamPerThread); });

  cudaStream_t destroyed;
  cudaStreamCreate(&destroyed);
  cudaStreamDestroy(destroyed);
  runCase("cudaStreamSynchronize(destroyed stream)", bad, [&] { return cudaStreamSynchronize(destroyed); });
  runCase("cudaStreamDestroy(destroyed stream)", bad, [&] { return cudaStreamDestroy(destroyed); });
  runCase("cudaStreamDestroy(forged stream)", bad, [&] { return cudaStreamDestroy(forgedStream); });
  runCase("cudaStreamQuery(forged stream)", bad, [&] { return cudaStreamQuery(forgedStream); });
  runCase("cudaStreamWaitEvent(forged stream, event)", bad,
          [&] { return cudaStreamWaitEvent(forgedStream, valid, 0); });
  runCase("cudaStreamWaitEvent(0, forged event)", bad,
          [&] { return cudaStreamWaitEvent(0, forgedEvent, 0); });
  runCase("cudaEventRecord(forged event)", bad, [&] { return cudaEventRecord(forgedEvent, 0); });
  runCase("cudaEventRecord(event, forged stream)", bad, [&] { return cudaEventRecord(valid, forgedStream); });
  runCase("cudaEventSynchronize(forged event)", bad, [&] { return cudaEventSynchronize(forgedEvent); });
  runCase("cudaEventQuery(forged event)", bad, [&] { return cudaEventQuery(forgedEvent); });
  runCase("cudaEventElapsedTime(event, forged event)", bad, [&] {
    float ms = 0;
    cudaEventRecord(valid, 0);
    cudaEventSynchronize(valid);
    return cudaEventElapsedTime(&ms, valid, forgedEvent);
  });
  runCase("cudaEventDestroy(forged event)", bad, [&] { return cudaEventDestroy(forgedEvent); });
  cudaEvent_t destroyedEvent;
  cudaEventCreate(&destroyedEvent);
  cudaEventDestroy(destroyedEvent);
  runCase("cudaEventRecord(destroyed event)", bad, [&] { return cudaEventRecord(destroyedEvent, 0); });
  runCase("cudaMemcpyAsync(..., forged stream)", bad,
          [&] { return cudaMemcpyAsync(dev, host, 64, cudaMemcpyHostToDevice, forgedStream); });
  runCase("cudaMemsetAsync(..., forged stream)", bad,
          [&] { return cudaMemsetAsync(dev, 0, 64, forgedStream); });
  runCase("kernel launch on a forged stream", bad, [&] {
    agileos_adversary_increment<<<1, 32, 0, forgedStream>>>(dev, 32);
    return cudaGetLastError();
  });
  runCase("kernel launch on a destroyed stream", bad, [&] {
    agileos_adversary_increment<<<1, 32, 0, destroyed>>>(dev, 32);
    return cudaGetLastError();
  });
  cudaEventDestroy(valid);
  cudaFree(dev);
}

void pointerCases(unsigned char* hugeHost) {
  const cudaError_t bad = cudaErrorInvalidValue;
  unsigned char host[64] = {};
  unsigned char* valid = nullptr;
  cudaMalloc(&valid, 1 << 20);
  struct Target {
    const char* name;
    std::uint64_t address;
  };
  const Target targets[] = {
      {"I/O aperture base", kIoAperture},
      {"I/O aperture + 0x1000", kIoAperture + 0x1000},
      {"module range base", kModuleRange},
      {"module range + 0x12345678", kModuleRange + 0x12345678},
      {"last bytes of the module range", kUserRange - 16},
      {"unallocated user range (+512 GiB)", kUserRange + (512ull << 30)},
      {"user range base - 8 (straddles)", kUserRange - 8},
      {"address 0x10", 0x10},
      {"2^64 - 16", ~0ull - 15},
  };
  for (const Target& t : targets) {
    void* p = deviceAddress(t.address);
    runCase(std::string("cudaMemcpy H2D to ") + t.name, bad,
            [&] { return cudaMemcpy(p, host, 32, cudaMemcpyHostToDevice); });
    runCase(std::string("cudaMemcpy D2H from ") + t.name, bad,
            [&] { return cudaMemcpy(host, p, 32, cudaMemcpyDeviceToHost); });
    runCase(std::string("cudaMemset on ") + t.name, bad, [&] { return cudaMemset(p, 0xAB, 32); });
    runCase(std::string("cudaMemcpy D2D valid -> ") + t.name, bad,
            [&] { return cudaMemcpy(p, valid, 32, cudaMemcpyDeviceToDevice); });
    runCase(std::string("cudaMemcpy D2D ") + t.name + " -> valid", bad,
            [&] { return cudaMemcpy(valid, p, 32, cudaMemcpyDeviceToDevice); });
  }
  runCase("cudaMemcpy2D to the module range", bad, [&] {
    return cudaMemcpy2D(deviceAddress(kModuleRange), 64, host, 32, 32, 2, cudaMemcpyHostToDevice);
  });
  runCase("cudaMemset2D on the I/O aperture", bad,
          [&] { return cudaMemset2D(deviceAddress(kIoAperture), 64, 0, 32, 2); });
  runCase("cudaMemcpy H2D host->host pointer with kind H2D", bad,
          [&] { return cudaMemcpy(host + 32, host, 16, cudaMemcpyHostToDevice); });

  unsigned char* freed = nullptr;
  cudaMalloc(&freed, 1 << 20);
  cudaFree(freed);
  runCase("cudaMemcpy H2D to a freed allocation", bad,
          [&] { return cudaMemcpy(freed, host, 32, cudaMemcpyHostToDevice); });
  runCase("cudaMemcpy D2H from a freed allocation", bad,
          [&] { return cudaMemcpy(host, freed, 32, cudaMemcpyDeviceToHost); });
  runCase("cudaMemset on a freed allocation", bad, [&] { return cudaMemset(freed, 0, 32); });

  // Sizes that overflow or exceed everything.
  runCase("cudaMemset(valid, size 2^64-1)", bad, [&] { return cudaMemset(valid, 0, ~size_t{0}); });
  runCase("cudaMemset(2^64-4096, size 8192) wraps", bad,
          [&] { return cudaMemset(deviceAddress(~0ull - 4095), 0, 8192); });
  runCase("cudaMemcpy D2D(valid+16, valid, 2^64-8)", bad,
          [&] { return cudaMemcpy(valid + 16, valid, ~size_t{0} - 7, cudaMemcpyDeviceToDevice); });
  runCase("cudaMemcpy H2D(valid, host, 2^62)", bad,
          [&] { return cudaMemcpy(valid, hugeHost, size_t{1} << 62, cudaMemcpyHostToDevice); });
  runCase("cudaMemcpy D2H(host, valid, 2^62)", bad,
          [&] { return cudaMemcpy(hugeHost, valid, size_t{1} << 62, cudaMemcpyDeviceToHost); });
  runCase("cudaMemcpy H2D(valid, host, 256 MiB) into 1 MiB", bad,
          [&] { return cudaMemcpy(valid, hugeHost, size_t{256} << 20, cudaMemcpyHostToDevice); });
  runCase("cudaMemset2D pitch 2^40 x height 2^30", bad,
          [&] { return cudaMemset2D(valid, size_t{1} << 40, 0, 16, size_t{1} << 30); });
  runCase("cudaMemcpy2D D2H height 2^40", bad,
          [&] { return cudaMemcpy2D(hugeHost, 64, valid, 64, 64, size_t{1} << 40, cudaMemcpyDeviceToHost); });
  runCase("cudaMalloc(2^64-1)", cudaErrorMemoryAllocation, [] {
    void* p = nullptr;
    return cudaMalloc(&p, ~size_t{0});
  });
  runCase("cudaMalloc(2^62)", cudaErrorMemoryAllocation, [] {
    void* p = nullptr;
    return cudaMalloc(&p, size_t{1} << 62);
  });
  runCase("cudaMallocPitch(2^62 x 4)", kAnyError, [] {
    void* p = nullptr;
    size_t pitch = 0;
    return cudaMallocPitch(&p, &pitch, size_t{1} << 62, 4);
  });
  cudaFree(valid);
}

// One byte past the end of live allocations; the neighbours must stay intact.
void boundaryCases() {
  const cudaError_t bad = cudaErrorInvalidValue;
  constexpr size_t kSmall = 4096;
  constexpr size_t kPage = 2u << 20;
  unsigned char *a = nullptr, *b = nullptr, *page = nullptr;
  cudaMalloc(&a, kSmall);
  cudaMalloc(&b, kSmall * 4);
  cudaMalloc(&page, kPage);
  cudaMemset(a, 0x11, kSmall);
  cudaMemset(b, 0x22, kSmall * 4);
  cudaMemset(page, 0x33, kPage);
  std::vector<unsigned char> host(kPage + 4096, 0xEE);
  cudaStream_t stream;
  cudaStreamCreate(&stream);

  runCase("H2D 4097 bytes into a 4096-byte allocation", bad,
          [&] { return cudaMemcpy(a, host.data(), kSmall + 1, cudaMemcpyHostToDevice); });
  runCase("D2H 4097 bytes from a 4096-byte allocation", bad,
          [&] { return cudaMemcpy(host.data(), a, kSmall + 1, cudaMemcpyDeviceToHost); });
  runCase("D2D 4097 bytes into a 4096-byte allocation", bad,
          [&] { return cudaMemcpy(a, b, kSmall + 1, cudaMemcpyDeviceToDevice); });
  runCase("D2D 4097 bytes out of a 4096-byte allocation", bad,
          [&] { return cudaMemcpy(b, a, kSmall + 1, cudaMemcpyDeviceToDevice); });
  runCase("memset 4097 bytes of a 4096-byte allocation", bad,
          [&] { return cudaMemset(a, 0xFF, kSmall + 1); });
  runCase("memset 1 byte at offset 4096", bad, [&] { return cudaMemset(a + kSmall, 0xFF, 1); });
  runCase("H2D 2 bytes at offset 4095", bad,
          [&] { return cudaMemcpy(a + kSmall - 1, host.data(), 2, cudaMemcpyHostToDevice); });
  runCase("memsetAsync 4097 bytes", bad, [&] { return cudaMemsetAsync(a, 0xFF, kSmall + 1, stream); });
  runCase("memcpyAsync H2D 4097 bytes", bad,
          [&] { return cudaMemcpyAsync(a, host.data(), kSmall + 1, cudaMemcpyHostToDevice, stream); });
  runCase("memset2D 64 x 65 rows of pitch 64 on 4096 bytes", bad,
          [&] { return cudaMemset2D(a, 64, 0xFF, 64, 65); });
  runCase("memset 2 MiB + 1 of a 2 MiB allocation", bad, [&] { return cudaMemset(page, 0xFF, kPage + 1); });
  runCase("H2D 1 byte at offset 2 MiB of a 2 MiB allocation", bad,
          [&] { return cudaMemcpy(page + kPage, host.data(), 1, cudaMemcpyHostToDevice); });
  runCase("cudaMemcpyToSymbol past the end of a __device__ array", bad, [&] {
    return cudaMemcpyToSymbol(adversaryDeviceWord, host.data(), sizeof(adversaryDeviceWord) + 1);
  });
  runCase("cudaMemcpyToSymbol at offset 2^64-2", bad,
          [&] { return cudaMemcpyToSymbol(adversaryDeviceWord, host.data(), 4, ~size_t{0} - 1); });
  static int notASymbol;
  runCase("cudaMemcpyToSymbol(host variable)", cudaErrorInvalidSymbol,
          [&] { return cudaMemcpyToSymbol(&notASymbol, host.data(), 4); });
  runCase("cudaGetSymbolAddress(host variable)", cudaErrorInvalidSymbol, [&] {
    void* p = nullptr;
    return cudaGetSymbolAddress(&p, &notASymbol);
  });

  runCase("no byte outside the refused ranges changed", cudaSuccess, [&] {
    std::vector<unsigned char> check(kPage);
    cudaError_t e = cudaMemcpy(check.data(), a, kSmall, cudaMemcpyDeviceToHost);
    for (size_t i = 0; e == cudaSuccess && i < kSmall; ++i) {
      if (check[i] != 0x11) return cudaErrorUnknown;
    }
    if (e == cudaSuccess) e = cudaMemcpy(check.data(), b, kSmall * 4, cudaMemcpyDeviceToHost);
    for (size_t i = 0; e == cudaSuccess && i < kSmall * 4; ++i) {
      if (check[i] != 0x22) return cudaErrorUnknown;
    }
    if (e == cudaSuccess) e = cudaMemcpy(check.data(), page, kPage, cudaMemcpyDeviceToHost);
    for (size_t i = 0; e == cudaSuccess && i < kPage; ++i) {
      if (check[i] != 0x33) return cudaErrorUnknown;
    }
    return e;
  });

  // cudaFree of everything that is not the start of a live allocation.
  runCase("cudaFree(interior pointer)", bad, [&] { return cudaFree(a + 16); });
  runCase("cudaFree(one past the end)", bad, [&] { return cudaFree(a + kSmall); });
  runCase("cudaFree(module range)", bad, [] { return cudaFree(deviceAddress(kModuleRange)); });
  runCase("cudaFree(I/O aperture)", bad, [] { return cudaFree(deviceAddress(kIoAperture)); });
  runCase("cudaFree(unallocated user range)", bad,
          [] { return cudaFree(deviceAddress(kUserRange + (1ull << 39))); });
  runCase("cudaFree(host stack address)", bad, [&] { return cudaFree(host.data()); });
  runCase("cudaFreeHost(device pointer)", bad, [&] { return cudaFreeHost(a); });
  runCase("cudaFreeHost(unknown host pointer)", bad, [&] { return cudaFreeHost(host.data()); });
  runCase("cudaFree(nullptr) (legal)", cudaSuccess, [] { return cudaFree(nullptr); });
  runCase("allocation survives the refused frees", cudaSuccess, [&] {
    unsigned char first = 0;
    cudaError_t e = cudaMemcpy(&first, a, 1, cudaMemcpyDeviceToHost);
    return e == cudaSuccess && first != 0x11 ? cudaErrorUnknown : e;
  });
  runCase("cudaFree twice", bad, [&] {
    cudaError_t e = cudaFree(b);
    return e != cudaSuccess ? cudaErrorUnknown : cudaFree(b);
  });
  cudaStreamDestroy(stream);
  cudaFree(a);
  cudaFree(page);
}

void launchCases() {
  unsigned* dev = nullptr;
  cudaMalloc(&dev, 4096);
  unsigned n = 32;
  void* args[] = {&dev, &n};
  const void* forged = reinterpret_cast<const void*>(0xdeadbeefull);
  // Natively, CUDA 13 answers a host function with cudaErrorInvalidResourceHandle (it also takes
  // cudaKernel_t handles there) and may crash on a wild pointer, so no specific error is required.
  runCase("cudaLaunchKernel(forged function pointer)", kAnyError,
          [&] { return cudaLaunchKernel(forged, dim3(1), dim3(1), args, 0, nullptr); });
  runCase("cudaLaunchKernel(host function)", kAnyError, [&] {
    return cudaLaunchKernel(reinterpret_cast<const void*>(&roundTrip), dim3(1), dim3(1), args, 0, nullptr);
  });
  runCase("cudaFuncGetAttributes(forged function)", kAnyError, [&] {
    cudaFuncAttributes attributes;
    return cudaFuncGetAttributes(&attributes, forged);
  });
  runCase("cudaFuncSetAttribute(forged function)", kAnyError,
          [&] { return cudaFuncSetAttribute(forged, cudaFuncAttributeMaxDynamicSharedMemorySize, 1024); });
  runCase("cudaOccupancyMaxActiveBlocksPerMultiprocessor(forged)", kAnyError, [&] {
    int blocks = 0;
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, forged, 128, 0);
  });
  // CUDA 13 reports some of these as cudaErrorInvalidValue, some as cudaErrorInvalidConfiguration.
  runCase("launch with 1025 threads per block", kAnyError, [&] {
    agileos_adversary_increment<<<1, 1025>>>(dev, 32);
    return cudaGetLastError();
  });
  runCase("launch with grid.y = 65536", kAnyError, [&] {
    agileos_adversary_increment<<<dim3(1, 65536), 32>>>(dev, 32);
    return cudaGetLastError();
  });
  runCase("launch with 2 GiB dynamic shared memory", kAnyError, [&] {
    agileos_adversary_increment<<<1, 32, 2u << 30>>>(dev, 32);
    return cudaGetLastError();
  });
  // Launch attributes: those that carry an event are not passed on, an address only over the
  // client's memory; a list longer
  // than the worker takes is refused before it is sent.
  const void* kernel = reinterpret_cast<const void*>(&agileos_adversary_increment);
  cudaLaunchAttribute attributes[17]{};
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(1);
  config.blockDim = dim3(32);
  config.attrs = attributes;
  config.numAttrs = 1;
  attributes[0].id = cudaLaunchAttributeAccessPolicyWindow;
  attributes[0].val.accessPolicyWindow.base_ptr = reinterpret_cast<void*>(0x7f0000000000ull);
  attributes[0].val.accessPolicyWindow.num_bytes = 1 << 20;
  attributes[0].val.accessPolicyWindow.hitRatio = 1.0f;
  attributes[0].val.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
  // The window is admitted over the client's own memory only (worker/call_context.h,
  // confineAccessWindow): one over an address no allocation of the client holds is refused.
  runCase("cudaLaunchKernelExC(access policy window at a forged address)", cudaErrorInvalidValue,
          [&] { return cudaLaunchKernelExC(&config, kernel, args); });
  attributes[0] = cudaLaunchAttribute{};
  attributes[0].id = cudaLaunchAttributeProgrammaticEvent;
  attributes[0].val.programmaticEvent.event = reinterpret_cast<cudaEvent_t>(0xdeadbeefull);
  runCase("cudaLaunchKernelExC(programmatic event, forged)", cudaErrorNotSupported,
          [&] { return cudaLaunchKernelExC(&config, kernel, args); });
  attributes[0] = cudaLaunchAttribute{};
  attributes[0].id = static_cast<cudaLaunchAttributeID>(0x7fffffff);
  runCase("cudaLaunchKernelExC(an attribute id that is none)", cudaErrorNotSupported,
          [&] { return cudaLaunchKernelExC(&config, kernel, args); });
  for (cudaLaunchAttribute& attribute : attributes) {
    attribute = cudaLaunchAttribute{};
    attribute.id = cudaLaunchAttributePriority;
  }
  config.numAttrs = 17;
  runCase("cudaLaunchKernelExC(17 attributes)", cudaErrorInvalidValue,
          [&] { return cudaLaunchKernelExC(&config, kernel, args); });
  config.numAttrs = 1;
  attributes[0] = cudaLaunchAttribute{};
  attributes[0].id = cudaLaunchAttributeClusterDimension;
  attributes[0].val.clusterDim.x = 0xffffffffu;
  attributes[0].val.clusterDim.y = attributes[0].val.clusterDim.z = 1;
  runCase("cudaLaunchKernelExC(a cluster of 2^32-1 blocks)", kAnyError,
          [&] { return cudaLaunchKernelExC(&config, kernel, args); });
  // Mapped host memory: a device address only for memory mapped for the device.
  runCase("cudaHostGetDevicePointer(a device pointer)", cudaErrorInvalidValue, [&] {
    void* device = nullptr;
    return cudaHostGetDevicePointer(&device, dev, 0);
  });
  runCase("cudaHostGetDevicePointer(the stack)", cudaErrorInvalidValue, [&] {
    void* device = nullptr;
    return cudaHostGetDevicePointer(&device, &device, 0);
  });
  cudaGetLastError();
  cudaFree(dev);
}

// --------------------------------------------------------------- driver-API forgeries

// A driver function by name, as a program without -lcuda reaches the driver (libcuda.so.1 is the
// AgileOS driver shim in the sandbox); null if there is none.
template <typename Function>
Function driverFunction(const char* name) {
  void* function = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(name, &function, 13000, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    return nullptr;
  }
  return reinterpret_cast<Function>(function);
}

constexpr CUresult kAnyResult = static_cast<CUresult>(-1);

// runCase for a driver call: `expected` is a CUresult (or kAnyResult: any error).
void runDriverCase(const std::string& name, CUresult expected, const std::function<CUresult()>& body) {
  static const auto errorNameOf = driverFunction<CUresult (*)(CUresult, const char**)>("cuGetErrorName");
  const auto nameOf = [](CUresult result) -> std::string {
    if (result == kAnyResult) return "any error";
    const char* text = nullptr;
    if (errorNameOf != nullptr) errorNameOf(result, &text);
    return text != nullptr ? text : "CUresult " + std::to_string(static_cast<int>(result));
  };
  currentCase = name.c_str();
  const CUresult got = body();
  cudaGetLastError();
  recordRow(name, nameOf(expected), nameOf(got),
            expected == kAnyResult ? got != CUDA_SUCCESS : got == expected);
}

// Forged contexts, modules, functions, link states and allocation handles, protected and foreign
// addresses through the driver API, and the virtual-memory API aimed outside the client's own
// reservations. Each must fail and leave the client served.
void driverCases() {
  const auto ctxSetCurrent = driverFunction<CUresult (*)(CUcontext)>("cuCtxSetCurrent");
  const auto ctxPushCurrent = driverFunction<CUresult (*)(CUcontext)>("cuCtxPushCurrent");
  const auto ctxDestroy = driverFunction<CUresult (*)(CUcontext)>("cuCtxDestroy");
  const auto moduleGetFunction =
      driverFunction<CUresult (*)(CUfunction*, CUmodule, const char*)>("cuModuleGetFunction");
  const auto moduleUnload = driverFunction<CUresult (*)(CUmodule)>("cuModuleUnload");
  const auto moduleLoadData = driverFunction<CUresult (*)(CUmodule*, const void*)>("cuModuleLoadData");
  const auto launchKernel =
      driverFunction<CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                  unsigned, CUstream, void**, void**)>("cuLaunchKernel");
  const auto funcGetAttribute =
      driverFunction<CUresult (*)(int*, CUfunction_attribute, CUfunction)>("cuFuncGetAttribute");
  const auto memcpyHtoD = driverFunction<CUresult (*)(CUdeviceptr, const void*, size_t)>("cuMemcpyHtoD");
  const auto memsetD8 = driverFunction<CUresult (*)(CUdeviceptr, unsigned char, size_t)>("cuMemsetD8");
  const auto memFree = driverFunction<CUresult (*)(CUdeviceptr)>("cuMemFree");
  const auto granularityOf =
      driverFunction<CUresult (*)(size_t*, const CUmemAllocationProp*, CUmemAllocationGranularity_flags)>(
          "cuMemGetAllocationGranularity");
  const auto addressReserve =
      driverFunction<CUresult (*)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long)>(
          "cuMemAddressReserve");
  const auto addressFree = driverFunction<CUresult (*)(CUdeviceptr, size_t)>("cuMemAddressFree");
  const auto memCreate = driverFunction<CUresult (*)(
      CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*, unsigned long long)>("cuMemCreate");
  const auto memRelease = driverFunction<CUresult (*)(CUmemGenericAllocationHandle)>("cuMemRelease");
  const auto memMap = driverFunction<CUresult (*)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                                                  unsigned long long)>("cuMemMap");
  const auto memUnmap = driverFunction<CUresult (*)(CUdeviceptr, size_t)>("cuMemUnmap");
  const auto linkAddData =
      driverFunction<CUresult (*)(CUlinkState, CUjitInputType, void*, size_t, const char*, unsigned,
                                  CUjit_option*, void**)>("cuLinkAddData");
  const auto getExportTable = driverFunction<CUresult (*)(const void**, const CUuuid*)>("cuGetExportTable");
  if (ctxSetCurrent == nullptr || moduleGetFunction == nullptr || launchKernel == nullptr ||
      memMap == nullptr || linkAddData == nullptr || getExportTable == nullptr || memCreate == nullptr ||
      addressReserve == nullptr) {
    runCase("driver entry points for the driver-API cases", cudaSuccess,
            [] { return cudaErrorSymbolNotFound; });
    return;
  }
  const auto forgedContext = reinterpret_cast<CUcontext>(0x7fff0000dead0000ull);
  const auto forgedModule = reinterpret_cast<CUmodule>(0x7fff0000dead1000ull);
  const auto forgedFunction = reinterpret_cast<CUfunction>(0x7fff0000dead2000ull);
  runDriverCase("cuCtxSetCurrent(forged context)", kAnyResult, [&] { return ctxSetCurrent(forgedContext); });
  runDriverCase("cuCtxPushCurrent(forged context)", kAnyResult,
                [&] { return ctxPushCurrent(forgedContext); });
  runDriverCase("cuCtxDestroy(forged context)", kAnyResult, [&] { return ctxDestroy(forgedContext); });
  runDriverCase("cuModuleGetFunction(forged module)", kAnyResult, [&] {
    CUfunction function = nullptr;
    return moduleGetFunction(&function, forgedModule, kKernelName);
  });
  runDriverCase("cuModuleUnload(forged module)", kAnyResult, [&] { return moduleUnload(forgedModule); });
  runDriverCase("cuModuleLoadData(64 bytes that are no image)", kAnyResult, [&] {
    static const unsigned char garbage[64] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
    CUmodule module = nullptr;
    return moduleLoadData(&module, garbage);
  });
  runDriverCase("cuLaunchKernel(forged function)", kAnyResult,
                [&] { return launchKernel(forgedFunction, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr); });
  runDriverCase("cuFuncGetAttribute(forged function)", kAnyResult, [&] {
    int value = 0;
    return funcGetAttribute(&value, CU_FUNC_ATTRIBUTE_NUM_REGS, forgedFunction);
  });
  const unsigned char bytes[64] = {};
  constexpr CUdeviceptr kModuleRangeBase = 0xF1000000000ull, kIoAperture = 0xF0000000000ull;
  runDriverCase("cuMemcpyHtoD(into the protected module range)", CUDA_ERROR_INVALID_VALUE,
                [&] { return memcpyHtoD(kModuleRangeBase, bytes, sizeof bytes); });
  runDriverCase("cuMemsetD8(the I/O aperture)", CUDA_ERROR_INVALID_VALUE,
                [&] { return memsetD8(kIoAperture + 4096, 0, 64); });
  runDriverCase("cuMemFree(the protected module range)", CUDA_ERROR_INVALID_VALUE,
                [&] { return memFree(kModuleRangeBase); });
  // The virtual-memory API: only the client's own reservations, handles and mappings.
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  size_t granularity = 0;
  CUdeviceptr reserved = 0;
  CUmemGenericAllocationHandle handle = 0;
  if (granularityOf(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS ||
      addressReserve(&reserved, 2 * granularity, 0, 0, 0) != CUDA_SUCCESS ||
      memCreate(&handle, granularity, &prop, 0) != CUDA_SUCCESS) {
    runCase("virtual-memory set-up for the driver-API cases", cudaSuccess, [] { return cudaErrorUnknown; });
    return;
  }
  void* runtimeMemory = nullptr;
  cudaMalloc(&runtimeMemory, granularity);
  const auto allocated = reinterpret_cast<CUdeviceptr>(runtimeMemory);
  runDriverCase("cuMemMap(a forged allocation handle)", CUDA_ERROR_INVALID_VALUE,
                [&] { return memMap(reserved, granularity, 0, handle ^ 0x5a5a000000ull, 0); });
  runDriverCase("cuMemMap(into the protected module range)", CUDA_ERROR_INVALID_VALUE,
                [&] { return memMap(kModuleRangeBase, granularity, 0, handle, 0); });
  runDriverCase("cuMemMap(over a cudaMalloc allocation)", CUDA_ERROR_INVALID_VALUE,
                [&] { return memMap(allocated & ~(granularity - 1), granularity, 0, handle, 0); });
  runDriverCase("cuMemMap(past the end of its reservation)", CUDA_ERROR_INVALID_VALUE,
                [&] { return memMap(reserved + granularity, 2 * granularity, 0, handle, 0); });
  runDriverCase("cuMemUnmap(a cudaMalloc allocation)", CUDA_ERROR_INVALID_VALUE,
                [&] { return memUnmap(allocated, granularity); });
  runDriverCase("cuMemAddressFree(a cudaMalloc allocation)", CUDA_ERROR_INVALID_VALUE,
                [&] { return addressFree(allocated, granularity); });
  runDriverCase("cuMemRelease(a forged allocation handle)", CUDA_ERROR_INVALID_VALUE,
                [&] { return memRelease(handle + 0x100000); });
  runDriverCase("cuMemcpyHtoD(into a reservation with nothing mapped)", CUDA_ERROR_INVALID_VALUE,
                [&] { return memcpyHtoD(reserved, bytes, sizeof bytes); });
  runDriverCase("cuMemcpyHtoD(after the mapping was unmapped)", CUDA_ERROR_INVALID_VALUE, [&] {
    if (memMap(reserved, granularity, 0, handle, 0) != CUDA_SUCCESS) return CUDA_ERROR_UNKNOWN;
    if (memcpyHtoD(reserved, bytes, sizeof bytes) != CUDA_SUCCESS) return CUDA_ERROR_UNKNOWN;
    if (memUnmap(reserved, granularity) != CUDA_SUCCESS) return CUDA_ERROR_UNKNOWN;
    return memcpyHtoD(reserved, bytes, sizeof bytes);
  });
  memRelease(handle);
  addressFree(reserved, 2 * granularity);
  cudaFree(runtimeMemory);
  runDriverCase("cuLinkAddData(forged link state)", CUDA_ERROR_INVALID_HANDLE, [&] {
    static char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n";
    return linkAddData(reinterpret_cast<CUlinkState>(0x7fff0000dead3000ull), CU_JIT_INPUT_PTX, ptx,
                       sizeof ptx, "forged", 0, nullptr, nullptr);
  });
  runDriverCase("cuGetExportTable(an id no table has)", CUDA_ERROR_INVALID_VALUE, [&] {
    const void* table = nullptr;
    const CUuuid id = {
        {0x41, 0x67, 0x69, 0x6c, 0x65, 0x4f, 0x53, 0x00, 0x66, 0x6f, 0x72, 0x67, 0x65, 0x64, 0x21, 0x21}};
    return getExportTable(&table, &id);
  });
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--fake-gpu") == 0) {
      fakeGpu = true;
    } else {
      std::fprintf(stderr, "usage: %s [--fake-gpu]\n", argv[0]);
      return 2;
    }
  }
  installCrashHandlers();
  std::printf("%-64s | %-32s | %-40s | %s\n", "case", "expected", "got", "result");
  const std::string before = roundTrip();
  if (!before.empty()) {
    std::printf("adversary_api: the round trip fails before any attack: %s\n", before.c_str());
    return 1;
  }
  // Host memory for the huge-size cases: reserved, never touched unless a copy wrongly runs.
  auto* hugeHost = static_cast<unsigned char*>(mmap(nullptr, size_t{256} << 20, PROT_READ | PROT_WRITE,
                                                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
  if (hugeHost == MAP_FAILED) {
    std::perror("mmap");
    return 1;
  }

  handleCases();
  pointerCases(hugeHost);
  boundaryCases();
  launchCases();
  fatbinCases(agileos::adversary::fatbinContaining("/proc/self/exe", kKernelName));
  driverCases();

  runCase("last error is clear at the end", cudaSuccess, [] { return cudaGetLastError(); });
  std::printf("adversary_api: %d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
