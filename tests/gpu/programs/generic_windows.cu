// Generic pointers into shared and local memory, through a function that cannot know
// which space they point to: the kernel memory guard checks every generic access against
// the protected range, so it must leave the shared and local windows' addresses alone.
// Under the guard (the GPU suite guards every module) a false hit would fault here.
#include <vector>

#include "check.cuh"

// Not inlined, and the space is hidden from nvcc: these are generic ld/st.
__device__ __noinline__ int sumAndScale(int* values, int count, int scale) {
  int sum = 0;
  for (int i = 0; i < count; ++i) {
    sum += values[i];
    values[i] *= scale;
  }
  return sum;
}

// Each thread owns tile[t * 8, t * 8 + 8) and its local array: no races, exact results.
__global__ void windows(const int* in, int* out, int n) {
  __shared__ int tile[256 * 8];
  int local[8];
  const int t = threadIdx.x;
  const int i = blockIdx.x * blockDim.x + t;
  const int base = i < n ? in[i] : 0;
  for (int k = 0; k < 8; ++k) {
    tile[t * 8 + k] = base + k;
    local[k] = (i + k) % 7;
  }
  int* through = t % 2 == 0 ? &tile[t * 8] : local;  // shared or local, decided at run time
  const int sum = sumAndScale(through, 8, 3);
  if (i < n) out[i] = sum + tile[t * 8] + local[3];
}

int main() {
  const int n = 65536 + 17;
  std::vector<int> in(n), out(n, -1);
  for (int i = 0; i < n; ++i) in[i] = (i * 37) % 1001;
  int *dIn = nullptr, *dOut = nullptr;
  CHECK_CUDA(cudaMalloc(&dIn, n * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&dOut, n * sizeof(int)));
  CHECK_CUDA(cudaMemcpy(dIn, in.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  windows<<<(n + 255) / 256, 256>>>(dIn, dOut, n);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaMemcpy(out.data(), dOut, n * sizeof(int), cudaMemcpyDeviceToHost));
  long long total = 0;
  for (int i = 0; i < n; ++i) {
    int localSum = 0;
    for (int k = 0; k < 8; ++k) localSum += (i + k) % 7;
    const int expected =
        (i % 256) % 2 == 0 ? 8 * in[i] + 28 + 3 * in[i] + (i + 3) % 7 : localSum + in[i] + 3 * ((i + 3) % 7);
    EXPECT_TRUE(out[i] == expected, "out[%d] = %d, expected %d", i, out[i], expected);
    total += out[i];
  }
  std::printf("generic_windows n=%d out[0]=%d out[1]=%d out[n-1]=%d total=%lld\n", n, out[0], out[1],
              out[n - 1], total);
  std::printf("generic_windows fnv=%016llx\n",
              static_cast<unsigned long long>(fnv1a64(out.data(), n * sizeof(int))));
  CHECK_CUDA(cudaFree(dIn));
  CHECK_CUDA(cudaFree(dOut));
  std::printf("generic_windows OK\n");
  return 0;
}
