// Probe: texture objects over linear (cudaResourceTypeLinear) and pitched (cudaResourceTypePitch2D)
// device memory, in the forms the suite does not use yet:
//   - cudaReadModeNormalizedFloat on uchar4, ushort and signed char buffers (tex1Dfetch<float4/float>),
//     element-type reads of the same uchar4 buffer, a half buffer read as float;
//   - out-of-range tex1Dfetch (printed, not expected);
//   - a linear texture at an offset inside an allocation (the device's texture alignment), and a
//     misaligned one (error name printed);
//   - pitch2D float textures with normalized coordinates in every address mode (wrap, clamp,
//     mirror, border with a border colour), point filtering at texel centres;
//   - pitch2D float with linear filtering at quarter positions (weights exact in the hardware's
//     fixed-point), and uchar4 pitch2D with normalized coordinates + linear filtering + normalized
//     float reads at midpoints;
//   - cudaGetTextureObjectResourceDesc / TextureDesc on linear and pitch2D objects, every field;
//   - the error names of common mistakes (printed, not expected).
#include <cuda_fp16.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "tests/gpu/programs/check.cuh"

#define SHOW_ERROR(label, call)                                          \
  do {                                                                   \
    const cudaError_t show_error_got_ = (call);                          \
    std::printf("%s: %s\n", (label), cudaGetErrorName(show_error_got_)); \
    (void)cudaGetLastError();                                            \
  } while (0)

namespace {

__global__ void fetchFloat4(cudaTextureObject_t tex, float4* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex1Dfetch<float4>(tex, i);
}

__global__ void fetchUchar4(cudaTextureObject_t tex, uchar4* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex1Dfetch<uchar4>(tex, i);
}

__global__ void fetchFloat(cudaTextureObject_t tex, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex1Dfetch<float>(tex, i);
}

__global__ void fetchInt(cudaTextureObject_t tex, int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex1Dfetch<int>(tex, i);
}

// Samples one row at texel centres x in [-w, 2w), normalized coordinates.
__global__ void sampleRow(cudaTextureObject_t tex, float* out, int w, int h, int row) {
  const int i = threadIdx.x;  // 0 .. 3w-1
  const int x = i - w;
  out[i] = tex2D<float>(tex, (x + 0.5f) / w, (row + 0.5f) / h);
}

// Unnormalized coordinates at quarter offsets.
__global__ void sampleQuarters(cudaTextureObject_t tex, float* out, int w, int h) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  out[(y * w + x) * 2 + 0] = tex2D<float>(tex, x + 0.75f, y + 0.5f);
  out[(y * w + x) * 2 + 1] = tex2D<float>(tex, x + 0.5f, y + 0.25f);
}

// Normalized coordinates exactly between texel x and x+1 of row y.
__global__ void sampleMidpoints(cudaTextureObject_t tex, float4* out, int w, int h) {
  const int x = threadIdx.x, y = blockIdx.x;
  if (x >= w - 1 || y >= h) return;
  out[y * (w - 1) + x] = tex2D<float4>(tex, static_cast<float>(x + 1) / w, (y + 0.5f) / h);
}

cudaTextureObject_t linearTexture(void* devPtr, cudaChannelFormatDesc desc, size_t bytes,
                                  cudaTextureReadMode readMode) {
  cudaResourceDesc resource{};
  resource.resType = cudaResourceTypeLinear;
  resource.res.linear.devPtr = devPtr;
  resource.res.linear.desc = desc;
  resource.res.linear.sizeInBytes = bytes;
  cudaTextureDesc texture{};
  texture.readMode = readMode;
  texture.filterMode = cudaFilterModePoint;
  cudaTextureObject_t tex = 0;
  CHECK_CUDA(cudaCreateTextureObject(&tex, &resource, &texture, nullptr));
  return tex;
}

void printResourceDesc(const char* label, const cudaResourceDesc& r, const void* expectedPtr) {
  if (r.resType == cudaResourceTypeLinear) {
    std::printf("%s resource: type=%d desc=(%d,%d,%d,%d,%d) size=%zu ptr==given:%d\n", label,
                static_cast<int>(r.resType), r.res.linear.desc.x, r.res.linear.desc.y, r.res.linear.desc.z,
                r.res.linear.desc.w, static_cast<int>(r.res.linear.desc.f), r.res.linear.sizeInBytes,
                r.res.linear.devPtr == expectedPtr ? 1 : 0);
  } else if (r.resType == cudaResourceTypePitch2D) {
    std::printf("%s resource: type=%d desc=(%d,%d,%d,%d,%d) %zux%zu ptr==given:%d\n", label,
                static_cast<int>(r.resType), r.res.pitch2D.desc.x, r.res.pitch2D.desc.y, r.res.pitch2D.desc.z,
                r.res.pitch2D.desc.w, static_cast<int>(r.res.pitch2D.desc.f), r.res.pitch2D.width,
                r.res.pitch2D.height, r.res.pitch2D.devPtr == expectedPtr ? 1 : 0);
  } else {
    std::printf("%s resource: type=%d\n", label, static_cast<int>(r.resType));
  }
}

void printTextureDesc(const char* label, const cudaTextureDesc& t) {
  std::printf(
      "%s texture desc: address=(%d,%d,%d) filter=%d read=%d sRGB=%d border=(%.2f,%.2f,%.2f,%.2f) "
      "normalized=%d aniso=%u mipFilter=%d bias=%.2f minClamp=%.2f maxClamp=%.2f noTrilinearOpt=%d "
      "seamless=%d\n",
      label, static_cast<int>(t.addressMode[0]), static_cast<int>(t.addressMode[1]),
      static_cast<int>(t.addressMode[2]), static_cast<int>(t.filterMode), static_cast<int>(t.readMode),
      t.sRGB, t.borderColor[0], t.borderColor[1], t.borderColor[2], t.borderColor[3], t.normalizedCoords,
      t.maxAnisotropy, static_cast<int>(t.mipmapFilterMode), t.mipmapLevelBias, t.minMipmapLevelClamp,
      t.maxMipmapLevelClamp, t.disableTrilinearOptimization, t.seamlessCubemap);
}

// --- A: uchar4 as normalized floats and as elements, with out-of-range fetches. ---
void normalizedUchar4() {
  constexpr int kN = 1000, kExtra = 8;
  std::vector<uchar4> values(kN);
  for (int i = 0; i < kN; ++i) {
    const std::uint32_t m = mix32(i);
    values[i] = make_uchar4(m & 0xff, (m >> 8) & 0xff, (m >> 16) & 0xff, m >> 24);
  }
  values[0] = make_uchar4(0, 255, 128, 1);  // the extremes, certainly present
  uchar4* buffer = nullptr;
  CHECK_CUDA(cudaMalloc(&buffer, kN * sizeof(uchar4)));
  CHECK_CUDA(cudaMemcpy(buffer, values.data(), kN * sizeof(uchar4), cudaMemcpyHostToDevice));
  cudaTextureObject_t asFloat = linearTexture(buffer, cudaCreateChannelDesc<uchar4>(), kN * sizeof(uchar4),
                                              cudaReadModeNormalizedFloat);
  cudaTextureObject_t asElement =
      linearTexture(buffer, cudaCreateChannelDesc<uchar4>(), kN * sizeof(uchar4), cudaReadModeElementType);
  float4* outF = nullptr;
  uchar4* outU = nullptr;
  CHECK_CUDA(cudaMalloc(&outF, (kN + kExtra) * sizeof(float4)));
  CHECK_CUDA(cudaMalloc(&outU, kN * sizeof(uchar4)));
  fetchFloat4<<<(kN + kExtra + 127) / 128, 128>>>(asFloat, outF, kN + kExtra);
  CHECK_CUDA(cudaGetLastError());
  fetchUchar4<<<(kN + 127) / 128, 128>>>(asElement, outU, kN);
  CHECK_CUDA(cudaGetLastError());
  std::vector<float4> gotF(kN + kExtra);
  std::vector<uchar4> gotU(kN);
  CHECK_CUDA(cudaMemcpy(gotF.data(), outF, gotF.size() * sizeof(float4), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(gotU.data(), outU, gotU.size() * sizeof(uchar4), cudaMemcpyDeviceToHost));
  std::vector<int> rounded(kN * 4);
  for (int i = 0; i < kN; ++i) {
    const float got[4] = {gotF[i].x, gotF[i].y, gotF[i].z, gotF[i].w};
    const unsigned char want[4] = {values[i].x, values[i].y, values[i].z, values[i].w};
    for (int c = 0; c < 4; ++c) {
      EXPECT_TRUE(std::fabs(got[c] * 255.0f - want[c]) < 1e-3f, "uchar4 unorm %d.%d = %f, want %d/255", i, c,
                  got[c], want[c]);
      rounded[i * 4 + c] = static_cast<int>(std::lround(got[c] * 255.0f));
    }
    EXPECT_TRUE(std::memcmp(&gotU[i], &values[i], sizeof(uchar4)) == 0, "uchar4 element %d", i);
  }
  std::printf("A uchar4 normalized-float fetch: %d texels, x255 fnv=%016llx, [0]=(%.4f,%.4f,%.4f,%.4f)\n", kN,
              static_cast<unsigned long long>(fnv1a64(rounded.data(), rounded.size() * sizeof(int))),
              gotF[0].x, gotF[0].y, gotF[0].z, gotF[0].w);
  std::printf("A uchar4 element-type fetch: fnv=%016llx\n",
              static_cast<unsigned long long>(fnv1a64(gotU.data(), gotU.size() * sizeof(uchar4))));
  for (int i = kN; i < kN + kExtra; i += 4)
    std::printf("A out-of-range fetch %d: (%.2f,%.2f,%.2f,%.2f)\n", i, gotF[i].x, gotF[i].y, gotF[i].z,
                gotF[i].w);

  cudaResourceDesc r{};
  CHECK_CUDA(cudaGetTextureObjectResourceDesc(&r, asFloat));
  printResourceDesc("A", r, buffer);
  cudaTextureDesc t{};
  CHECK_CUDA(cudaGetTextureObjectTextureDesc(&t, asFloat));
  printTextureDesc("A", t);
  CHECK_CUDA(cudaDestroyTextureObject(asFloat));
  CHECK_CUDA(cudaDestroyTextureObject(asElement));
  CHECK_CUDA(cudaFree(buffer));
  CHECK_CUDA(cudaFree(outF));
  CHECK_CUDA(cudaFree(outU));
}

// --- B: ushort and signed char as normalized floats, half as float. ---
void otherFormats() {
  constexpr int kN = 777;
  std::vector<unsigned short> shorts(kN);
  std::vector<signed char> chars(kN);
  std::vector<__half> halves(kN);
  std::vector<float> halfValues(kN);
  for (int i = 0; i < kN; ++i) {
    shorts[i] = static_cast<unsigned short>(mix32(i + 5000) & 0xffff);
    chars[i] = static_cast<signed char>(static_cast<int>(mix32(i + 9000) & 0xff) - 128);
    halfValues[i] = static_cast<float>(static_cast<int>(mix32(i + 13000) % 4001) - 2000) * 0.5f;
    halves[i] = __float2half(halfValues[i]);
  }
  shorts[0] = 65535;
  shorts[1] = 0;
  chars[0] = -128;
  chars[1] = 127;
  chars[2] = -127;
  void *dShorts = nullptr, *dChars = nullptr, *dHalves = nullptr;
  float* out = nullptr;
  CHECK_CUDA(cudaMalloc(&dShorts, kN * sizeof(unsigned short)));
  CHECK_CUDA(cudaMalloc(&dChars, kN * sizeof(signed char)));
  CHECK_CUDA(cudaMalloc(&dHalves, kN * sizeof(__half)));
  CHECK_CUDA(cudaMalloc(&out, kN * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(dShorts, shorts.data(), kN * sizeof(unsigned short), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(dChars, chars.data(), kN * sizeof(signed char), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(dHalves, halves.data(), kN * sizeof(__half), cudaMemcpyHostToDevice));
  std::vector<float> got(kN);

  cudaTextureObject_t tex = linearTexture(dShorts, cudaCreateChannelDesc<unsigned short>(),
                                          kN * sizeof(unsigned short), cudaReadModeNormalizedFloat);
  fetchFloat<<<(kN + 127) / 128, 128>>>(tex, out, kN);
  CHECK_CUDA(cudaMemcpy(got.data(), out, kN * sizeof(float), cudaMemcpyDeviceToHost));
  long long sum = 0;
  for (int i = 0; i < kN; ++i) {
    EXPECT_TRUE(std::fabs(got[i] * 65535.0f - shorts[i]) < 0.02f, "ushort unorm %d = %f, want %u", i, got[i],
                shorts[i]);
    sum += std::lround(got[i] * 65535.0f);
  }
  std::printf("B ushort normalized-float: sum x65535 = %lld, [0]=%.6f [1]=%.6f\n", sum, got[0], got[1]);
  CHECK_CUDA(cudaDestroyTextureObject(tex));

  tex = linearTexture(dChars, cudaCreateChannelDesc<signed char>(), kN * sizeof(signed char),
                      cudaReadModeNormalizedFloat);
  fetchFloat<<<(kN + 127) / 128, 128>>>(tex, out, kN);
  CHECK_CUDA(cudaMemcpy(got.data(), out, kN * sizeof(float), cudaMemcpyDeviceToHost));
  sum = 0;
  for (int i = 0; i < kN; ++i) {
    const float want = chars[i] == -128 ? -1.0f : chars[i] / 127.0f;
    EXPECT_TRUE(std::fabs(got[i] - want) < 1e-5f, "snorm8 %d = %f, want %f", i, got[i], want);
    sum += std::lround(got[i] * 127.0f);
  }
  std::printf("B signed char normalized-float: sum x127 = %lld, [0]=%.4f [1]=%.4f [2]=%.4f\n", sum, got[0],
              got[1], got[2]);
  CHECK_CUDA(cudaDestroyTextureObject(tex));

  tex = linearTexture(dHalves, cudaCreateChannelDescHalf(), kN * sizeof(__half), cudaReadModeElementType);
  fetchFloat<<<(kN + 127) / 128, 128>>>(tex, out, kN);
  CHECK_CUDA(cudaMemcpy(got.data(), out, kN * sizeof(float), cudaMemcpyDeviceToHost));
  double total = 0;
  for (int i = 0; i < kN; ++i) {
    EXPECT_TRUE(got[i] == halfValues[i], "half %d = %f, want %f", i, got[i], halfValues[i]);
    total += got[i];
  }
  std::printf("B half read as float: sum=%.1f fnv=%016llx\n", total,
              static_cast<unsigned long long>(fnv1a64(got.data(), got.size() * sizeof(float))));
  cudaResourceDesc r{};
  CHECK_CUDA(cudaGetTextureObjectResourceDesc(&r, tex));
  printResourceDesc("B half", r, dHalves);
  CHECK_CUDA(cudaDestroyTextureObject(tex));
  CHECK_CUDA(cudaFree(dShorts));
  CHECK_CUDA(cudaFree(dChars));
  CHECK_CUDA(cudaFree(dHalves));
  CHECK_CUDA(cudaFree(out));
}

// --- C: a linear texture at an aligned offset inside an allocation; a misaligned one. ---
void offsetTexture() {
  int alignment = 0, pitchAlignment = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&alignment, cudaDevAttrTextureAlignment, 0));
  CHECK_CUDA(cudaDeviceGetAttribute(&pitchAlignment, cudaDevAttrTexturePitchAlignment, 0));
  std::printf("C textureAlignment=%d texturePitchAlignment=%d\n", alignment, pitchAlignment);
  EXPECT_TRUE(alignment > 0 && alignment % 4 == 0, "alignment %d", alignment);
  const int skip = alignment / static_cast<int>(sizeof(int)) * 3;  // three alignments in
  const int count = 1000;
  const int kN = skip + count + 64;
  std::vector<int> values(kN);
  for (int i = 0; i < kN; ++i) values[i] = static_cast<int>(mix32(i + 77) % 2000001) - 1000000;
  int* buffer = nullptr;
  CHECK_CUDA(cudaMalloc(&buffer, kN * sizeof(int)));
  CHECK_CUDA(cudaMemcpy(buffer, values.data(), kN * sizeof(int), cudaMemcpyHostToDevice));
  cudaTextureObject_t tex = linearTexture(buffer + skip, cudaCreateChannelDesc<int>(), count * sizeof(int),
                                          cudaReadModeElementType);
  int* out = nullptr;
  CHECK_CUDA(cudaMalloc(&out, count * sizeof(int)));
  fetchInt<<<(count + 255) / 256, 256>>>(tex, out, count);
  std::vector<int> got(count);
  CHECK_CUDA(cudaMemcpy(got.data(), out, count * sizeof(int), cudaMemcpyDeviceToHost));
  long long sum = 0;
  for (int i = 0; i < count; ++i) {
    EXPECT_TRUE(got[i] == values[skip + i], "offset fetch %d", i);
    sum += got[i];
  }
  std::printf("C texture at an aligned offset: %d ints, sum=%lld\n", count, sum);
  cudaResourceDesc r{};
  CHECK_CUDA(cudaGetTextureObjectResourceDesc(&r, tex));
  printResourceDesc("C", r, buffer + skip);
  CHECK_CUDA(cudaDestroyTextureObject(tex));

  // Misaligned base (4 bytes past an aligned address): the runtime's answer is printed.
  cudaResourceDesc resource{};
  resource.resType = cudaResourceTypeLinear;
  resource.res.linear.devPtr = buffer + 1;
  resource.res.linear.desc = cudaCreateChannelDesc<int>();
  resource.res.linear.sizeInBytes = 64 * sizeof(int);
  cudaTextureDesc texture{};
  texture.readMode = cudaReadModeElementType;
  cudaTextureObject_t misaligned = 0;
  SHOW_ERROR("C linear texture at a misaligned base",
             cudaCreateTextureObject(&misaligned, &resource, &texture, nullptr));
  if (misaligned != 0) CHECK_CUDA(cudaDestroyTextureObject(misaligned));
  CHECK_CUDA(cudaFree(buffer));
  CHECK_CUDA(cudaFree(out));
}

// --- D: address modes over a pitch2D float texture (normalized coordinates, point filtering). ---
void addressModes() {
  constexpr int kW = 16, kH = 8, kRow = 3;
  std::vector<float> image(kW * kH);
  for (int y = 0; y < kH; ++y)
    for (int x = 0; x < kW; ++x) image[y * kW + x] = static_cast<float>(y * 100 + x);
  float* pitched = nullptr;
  size_t pitch = 0;
  CHECK_CUDA(cudaMallocPitch(reinterpret_cast<void**>(&pitched), &pitch, kW * sizeof(float), kH));
  CHECK_CUDA(cudaMemcpy2D(pitched, pitch, image.data(), kW * sizeof(float), kW * sizeof(float), kH,
                          cudaMemcpyHostToDevice));
  float* out = nullptr;
  CHECK_CUDA(cudaMalloc(&out, 3 * kW * sizeof(float)));
  const cudaTextureAddressMode modes[4] = {cudaAddressModeWrap, cudaAddressModeClamp, cudaAddressModeMirror,
                                           cudaAddressModeBorder};
  const char* names[4] = {"wrap", "clamp", "mirror", "border"};
  for (int m = 0; m < 4; ++m) {
    cudaResourceDesc resource{};
    resource.resType = cudaResourceTypePitch2D;
    resource.res.pitch2D.devPtr = pitched;
    resource.res.pitch2D.desc = cudaCreateChannelDesc<float>();
    resource.res.pitch2D.width = kW;
    resource.res.pitch2D.height = kH;
    resource.res.pitch2D.pitchInBytes = pitch;
    cudaTextureDesc texture{};
    texture.addressMode[0] = modes[m];
    texture.addressMode[1] = cudaAddressModeClamp;
    texture.filterMode = cudaFilterModePoint;
    texture.readMode = cudaReadModeElementType;
    texture.normalizedCoords = 1;
    texture.borderColor[0] = texture.borderColor[1] = texture.borderColor[2] = texture.borderColor[3] = 0.25f;
    cudaTextureObject_t tex = 0;
    CHECK_CUDA(cudaCreateTextureObject(&tex, &resource, &texture, nullptr));
    CHECK_CUDA(cudaMemset(out, 0xff, 3 * kW * sizeof(float)));
    sampleRow<<<1, 3 * kW>>>(tex, out, kW, kH, kRow);
    CHECK_CUDA(cudaGetLastError());
    std::vector<float> got(3 * kW);
    CHECK_CUDA(cudaMemcpy(got.data(), out, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < 3 * kW; ++i) {
      const int x = i - kW;
      float want = 0;
      switch (modes[m]) {
        case cudaAddressModeWrap:
          want = image[kRow * kW + ((x % kW) + kW) % kW];
          break;
        case cudaAddressModeClamp:
          want = image[kRow * kW + (x < 0 ? 0 : (x >= kW ? kW - 1 : x))];
          break;
        case cudaAddressModeMirror:
          want = image[kRow * kW + (x < 0 ? -1 - x : (x >= kW ? 2 * kW - 1 - x : x))];
          break;
        default:
          want = (x < 0 || x >= kW) ? 0.25f : image[kRow * kW + x];
          break;
      }
      EXPECT_TRUE(got[i] == want, "%s: x=%d got %f want %f", names[m], x, got[i], want);
    }
    std::printf("D address mode %-6s: x=-16..31 fnv=%016llx first=%.2f last=%.2f\n", names[m],
                static_cast<unsigned long long>(fnv1a64(got.data(), got.size() * sizeof(float))), got[0],
                got[3 * kW - 1]);
    if (m == 3) {
      cudaTextureDesc back{};
      CHECK_CUDA(cudaGetTextureObjectTextureDesc(&back, tex));
      printTextureDesc("D border", back);
      cudaResourceDesc r{};
      CHECK_CUDA(cudaGetTextureObjectResourceDesc(&r, tex));
      printResourceDesc("D", r, pitched);
      std::printf("D pitch from resource == cudaMallocPitch's: %d\n",
                  r.res.pitch2D.pitchInBytes == pitch ? 1 : 0);
    }
    CHECK_CUDA(cudaDestroyTextureObject(tex));
  }
  CHECK_CUDA(cudaFree(pitched));
  CHECK_CUDA(cudaFree(out));
}

// --- E: linear filtering over pitch2D memory (float, unnormalized; uchar4 normalized float). ---
void linearFiltering() {
  // Powers of two: normalized texel centres and midpoints are exact, so are the filter weights.
  constexpr int kW = 32, kH = 8;
  std::vector<float> image(kW * kH);
  for (int i = 0; i < kW * kH; ++i) image[i] = static_cast<float>(mix32(i + 31) % 64);
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
  texture.addressMode[0] = texture.addressMode[1] = cudaAddressModeClamp;
  texture.filterMode = cudaFilterModeLinear;
  texture.readMode = cudaReadModeElementType;
  cudaTextureObject_t tex = 0;
  CHECK_CUDA(cudaCreateTextureObject(&tex, &resource, &texture, nullptr));
  float* out = nullptr;
  CHECK_CUDA(cudaMalloc(&out, kW * kH * 2 * sizeof(float)));
  sampleQuarters<<<dim3((kW + 7) / 8, (kH + 7) / 8), dim3(8, 8)>>>(tex, out, kW, kH);
  CHECK_CUDA(cudaGetLastError());
  std::vector<float> got(kW * kH * 2);
  CHECK_CUDA(cudaMemcpy(got.data(), out, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
  auto at = [&](int x, int y) {
    x = x < 0 ? 0 : (x >= kW ? kW - 1 : x);
    y = y < 0 ? 0 : (y >= kH ? kH - 1 : y);
    return image[y * kW + x];
  };
  double sum = 0;
  for (int y = 0; y < kH; ++y)
    for (int x = 0; x < kW; ++x) {
      // (x+0.75, y+0.5): 3/4 of texel x, 1/4 of texel x+1 on row y.
      const float h = 0.75f * at(x, y) + 0.25f * at(x + 1, y);
      // (x+0.5, y+0.25): 1/4 of row y-1, 3/4 of row y.
      const float v = 0.25f * at(x, y - 1) + 0.75f * at(x, y);
      EXPECT_TRUE(std::fabs(got[(y * kW + x) * 2] - h) < 1e-3f, "horizontal (%d,%d) %f want %f", x, y,
                  got[(y * kW + x) * 2], h);
      EXPECT_TRUE(std::fabs(got[(y * kW + x) * 2 + 1] - v) < 1e-3f, "vertical (%d,%d) %f want %f", x, y,
                  got[(y * kW + x) * 2 + 1], v);
      sum += std::round(got[(y * kW + x) * 2] * 100.0) / 100.0 +
             std::round(got[(y * kW + x) * 2 + 1] * 100.0) / 100.0;
    }
  std::printf("E float pitch2D linear filter at quarter offsets: sum=%.2f\n", sum);
  CHECK_CUDA(cudaDestroyTextureObject(tex));

  // uchar4, normalized coordinates, linear filtering, read as normalized floats, at midpoints.
  std::vector<uchar4> pixels(kW * kH);
  for (int i = 0; i < kW * kH; ++i) {
    const std::uint32_t m = mix32(i + 999);
    pixels[i] = make_uchar4(m & 0xff, (m >> 8) & 0xff, (m >> 16) & 0xff, m >> 24);
  }
  uchar4* pitchedPixels = nullptr;
  size_t pixelPitch = 0;
  CHECK_CUDA(cudaMallocPitch(reinterpret_cast<void**>(&pitchedPixels), &pixelPitch, kW * sizeof(uchar4), kH));
  CHECK_CUDA(cudaMemcpy2D(pitchedPixels, pixelPitch, pixels.data(), kW * sizeof(uchar4), kW * sizeof(uchar4),
                          kH, cudaMemcpyHostToDevice));
  resource.res.pitch2D.devPtr = pitchedPixels;
  resource.res.pitch2D.desc = cudaCreateChannelDesc<uchar4>();
  resource.res.pitch2D.pitchInBytes = pixelPitch;
  texture.readMode = cudaReadModeNormalizedFloat;
  texture.normalizedCoords = 1;
  CHECK_CUDA(cudaCreateTextureObject(&tex, &resource, &texture, nullptr));
  float4* mids = nullptr;
  CHECK_CUDA(cudaMalloc(&mids, (kW - 1) * kH * sizeof(float4)));
  sampleMidpoints<<<kH, kW>>>(tex, mids, kW, kH);
  CHECK_CUDA(cudaGetLastError());
  std::vector<float4> gotMids((kW - 1) * kH);
  CHECK_CUDA(cudaMemcpy(gotMids.data(), mids, gotMids.size() * sizeof(float4), cudaMemcpyDeviceToHost));
  std::vector<int> sums(gotMids.size() * 4);
  for (int y = 0; y < kH; ++y)
    for (int x = 0; x < kW - 1; ++x) {
      const uchar4 a = pixels[y * kW + x], b = pixels[y * kW + x + 1];
      const int want[4] = {a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w};
      const float4 g = gotMids[y * (kW - 1) + x];
      const float got4[4] = {g.x, g.y, g.z, g.w};
      for (int c = 0; c < 4; ++c) {
        EXPECT_TRUE(std::fabs(got4[c] * 510.0f - want[c]) < 0.05f, "midpoint (%d,%d).%d = %f, want %d/510", x,
                    y, c, got4[c], want[c]);
        sums[(y * (kW - 1) + x) * 4 + c] = static_cast<int>(std::lround(got4[c] * 510.0f));
      }
    }
  std::printf("E uchar4 pitch2D normalized coords+linear+normalized float at midpoints: x510 fnv=%016llx\n",
              static_cast<unsigned long long>(fnv1a64(sums.data(), sums.size() * sizeof(int))));
  cudaTextureDesc back{};
  CHECK_CUDA(cudaGetTextureObjectTextureDesc(&back, tex));
  printTextureDesc("E", back);
  CHECK_CUDA(cudaDestroyTextureObject(tex));
  CHECK_CUDA(cudaFree(pitched));
  CHECK_CUDA(cudaFree(pitchedPixels));
  CHECK_CUDA(cudaFree(out));
  CHECK_CUDA(cudaFree(mids));
}

// --- F: the error names of common mistakes (printed only). ---
void mistakes() {
  int* buffer = nullptr;
  CHECK_CUDA(cudaMalloc(&buffer, 1 << 16));
  cudaResourceDesc resource{};
  resource.resType = cudaResourceTypeLinear;
  resource.res.linear.devPtr = buffer;
  resource.res.linear.desc = cudaCreateChannelDesc<int>();
  resource.res.linear.sizeInBytes = 1024;
  cudaTextureDesc texture{};
  texture.readMode = cudaReadModeNormalizedFloat;
  cudaTextureObject_t tex = 0;
  SHOW_ERROR("F int32 read as normalized float", cudaCreateTextureObject(&tex, &resource, &texture, nullptr));
  if (tex) CHECK_CUDA(cudaDestroyTextureObject(tex));
  tex = 0;
  texture.readMode = cudaReadModeElementType;
  texture.filterMode = cudaFilterModeLinear;
  SHOW_ERROR("F int32 element type with linear filtering",
             cudaCreateTextureObject(&tex, &resource, &texture, nullptr));
  if (tex) CHECK_CUDA(cudaDestroyTextureObject(tex));
  tex = 0;
  texture.filterMode = cudaFilterModePoint;
  resource.res.linear.sizeInBytes = 0;
  SHOW_ERROR("F linear texture of 0 bytes", cudaCreateTextureObject(&tex, &resource, &texture, nullptr));
  if (tex) CHECK_CUDA(cudaDestroyTextureObject(tex));
  tex = 0;
  resource.res.linear.sizeInBytes = 1024;
  resource.res.linear.devPtr = nullptr;
  SHOW_ERROR("F linear texture at null", cudaCreateTextureObject(&tex, &resource, &texture, nullptr));
  if (tex) CHECK_CUDA(cudaDestroyTextureObject(tex));
  tex = 0;
  // Pitch2D with a pitch that is not a multiple of the pitch alignment.
  cudaResourceDesc pitchResource{};
  pitchResource.resType = cudaResourceTypePitch2D;
  pitchResource.res.pitch2D.devPtr = buffer;
  pitchResource.res.pitch2D.desc = cudaCreateChannelDesc<float>();
  pitchResource.res.pitch2D.width = 10;
  pitchResource.res.pitch2D.height = 10;
  pitchResource.res.pitch2D.pitchInBytes = 44;
  SHOW_ERROR("F pitch2D with an unaligned pitch",
             cudaCreateTextureObject(&tex, &pitchResource, &texture, nullptr));
  if (tex) CHECK_CUDA(cudaDestroyTextureObject(tex));
  tex = 0;
  // Pitch smaller than a row.
  pitchResource.res.pitch2D.width = 64;
  pitchResource.res.pitch2D.pitchInBytes = 128;
  SHOW_ERROR("F pitch2D with a pitch smaller than a row",
             cudaCreateTextureObject(&tex, &pitchResource, &texture, nullptr));
  if (tex) CHECK_CUDA(cudaDestroyTextureObject(tex));
  SHOW_ERROR("F destroy texture object 0", cudaDestroyTextureObject(0));
  CHECK_CUDA(cudaFree(buffer));
}

}  // namespace

int main() {
  normalizedUchar4();
  otherFormats();
  offsetTexture();
  addressModes();
  linearFiltering();
  mistakes();
  CHECK_CUDA(cudaDeviceSynchronize());
  std::printf("probe_texture_linear_pitch OK\n");
  return 0;
}
