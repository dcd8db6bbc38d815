// tenant_memory: one tenant of the multi-tenant checks (run_tenant_suite.sh). It reports the
// device as cudaMemGetInfo shows it, takes what it is told, proves the memory is its own (a
// pattern written and read back at both ends), optionally asks for more, holds it, and frees it.
//
// Usage: tenant_memory [--alloc-all | --alloc BYTES] [--more BYTES] [--hold SECONDS]
//   --alloc-all  allocate what cudaMemGetInfo says is free (rounded down to 2 MiB)
//   --alloc N    allocate N bytes
//   --more N     then ask for N bytes more and report whether it was granted
//   --hold S     keep the memory S seconds (prints "tenant: holding" first)
// Output lines: "tenant: total=T free=F", "tenant: allocated N", "tenant: more granted|refused
// (error)", "tenant: holding", "tenant: done". Exit status 0 when every CUDA call that should
// succeed did; 1 otherwise (the line says which).
#include <cuda_runtime.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

bool check(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return true;
  std::printf("tenant: FAILED %s: %s\n", what, cudaGetErrorString(error));
  return false;
}

// Writes a pattern at the start and the end of [p, p + size) and reads it back.
bool provesOwnership(char* p, std::size_t size) {
  const std::size_t span = size < (1u << 20) ? size : (1u << 20);
  std::vector<unsigned char> out(span), back(span);
  for (std::size_t i = 0; i < span; ++i) out[i] = static_cast<unsigned char>(i * 7 + 3);
  for (char* at : {p, p + size - span}) {
    if (!check(cudaMemcpy(at, out.data(), span, cudaMemcpyHostToDevice), "cudaMemcpy to the device"))
      return false;
    if (!check(cudaMemcpy(back.data(), at, span, cudaMemcpyDeviceToHost), "cudaMemcpy from the device"))
      return false;
    if (std::memcmp(out.data(), back.data(), span) != 0) {
      std::printf("tenant: FAILED the memory did not hold the pattern\n");
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  bool allocAll = false;
  unsigned long long alloc = 0, more = 0;
  unsigned hold = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--alloc-all") == 0) {
      allocAll = true;
    } else if (std::strcmp(argv[i], "--alloc") == 0 && i + 1 < argc) {
      alloc = std::strtoull(argv[++i], nullptr, 10);
    } else if (std::strcmp(argv[i], "--more") == 0 && i + 1 < argc) {
      more = std::strtoull(argv[++i], nullptr, 10);
    } else if (std::strcmp(argv[i], "--hold") == 0 && i + 1 < argc) {
      hold = static_cast<unsigned>(std::strtoul(argv[++i], nullptr, 10));
    } else {
      std::fprintf(stderr, "usage: tenant_memory [--alloc-all | --alloc BYTES] [--more BYTES] [--hold S]\n");
      return 2;
    }
  }
  std::size_t free = 0, total = 0;
  if (!check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo")) return 1;
  std::printf("tenant: total=%zu free=%zu\n", total, free);
  std::fflush(stdout);
  if (allocAll) alloc = free / (2ull << 20) * (2ull << 20);
  char* p = nullptr;
  if (alloc != 0) {
    if (!check(cudaMalloc(&p, alloc), "cudaMalloc")) return 1;
    if (!provesOwnership(p, alloc)) return 1;
    std::printf("tenant: allocated %llu\n", alloc);
  }
  if (more != 0) {
    char* extra = nullptr;
    const cudaError_t error = cudaMalloc(&extra, more);
    if (error == cudaSuccess) {
      std::printf("tenant: more granted\n");
      cudaFree(extra);
    } else {
      std::printf("tenant: more refused (%s)\n", cudaGetErrorName(error));
      cudaGetLastError();
    }
  }
  if (hold != 0) {
    std::printf("tenant: holding\n");
    std::fflush(stdout);
    sleep(hold);
  }
  if (p != nullptr && !check(cudaFree(p), "cudaFree")) return 1;
  std::printf("tenant: done\n");
  return 0;
}
