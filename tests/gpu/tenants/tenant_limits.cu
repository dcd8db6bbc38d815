// tenant_limits: the driver's share of a tenant's memory (issue 14). Context limits that make the
// driver set device memory aside are charged to the tenant's quota, and page-locked host memory is
// bounded by the tenant's share of the host-wide pinned total. Run by run_tenant_suite.sh.
//
// Usage:
//   tenant_limits --native-probe   natively, no AgileOS: how much device memory the driver sets
//                                  aside for a 16 KiB stack, a 256 MiB heap and a 64 MiB printf FIFO
//                                  (lines "probe: <limit> set aside N bytes"), so the worker's
//                                  estimates can be compared with the driver's real numbers
//   tenant_limits --pinned BYTES   through AgileOS: BYTES is the share; pins 3/4 of it, is refused
//                                  1/2 more, pins the last 1/4 ("limits: pinned ...")
//   tenant_limits                  through AgileOS, with a quota: a stack limit that sets aside more
//                                  than the quota is refused; a bigger heap is charged (cudaMemGetInfo's
//                                  free falls by at least the rise) and works in a kernel;
//                                  after cudaDeviceReset the charge is what the context still
//                                  holds ("limits: ..." lines)
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

int nativeProbe() {
  struct Probe {
    const char* name;
    cudaLimit limit;
    std::size_t value;
  } probes[] = {{"stack 16 KiB", cudaLimitStackSize, 16 << 10},
                {"heap 256 MiB", cudaLimitMallocHeapSize, 256u << 20},
                {"printf FIFO 64 MiB", cudaLimitPrintfFifoSize, 64u << 20}};
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

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--native-probe") == 0) return nativeProbe();
  if (argc == 3 && std::strcmp(argv[1], "--pinned") == 0) return pinned(std::strtoull(argv[2], nullptr, 10));
  if (argc == 1) {
    const int status = limits();
    std::printf("limits: done, %d failed\n", failures);
    return status;
  }
  std::fprintf(stderr, "usage: tenant_limits [--native-probe | --pinned BYTES]\n");
  return 2;
}
