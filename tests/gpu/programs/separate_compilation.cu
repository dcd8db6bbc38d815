// A separately compiled program (-rdc=true, CMake's CUDA_SEPARABLE_COMPILATION) of two objects,
// compared with a native run. Natively its device link's SASS runs. Under the GPU suite's daemon
// (protected state in every context) that SASS may not load, so the worker loads the two objects'
// PTX, merged into one module (ptx/object_merge.h) and guarded (worker/fatbin/relocatable_objects.h):
// 1. a kernel that calls the other object's functions, reads its device array and its template's
//    copy, and adds to its __managed__ variable;
// 2. the managed variable, read by the host through the same address;
// 3. a WHILE graph whose body kernel counts down with the other object's function and clears its
//    condition with cudaGraphSetConditional (AgileOS's definition, linked into the merged PTX).
#include <cstdint>
#include <vector>

#include "check.cuh"

extern __device__ unsigned weights[4];
extern __managed__ unsigned managedTotal;
__device__ unsigned weighted(unsigned index);
__device__ unsigned helperTwice(unsigned value);

template <typename T>
__device__ __noinline__ T twice(T value) {
  return 2 * value;
}

__global__ void accumulate(unsigned* out, unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = weighted(i) + twice(i) + helperTwice(1);
  if (i == 0) atomicAdd(&managedTotal, weights[3]);
}

__global__ void countDown(unsigned* counter, unsigned* log, cudaGraphConditionalHandle handle) {
  *log += weighted(*counter);
  if (--(*counter) == 0) cudaGraphSetConditional(handle, 0);
}

int main() {
  constexpr unsigned kCount = 256;
  unsigned* out = nullptr;
  CHECK_CUDA(cudaMalloc(&out, kCount * sizeof(unsigned)));
  accumulate<<<2, 128>>>(out, kCount);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<unsigned> values(kCount);
  CHECK_CUDA(cudaMemcpy(values.data(), out, kCount * sizeof(unsigned), cudaMemcpyDeviceToHost));
  const unsigned kWeights[4] = {1, 10, 100, 1000};
  for (unsigned i = 0; i < kCount; ++i) {
    EXPECT_TRUE(values[i] == kWeights[i % 4] + 2 * i + 2, "out[%u] = %u", i, values[i]);
  }
  std::printf("accumulate: out[0..4] = %u %u %u %u, checksum %016llx\n", values[0], values[1], values[2],
              values[3], static_cast<unsigned long long>(fnv1a64(values.data(), kCount * sizeof(unsigned))));
  EXPECT_TRUE(managedTotal == 1007u, "managedTotal = %u", managedTotal);
  std::printf("managed variable of the other object: %u\n", managedTotal);

  unsigned* counter = nullptr;
  unsigned* log = nullptr;
  CHECK_CUDA(cudaMalloc(&counter, sizeof(unsigned)));
  CHECK_CUDA(cudaMalloc(&log, sizeof(unsigned)));
  const unsigned three = 3, zero = 0;
  CHECK_CUDA(cudaMemcpy(counter, &three, sizeof three, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(log, &zero, sizeof zero, cudaMemcpyHostToDevice));
  cudaGraph_t graph = nullptr;
  CHECK_CUDA(cudaGraphCreate(&graph, 0));
  cudaGraphConditionalHandle handle = 0;
  CHECK_CUDA(cudaGraphConditionalHandleCreate(&handle, graph, 1, cudaGraphCondAssignDefault));
  cudaGraphNodeParams loop{};
  loop.type = cudaGraphNodeTypeConditional;
  loop.conditional.handle = handle;
  loop.conditional.type = cudaGraphCondTypeWhile;
  loop.conditional.size = 1;
  cudaGraphNode_t loopNode = nullptr;
  CHECK_CUDA(cudaGraphAddNode(&loopNode, graph, nullptr, nullptr, 0, &loop));
  void* args[] = {&counter, &log, &handle};
  cudaGraphNodeParams body{};
  body.type = cudaGraphNodeTypeKernel;
  body.kernel.func = reinterpret_cast<void*>(countDown);
  body.kernel.gridDim = dim3(1);
  body.kernel.blockDim = dim3(1);
  body.kernel.kernelParams = args;
  cudaGraphNode_t bodyNode = nullptr;
  CHECK_CUDA(cudaGraphAddNode(&bodyNode, loop.conditional.phGraph_out[0], nullptr, nullptr, 0, &body));
  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  CHECK_CUDA(cudaGraphLaunch(exec, nullptr));
  CHECK_CUDA(cudaDeviceSynchronize());
  unsigned logValue = 0, counterValue = 0;
  CHECK_CUDA(cudaMemcpy(&logValue, log, sizeof logValue, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(&counterValue, counter, sizeof counterValue, cudaMemcpyDeviceToHost));
  EXPECT_TRUE(logValue == 1110u && counterValue == 0u, "log %u, counter %u", logValue, counterValue);
  std::printf("while graph: %u rounds' weights %u, counter %u\n", 3u, logValue, counterValue);

  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
  CHECK_CUDA(cudaFree(counter));
  CHECK_CUDA(cudaFree(log));
  CHECK_CUDA(cudaFree(out));
  std::printf("separate_compilation: ok\n");
  return 0;
}
