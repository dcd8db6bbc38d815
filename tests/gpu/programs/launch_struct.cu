// Explicit cudaLaunchKernel with arguments the launch path must marshal
// exactly: a struct with mixed sizes and alignment passed by value, a 1 KiB
// struct by value, and a kernel with many scalar parameters of different
// widths. Each kernel writes back what it received, the host compares.
#include <cstdint>
#include <cstring>

#include "check.cuh"

struct Mixed {
  char tag;
  double scale;
  int3 dims;
  short shorts[3];
  float* out;
  unsigned long long big;
  bool flag;
};

struct Large {
  std::uint32_t words[256];
};

__global__ void readMixed(Mixed m, int after) {
  m.out[0] = static_cast<float>(m.tag);
  m.out[1] = static_cast<float>(m.scale);
  m.out[2] = static_cast<float>(m.dims.x);
  m.out[3] = static_cast<float>(m.dims.y);
  m.out[4] = static_cast<float>(m.dims.z);
  m.out[5] = static_cast<float>(m.shorts[0] + m.shorts[1] + m.shorts[2]);
  m.out[6] = static_cast<float>(m.big >> 40);
  m.out[7] = m.flag ? 1.0f : 0.0f;
  m.out[8] = static_cast<float>(after);
}

__global__ void readLarge(Large large, std::uint32_t* out) {
  out[threadIdx.x] = large.words[threadIdx.x] ^ threadIdx.x;
}

__global__ void manyScalars(char a, short b, int c, long long d, float e, double f, unsigned char g, int h,
                            double i, char j, long long k, float l, int m, short n, double* out) {
  out[0] = a;
  out[1] = b;
  out[2] = c;
  out[3] = static_cast<double>(d);
  out[4] = e;
  out[5] = f;
  out[6] = g;
  out[7] = h;
  out[8] = i;
  out[9] = j;
  out[10] = static_cast<double>(k);
  out[11] = l;
  out[12] = m;
  out[13] = n;
}

int main() {
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));

  float* out = nullptr;
  CHECK_CUDA(cudaMalloc(&out, 16 * sizeof(float)));
  Mixed mixed;
  std::memset(&mixed, 0, sizeof(mixed));
  mixed.tag = 'Z';
  mixed.scale = 2.5;
  mixed.dims = make_int3(-3, 40000, 7);
  mixed.shorts[0] = -100;
  mixed.shorts[1] = 200;
  mixed.shorts[2] = 3000;
  mixed.out = out;
  mixed.big = 0xABCDEull << 40;
  mixed.flag = true;
  int after = 1234567;
  void* mixedArgs[] = {&mixed, &after};
  CHECK_CUDA(
      cudaLaunchKernel(reinterpret_cast<const void*>(&readMixed), dim3(1), dim3(1), mixedArgs, 0, stream));
  float gotMixed[9];
  CHECK_CUDA(cudaMemcpyAsync(gotMixed, out, sizeof(gotMixed), cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  const float wantMixed[9] = {'Z', 2.5f, -3, 40000, 7, 3100, static_cast<float>(0xABCDE), 1, 1234567};
  for (int i = 0; i < 9; ++i) {
    EXPECT_TRUE(gotMixed[i] == wantMixed[i], "Mixed field %d = %f, expected %f", i, gotMixed[i],
                wantMixed[i]);
  }
  std::printf(
      "struct by value (sizeof %zu): tag=%.0f scale=%.1f dims=(%.0f,%.0f,%.0f) shorts=%.0f big>>40=%.0f "
      "flag=%.0f after=%.0f\n",
      sizeof(Mixed), gotMixed[0], gotMixed[1], gotMixed[2], gotMixed[3], gotMixed[4], gotMixed[5],
      gotMixed[6], gotMixed[7], gotMixed[8]);

  Large large;
  for (int i = 0; i < 256; ++i) large.words[i] = mix32(static_cast<std::uint32_t>(i));
  std::uint32_t* largeOut = nullptr;
  CHECK_CUDA(cudaMalloc(&largeOut, sizeof(large)));
  void* largeArgs[] = {&large, &largeOut};
  CHECK_CUDA(
      cudaLaunchKernel(reinterpret_cast<const void*>(&readLarge), dim3(1), dim3(256), largeArgs, 0, 0));
  std::uint32_t gotLarge[256];
  CHECK_CUDA(cudaMemcpy(gotLarge, largeOut, sizeof(gotLarge), cudaMemcpyDeviceToHost));
  for (std::uint32_t i = 0; i < 256; ++i) {
    EXPECT_TRUE(gotLarge[i] == (large.words[i] ^ i), "Large word %u = %08x", i, gotLarge[i]);
  }
  std::printf("1 KiB struct by value fnv=%016llx\n",
              static_cast<unsigned long long>(fnv1a64(gotLarge, sizeof(gotLarge))));

  double* scalarsOut = nullptr;
  CHECK_CUDA(cudaMalloc(&scalarsOut, 14 * sizeof(double)));
  char a = -5;
  short b = -30000;
  int c = 2000000000;
  long long d = -(1ll << 50);
  float e = 0.125f;
  double f = -1e300;
  unsigned char g = 250;
  int h = -1;
  double i = 6.0221e23;
  char j = 'j';
  long long k = (1ll << 53) - 1;
  float l = -2.5f;
  int m = 77;
  short n = 12345;
  void* scalarArgs[] = {&a, &b, &c, &d, &e, &f, &g, &h, &i, &j, &k, &l, &m, &n, &scalarsOut};
  CHECK_CUDA(
      cudaLaunchKernel(reinterpret_cast<const void*>(&manyScalars), dim3(1), dim3(1), scalarArgs, 0, stream));
  double gotScalars[14];
  CHECK_CUDA(cudaMemcpyAsync(gotScalars, scalarsOut, sizeof(gotScalars), cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  const double wantScalars[14] = {
      -5, -30000,    2000000000, static_cast<double>(-(1ll << 50)),    0.125, -1e300, 250,
      -1, 6.0221e23, 'j',        static_cast<double>((1ll << 53) - 1), -2.5,  77,     12345};
  for (int s = 0; s < 14; ++s) {
    EXPECT_TRUE(gotScalars[s] == wantScalars[s], "scalar %d = %g, expected %g", s, gotScalars[s],
                wantScalars[s]);
    std::printf("scalar %2d = %.17g\n", s, gotScalars[s]);
  }

  // The same kernel through the <<<>>> syntax gives the same answer.
  manyScalars<<<1, 1, 0, stream>>>(a, b, c, d, e, f, g, h, i, j, k, l, m, n, scalarsOut);
  CHECK_CUDA(cudaGetLastError());
  double again[14];
  CHECK_CUDA(cudaMemcpyAsync(again, scalarsOut, sizeof(again), cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  EXPECT_TRUE(std::memcmp(again, gotScalars, sizeof(again)) == 0, "<<<>>> and cudaLaunchKernel disagree");
  std::printf("<<<>>> matches cudaLaunchKernel\n");

  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFree(out));
  CHECK_CUDA(cudaFree(largeOut));
  CHECK_CUDA(cudaFree(scalarsOut));
  std::printf("launch_struct OK\n");
  return 0;
}
