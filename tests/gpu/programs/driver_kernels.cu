// Kernels of driver_api.cu, loaded through the driver API as a fatbin, as PTX and as a cubin
// (tests/gpu/CMakeLists.txt embeds the three images). extern "C": looked up by plain names.
struct Pair {
  int a;
  float b;
};

extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// Every kind of parameter: the driver lays them out at their natural alignment (c@0, i@4, d@8,
// p@16, out@24), which is what a program packs for cuLaunchKernel's `extra`.
extern "C" __global__ void mixed(char c, int i, double d, Pair p, double* out) {
  out[threadIdx.x] = c + i + d + p.a + p.b + threadIdx.x;
}

extern "C" __global__ void scale(float* data, float factor, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) data[i] *= factor;
}

// A module variable the host sets through cuModuleGetGlobal and cuMemcpyHtoD.
__device__ float offset_value;

extern "C" __global__ void add_offset(float* data, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += offset_value;
}
