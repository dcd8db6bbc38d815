// A kernel that faults, launched asynchronously: the launch succeeds, the fault is
// reported by the next synchronizing call, and from then on every call that needs the
// device returns it (the context is corrupted for good), while cudaGetLastError still
// resets the thread's last error, as in native CUDA. Under AgileOS the launch is sent
// without waiting for a reply, so this checks the deferred report and the sticky state.
#include "tests/gpu/programs/check.cuh"

namespace {

__global__ void writeThrough(unsigned* p) { *p = 42u; }

}  // namespace

int main() {
  unsigned* good = nullptr;
  CHECK_CUDA(cudaMalloc(&good, sizeof(unsigned)));
  writeThrough<<<1, 1>>>(good);
  EXPECT_ERROR("good launch", cudaGetLastError(), cudaSuccess);
  EXPECT_ERROR("synchronize after a good launch", cudaDeviceSynchronize(), cudaSuccess);

  // An address no allocation can have: the first page.
  writeThrough<<<1, 1>>>(reinterpret_cast<unsigned*>(0x10));
  EXPECT_ERROR("faulting launch itself", cudaPeekAtLastError(), cudaSuccess);
  EXPECT_ERROR("synchronize after the fault", cudaDeviceSynchronize(), cudaErrorIllegalAddress);
  EXPECT_ERROR("last error", cudaGetLastError(), cudaErrorIllegalAddress);
  // cudaGetLastError resets the thread's last error even now; the other calls keep failing.
  EXPECT_ERROR("last error after it was read", cudaGetLastError(), cudaSuccess);
  void* more = nullptr;
  EXPECT_ERROR("a later cudaMalloc", cudaMalloc(&more, 64), cudaErrorIllegalAddress);
  unsigned value = 0;
  EXPECT_ERROR("a later cudaMemcpy", cudaMemcpy(&value, good, sizeof value, cudaMemcpyDeviceToHost),
               cudaErrorIllegalAddress);
  std::printf("async fault: reported as native CUDA does\n");
  return 0;
}
