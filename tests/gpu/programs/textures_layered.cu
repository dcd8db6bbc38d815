// Layered and cubemap textures and 3D array copies, each checked exactly against a CPU reference:
// a layered 2D float array written with cudaMemcpy3D and read with tex2DLayered (as in the
// simpleLayeredTexture sample), a cubemap read at every texel centre of every face with texCubemap
// (simpleCubemapTexture), and copies between host, pitched device memory and 3D arrays with
// cudaMemcpy3D(Async) and cudaMemcpy2DArrayToArray, offsets included.
#include <vector>

#include "check.cuh"

constexpr int kSide = 16, kLayers = 5;

__global__ void negateLayers(cudaTextureObject_t tex, float* out, int side, int layers) {
  const int x = threadIdx.x, y = threadIdx.y;
  for (int layer = 0; layer < layers; ++layer) {
    out[(layer * side + y) * side + x] = -tex2DLayered<float>(tex, x + 0.5f, y + 0.5f, layer) + layer;
  }
}

__global__ void readCube(cudaTextureObject_t tex, float* out, int side) {
  const int x = threadIdx.x, y = threadIdx.y;
  const float cx = (x + 0.5f) / side * 2.f - 1.f, cy = (y + 0.5f) / side * 2.f - 1.f;
  for (int face = 0; face < 6; ++face) {
    float value = 0;
    switch (face) {
      case 0:
        value = texCubemap<float>(tex, 1, -cy, -cx);
        break;
      case 1:
        value = texCubemap<float>(tex, -1, -cy, cx);
        break;
      case 2:
        value = texCubemap<float>(tex, cx, 1, cy);
        break;
      case 3:
        value = texCubemap<float>(tex, cx, -1, -cy);
        break;
      case 4:
        value = texCubemap<float>(tex, cx, -cy, 1);
        break;
      default:
        value = texCubemap<float>(tex, -cx, -cy, -1);
        break;
    }
    out[(face * side + y) * side + x] = value;
  }
}

float texel(int layer, int y, int x) { return static_cast<float>((layer * 37 + y * 11 + x * 3) % 97); }

cudaTextureObject_t pointTexture(cudaArray_t array, bool normalized) {
  cudaResourceDesc resource{};
  resource.resType = cudaResourceTypeArray;
  resource.res.array.array = array;
  cudaTextureDesc texture{};
  texture.addressMode[0] = texture.addressMode[1] = texture.addressMode[2] = cudaAddressModeClamp;
  texture.filterMode = cudaFilterModePoint;
  texture.readMode = cudaReadModeElementType;
  texture.normalizedCoords = normalized ? 1 : 0;
  cudaTextureObject_t tex = 0;
  CHECK_CUDA(cudaCreateTextureObject(&tex, &resource, &texture, nullptr));
  return tex;
}

// A host buffer of `depth` slices of kSide x kSide floats copied into an array.
void fill(cudaArray_t array, std::vector<float>& host, int depth) {
  host.resize(depth * kSide * kSide);
  for (int z = 0; z < depth; ++z)
    for (int y = 0; y < kSide; ++y)
      for (int x = 0; x < kSide; ++x) host[(z * kSide + y) * kSide + x] = texel(z, y, x);
  cudaMemcpy3DParms copy{};
  copy.srcPtr = make_cudaPitchedPtr(host.data(), kSide * sizeof(float), kSide, kSide);
  copy.dstArray = array;
  copy.extent = make_cudaExtent(kSide, kSide, depth);
  copy.kind = cudaMemcpyHostToDevice;
  CHECK_CUDA(cudaMemcpy3D(&copy));
}

void layered() {
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaArray_t array = nullptr;
  CHECK_CUDA(cudaMalloc3DArray(&array, &desc, make_cudaExtent(kSide, kSide, kLayers), cudaArrayLayered));
  std::vector<float> host;
  fill(array, host, kLayers);
  cudaTextureObject_t tex = pointTexture(array, false);
  float* out = nullptr;
  CHECK_CUDA(cudaMalloc(&out, host.size() * sizeof(float)));
  negateLayers<<<1, dim3(kSide, kSide)>>>(tex, out, kSide, kLayers);
  CHECK_CUDA(cudaGetLastError());
  std::vector<float> back(host.size());
  CHECK_CUDA(cudaMemcpy(back.data(), out, back.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (int layer = 0; layer < kLayers; ++layer)
    for (int i = 0; i < kSide * kSide; ++i)
      EXPECT_TRUE(back[layer * kSide * kSide + i] == -host[layer * kSide * kSide + i] + layer,
                  "layer %d texel %d", layer, i);
  std::printf("layered texture: %d layers fnv=%016llx\n", kLayers,
              static_cast<unsigned long long>(fnv1a64(back.data(), back.size() * sizeof(float))));
  CHECK_CUDA(cudaDestroyTextureObject(tex));
  CHECK_CUDA(cudaFreeArray(array));
  CHECK_CUDA(cudaFree(out));
}

void cubemap() {
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaArray_t array = nullptr;
  CHECK_CUDA(cudaMalloc3DArray(&array, &desc, make_cudaExtent(kSide, kSide, 6), cudaArrayCubemap));
  std::vector<float> host;
  fill(array, host, 6);
  cudaTextureObject_t tex = pointTexture(array, true);
  float* out = nullptr;
  CHECK_CUDA(cudaMalloc(&out, host.size() * sizeof(float)));
  readCube<<<1, dim3(kSide, kSide)>>>(tex, out, kSide);
  CHECK_CUDA(cudaGetLastError());
  std::vector<float> back(host.size());
  CHECK_CUDA(cudaMemcpy(back.data(), out, back.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < host.size(); ++i) EXPECT_TRUE(back[i] == host[i], "cube texel %zu", i);
  std::printf("cubemap texture: 6 faces of %dx%d read exactly\n", kSide, kSide);
  CHECK_CUDA(cudaDestroyTextureObject(tex));
  CHECK_CUDA(cudaFreeArray(array));
  CHECK_CUDA(cudaFree(out));
}

void copies3D() {
  constexpr int kW = 20, kH = 12, kD = 6;
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaArray_t a = nullptr, b = nullptr;
  CHECK_CUDA(cudaMalloc3DArray(&a, &desc, make_cudaExtent(kW, kH, kD), 0));
  CHECK_CUDA(cudaMalloc3DArray(&b, &desc, make_cudaExtent(kW, kH, kD), 0));
  // Host rows padded to 24 floats and slices to 14 rows: both pitches must be honoured.
  constexpr int kHostPitch = 24, kHostRows = 14;
  std::vector<float> host(kHostPitch * kHostRows * kD, -1.f);
  for (int z = 0; z < kD; ++z)
    for (int y = 0; y < kH; ++y)
      for (int x = 0; x < kW; ++x)
        host[(z * kHostRows + y) * kHostPitch + x] =
            static_cast<float>(mix32(x + 100 * y + 10000 * z) % 1000);
  cudaMemcpy3DParms toArray{};
  toArray.srcPtr = make_cudaPitchedPtr(host.data(), kHostPitch * sizeof(float), kW, kHostRows);
  toArray.dstArray = a;
  toArray.extent = make_cudaExtent(kW, kH, kD);
  toArray.kind = cudaMemcpyHostToDevice;
  CHECK_CUDA(cudaMemcpy3D(&toArray));

  // A sub-box of a, at (2, 1, 1), to the origin of b.
  constexpr int kBW = 10, kBH = 8, kBD = 3;
  cudaMemcpy3DParms between{};
  between.srcArray = a;
  between.srcPos = make_cudaPos(2, 1, 1);
  between.dstArray = b;
  between.extent = make_cudaExtent(kBW, kBH, kBD);
  between.kind = cudaMemcpyDeviceToDevice;
  CHECK_CUDA(cudaMemcpy3D(&between));

  // b -> pitched device memory -> host, asynchronously on a stream.
  cudaPitchedPtr device{};
  CHECK_CUDA(cudaMalloc3D(&device, make_cudaExtent(kW * sizeof(float), kH, kD)));
  CHECK_CUDA(cudaMemset3D(device, 0, make_cudaExtent(kW * sizeof(float), kH, kD)));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  cudaMemcpy3DParms toDevice{};
  toDevice.srcArray = b;
  toDevice.dstPtr = device;
  toDevice.extent = make_cudaExtent(kBW, kBH, kBD);
  toDevice.kind = cudaMemcpyDeviceToDevice;
  CHECK_CUDA(cudaMemcpy3DAsync(&toDevice, stream));
  std::vector<float> back(kW * kH * kD, -2.f);
  cudaMemcpy3DParms toHost{};
  toHost.srcPtr = device;
  toHost.dstPtr = make_cudaPitchedPtr(back.data(), kW * sizeof(float), kW, kH);
  toHost.extent = make_cudaExtent(kW * sizeof(float), kH, kD);
  toHost.kind = cudaMemcpyDeviceToHost;
  CHECK_CUDA(cudaMemcpy3DAsync(&toHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  for (int z = 0; z < kD; ++z)
    for (int y = 0; y < kH; ++y)
      for (int x = 0; x < kW; ++x) {
        float expected = 0.f;
        if (x < kBW && y < kBH && z < kBD)
          expected = host[((z + 1) * kHostRows + y + 1) * kHostPitch + x + 2];
        EXPECT_TRUE(back[(z * kH + y) * kW + x] == expected, "3D (%d,%d,%d)", x, y, z);
      }
  // 2D arrays: host rows into c, 8 elements of c's row 0 from x = 4 into d's row 9 (offsets and
  // widths in bytes), d's row 9 back to the host.
  cudaArray_t c = nullptr, d = nullptr;
  CHECK_CUDA(cudaMallocArray(&c, &desc, kW, kH));
  CHECK_CUDA(cudaMallocArray(&d, &desc, kW, kH));
  CHECK_CUDA(cudaMemcpy2DToArray(c, 0, 0, host.data(), kHostPitch * sizeof(float), kW * sizeof(float), kH,
                                 cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy2DArrayToArray(d, 0, 9, c, 4 * sizeof(float), 0, 8 * sizeof(float), 1,
                                      cudaMemcpyDeviceToDevice));
  std::vector<float> row(8);
  CHECK_CUDA(cudaMemcpy2DFromArray(row.data(), 8 * sizeof(float), d, 0, 9, 8 * sizeof(float), 1,
                                   cudaMemcpyDeviceToHost));
  for (int x = 0; x < 8; ++x) EXPECT_TRUE(row[x] == host[x + 4], "2D array-to-array %d", x);
  CHECK_CUDA(cudaFreeArray(c));
  CHECK_CUDA(cudaFreeArray(d));
  std::printf("3D array copies fnv=%016llx\n",
              static_cast<unsigned long long>(fnv1a64(back.data(), back.size() * sizeof(float))));
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFree(device.ptr));
  CHECK_CUDA(cudaFreeArray(a));
  CHECK_CUDA(cudaFreeArray(b));
}

int main() {
  layered();
  cubemap();
  copies3D();
  std::printf("textures_layered OK\n");
  return 0;
}
