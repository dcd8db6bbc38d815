// Pitched 2D memory: cudaMallocPitch, cudaMemcpy2D in every direction with a
// padded host pitch, cudaMemset2D / cudaMemset2DAsync on a sub-rectangle, and
// cudaMemcpy2DAsync. The pitch itself is device-specific and not printed.
#include <cstdint>
#include <vector>

#include "check.cuh"

constexpr int kWidth = 333;   // floats per row
constexpr int kHeight = 257;  // rows

__global__ void scaleRows(float* data, size_t pitch, int width, int height) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  float* row = reinterpret_cast<float*>(reinterpret_cast<char*>(data) + y * pitch);
  row[x] = row[x] * 2.0f + static_cast<float>(y);
}

int main() {
  const size_t rowBytes = kWidth * sizeof(float);
  const size_t hostPitch = rowBytes + 12;  // padded host rows: the copy must honour both pitches
  std::vector<unsigned char> host(hostPitch * kHeight, 0xEE), back(hostPitch * kHeight, 0xEE);
  for (int y = 0; y < kHeight; ++y) {
    auto* row = reinterpret_cast<float*>(host.data() + y * hostPitch);
    for (int x = 0; x < kWidth; ++x) row[x] = static_cast<float>((x * 7 + y * 3) % 101);
  }

  float *devA = nullptr, *devB = nullptr;
  size_t pitchA = 0, pitchB = 0;
  CHECK_CUDA(cudaMallocPitch(reinterpret_cast<void**>(&devA), &pitchA, rowBytes, kHeight));
  CHECK_CUDA(cudaMallocPitch(reinterpret_cast<void**>(&devB), &pitchB, rowBytes, kHeight));
  EXPECT_TRUE(pitchA >= rowBytes && pitchB >= rowBytes, "pitch %zu/%zu < row %zu", pitchA, pitchB, rowBytes);
  std::fprintf(stderr, "pitch=%zu for rows of %zu bytes\n", pitchA, rowBytes);

  CHECK_CUDA(cudaMemcpy2D(devA, pitchA, host.data(), hostPitch, rowBytes, kHeight, cudaMemcpyHostToDevice));
  const dim3 block(32, 8);
  const dim3 grid((kWidth + block.x - 1) / block.x, (kHeight + block.y - 1) / block.y);
  scaleRows<<<grid, block>>>(devA, pitchA, kWidth, kHeight);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaMemcpy2D(devB, pitchB, devA, pitchA, rowBytes, kHeight, cudaMemcpyDeviceToDevice));

  // Clear a 100x50 rectangle starting at (x=10, y=20) to the byte 0x3F (each float reads 0.74803...).
  const int rectX = 10, rectY = 20, rectW = 100, rectH = 50;
  char* rect = reinterpret_cast<char*>(devB) + rectY * pitchB + rectX * sizeof(float);
  CHECK_CUDA(cudaMemset2D(rect, pitchB, 0x3F, rectW * sizeof(float), rectH));
  // And one more row, asynchronously, with another value.
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  char* lastRow = reinterpret_cast<char*>(devB) + (kHeight - 1) * pitchB;
  CHECK_CUDA(cudaMemset2DAsync(lastRow, pitchB, 0x00, rowBytes, 1, stream));
  CHECK_CUDA(cudaMemcpy2DAsync(back.data(), hostPitch, devB, pitchB, rowBytes, kHeight,
                               cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));

  float memsetFloat;
  const std::uint32_t memsetBits = 0x3F3F3F3Fu;
  static_assert(sizeof(memsetFloat) == sizeof(memsetBits));
  __builtin_memcpy(&memsetFloat, &memsetBits, sizeof(memsetFloat));
  double checksum = 0.0;
  for (int y = 0; y < kHeight; ++y) {
    const auto* in = reinterpret_cast<const float*>(host.data() + y * hostPitch);
    const auto* out = reinterpret_cast<const float*>(back.data() + y * hostPitch);
    for (int x = 0; x < kWidth; ++x) {
      float expected = in[x] * 2.0f + static_cast<float>(y);
      if (x >= rectX && x < rectX + rectW && y >= rectY && y < rectY + rectH) expected = memsetFloat;
      if (y == kHeight - 1) expected = 0.0f;
      EXPECT_TRUE(out[x] == expected, "(%d,%d) = %f, expected %f", x, y, out[x], expected);
      checksum += out[x];
    }
    for (size_t pad = rowBytes; pad < hostPitch; ++pad) {
      EXPECT_TRUE(back[y * hostPitch + pad] == 0xEE, "host padding of row %d overwritten", y);
    }
  }
  std::printf("pitch2d %dx%d checksum=%.4f\n", kWidth, kHeight, checksum);

  // Device to device with a narrower width than the rows, into a plain (unpitched) allocation.
  float* packed = nullptr;
  CHECK_CUDA(cudaMalloc(&packed, 64 * sizeof(float) * kHeight));
  CHECK_CUDA(cudaMemcpy2D(packed, 64 * sizeof(float), devA, pitchA, 64 * sizeof(float), kHeight,
                          cudaMemcpyDeviceToDevice));
  std::vector<float> packedBack(64 * kHeight);
  CHECK_CUDA(
      cudaMemcpy(packedBack.data(), packed, packedBack.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (int y = 0; y < kHeight; ++y) {
    const auto* in = reinterpret_cast<const float*>(host.data() + y * hostPitch);
    for (int x = 0; x < 64; ++x) {
      EXPECT_TRUE(packedBack[y * 64 + x] == in[x] * 2.0f + y, "packed (%d,%d)", x, y);
    }
  }
  std::printf("packed 64-column copy fnv=%016llx\n",
              static_cast<unsigned long long>(fnv1a64(packedBack.data(), packedBack.size() * sizeof(float))));

  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFree(devA));
  CHECK_CUDA(cudaFree(devB));
  CHECK_CUDA(cudaFree(packed));
  std::printf("pitch2d OK\n");
  return 0;
}
