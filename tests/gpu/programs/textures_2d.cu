// Texture objects over 2D resources, each read by a kernel and checked against a CPU reference:
// a float cudaArray with linear filtering and normalized coordinates (resampled to another size;
// hardware filtering weights have 8 fractional bits, so the check allows for them and stdout
// carries the GPU's exact bytes), a pitch-linear texture with wrap addressing (as in the
// simplePitchLinearTexture sample, exact), a linear int buffer read with tex1Dfetch, and each level
// of a mipmapped array read with tex2DLod. Plus the array and object queries.
#include <cmath>
#include <cstring>
#include <vector>

#include "check.cuh"

constexpr int kW = 64, kH = 48;     // the source image
constexpr int kOW = 100, kOH = 70;  // the resampled output

float source(int x, int y) { return static_cast<float>((x * 13 + y * 7) % 29); }

__global__ void resample(cudaTextureObject_t tex, float* out, int width, int height) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  out[y * width + x] = tex2D<float>(tex, (x + 0.5f) / width, (y + 0.5f) / height);
}

__global__ void shifted(cudaTextureObject_t tex, float* out, int width, int height, int sx, int sy) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  out[y * width + x] = tex2D<float>(tex, (x + sx + 0.5f) / width, (y + sy + 0.5f) / height);
}

__global__ void fetchInts(cudaTextureObject_t tex, int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex1Dfetch<int>(tex, n - 1 - i) * 3;
}

__global__ void readLevels(cudaTextureObject_t tex, float* out, int side, int levels) {
  const int x = threadIdx.x, y = threadIdx.y;
  for (int level = 0; level < levels; ++level) {
    const int n = side >> level;
    if (x < n && y < n) {
      out[level * side * side + y * n + x] =
          tex2DLod<float>(tex, (x + 0.5f) / n, (y + 0.5f) / n, float(level));
    }
  }
}

// Bilinear filtering as the hardware does it (clamp addressing), with exact weights.
float bilinear(const std::vector<float>& image, float u, float v) {
  const float xb = u * kW - 0.5f, yb = v * kH - 0.5f;
  const int x0 = static_cast<int>(std::floor(xb)), y0 = static_cast<int>(std::floor(yb));
  const float a = xb - x0, b = yb - y0;
  auto at = [&](int x, int y) {
    x = x < 0 ? 0 : (x >= kW ? kW - 1 : x);
    y = y < 0 ? 0 : (y >= kH ? kH - 1 : y);
    return image[y * kW + x];
  };
  return (1 - a) * (1 - b) * at(x0, y0) + a * (1 - b) * at(x0 + 1, y0) + (1 - a) * b * at(x0, y0 + 1) +
         a * b * at(x0 + 1, y0 + 1);
}

void arrayTexture(const std::vector<float>& image) {
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaArray_t array = nullptr;
  CHECK_CUDA(cudaMallocArray(&array, &desc, kW, kH));
  CHECK_CUDA(cudaMemcpy2DToArray(array, 0, 0, image.data(), kW * sizeof(float), kW * sizeof(float), kH,
                                 cudaMemcpyHostToDevice));
  cudaChannelFormatDesc got{};
  cudaExtent extent{};
  unsigned flags = 99;
  CHECK_CUDA(cudaArrayGetInfo(&got, &extent, &flags, array));
  std::printf("array info: %zux%zux%zu flags=%u channel=(%d,%d,%d,%d,%d)\n", extent.width, extent.height,
              extent.depth, flags, got.x, got.y, got.z, got.w, static_cast<int>(got.f));
  CHECK_CUDA(cudaGetChannelDesc(&got, array));
  EXPECT_TRUE(got.x == 32 && got.y == 0 && got.f == cudaChannelFormatKindFloat, "channel desc");

  cudaResourceDesc resource{};
  resource.resType = cudaResourceTypeArray;
  resource.res.array.array = array;
  cudaTextureDesc texture{};
  texture.addressMode[0] = texture.addressMode[1] = cudaAddressModeClamp;
  texture.filterMode = cudaFilterModeLinear;
  texture.readMode = cudaReadModeElementType;
  texture.normalizedCoords = 1;
  cudaTextureObject_t tex = 0;
  CHECK_CUDA(cudaCreateTextureObject(&tex, &resource, &texture, nullptr));
  cudaResourceDesc resourceBack{};
  CHECK_CUDA(cudaGetTextureObjectResourceDesc(&resourceBack, tex));
  EXPECT_TRUE(resourceBack.resType == cudaResourceTypeArray && resourceBack.res.array.array == array,
              "resource");
  cudaTextureDesc textureBack{};
  CHECK_CUDA(cudaGetTextureObjectTextureDesc(&textureBack, tex));
  EXPECT_TRUE(textureBack.filterMode == cudaFilterModeLinear && textureBack.normalizedCoords == 1,
              "texture desc");

  float* out = nullptr;
  CHECK_CUDA(cudaMalloc(&out, kOW * kOH * sizeof(float)));
  resample<<<dim3((kOW + 15) / 16, (kOH + 15) / 16), dim3(16, 16)>>>(tex, out, kOW, kOH);
  CHECK_CUDA(cudaGetLastError());
  std::vector<float> back(kOW * kOH);
  CHECK_CUDA(cudaMemcpy(back.data(), out, back.size() * sizeof(float), cudaMemcpyDeviceToHost));
  double worst = 0;
  for (int y = 0; y < kOH; ++y) {
    for (int x = 0; x < kOW; ++x) {
      const float expected = bilinear(image, (x + 0.5f) / kOW, (y + 0.5f) / kOH);
      // 8-bit weights: each of up to 28-unit steps may be off by 28/256 per axis.
      worst = std::fmax(worst, std::fabs(back[y * kOW + x] - expected));
      EXPECT_TRUE(std::fabs(back[y * kOW + x] - expected) <= 0.25f, "(%d,%d) = %f, expected %f", x, y,
                  back[y * kOW + x], expected);
    }
  }
  std::fprintf(stderr, "worst filtering difference %.4f\n", worst);
  std::printf("linear-filtered array texture %dx%d -> %dx%d fnv=%016llx\n", kW, kH, kOW, kOH,
              static_cast<unsigned long long>(fnv1a64(back.data(), back.size() * sizeof(float))));
  CHECK_CUDA(cudaDestroyTextureObject(tex));
  CHECK_CUDA(cudaFreeArray(array));
  CHECK_CUDA(cudaFree(out));
}

void pitchTexture(const std::vector<float>& image) {
  float* pitched = nullptr;
  size_t pitch = 0;
  CHECK_CUDA(cudaMallocPitch(reinterpret_cast<void**>(&pitched), &pitch, kW * sizeof(float), kH));
  CHECK_CUDA(cudaMemcpy2D(pitched, pitch, image.data(), kW * sizeof(float), kW * sizeof(float), kH,
                          cudaMemcpyHostToDevice));
  cudaResourceDesc resource{};
  resource.resType = cudaResourceTypePitch2D;
  resource.res.pitch2D.devPtr = pitched;
  resource.res.pitch2D.desc = cudaCreateChannelDesc<float>();
  resource.res.pitch2D.width = kW;
  resource.res.pitch2D.height = kH;
  resource.res.pitch2D.pitchInBytes = pitch;
  cudaTextureDesc texture{};
  texture.addressMode[0] = texture.addressMode[1] = cudaAddressModeWrap;
  texture.filterMode = cudaFilterModePoint;
  texture.readMode = cudaReadModeElementType;
  texture.normalizedCoords = 1;
  cudaTextureObject_t tex = 0;
  CHECK_CUDA(cudaCreateTextureObject(&tex, &resource, &texture, nullptr));
  float* out = nullptr;
  CHECK_CUDA(cudaMalloc(&out, kW * kH * sizeof(float)));
  const int sx = 5, sy = 11;
  shifted<<<dim3(kW / 16, kH / 16), dim3(16, 16)>>>(tex, out, kW, kH, sx, sy);
  CHECK_CUDA(cudaGetLastError());
  std::vector<float> back(kW * kH);
  CHECK_CUDA(cudaMemcpy(back.data(), out, back.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (int y = 0; y < kH; ++y)
    for (int x = 0; x < kW; ++x)
      EXPECT_TRUE(back[y * kW + x] == image[((y + sy) % kH) * kW + (x + sx) % kW], "pitch (%d,%d)", x, y);
  std::printf("pitch-linear wrapped texture fnv=%016llx\n",
              static_cast<unsigned long long>(fnv1a64(back.data(), back.size() * sizeof(float))));
  CHECK_CUDA(cudaDestroyTextureObject(tex));
  CHECK_CUDA(cudaFree(pitched));
  CHECK_CUDA(cudaFree(out));
}

void linearTexture() {
  constexpr int kN = 1000;
  std::vector<int> values(kN);
  for (int i = 0; i < kN; ++i) values[i] = static_cast<int>(mix32(i) % 100000) - 50000;
  int* buffer = nullptr;
  int* out = nullptr;
  CHECK_CUDA(cudaMalloc(&buffer, kN * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&out, kN * sizeof(int)));
  CHECK_CUDA(cudaMemcpy(buffer, values.data(), kN * sizeof(int), cudaMemcpyHostToDevice));
  cudaResourceDesc resource{};
  resource.resType = cudaResourceTypeLinear;
  resource.res.linear.devPtr = buffer;
  resource.res.linear.desc = cudaCreateChannelDesc<int>();
  resource.res.linear.sizeInBytes = kN * sizeof(int);
  cudaTextureDesc texture{};
  texture.readMode = cudaReadModeElementType;
  cudaTextureObject_t tex = 0;
  CHECK_CUDA(cudaCreateTextureObject(&tex, &resource, &texture, nullptr));
  fetchInts<<<(kN + 255) / 256, 256>>>(tex, out, kN);
  CHECK_CUDA(cudaGetLastError());
  std::vector<int> back(kN);
  CHECK_CUDA(cudaMemcpy(back.data(), out, kN * sizeof(int), cudaMemcpyDeviceToHost));
  long long sum = 0;
  for (int i = 0; i < kN; ++i) {
    EXPECT_TRUE(back[i] == values[kN - 1 - i] * 3, "fetch %d", i);
    sum += back[i];
  }
  std::printf("linear int texture (tex1Dfetch) sum=%lld\n", sum);
  CHECK_CUDA(cudaDestroyTextureObject(tex));
  CHECK_CUDA(cudaFree(buffer));
  CHECK_CUDA(cudaFree(out));
}

void mipmappedTexture() {
  constexpr int kSide = 32, kLevels = 3;
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaMipmappedArray_t mipmapped = nullptr;
  CHECK_CUDA(cudaMallocMipmappedArray(&mipmapped, &desc, make_cudaExtent(kSide, kSide, 0), kLevels, 0));
  for (int level = 0; level < kLevels; ++level) {
    cudaArray_t levelArray = nullptr;
    CHECK_CUDA(cudaGetMipmappedArrayLevel(&levelArray, mipmapped, level));
    cudaExtent extent{};
    CHECK_CUDA(cudaArrayGetInfo(nullptr, &extent, nullptr, levelArray));
    std::printf("level %d: %zux%zu\n", level, extent.width, extent.height);
    const int n = kSide >> level;
    std::vector<float> values(n * n);
    for (int i = 0; i < n * n; ++i) values[i] = static_cast<float>(level * 1000 + i);
    CHECK_CUDA(cudaMemcpy2DToArray(levelArray, 0, 0, values.data(), n * sizeof(float), n * sizeof(float), n,
                                   cudaMemcpyHostToDevice));
  }
  cudaResourceDesc resource{};
  resource.resType = cudaResourceTypeMipmappedArray;
  resource.res.mipmap.mipmap = mipmapped;
  cudaTextureDesc texture{};
  texture.addressMode[0] = texture.addressMode[1] = cudaAddressModeClamp;
  texture.filterMode = cudaFilterModePoint;
  texture.mipmapFilterMode = cudaFilterModePoint;
  texture.readMode = cudaReadModeElementType;
  texture.normalizedCoords = 1;
  texture.maxMipmapLevelClamp = kLevels - 1;
  cudaTextureObject_t tex = 0;
  CHECK_CUDA(cudaCreateTextureObject(&tex, &resource, &texture, nullptr));
  float* out = nullptr;
  CHECK_CUDA(cudaMalloc(&out, kLevels * kSide * kSide * sizeof(float)));
  CHECK_CUDA(cudaMemset(out, 0, kLevels * kSide * kSide * sizeof(float)));
  readLevels<<<1, dim3(kSide, kSide)>>>(tex, out, kSide, kLevels);
  CHECK_CUDA(cudaGetLastError());
  std::vector<float> back(kLevels * kSide * kSide);
  CHECK_CUDA(cudaMemcpy(back.data(), out, back.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (int level = 0; level < kLevels; ++level) {
    const int n = kSide >> level;
    for (int i = 0; i < n * n; ++i)
      EXPECT_TRUE(back[level * kSide * kSide + i] == level * 1000 + i, "level %d texel %d = %f", level, i,
                  back[level * kSide * kSide + i]);
  }
  std::printf("mipmapped texture: %d levels read exactly\n", kLevels);
  CHECK_CUDA(cudaDestroyTextureObject(tex));
  CHECK_CUDA(cudaFreeMipmappedArray(mipmapped));
  CHECK_CUDA(cudaFree(out));
}

int main() {
  std::vector<float> image(kW * kH);
  for (int y = 0; y < kH; ++y)
    for (int x = 0; x < kW; ++x) image[y * kW + x] = source(x, y);
  arrayTexture(image);
  pitchTexture(image);
  linearTexture();
  mipmappedTexture();

  // A copy past the array's last row is refused.
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaArray_t small = nullptr;
  CHECK_CUDA(cudaMallocArray(&small, &desc, 8, 8));
  EXPECT_ERROR("copy past the array",
               cudaMemcpy2DToArray(small, 0, 4, image.data(), 8 * sizeof(float), 8 * sizeof(float), 8,
                                   cudaMemcpyHostToDevice),
               cudaErrorInvalidValue);
  CHECK_CUDA(cudaFreeArray(small));
  std::printf("textures_2d OK\n");
  return 0;
}
