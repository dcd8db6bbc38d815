// nvrtc_cubin_guard: a CUBIN that NVRTC compiled through AgileOS cannot bypass the kernel memory
// guard. Runs only under AgileOS, in the GPU suite (its daemon guards every module and gives each
// client a protected canary page: --test-guard-canary).
//
// The program compiles, with NVRTC and a real architecture (-arch=sm_90), a kernel that stores a
// value through a pointer it is given; loads the CUBIN with cudaLibraryLoadData; checks that the
// kernel works on its own memory; then aims it at the canary in the protected range. The worker
// offers the PTX the CUBIN was compiled from beside it, so the guarded PTX runs: the store is
// stopped (trap: the synchronize fails with cudaErrorIllegalAddress; poison and sink: the store is
// counted and redirected, and the canary is intact). Run it with AGILEOS_GUARD_POLICY set to each.
// Without that, the CUBIN's SASS would run unguarded and the canary would change.
//
// Output: "PASS ..." / "FAIL ..." lines and "nvrtc_cubin_guard: N passed, M failed"; exit 0 only
// if all passed; 77 when not under AgileOS (no agileosGuardCanary).
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nvrtc.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

using CanaryFn = cudaError_t (*)(unsigned long long*, unsigned long long*);
using StatusFn = cudaError_t (*)(int*, unsigned long long*, char*, size_t);

int passed = 0, failed = 0;

void check(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "PASS" : "FAIL", what.c_str());
  std::fflush(stdout);
  (ok ? passed : failed) += 1;
}

constexpr char kSource[] = R"(
extern "C" __global__ void poke(unsigned* target, unsigned value) { *target = value; }
)";

// The CUBIN of kSource for sm_90, or empty.
std::string compileCubin() {
  nvrtcProgram program = nullptr;
  if (nvrtcCreateProgram(&program, kSource, "poke.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS) return {};
  const char* options[] = {"--gpu-architecture=sm_90"};
  std::string cubin;
  if (nvrtcCompileProgram(program, 1, options) == NVRTC_SUCCESS) {
    size_t size = 0;
    if (nvrtcGetCUBINSize(program, &size) == NVRTC_SUCCESS && size > 0) {
      cubin.resize(size);
      if (nvrtcGetCUBIN(program, cubin.data()) != NVRTC_SUCCESS) cubin.clear();
    }
  }
  nvrtcDestroyProgram(&program);
  return cubin;
}

cudaError_t launchPoke(cudaKernel_t kernel, unsigned long long target, unsigned value) {
  void* args[] = {&target, &value};
  const cudaError_t launched =
      cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(1), dim3(1), args, 0, nullptr);
  return launched != cudaSuccess ? launched : cudaDeviceSynchronize();
}

}  // namespace

int main() {
  auto canaryOf = reinterpret_cast<CanaryFn>(dlsym(RTLD_DEFAULT, "agileosGuardCanary"));
  auto statusOf = reinterpret_cast<StatusFn>(dlsym(RTLD_DEFAULT, "agileosGuardStatus"));
  if (canaryOf == nullptr || statusOf == nullptr) {
    std::printf("SKIP: not running under AgileOS (no agileosGuardCanary)\n");
    return 77;
  }

  const std::string cubin = compileCubin();
  check(cubin.size() > 4 && std::memcmp(cubin.data(),
                                        "\x7f"
                                        "ELF",
                                        4) == 0,
        "NVRTC compiled the kernel for sm_90 into an ELF CUBIN");
  cudaLibrary_t library = nullptr;
  cudaKernel_t kernel = nullptr;
  const bool loaded =
      cudaLibraryLoadData(&library, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0) == cudaSuccess &&
      cudaLibraryGetKernel(&kernel, library, "poke") == cudaSuccess;
  check(loaded, "cudaLibraryLoadData and cudaLibraryGetKernel accepted the CUBIN");
  if (!loaded) {
    std::printf("nvrtc_cubin_guard: %d passed, %d failed\n", passed, failed + 1);
    return 1;
  }

  unsigned* mine = nullptr;
  unsigned readBack = 0;
  const bool ownMemory =
      cudaMalloc(&mine, sizeof(unsigned)) == cudaSuccess &&
      launchPoke(kernel, reinterpret_cast<unsigned long long>(mine), 0x12345678u) == cudaSuccess &&
      cudaMemcpy(&readBack, mine, sizeof readBack, cudaMemcpyDeviceToHost) == cudaSuccess &&
      readBack == 0x12345678u;
  check(ownMemory, "the CUBIN's kernel stores into the program's own memory");

  unsigned long long canary = 0, canaryBytes = 0;
  const bool haveCanary = canaryOf(&canary, &canaryBytes) == cudaSuccess && canary != 0;
  check(haveCanary, "the worker gave this client a protected canary (--test-guard-canary)");
  if (haveCanary) {
    const cudaError_t aimed = launchPoke(kernel, canary + 256, 0xDEADBEEFu);
    int intact = -1;
    unsigned long long hits = 0;
    char policy[32] = {};
    const cudaError_t status = statusOf(&intact, &hits, policy, sizeof policy);
    std::fprintf(stderr, "aimed at the canary: %s; guard policy %s, hits %llu, canary intact %d\n",
                 cudaGetErrorName(aimed), policy, hits, intact);
    if (status != cudaSuccess || std::strcmp(policy, "trap") == 0) {
      // Trap sends the store into the fault window: the canary is mapped, so an unguarded store
      // would have succeeded; the fault is the proof (the context is lost, so no status after it).
      check(aimed == cudaErrorIllegalAddress, "under trap the store faulted in the guard's fault window");
    } else {
      check(intact == 1 && hits >= 1,
            std::string("under ") + policy + " the store was redirected and counted; the canary is intact");
    }
  }
  std::printf("nvrtc_cubin_guard: %d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
