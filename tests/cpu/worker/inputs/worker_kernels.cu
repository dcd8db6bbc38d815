// Kernels and module variables of the fatbins the worker tests load. The tests
// and the worker request fuzzer name these symbols and rely on their parameter
// layouts (see support/test_fatbins.h); keep them in sync.
struct Pair {
  double a;
  int b;
};

__device__ int agileos_counter;
__device__ float agileos_table[16];
__constant__ unsigned long long agileos_coefficients[4];

// Parameters: 8 + 8 + 4 + 4 bytes at offsets 0, 8, 16, 20.
extern "C" __global__ void agileos_worker_add(int* out, const int* in, int bias, unsigned n) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = in[i] + bias + agileos_counter + static_cast<int>(agileos_coefficients[i % 4]) +
             static_cast<int>(agileos_table[i % 16]);
  }
}

// Parameters: a 16-byte aligned-8 aggregate, then 1, 2, 8 and 8 bytes at 16, 18, 24, 32.
extern "C" __global__ void agileos_worker_pair(Pair p, char c, short s, double scale, float* out) {
  out[0] = static_cast<float>(p.a * scale + p.b + c + s);
}

extern "C" __global__ void agileos_worker_empty() {}
