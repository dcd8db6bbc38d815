// 3D linear memory: cudaMalloc3D, cudaMemcpy3D host->device->host with padded host
// pitches and positions, cudaMemset3D / cudaMemset3DAsync on sub-boxes, and
// cudaMemcpy3DAsync device to device. The device pitch is device-specific and not printed.
#include <vector>

#include "check.cuh"

constexpr size_t kWidth = 45;   // floats per row
constexpr size_t kHeight = 13;  // rows per slice
constexpr size_t kDepth = 7;    // slices

__global__ void scaleVolume(cudaPitchedPtr volume, int width, int height, int depth) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  const int z = blockIdx.z;
  if (x >= width || y >= height || z >= depth) return;
  char* slice = static_cast<char*>(volume.ptr) + z * volume.pitch * volume.ysize;
  float* row = reinterpret_cast<float*>(slice + y * volume.pitch);
  row[x] = row[x] * 3.0f + static_cast<float>(z);
}

float hostValue(size_t x, size_t y, size_t z) { return static_cast<float>((x * 5 + y * 11 + z * 17) % 97); }

int main() {
  const size_t rowBytes = kWidth * sizeof(float);
  const size_t hostPitch = rowBytes + 20;  // padded host rows
  const size_t hostRows = kHeight + 2;     // and padded host slices
  std::vector<unsigned char> host(hostPitch * hostRows * kDepth, 0xEE), back(host.size(), 0xEE);
  for (size_t z = 0; z < kDepth; ++z)
    for (size_t y = 0; y < kHeight; ++y)
      for (size_t x = 0; x < kWidth; ++x)
        reinterpret_cast<float*>(host.data() + (z * hostRows + y) * hostPitch)[x] = hostValue(x, y, z);

  cudaPitchedPtr volume{}, copy{};
  const cudaExtent extent = make_cudaExtent(rowBytes, kHeight, kDepth);
  CHECK_CUDA(cudaMalloc3D(&volume, extent));
  CHECK_CUDA(cudaMalloc3D(&copy, extent));
  EXPECT_TRUE(volume.pitch >= rowBytes && volume.xsize == rowBytes && volume.ysize == kHeight,
              "cudaMalloc3D gave pitch %zu xsize %zu ysize %zu", volume.pitch, volume.xsize, volume.ysize);
  std::fprintf(stderr, "pitch=%zu for rows of %zu bytes\n", volume.pitch, rowBytes);

  cudaMemcpy3DParms up{};
  up.srcPtr = make_cudaPitchedPtr(host.data(), hostPitch, rowBytes, hostRows);
  up.dstPtr = volume;
  up.extent = extent;
  up.kind = cudaMemcpyHostToDevice;
  CHECK_CUDA(cudaMemcpy3D(&up));
  scaleVolume<<<dim3((kWidth + 31) / 32, (kHeight + 7) / 8, kDepth), dim3(32, 8)>>>(volume, kWidth, kHeight, kDepth);
  CHECK_CUDA(cudaGetLastError());

  // Byte 0x3F over the box x in [4, 20), y in [2, 9), z in [1, 5); 0 over the last slice, asynchronously.
  cudaPitchedPtr box = volume;
  box.ptr = static_cast<char*>(volume.ptr) + 1 * volume.pitch * volume.ysize + 2 * volume.pitch + 4 * sizeof(float);
  CHECK_CUDA(cudaMemset3D(box, 0x3F, make_cudaExtent(16 * sizeof(float), 7, 4)));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  cudaPitchedPtr lastSlice = volume;
  lastSlice.ptr = static_cast<char*>(volume.ptr) + (kDepth - 1) * volume.pitch * volume.ysize;
  CHECK_CUDA(cudaMemset3DAsync(lastSlice, 0, make_cudaExtent(rowBytes, kHeight, 1), stream));

  // Device to device, whole volume, on the stream; then back to the padded host layout.
  cudaMemcpy3DParms across{};
  across.srcPtr = volume;
  across.dstPtr = copy;
  across.extent = extent;
  across.kind = cudaMemcpyDeviceToDevice;
  CHECK_CUDA(cudaMemcpy3DAsync(&across, stream));
  cudaMemcpy3DParms down{};
  down.srcPtr = copy;
  down.dstPtr = make_cudaPitchedPtr(back.data(), hostPitch, rowBytes, hostRows);
  down.extent = extent;
  down.kind = cudaMemcpyDeviceToHost;
  CHECK_CUDA(cudaMemcpy3DAsync(&down, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));

  float memsetFloat;
  const std::uint32_t memsetBits = 0x3F3F3F3Fu;
  __builtin_memcpy(&memsetFloat, &memsetBits, sizeof(memsetFloat));
  double checksum = 0.0;
  for (size_t z = 0; z < kDepth; ++z) {
    for (size_t y = 0; y < hostRows; ++y) {
      const unsigned char* row = back.data() + (z * hostRows + y) * hostPitch;
      for (size_t b = (y < kHeight ? rowBytes : 0); b < hostPitch; ++b) {
        EXPECT_TRUE(row[b] == 0xEE, "host padding at z=%zu y=%zu byte %zu overwritten", z, y, b);
      }
      if (y >= kHeight) continue;
      for (size_t x = 0; x < kWidth; ++x) {
        float expected = hostValue(x, y, z) * 3.0f + static_cast<float>(z);
        if (x >= 4 && x < 20 && y >= 2 && y < 9 && z >= 1 && z < 5) expected = memsetFloat;
        if (z == kDepth - 1) expected = 0.0f;
        const float got = reinterpret_cast<const float*>(row)[x];
        EXPECT_TRUE(got == expected, "(%zu,%zu,%zu) = %f, expected %f", x, y, z, got, expected);
        checksum += got;
      }
    }
  }
  std::printf("memcpy3d %zux%zux%zu checksum=%.4f\n", kWidth, kHeight, kDepth, checksum);

  // A sub-box with positions on both sides: (x=3 floats, y=4, z=2) of the device volume,
  // 10 x 5 x 3, into (x=1 float, y=0, z=1) of a packed host box of 12 x 6 x 4 floats.
  std::vector<float> part(12 * 6 * 4, -1.0f);
  cudaMemcpy3DParms sub{};
  sub.srcPtr = volume;
  sub.srcPos = make_cudaPos(3 * sizeof(float), 4, 2);
  sub.dstPtr = make_cudaPitchedPtr(part.data(), 12 * sizeof(float), 12 * sizeof(float), 6);
  sub.dstPos = make_cudaPos(1 * sizeof(float), 0, 1);
  sub.extent = make_cudaExtent(10 * sizeof(float), 5, 3);
  sub.kind = cudaMemcpyDeviceToHost;
  CHECK_CUDA(cudaMemcpy3D(&sub));
  for (size_t z = 0; z < 4; ++z)
    for (size_t y = 0; y < 6; ++y)
      for (size_t x = 0; x < 12; ++x) {
        const bool inside = x >= 1 && x < 11 && y < 5 && z >= 1;
        const float* source = reinterpret_cast<const float*>(back.data() + ((z + 1) * hostRows + y + 4) * hostPitch);
        const float expected = inside ? source[x - 1 + 3] : -1.0f;
        EXPECT_TRUE(part[(z * 6 + y) * 12 + x] == expected, "sub-box (%zu,%zu,%zu)", x, y, z);
      }
  std::printf("sub-box copy fnv=%016llx\n",
              static_cast<unsigned long long>(fnv1a64(part.data(), part.size() * sizeof(float))));

  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFree(volume.ptr));
  CHECK_CUDA(cudaFree(copy.ptr));
  std::printf("memcpy3d OK\n");
  return 0;
}
