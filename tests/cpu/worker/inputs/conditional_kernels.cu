// Kernels of conditional graphs, as the cuda-samples write them (graphConditionalNodes): each
// sets its graph's condition with cudaGraphSetConditional, which nvcc declares `.extern .func`
// (ptx/graph_conditionals.h defines it). Built as fatbins for tests/cpu/worker/graph_conditionals_test.cpp.
#include <cuda_runtime.h>

__global__ void countDown(char* counter, cudaGraphConditionalHandle handle) {
  if (--(*counter) == 0) cudaGraphSetConditional(handle, 0);
}

__global__ void chooseBranch(const char* input, cudaGraphConditionalHandle handle) {
  cudaGraphSetConditional(handle, *input);
}
