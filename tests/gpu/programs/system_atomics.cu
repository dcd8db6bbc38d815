// System-scope atomics on managed memory while the host updates the same words
// (client/session/system_atomics.h): natively pages migrate, so each side's atomics are atomic;
// under AgileOS a launch of such a kernel returns once it has finished while the program holds
// managed memory, so both sums are exact in both runs. Built with -rdc (tests/gpu/CMakeLists.txt),
// as systemWideAtomics is.
// 1. Kernel and host add to one counter, exchange, take a maximum and CAS one word, "at once".
// 2. A kernel that waits for the host: it spins on a managed flag the host sets after the launch
//    (volatile loads, which are system-scope, and an atomic to answer). Under AgileOS its launch
//    returns after the wait limit (10 s) with the kernel still running; the next launch of it
//    returns at once. The kernel gives up after 60 s of its own, so neither run can hang.
//    It spins with loads, not atomicAdd_system(flag, 0): over PCIe the device's system-scope
//    atomics on host memory are not coherent with the host's stores (natively the page migrates to
//    the device instead), and in stop 39's cold run such a spin never saw the host's store in
//    60 s; docs/architecture.md, "System-scope atomics".
#include <cstdint>

#include "check.cuh"

namespace {

constexpr int kBlocks = 64;
constexpr int kThreads = 256;
constexpr int kLoops = 20;
constexpr int kHostAdds = 100000;

__global__ void addEverywhere(int* words) {
  const int tid = blockIdx.x * blockDim.x + threadIdx.x;
  for (int i = 0; i < kLoops; ++i) {
    atomicAdd_system(&words[0], 3);
    atomicMax_system(&words[1], tid);
    atomicCAS_system(&words[2], tid - 1, tid);
    atomicOr_system(reinterpret_cast<unsigned*>(&words[3]), 1u << (tid % 16));
  }
}

__device__ std::uint64_t nowNs() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// flag[0]: set by the host; flag[1]: the kernel's answer (1 seen, 2 gave up).
__global__ void waitForHost(int* flag) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  const std::uint64_t start = nowNs();
  while (*reinterpret_cast<volatile int*>(&flag[0]) == 0) {
    if (nowNs() - start > 60ull * 1000 * 1000 * 1000) {
      atomicExch_system(&flag[1], 2);
      return;
    }
  }
  atomicExch_system(&flag[1], 1);
}

void concurrentSums() {
  int* words = nullptr;
  CHECK_CUDA(cudaMallocManaged(&words, 4 * sizeof(int)));
  words[0] = 0;
  words[1] = -1;
  words[2] = -1;
  words[3] = 0;
  addEverywhere<<<kBlocks, kThreads>>>(words);
  CHECK_CUDA(cudaGetLastError());
  for (int i = 0; i < kHostAdds; ++i) {
    __sync_fetch_and_add(&words[0], 5);
    const int mine = i % 1000;  // below the kernel's largest thread index, which wins the maximum
    int seen = words[1];
    while (!__sync_bool_compare_and_swap(&words[1], seen, seen > mine ? seen : mine)) seen = words[1];
  }
  __sync_fetch_and_or(&words[3], 1 << 20);
  CHECK_CUDA(cudaDeviceSynchronize());
  const long long expected = 3ll * kLoops * kBlocks * kThreads + 5ll * kHostAdds;
  std::printf("sum: %d (expected %lld)\n", words[0], expected);
  EXPECT_TRUE(words[0] == expected, "lost updates: %d of %lld", words[0], expected);
  EXPECT_TRUE(words[1] == kBlocks * kThreads - 1, "max %d", words[1]);
  std::printf("max: %d, cas chain reached %s, or: 0x%x\n", words[1], words[2] >= 0 ? "a thread" : "nothing",
              static_cast<unsigned>(words[3]));
  CHECK_CUDA(cudaFree(words));
}

void handshake() {
  int* flag = nullptr;
  CHECK_CUDA(cudaMallocManaged(&flag, 2 * sizeof(int)));
  for (int round = 0; round < 2; ++round) {
    flag[0] = 0;
    flag[1] = 0;
    waitForHost<<<1, 32>>>(flag);
    CHECK_CUDA(cudaGetLastError());
    __sync_lock_test_and_set(&flag[0], 1);
    CHECK_CUDA(cudaDeviceSynchronize());
    std::printf("handshake %d: the kernel %s\n", round, flag[1] == 1 ? "saw the host's flag" : "gave up");
    EXPECT_TRUE(flag[1] == 1, "answer %d", flag[1]);
  }
  CHECK_CUDA(cudaFree(flag));
}

}  // namespace

int main() {
  concurrentSums();
  handshake();
  std::printf("system_atomics: done\n");
  return 0;
}
