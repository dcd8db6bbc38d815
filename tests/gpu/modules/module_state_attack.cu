// A user kernel that computes where its kvstore table lives and touches it directly
// (tests/gpu/modules). The table is the client's first protected allocation, at the start of the
// protected module range (memmgr/address_layout.h) or one granule above it (the guard's page
// comes first under the counting policies): the attack covers the first 8 MiB of the range.
//
//   module_state_attack read|write   run under AgileOS with AGILEOS_MODULES=kvstore
// Under the trap policy the attack kernel faults before any protected byte is touched: the
// program prints "attack stopped: <error>" and exits 0. Under poison the accesses go to the
// quarantine and the next synchronising call fails (as does every later one: the client is
// poisoned). If the context survives (a policy that only counts), the program checks that the
// table still holds what the module wrote.
// A completed attack (no error) exits 1.
#include <dlfcn.h>

#include <cstring>

#include "agileos/kvstore.h"
#include "client/include/agileos/modules.h"
#include "tests/gpu/programs/check.cuh"

namespace {

constexpr unsigned long long kModuleRangeBegin = 0xF1000000000ull;
constexpr unsigned long long kSpan = 8ull << 20;
constexpr unsigned long long kKey = 77;
constexpr unsigned long long kValue = 0x5EC12E7ull;

__global__ void putOne(int* result) { *result = agileos_kvstore_put(kKey, kValue); }

__global__ void getOne(unsigned long long* value, int* result) { *result = agileos_kvstore_get(kKey, value); }

// Every thread reads (or overwrites) the 16-byte entries of its stride of the span.
__global__ void attack(bool write, unsigned long long* sink) {
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x * 16;
  unsigned long long sum = 0;
  for (unsigned long long offset = (blockIdx.x * blockDim.x + threadIdx.x) * 16ull; offset < kSpan;
       offset += stride) {
    auto* entry = reinterpret_cast<unsigned long long*>(kModuleRangeBegin + offset);
    if (write) {
      entry[1] = 0xBADull;  // the value field of any entry there
    } else {
      sum += entry[0] + entry[1];
    }
  }
  if (sum == 0x123456789ull) *sink = sum;  // keep the reads
}

}  // namespace

int main(int argc, char** argv) {
  const bool write = argc > 1 && std::strcmp(argv[1], "write") == 0;
  int* result = nullptr;
  unsigned long long* value = nullptr;
  CHECK_CUDA(cudaMalloc(&result, sizeof(int)));
  CHECK_CUDA(cudaMalloc(&value, sizeof(unsigned long long)));
  putOne<<<1, 1>>>(result);
  int rc = -1;
  CHECK_CUDA(cudaMemcpy(&rc, result, sizeof rc, cudaMemcpyDeviceToHost));
  EXPECT_TRUE(rc == 0, "the module's put must work first (rc %d)\n", rc);

  attack<<<64, 256>>>(write, value);
  const cudaError_t launched = cudaGetLastError();
  const cudaError_t synced = cudaDeviceSynchronize();
  const cudaError_t outcome = launched != cudaSuccess ? launched : synced;
  if (outcome == cudaSuccess) {
    std::printf("FAIL attack (%s) completed: the guard did not stop it\n", write ? "write" : "read");
    return 1;
  }
  std::printf("attack (%s) stopped: %s\n", write ? "write" : "read", cudaGetErrorName(outcome));

  // A context that survived (the counting policies) must still hold the module's value.
  getOne<<<1, 1>>>(value, result);
  unsigned long long stored = 0;
  const cudaError_t after = cudaMemcpy(&stored, value, sizeof stored, cudaMemcpyDeviceToHost);
  if (after == cudaSuccess) {
    CHECK_CUDA(cudaMemcpy(&rc, result, sizeof rc, cudaMemcpyDeviceToHost));
    std::printf("table after the attack: rc %d value %#llx\n", rc, stored);
    EXPECT_TRUE(rc == 0 && stored == kValue, "the attack changed the module's state\n");
    auto control =
        reinterpret_cast<decltype(&agileosModuleControl)>(dlsym(RTLD_DEFAULT, "agileosModuleControl"));
    if (control != nullptr) {
      agileos_kvstore_stats stats{};
      CHECK_CUDA(
          control("kvstore", AGILEOS_KVSTORE_CMD_STATS, nullptr, 0, &stats, sizeof stats, nullptr, nullptr));
      std::printf("live keys after the attack: %llu\n", (unsigned long long)stats.live_keys);
      EXPECT_TRUE(stats.live_keys == 1, "only the module's own key is there\n");
    }
  } else {
    std::printf("context lost after the attack (%s): the worker retires it\n", cudaGetErrorName(after));
  }
  return 0;
}
