// Tiled matrix multiply with shared memory, checked element by element against
// a CPU reference. Dimensions are not multiples of the tile so the edge tiles
// (zero padding in shared memory) are exercised. Entries are small integers, so
// every product and sum is exact in float.
#include <cstdint>
#include <vector>

#include "check.cuh"

constexpr int kTile = 16;

__global__ void matmulTiled(const float* a, const float* b, float* c, int m, int k, int n) {
  __shared__ float tileA[kTile][kTile];
  __shared__ float tileB[kTile][kTile];
  const int row = blockIdx.y * kTile + threadIdx.y;
  const int col = blockIdx.x * kTile + threadIdx.x;
  float acc = 0.0f;
  for (int t = 0; t < (k + kTile - 1) / kTile; ++t) {
    const int aCol = t * kTile + threadIdx.x;
    const int bRow = t * kTile + threadIdx.y;
    tileA[threadIdx.y][threadIdx.x] = (row < m && aCol < k) ? a[row * k + aCol] : 0.0f;
    tileB[threadIdx.y][threadIdx.x] = (bRow < k && col < n) ? b[bRow * n + col] : 0.0f;
    __syncthreads();
    for (int i = 0; i < kTile; ++i) acc += tileA[threadIdx.y][i] * tileB[i][threadIdx.x];
    __syncthreads();
  }
  if (row < m && col < n) c[row * n + col] = acc;
}

int main() {
  const int m = 300, k = 257, n = 190;
  std::vector<float> a(m * k), b(k * n), c(m * n, 0.0f);
  for (int i = 0; i < m * k; ++i) a[i] = static_cast<float>(static_cast<int>(mix32(i) % 7) - 3);
  for (int i = 0; i < k * n; ++i) b[i] = static_cast<float>(static_cast<int>(mix32(i + 7777) % 9) - 4);

  float *dA = nullptr, *dB = nullptr, *dC = nullptr;
  CHECK_CUDA(cudaMalloc(&dA, a.size() * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&dB, b.size() * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&dC, c.size() * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(dA, a.data(), a.size() * sizeof(float), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(dB, b.data(), b.size() * sizeof(float), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemset(dC, 0xFF, c.size() * sizeof(float)));  // NaN everywhere: unwritten cells show

  const dim3 block(kTile, kTile);
  const dim3 grid((n + kTile - 1) / kTile, (m + kTile - 1) / kTile);
  for (int repeat = 0; repeat < 3; ++repeat) {  // same result each time; gives a concurrent run some length
    matmulTiled<<<grid, block>>>(dA, dB, dC, m, k, n);
    CHECK_CUDA(cudaGetLastError());
  }
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemcpy(c.data(), dC, c.size() * sizeof(float), cudaMemcpyDeviceToHost));

  long long checksum = 0;
  for (int r = 0; r < m; ++r) {
    for (int col = 0; col < n; ++col) {
      float expected = 0.0f;
      for (int i = 0; i < k; ++i) expected += a[r * k + i] * b[i * n + col];
      const float got = c[r * n + col];
      EXPECT_TRUE(got == expected, "c[%d][%d] = %f, expected %f", r, col, got, expected);
      checksum += static_cast<long long>(got) * (1 + (r * n + col) % 13);
    }
  }
  std::printf("matmul %dx%dx%d c[0][0]=%.0f c[last]=%.0f weighted_checksum=%lld\n", m, k, n, c[0],
              c[m * n - 1], checksum);
  CHECK_CUDA(cudaFree(dA));
  CHECK_CUDA(cudaFree(dB));
  CHECK_CUDA(cudaFree(dC));
  std::printf("matmul_tiled OK\n");
  return 0;
}
