// Kernels that reach global memory by many routes, so the PTX corpus holds every
// access form the guard must cover: ld/st global and generic, each vector width,
// atomics and reductions of several kinds, cp.async, predicated accesses,
// immediates in addresses, pointers inside structs passed by value, device
// functions, nested scopes. Compiled to PTX only (never run here).
#include <cuda_pipeline.h>

struct Pointers {
  float* out;
  const float4* in;
  unsigned long long* counter;
};

__device__ __noinline__ void storeThrough(float* p, float v) { *p = v; }

__global__ void routes(Pointers pointers, int* generic, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  __shared__ float staging[256];
  if (i < n) {
    const float4 v = pointers.in[i];  // ld.global.v4
    pointers.out[i] = v.x + v.y + v.z + v.w;
    pointers.out[i + 1000] = 1.0f;  // immediate offset in the address
    atomicAdd(pointers.counter, 1ull);
    atomicMax(generic, i);
    atomicCAS(generic + 1, 0, i);
    atomicExch(reinterpret_cast<float*>(generic) + 2, 2.0f);
    atomicAdd(reinterpret_cast<float*>(generic) + 3, 1.5f);
    storeThrough(pointers.out + n + i, v.x);
    // A reduction (an atomic whose result is unused), written out so that it stays `red`.
    asm volatile("red.global.add.u32 [%0], %1;" ::"l"(generic + 4), "r"(1u) : "memory");
  }
  {
    int* volatile alias = generic;  // a generic pointer the compiler cannot resolve
    alias[i & 7] = i;
  }
  __pipeline_memcpy_async(&staging[threadIdx.x], &pointers.out[i], sizeof(float));  // cp.async
  __pipeline_commit();
  __pipeline_wait_prior(0);
  __syncthreads();
  double2* wide = reinterpret_cast<double2*>(pointers.out);
  wide[i] = make_double2(staging[threadIdx.x], 0.0);  // st.global.v2.f64
}
