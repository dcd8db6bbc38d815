// The other object (object_merge_test.cpp): defines what uses.cu declares, has an internal helper
// of the same source name and the same template, and reserves dynamic shared memory too.
__device__ int sharedCounter = 5;
static __device__ __noinline__ int helper(int x) { return x + 2; }
template <typename T>
__device__ __noinline__ T square(T v) {
  return v * v;
}
extern __shared__ int scratch[];

__device__ int twice(int x) { return 2 * helper(x) + square(2); }

extern "C" __global__ void definesKernel(int* out) {
  scratch[threadIdx.x] = twice(1);
  __syncthreads();
  out[threadIdx.x] = scratch[threadIdx.x];
}
