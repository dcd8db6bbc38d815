// tenant_limits: the driver's share of a tenant's memory (issue 14). Context limits that make the
// driver set device memory aside are charged to the tenant's quota, and page-locked host memory is
// bounded by the tenant's share of the host-wide pinned total. Run by run_tenant_suite.sh.
//
// Usage:
//   tenant_limits --native-probe   natively, no AgileOS: how much device memory the driver sets
//                                  aside for a 16 KiB stack, a 256 MiB heap, a 64 MiB printf FIFO,
//                                  262144 pending device-side launches
//                                  and a kernel with 16 KiB of local memory
//                                  (lines "probe: <limit> set aside N bytes"), so the worker's
//                                  estimates can be compared with the driver's real numbers
//   tenant_limits --pinned BYTES   through AgileOS: BYTES is the share; pins 3/4 of it, is refused
//                                  1/2 more, pins the last 1/4 ("limits: pinned ...")
//   tenant_limits                  through AgileOS, with a quota: a stack limit that sets aside more
//                                  than the quota is refused; a bigger heap is charged (cudaMemGetInfo's
//                                  free falls by at least the rise) and works in a kernel;
//                                  after cudaDeviceReset the charge is what the context still
//                                  holds; a kernel whose local memory makes the driver grow the
//                                  stack past the quota is refused, one that fits runs and its
//                                  stack is charged; modules with a 1 GiB global load until the
//                                  quota is spent, the next is refused ("limits: ..." lines)
// Exit status 0 when every check held; 1 otherwise (a "limits: FAILED" line says which).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

int failures = 0;

void expect(bool ok, const char* what) {
  std::printf("limits: %s %s\n", ok ? "ok" : "FAILED", what);
  if (!ok) ++failures;
}

std::size_t freeBytes() {
  std::size_t free = 0, total = 0;
  cudaMemGetInfo(&free, &total);
  return free;
}

__global__ void useHeap(int* ok) {
  char* p = static_cast<char*>(malloc(1 << 20));
  if (p != nullptr) {
    p[0] = 1;
    p[(1 << 20) - 1] = 2;
    atomicAdd(ok, p[0] + p[(1 << 20) - 1] == 3 ? 1 : 0);
    free(p);
  }
}

// Local memory the compiler cannot keep in registers: N bytes per thread (N a multiple of 512).
// out[thread] = idx when it ran.
template <int N>
__global__ void localFrame(int* out, int idx) {
  volatile char frame[N];
  for (int i = 0; i < N; i += 512) frame[i] = static_cast<char>(i / 512);
  out[threadIdx.x] = frame[(idx % (N / 512)) * 512];
}

std::size_t stackLimit() {
  std::size_t stack = 0;
  cudaDeviceGetLimit(&stack, cudaLimitStackSize);
  return stack;
}

int nativeProbe() {
  struct Probe {
    const char* name;
    cudaLimit limit;
    std::size_t value;
  } probes[] = {{"stack 16 KiB", cudaLimitStackSize, 16 << 10},
                {"heap 256 MiB", cudaLimitMallocHeapSize, 256u << 20},
                {"printf FIFO 64 MiB", cudaLimitPrintfFifoSize, 64u << 20},
                // worker/driver_limit_cost.h charges 4 KiB per slot, an estimate this measures.
                {"pending launches 262144", cudaLimitDevRuntimePendingLaunchCount, 262144}};
  cudaFree(nullptr);
  for (const Probe& probe : probes) {
    std::size_t before = 0, initial = 0;
    cudaDeviceGetLimit(&initial, probe.limit);
    cudaDeviceSynchronize();
    before = freeBytes();
    const cudaError_t error = cudaDeviceSetLimit(probe.limit, probe.value);
    cudaDeviceSynchronize();
    const std::size_t after = freeBytes();
    std::printf("probe: %s (initial %zu) -> %s, set aside %lld bytes\n", probe.name, initial,
                cudaGetErrorName(error), static_cast<long long>(before) - static_cast<long long>(after));
  }
  // The driver grows the stack at launch to a kernel's local memory (worker/handlers/context_limits.h).
  cudaDeviceSetLimit(cudaLimitStackSize, 1024);
  int* out = nullptr;
  cudaMalloc(&out, 1024 * sizeof(int));
  cudaDeviceSynchronize();
  const std::size_t before = freeBytes();
  localFrame<16384><<<1, 1>>>(out, 5);
  const cudaError_t error = cudaDeviceSynchronize();
  std::printf("probe: a kernel with 16 KiB of local memory -> %s, stack %zu, set aside %lld bytes\n",
              cudaGetErrorName(error), stackLimit(),
              static_cast<long long>(before) - static_cast<long long>(freeBytes()));
  cudaDeviceSetLimit(cudaLimitStackSize, 3000);
  std::printf("probe: stack limit 3000 reads back %zu\n", stackLimit());
  cudaFree(out);
  return 0;
}

int pinned(std::size_t share) {
  void* a = nullptr;
  void* b = nullptr;
  void* c = nullptr;
  expect(cudaMallocHost(&a, share / 4 * 3) == cudaSuccess, "pinned 3/4 of the share");
  const cudaError_t over = cudaMallocHost(&b, share / 2);
  std::printf("limits: pinned 1/2 more -> %s\n", cudaGetErrorName(over));
  expect(over == cudaErrorMemoryAllocation, "pinned memory past the share is refused");
  cudaGetLastError();
  expect(cudaMallocHost(&c, share / 4) == cudaSuccess, "the last 1/4 of the share is pinned");
  if (a != nullptr) std::memset(a, 1, share / 4 * 3);  // the memory is really there
  cudaFreeHost(a);
  cudaFreeHost(c);
  return failures == 0 ? 0 : 1;
}

int limits() {
  // The program's module is loaded at its first use, and its memory is charged: load it now, so
  // that every free-memory figure below already includes it.
  cudaFuncAttributes attributes{};
  expect(cudaFuncGetAttributes(&attributes, useHeap) == cudaSuccess, "the program's module loads");
  std::size_t free = 0, total = 0;
  expect(cudaMemGetInfo(&free, &total) == cudaSuccess, "cudaMemGetInfo");
  std::printf("limits: total=%zu free=%zu\n", total, free);
  std::size_t stack = 0;
  cudaDeviceGetLimit(&stack, cudaLimitStackSize);
  // 512 KiB of stack per resident thread: about 135 GiB on an H200, past any quota here.
  const cudaError_t hugeStack = cudaDeviceSetLimit(cudaLimitStackSize, 512 << 10);
  std::printf("limits: stack 512 KiB -> %s\n", cudaGetErrorName(hugeStack));
  expect(hugeStack == cudaErrorMemoryAllocation, "a stack limit past the quota is refused");
  cudaGetLastError();
  std::size_t stackAfter = 0;
  cudaDeviceGetLimit(&stackAfter, cudaLimitStackSize);
  expect(stackAfter == stack, "the refused stack limit changed nothing");

  std::size_t heap = 0;
  cudaDeviceGetLimit(&heap, cudaLimitMallocHeapSize);
  const std::size_t rise = 1ull << 30;
  const std::size_t before = freeBytes();
  expect(cudaDeviceSetLimit(cudaLimitMallocHeapSize, heap + rise) == cudaSuccess, "a 1 GiB bigger heap");
  const std::size_t after = freeBytes();
  std::printf("limits: heap +1 GiB: free %zu -> %zu\n", before, after);
  expect(before >= after + rise, "the bigger heap is charged to the quota");
  int* ok = nullptr;
  cudaMalloc(&ok, sizeof(int));
  cudaMemset(ok, 0, sizeof(int));
  useHeap<<<64, 1>>>(ok);
  int hits = 0;
  expect(cudaMemcpy(&hits, ok, sizeof hits, cudaMemcpyDeviceToHost) == cudaSuccess, "the heap kernel ran");
  std::printf("limits: %d of 64 device mallocs of 1 MiB succeeded\n", hits);
  expect(hits == 64, "device malloc works in the bigger heap");
  cudaFree(ok);

  // The driver will not shrink a heap a kernel has used, so after the reset (which keeps the
  // worker's context) the heap either is back at its initial size and uncharged, or is still
  // there and still charged: cudaMemGetInfo must say which, never a heap for free.
  expect(cudaDeviceReset() == cudaSuccess, "cudaDeviceReset");
  const std::size_t reset = freeBytes();
  std::size_t heapAfter = 0;
  cudaDeviceGetLimit(&heapAfter, cudaLimitMallocHeapSize);
  std::printf("limits: after reset heap=%zu free=%zu\n", heapAfter, reset);
  expect(heapAfter >= heap && reset + (heapAfter - heap) == before,
         "after cudaDeviceReset the quota is charged exactly the heap the context still has");
  return failures == 0 ? 0 : 1;
}

}  // namespace

// The stack the driver grows at launch is charged like a raised limit: a kernel whose local
// memory would set aside more than the quota has left is refused; one that fits runs and is charged.
int stackGrowth() {
  const std::size_t stack = stackLimit();
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  const std::size_t threads = std::size_t(prop.multiProcessorCount) * prop.maxThreadsPerMultiProcessor;
  int* out = nullptr;
  expect(cudaMalloc(&out, 1024 * sizeof(int)) == cudaSuccess, "cudaMalloc for the local-memory kernels");
  cudaMemset(out, 0, 1024 * sizeof(int));
  cudaDeviceSynchronize();
  const std::size_t before = freeBytes();

  // 64 KiB per thread: 132 x 2048 x 63 KiB = 16.2 GiB more on an H200, past the 8 GiB quota.
  localFrame<65536><<<1, 1>>>(out, 5);
  const cudaError_t launch = cudaGetLastError();
  const cudaError_t sync = cudaDeviceSynchronize();  // where a launch sent without waiting reports
  std::printf("limits: kernel with 64 KiB local memory -> launch %s, synchronize %s\n",
              cudaGetErrorName(launch), cudaGetErrorName(sync));
  expect(launch == cudaErrorMemoryAllocation || sync == cudaErrorMemoryAllocation,
         "a kernel whose stack does not fit the quota is refused");
  cudaGetLastError();
  int first = -1;
  cudaMemcpy(&first, out, sizeof first, cudaMemcpyDeviceToHost);
  expect(first == 0, "the refused kernel did not run");
  expect(stackLimit() == stack, "the refused kernel left the stack as it was");
  expect(freeBytes() == before, "the refused kernel changed nothing in the quota");

  // 16 KiB per thread: about 3.9 GiB on an H200, inside the quota.
  localFrame<16384><<<prop.multiProcessorCount * 4, 256>>>(out, 5);
  expect(cudaDeviceSynchronize() == cudaSuccess, "a kernel with 16 KiB of local memory per thread runs");
  int results[256] = {};
  cudaMemcpy(results, out, sizeof results, cudaMemcpyDeviceToHost);
  bool all = true;
  for (int r : results) all = all && r == 5;
  expect(all, "the 16 KiB local-memory kernel computed its result");
  const std::size_t after = freeBytes();
  std::printf("limits: 16 KiB local memory: stack %zu -> %zu, free %zu -> %zu\n", stack, stackLimit(), before,
              after);
  expect(stackLimit() >= 16384, "the stack covers the kernel's local memory");
  expect(before - after >= (16384 - stack) * threads, "the grown stack is charged to the quota");
  void* rest = nullptr;
  expect(cudaMalloc(&rest, after + (64u << 20)) == cudaErrorMemoryAllocation,
         "the quota left after the stack is all there is");
  cudaGetLastError();
  expect(cudaDeviceSetLimit(cudaLimitStackSize, stack) == cudaSuccess && freeBytes() == before,
         "setting the stack back gives its memory back to the quota");
  cudaFree(out);
  return failures == 0 ? 0 : 1;
}

// A module's global variables are device memory the driver allocates at load: charged to the
// quota, so modules of 1 GiB each load until the quota is spent and the next is refused.
int moduleMemory() {
  const char* ptx =
      ".version 8.0\n.target sm_90\n.address_size 64\n"
      ".visible .global .align 1 .b8 agileos_big[1073741824];\n"
      ".visible .entry agileos_touch(.param .u64 agileos_touch_param_0)\n{\n"
      "\t.reg .b64 %rd<3>;\n\t.reg .b32 %r<2>;\n"
      "\tld.param.u64 %rd1, [agileos_touch_param_0];\n\tmov.u64 %rd2, agileos_big;\n"
      "\tmov.u32 %r1, 7;\n\tst.global.u8 [%rd2+1073741823], %r1;\n\tret;\n}\n";
  const std::size_t before = freeBytes();
  constexpr int kMost = 16;  // 16 GiB: past the 8 GiB quota
  cudaLibrary_t libraries[kMost] = {};
  const auto load = [&](cudaLibrary_t* library) {
    return cudaLibraryLoadData(library, ptx, nullptr, nullptr, 0, nullptr, nullptr, 0);
  };
  int loaded = 0;
  cudaError_t error = load(&libraries[0]);
  expect(error == cudaSuccess, "a module with a 1 GiB global loads");
  if (error == cudaSuccess) ++loaded;
  const std::size_t one = freeBytes();
  expect(before - one >= (std::size_t(1) << 30), "the module's 1 GiB global is charged to the quota");
  while (error == cudaSuccess && loaded < kMost && (error = load(&libraries[loaded])) == cudaSuccess)
    ++loaded;
  cudaGetLastError();
  const std::size_t after = freeBytes();
  std::printf("limits: modules with a 1 GiB global: %d loaded, then %s; free %zu -> %zu (one: %zu)\n", loaded,
              cudaGetErrorName(error), before, after, one);
  expect(loaded >= 1 && error == cudaErrorMemoryAllocation, "module memory past the quota is refused");
  expect(std::size_t(loaded) << 30 <= before, "no more modules loaded than the quota holds");
  expect(after < (std::size_t(1) << 30), "the refused module did not fit what the quota had left");
  for (int i = 0; i < loaded; ++i) cudaLibraryUnload(libraries[i]);
  // At least: the memory manager may have given back the client's cached empty chunks to fit
  // the last module (memmgr/memory_manager.h, setQuota).
  expect(freeBytes() >= before, "unloaded modules give their memory back to the quota");
  return failures == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--native-probe") == 0) return nativeProbe();
  if (argc == 3 && std::strcmp(argv[1], "--pinned") == 0) return pinned(std::strtoull(argv[2], nullptr, 10));
  if (argc == 1) {
    const int status = limits() | stackGrowth() | moduleMemory();
    std::printf("limits: done, %d failed\n", failures);
    return status;
  }
  std::fprintf(stderr, "usage: tenant_limits [--native-probe | --pinned BYTES]\n");
  return 2;
}
