// Kernels compiled into the cubin samples that elf_image_check_test.cpp checks. They use what
// gives a cubin its different sections: device globals (.nv.global, a memory-only section type
// in relocatable cubins), initialised globals, __constant__ data, static shared memory, a
// local array, a device function call (callgraph), printf (an external call: relocations and
// an undefined symbol) and a template instance.
#include <cstdio>

__device__ char agileos_elf_buffer[1 << 20];
__device__ int agileos_elf_initialised[4] = {1, 2, 3, 4};
__constant__ float agileos_elf_weights[256];

__device__ __noinline__ float agileos_elf_weigh(float value, int i) {
  return value * agileos_elf_weights[i & 255];
}

extern "C" __global__ void agileos_elf_shared(float* out, int n) {
  __shared__ float tile[1024];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = agileos_elf_weigh(static_cast<float>(agileos_elf_buffer[i & 1023]), i);
  __syncthreads();
  if (i < n) out[i] = tile[(threadIdx.x + 1) & 1023] + agileos_elf_initialised[i & 3];
}

extern "C" __global__ void agileos_elf_local(int* out, int n) {
  int local[512];
  for (int i = 0; i < 512; ++i) local[i] = i * n;
  out[threadIdx.x] = local[(n * threadIdx.x) & 511];
}

extern "C" __global__ void agileos_elf_print(int value) { printf("agileos %d\n", value); }

template <int N>
__global__ void agileos_elf_store(int* out) {
  *out = N;
}
template __global__ void agileos_elf_store<7>(int*);
