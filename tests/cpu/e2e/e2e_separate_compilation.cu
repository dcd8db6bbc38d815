// A program compiled separately (-rdc=true, as CMake's CUDA_SEPARABLE_COMPILATION builds it, e.g.
// the cuda-samples' graphConditionalNodes) on the whole AgileOS stack with the fake GPU, from two
// objects (this file and e2e_separate_compilation_helpers.cu, whose function and variable this one
// uses). Its device link gives one image of SASS only, registered through a version-2 wrapper that
// lists the relocatable objects it was linked from. The fake GPU loads PTX only, and this module sets graph
// conditions (cudaGraphSetConditional, which AgileOS defines only in PTX) and has a __managed__
// variable (rewritten only in PTX): so every check below passes only if the shim sends the objects
// and the worker loads their PTX, merged into one module, in place of the linked SASS
// (worker/fatbin/relocatable_objects.h, ptx/object_merge.h).
// Built twice: against the runtime shim, and with the CUDA runtime linked in (the driver shim's
// cuLibraryLoadData path). Host code only; the fake GPU runs no kernels. One line a check; exits 1
// if any fails.
#include <cuda_runtime.h>

#include <cstdio>

#include "tests/cpu/e2e/e2e_runtime_checks.h"

using agileos::e2e::check;
using agileos::e2e::checkError;

// Defined by the program's other object (e2e_separate_compilation_helpers.cu).
extern __managed__ int managedCounter;
extern __device__ float scaleBias;
__device__ float biased(float value);

__global__ void scale(float* data, float factor, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] = biased(data[i] * factor) - scaleBias;
}

__global__ void setCondition(cudaGraphConditionalHandle handle, const int* value) {
  cudaGraphSetConditional(handle, *value);
}

__global__ void bumpManaged() { managedCounter += 1; }

int main() {
  float* data = nullptr;
  checkError(cudaMalloc(&data, 256 * sizeof(float)), cudaSuccess, "cudaMalloc");
  scale<<<1, 256>>>(data, 2.0f, 256);
  checkError(cudaGetLastError(), cudaSuccess, "a launch of a separately compiled kernel (the module loads)");
  checkError(cudaDeviceSynchronize(), cudaSuccess, "cudaDeviceSynchronize");
  cudaFuncAttributes attributes{};
  checkError(cudaFuncGetAttributes(&attributes, setCondition), cudaSuccess,
             "cudaFuncGetAttributes of the kernel that sets a condition");

  bumpManaged<<<1, 1>>>();
  checkError(cudaDeviceSynchronize(), cudaSuccess, "a launch of a kernel with a __managed__ variable");
  managedCounter = 42;
  int read = 0;
  checkError(cudaMemcpy(&read, &managedCounter, sizeof read, cudaMemcpyDefault), cudaSuccess,
             "cudaMemcpy from the managed variable");
  check(read == 42, "the managed variable is one memory for the host and the copy");

  // graphConditionalNodes's shape: a kernel node sets an IF node's condition; its body is a kernel.
  cudaGraph_t graph = nullptr;
  checkError(cudaGraphCreate(&graph, 0), cudaSuccess, "cudaGraphCreate");
  cudaGraphConditionalHandle handle = 0;
  checkError(cudaGraphConditionalHandleCreate(&handle, graph, 0, 0), cudaSuccess,
             "cudaGraphConditionalHandleCreate");
  int* value = nullptr;
  checkError(cudaMalloc(&value, sizeof(int)), cudaSuccess, "cudaMalloc (the condition's input)");
  cudaGraphNode_t setter = nullptr;
  cudaKernelNodeParams setterParams{};
  void* setterArgs[] = {&handle, &value};
  setterParams.func = reinterpret_cast<void*>(setCondition);
  setterParams.gridDim = dim3(1);
  setterParams.blockDim = dim3(1);
  setterParams.kernelParams = setterArgs;
  checkError(cudaGraphAddKernelNode(&setter, graph, nullptr, 0, &setterParams), cudaSuccess,
             "cudaGraphAddKernelNode (the setter)");
  cudaGraphNodeParams conditional{};
  conditional.type = cudaGraphNodeTypeConditional;
  conditional.conditional.handle = handle;
  conditional.conditional.type = cudaGraphCondTypeIf;
  conditional.conditional.size = 1;
  cudaGraphNode_t ifNode = nullptr;
  checkError(cudaGraphAddNode(&ifNode, graph, &setter, nullptr, 1, &conditional), cudaSuccess,
             "cudaGraphAddNode (IF)");
  cudaGraph_t body = conditional.conditional.phGraph_out[0];
  cudaGraphNode_t bodyKernel = nullptr;
  cudaKernelNodeParams bodyParams{};
  float factor = 3.0f;
  int n = 256;
  void* bodyArgs[] = {&data, &factor, &n};
  bodyParams.func = reinterpret_cast<void*>(scale);
  bodyParams.gridDim = dim3(1);
  bodyParams.blockDim = dim3(256);
  bodyParams.kernelParams = bodyArgs;
  checkError(cudaGraphAddKernelNode(&bodyKernel, body, nullptr, 0, &bodyParams), cudaSuccess,
             "cudaGraphAddKernelNode (the IF body)");
  cudaGraphExec_t exec = nullptr;
  checkError(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess, "cudaGraphInstantiate");
  checkError(cudaGraphLaunch(exec, nullptr), cudaSuccess, "cudaGraphLaunch");
  checkError(cudaDeviceSynchronize(), cudaSuccess, "cudaDeviceSynchronize after the graph");
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaFree(value);
  cudaFree(data);
  const int failures = agileos::e2e::failures();
  std::printf("%s: %d failure(s)\n", failures == 0 ? "PASS" : "FAIL", failures);
  return failures == 0 ? 0 : 1;
}
