// One object of a separately compiled program (object_merge_test.cpp): it calls a function and
// reads a variable another object defines, has an internal helper and a template (a .weak
// definition the other object has too), and reserves dynamic shared memory.
extern __device__ int sharedCounter;
__device__ int twice(int x);
static __device__ __noinline__ int helper(int x) { return x + 1; }
template <typename T>
__device__ __noinline__ T square(T v) {
  return v * v;
}
extern __shared__ int scratch[];

extern "C" __global__ void usesKernel(int* out) {
  scratch[threadIdx.x] = helper(static_cast<int>(threadIdx.x));
  __syncthreads();
  out[threadIdx.x] = twice(scratch[threadIdx.x]) + sharedCounter + square(3);
}
