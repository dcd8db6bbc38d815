// An application of the kvstore module (ptx/module_link.h): whole-program PTX whose
// kernels call two exports, one ignoring the result.
#include "tests/cpu/ptx/inputs/module_link/kvstore_api.cuh"

__global__ void kvPut(const unsigned long long* keys, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) agileos_kvstore_put(keys[i], keys[i] * 2);
}

__global__ void kvGet(const unsigned long long* keys, unsigned long long* values, int* status, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) status[i] = agileos_kvstore_get(keys[i], &values[i]);
}
