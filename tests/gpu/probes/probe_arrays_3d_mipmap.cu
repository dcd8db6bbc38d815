// Probe: CUDA arrays beyond the suite's 2D float cases.
//   A  a 1D array (cudaMallocArray with height 0): cudaArrayGetInfo, tex1D with normalized
//      coordinates, wrap addressing and linear filtering at quarter positions;
//   B  a 3D ushort array: cudaMemcpy3DAsync from pinned host memory into a sub-box (srcPos in bytes
//      of the host side, dstPos in elements of the array), readback with cudaMemcpyDefault, a tex3D
//      normalized-float read; the documented "kind silently corrected" case (HostToHost naming an
//      array) and an array-to-array copy between element sizes (error names printed);
//   C  a 3D float array written only by a kernel through surf3Dwrite, rewritten with
//      surf3Dread/surf3Dwrite, read back with cudaMemcpy3D and with tex3D trilinear filtering at
//      the centres of 2x2x2 neighbourhoods (weights 1/2, exact);
//   D  surface boundary modes: cudaBoundaryModeZero reads/writes and cudaBoundaryModeClamp
//      reads/writes out of range;
//   E  a mipmapped array of a non-power-of-two extent with cudaArraySurfaceLoadStore: level
//      extents, mip generation by a kernel through surfaces on each level, tex2DLod on every level,
//      trilinear (mipmapFilterMode linear at lod 0.5), min/max level clamps, level bias (printed),
//      cudaMemcpy2DFromArray of a level, cudaMemcpy2DArrayToArray from a level to a plain array;
//      numLevels 0 and beyond the extent's (documented as clamped; error names printed);
//   F  tex2Dgather on an array made with cudaArrayTextureGather;
//   G  cudaGetChannelDesc / cudaArrayGetInfo on each kind of array.
#include <algorithm>
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

void printInfo(const char* label, cudaArray_t array) {
  cudaChannelFormatDesc desc{};
  cudaExtent extent{};
  unsigned flags = 0;
  const cudaError_t error = cudaArrayGetInfo(&desc, &extent, &flags, array);
  if (error != cudaSuccess) {
    std::printf("%s cudaArrayGetInfo: %s\n", label, cudaGetErrorName(error));
    (void)cudaGetLastError();
    return;
  }
  cudaChannelFormatDesc channel{};
  CHECK_CUDA(cudaGetChannelDesc(&channel, array));
  EXPECT_TRUE(std::memcmp(&channel, &desc, sizeof desc) == 0, "%s: cudaGetChannelDesc differs", label);
  std::printf("%s info: extent=%zux%zux%zu flags=0x%x channel=(%d,%d,%d,%d,kind %d)\n", label, extent.width,
              extent.height, extent.depth, flags, desc.x, desc.y, desc.z, desc.w, static_cast<int>(desc.f));
}

cudaTextureObject_t arrayTexture(cudaArray_t array, cudaTextureAddressMode mode, cudaTextureFilterMode filter,
                                 cudaTextureReadMode read, bool normalized) {
  cudaResourceDesc resource{};
  resource.resType = cudaResourceTypeArray;
  resource.res.array.array = array;
  cudaTextureDesc texture{};
  texture.addressMode[0] = texture.addressMode[1] = texture.addressMode[2] = mode;
  texture.filterMode = filter;
  texture.readMode = read;
  texture.normalizedCoords = normalized ? 1 : 0;
  cudaTextureObject_t tex = 0;
  CHECK_CUDA(cudaCreateTextureObject(&tex, &resource, &texture, nullptr));
  return tex;
}

cudaSurfaceObject_t arraySurface(cudaArray_t array) {
  cudaResourceDesc resource{};
  resource.resType = cudaResourceTypeArray;
  resource.res.array.array = array;
  cudaSurfaceObject_t surface = 0;
  CHECK_CUDA(cudaCreateSurfaceObject(&surface, &resource));
  return surface;
}

// ---------------------------------------------------------------- kernels
__global__ void sample1D(cudaTextureObject_t tex, float* out, int w) {
  const int x = threadIdx.x;
  if (x < w) out[x] = tex1D<float>(tex, (x + 0.75f) / w);
}

__global__ void read3DNormalized(cudaTextureObject_t tex, float* out, int w, int h, int d) {
  const int x = threadIdx.x, y = blockIdx.x, z = blockIdx.y;
  if (x < w && y < h && z < d) out[(z * h + y) * w + x] = tex3D<float>(tex, x + 0.5f, y + 0.5f, z + 0.5f);
}

__global__ void write3D(cudaSurfaceObject_t surface, int w, int h, int d) {
  const int x = threadIdx.x, y = blockIdx.x, z = blockIdx.y;
  if (x < w && y < h && z < d)
    surf3Dwrite(static_cast<float>(x + 10 * y + 100 * z), surface, x * static_cast<int>(sizeof(float)), y, z);
}

__global__ void rewrite3D(cudaSurfaceObject_t surface, int w, int h, int d) {
  const int x = threadIdx.x, y = blockIdx.x, z = blockIdx.y;
  if (x >= w || y >= h || z >= d) return;
  float v = 0;
  surf3Dread(&v, surface, x * static_cast<int>(sizeof(float)), y, z);
  surf3Dwrite(v * 2.0f + 1.0f, surface, x * static_cast<int>(sizeof(float)), y, z);
}

__global__ void trilinear3D(cudaTextureObject_t tex, float* out, int w, int h, int d) {
  const int x = threadIdx.x, y = blockIdx.x, z = blockIdx.y;  // 0 .. n-2
  if (x < w - 1 && y < h - 1 && z < d - 1)
    out[(z * (h - 1) + y) * (w - 1) + x] = tex3D<float>(tex, x + 1.0f, y + 1.0f, z + 1.0f);
}

constexpr int kBW = 16, kBH = 8;
__global__ void boundaries(cudaSurfaceObject_t surface, float* reads) {
  const int i = threadIdx.x;
  constexpr int f = sizeof(float);
  if (i < kBW + 2) {
    const int x = i - 1;  // -1 .. kBW
    reads[i] = surf2Dread<float>(surface, x * f, 1, cudaBoundaryModeZero);
    reads[32 + i] = surf2Dread<float>(surface, x * f, 1, cudaBoundaryModeClamp);
  }
  if (i == 0) {
    reads[64] = surf2Dread<float>(surface, 3 * f, -1, cudaBoundaryModeZero);
    reads[65] = surf2Dread<float>(surface, 3 * f, kBH, cudaBoundaryModeZero);
    reads[66] = surf2Dread<float>(surface, 3 * f, -1, cudaBoundaryModeClamp);
    reads[67] = surf2Dread<float>(surface, 3 * f, kBH + 4, cudaBoundaryModeClamp);
  }
  __syncthreads();
  if (i == 0) surf2Dwrite(-1.0f, surface, (kBW + 2) * f, 2, cudaBoundaryModeZero);
  if (i == 1) surf2Dwrite(-2.0f, surface, 3 * f, kBH + 1, cudaBoundaryModeZero);
  if (i == 2) surf2Dwrite(-3.0f, surface, (kBW + 5) * f, 4, cudaBoundaryModeClamp);
  if (i == 3) surf2Dwrite(-4.0f, surface, -3 * f, 5, cudaBoundaryModeClamp);
  if (i == 4) surf2Dwrite(-5.0f, surface, 5 * f, kBH + 3, cudaBoundaryModeClamp);
}

__global__ void downsample(cudaSurfaceObject_t src, cudaSurfaceObject_t dst, int dw, int dh) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= dw || y >= dh) return;
  constexpr int f = sizeof(float);
  // Clamped reads: a level of height 1 (2x1 -> 1x1) has no row 2y+1.
  const float a = surf2Dread<float>(src, (2 * x) * f, 2 * y, cudaBoundaryModeClamp);
  const float b = surf2Dread<float>(src, (2 * x + 1) * f, 2 * y, cudaBoundaryModeClamp);
  const float c = surf2Dread<float>(src, (2 * x) * f, 2 * y + 1, cudaBoundaryModeClamp);
  const float d = surf2Dread<float>(src, (2 * x + 1) * f, 2 * y + 1, cudaBoundaryModeClamp);
  surf2Dwrite((((a + b) + c) + d) * 0.25f, dst, x * f, y);
}

// Samples the centres of a w x h grid at level-of-detail lod.
__global__ void sampleGrid(cudaTextureObject_t tex, float* out, int w, int h, float lod) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < w && y < h) out[y * w + x] = tex2DLod<float>(tex, (x + 0.5f) / w, (y + 0.5f) / h, lod);
}

__global__ void gather(cudaTextureObject_t tex, float4* out, int w, int h) {
  const int x = threadIdx.x, y = blockIdx.x;  // 0 .. n-2
  if (x < w - 1 && y < h - 1) out[y * (w - 1) + x] = tex2Dgather<float4>(tex, x + 1.0f, y + 1.0f, 0);
}

// ---------------------------------------------------------------- A
void oneDimensional() {
  constexpr int kW = 64;
  std::vector<float> values(kW);
  for (int i = 0; i < kW; ++i) values[i] = static_cast<float>(mix32(i + 3) % 64);
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaArray_t array = nullptr;
  CHECK_CUDA(cudaMallocArray(&array, &desc, kW));
  printInfo("A 1D array", array);
  CHECK_CUDA(cudaMemcpy2DToArray(array, 0, 0, values.data(), kW * sizeof(float), kW * sizeof(float), 1,
                                 cudaMemcpyHostToDevice));
  cudaTextureObject_t tex =
      arrayTexture(array, cudaAddressModeWrap, cudaFilterModeLinear, cudaReadModeElementType, true);
  float* out = nullptr;
  CHECK_CUDA(cudaMalloc(&out, kW * sizeof(float)));
  sample1D<<<1, kW>>>(tex, out, kW);
  CHECK_CUDA(cudaGetLastError());
  std::vector<float> got(kW);
  CHECK_CUDA(cudaMemcpy(got.data(), out, kW * sizeof(float), cudaMemcpyDeviceToHost));
  double sum = 0;
  for (int x = 0; x < kW; ++x) {
    const float want = 0.75f * values[x] + 0.25f * values[(x + 1) % kW];
    EXPECT_TRUE(std::fabs(got[x] - want) < 1e-3f, "1D x=%d got %f want %f", x, got[x], want);
    sum += std::round(got[x] * 100.0) / 100.0;
  }
  std::printf("A tex1D wrap+linear at quarter positions: sum=%.2f last=%.2f\n", sum, got[kW - 1]);
  CHECK_CUDA(cudaDestroyTextureObject(tex));
  CHECK_CUDA(cudaFreeArray(array));
  CHECK_CUDA(cudaFree(out));
}

// ---------------------------------------------------------------- B
void threeDimensionalCopies() {
  constexpr int kW = 20, kH = 12, kD = 6;                   // the array, in elements
  constexpr int kHW = 16, kHPitch = 20, kHH = 10, kHD = 5;  // the host box (pitch in elements)
  constexpr int kEW = 10, kEH = 6, kED = 3;                 // the copied extent
  constexpr int kSX = 2, kSY = 1, kSZ = 1;                  // source position (host, elements)
  constexpr int kDX = 3, kDY = 2, kDZ = 1;                  // destination position (array, elements)
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<unsigned short>();
  cudaArray_t array = nullptr;
  CHECK_CUDA(cudaMalloc3DArray(&array, &desc, make_cudaExtent(kW, kH, kD), cudaArraySurfaceLoadStore));
  printInfo("B 3D ushort array", array);

  std::vector<unsigned short> zeros(kW * kH * kD, 0);
  cudaMemcpy3DParms clear{};
  clear.srcPtr = make_cudaPitchedPtr(zeros.data(), kW * sizeof(unsigned short), kW, kH);
  clear.dstArray = array;
  clear.extent = make_cudaExtent(kW, kH, kD);
  clear.kind = cudaMemcpyHostToDevice;
  CHECK_CUDA(cudaMemcpy3D(&clear));
  CHECK_CUDA(cudaDeviceSynchronize());  // before the non-blocking stream's copy into the same array

  unsigned short* host = nullptr;
  CHECK_CUDA(cudaMallocHost(&host, kHPitch * kHH * kHD * sizeof(unsigned short)));
  for (int i = 0; i < kHPitch * kHH * kHD; ++i)
    host[i] = static_cast<unsigned short>(mix32(i + 404) & 0xffff);
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaMemcpy3DParms up{};
  up.srcPtr = make_cudaPitchedPtr(host, kHPitch * sizeof(unsigned short), kHW * sizeof(unsigned short), kHH);
  up.srcPos = make_cudaPos(kSX * sizeof(unsigned short), kSY, kSZ);  // bytes on the linear side
  up.dstArray = array;
  up.dstPos = make_cudaPos(kDX, kDY, kDZ);  // elements on the array side
  up.extent = make_cudaExtent(kEW, kEH, kED);
  up.kind = cudaMemcpyHostToDevice;
  CHECK_CUDA(cudaMemcpy3DAsync(&up, stream));

  std::vector<unsigned short> back(kW * kH * kD, 0xBEEF);
  cudaMemcpy3DParms down{};
  down.srcArray = array;
  down.dstPtr = make_cudaPitchedPtr(back.data(), kW * sizeof(unsigned short), kW, kH);
  down.extent = make_cudaExtent(kW, kH, kD);
  down.kind = cudaMemcpyDefault;
  CHECK_CUDA(cudaMemcpy3DAsync(&down, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  std::vector<unsigned short> expected(kW * kH * kD, 0);
  for (int z = 0; z < kED; ++z)
    for (int y = 0; y < kEH; ++y)
      for (int x = 0; x < kEW; ++x)
        expected[((z + kDZ) * kH + y + kDY) * kW + x + kDX] =
            host[((z + kSZ) * kHH + y + kSY) * kHPitch + x + kSX];
  for (int i = 0; i < kW * kH * kD; ++i) EXPECT_TRUE(back[i] == expected[i], "3D ushort element %d", i);
  std::printf("B 3D sub-box copy into a ushort array (positions on both sides): fnv=%016llx\n",
              static_cast<unsigned long long>(fnv1a64(back.data(), back.size() * sizeof(unsigned short))));

  // Point-sampled, normalized-float reads of every voxel.
  cudaTextureObject_t tex =
      arrayTexture(array, cudaAddressModeClamp, cudaFilterModePoint, cudaReadModeNormalizedFloat, false);
  float* out = nullptr;
  CHECK_CUDA(cudaMalloc(&out, kW * kH * kD * sizeof(float)));
  read3DNormalized<<<dim3(kH, kD), kW>>>(tex, out, kW, kH, kD);
  CHECK_CUDA(cudaGetLastError());
  std::vector<float> got(kW * kH * kD);
  CHECK_CUDA(cudaMemcpy(got.data(), out, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
  long long sum = 0;
  for (int i = 0; i < kW * kH * kD; ++i) {
    EXPECT_TRUE(std::fabs(got[i] * 65535.0f - expected[i]) < 0.02f, "tex3D unorm16 %d = %f want %u", i,
                got[i], expected[i]);
    sum += std::lround(got[i] * 65535.0f);
  }
  std::printf("B tex3D normalized-float reads: sum x65535 = %lld\n", sum);
  CHECK_CUDA(cudaDestroyTextureObject(tex));

  // HostToHost naming an array: documented as silently corrected to the array's side.
  std::vector<unsigned short> ones(kW * kH, 7);
  cudaMemcpy3DParms wrongKind{};
  wrongKind.srcPtr = make_cudaPitchedPtr(ones.data(), kW * sizeof(unsigned short), kW, kH);
  wrongKind.dstArray = array;
  wrongKind.dstPos = make_cudaPos(0, 0, kD - 1);
  wrongKind.extent = make_cudaExtent(kW, kH, 1);
  wrongKind.kind = cudaMemcpyHostToHost;
  const cudaError_t wrong = cudaMemcpy3D(&wrongKind);
  std::printf("B cudaMemcpy3D host->array with cudaMemcpyHostToHost: %s\n", cudaGetErrorName(wrong));
  (void)cudaGetLastError();
  if (wrong == cudaSuccess) {
    std::vector<unsigned short> slice(kW * kH, 0);
    cudaMemcpy3DParms read{};
    read.srcArray = array;
    read.srcPos = make_cudaPos(0, 0, kD - 1);
    read.dstPtr = make_cudaPitchedPtr(slice.data(), kW * sizeof(unsigned short), kW, kH);
    read.extent = make_cudaExtent(kW, kH, 1);
    read.kind = cudaMemcpyDeviceToHost;
    CHECK_CUDA(cudaMemcpy3D(&read));
    EXPECT_TRUE(slice == ones, "the corrected copy did not land");
    std::printf("B corrected copy landed: yes\n");
  }

  // Array to array with different element sizes: documented as an error.
  cudaChannelFormatDesc floatDesc = cudaCreateChannelDesc<float>();
  cudaArray_t floats = nullptr;
  CHECK_CUDA(cudaMalloc3DArray(&floats, &floatDesc, make_cudaExtent(kW, kH, kD)));
  cudaMemcpy3DParms mismatch{};
  mismatch.srcArray = array;
  mismatch.dstArray = floats;
  mismatch.extent = make_cudaExtent(4, 4, 1);
  mismatch.kind = cudaMemcpyDeviceToDevice;
  SHOW_ERROR("B cudaMemcpy3D between arrays of 2- and 4-byte elements", cudaMemcpy3D(&mismatch));
  CHECK_CUDA(cudaFreeArray(floats));

  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFreeHost(host));
  CHECK_CUDA(cudaFreeArray(array));
  CHECK_CUDA(cudaFree(out));
}

// ---------------------------------------------------------------- C
void surfaces3D() {
  constexpr int kN = 8;
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaArray_t array = nullptr;
  CHECK_CUDA(cudaMalloc3DArray(&array, &desc, make_cudaExtent(kN, kN, kN), cudaArraySurfaceLoadStore));
  printInfo("C 3D float surface array", array);
  cudaSurfaceObject_t surface = arraySurface(array);
  write3D<<<dim3(kN, kN), kN>>>(surface, kN, kN, kN);
  CHECK_CUDA(cudaGetLastError());
  rewrite3D<<<dim3(kN, kN), kN>>>(surface, kN, kN, kN);
  CHECK_CUDA(cudaGetLastError());
  std::vector<float> back(kN * kN * kN, -1.0f);
  cudaMemcpy3DParms down{};
  down.srcArray = array;
  down.dstPtr = make_cudaPitchedPtr(back.data(), kN * sizeof(float), kN, kN);
  down.extent = make_cudaExtent(kN, kN, kN);
  down.kind = cudaMemcpyDeviceToHost;
  CHECK_CUDA(cudaMemcpy3D(&down));
  auto value = [](int x, int y, int z) { return static_cast<float>(x + 10 * y + 100 * z) * 2.0f + 1.0f; };
  for (int z = 0; z < kN; ++z)
    for (int y = 0; y < kN; ++y)
      for (int x = 0; x < kN; ++x)
        EXPECT_TRUE(back[(z * kN + y) * kN + x] == value(x, y, z), "surf3D (%d,%d,%d) = %f", x, y, z,
                    back[(z * kN + y) * kN + x]);
  std::printf("C surf3Dwrite + surf3Dread/write then cudaMemcpy3D: fnv=%016llx\n",
              static_cast<unsigned long long>(fnv1a64(back.data(), back.size() * sizeof(float))));

  cudaTextureObject_t tex =
      arrayTexture(array, cudaAddressModeClamp, cudaFilterModeLinear, cudaReadModeElementType, false);
  constexpr int kM = kN - 1;
  float* out = nullptr;
  CHECK_CUDA(cudaMalloc(&out, kM * kM * kM * sizeof(float)));
  trilinear3D<<<dim3(kN, kN), kN>>>(tex, out, kN, kN, kN);
  CHECK_CUDA(cudaGetLastError());
  std::vector<float> got(kM * kM * kM);
  CHECK_CUDA(cudaMemcpy(got.data(), out, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
  double sum = 0;
  for (int z = 0; z < kM; ++z)
    for (int y = 0; y < kM; ++y)
      for (int x = 0; x < kM; ++x) {
        float want = 0;
        for (int c = 0; c < 8; ++c) want += value(x + (c & 1), y + ((c >> 1) & 1), z + (c >> 2));
        want /= 8.0f;
        const float g = got[(z * kM + y) * kM + x];
        EXPECT_TRUE(std::fabs(g - want) < 1e-3f, "trilinear (%d,%d,%d) = %f want %f", x, y, z, g, want);
        sum += std::round(g * 100.0) / 100.0;
      }
  std::printf("C tex3D trilinear at 2x2x2 centres: sum=%.2f\n", sum);
  CHECK_CUDA(cudaDestroyTextureObject(tex));
  CHECK_CUDA(cudaDestroySurfaceObject(surface));
  CHECK_CUDA(cudaFreeArray(array));
  CHECK_CUDA(cudaFree(out));
}

// ---------------------------------------------------------------- D
void boundaryModes() {
  std::vector<float> image(kBW * kBH);
  for (int i = 0; i < kBW * kBH; ++i) image[i] = static_cast<float>(i + 1);
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaArray_t array = nullptr;
  CHECK_CUDA(cudaMallocArray(&array, &desc, kBW, kBH, cudaArraySurfaceLoadStore));
  CHECK_CUDA(cudaMemcpy2DToArray(array, 0, 0, image.data(), kBW * sizeof(float), kBW * sizeof(float), kBH,
                                 cudaMemcpyHostToDevice));
  cudaSurfaceObject_t surface = arraySurface(array);
  float* reads = nullptr;
  CHECK_CUDA(cudaMalloc(&reads, 68 * sizeof(float)));
  CHECK_CUDA(cudaMemset(reads, 0xff, 68 * sizeof(float)));
  boundaries<<<1, 32>>>(surface, reads);
  CHECK_CUDA(cudaGetLastError());
  std::vector<float> got(68);
  CHECK_CUDA(cudaMemcpy(got.data(), reads, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < kBW + 2; ++i) {
    const int x = i - 1;
    const float zero = (x < 0 || x >= kBW) ? 0.0f : image[kBW + x];
    const float clamp = image[kBW + std::min(std::max(x, 0), kBW - 1)];
    EXPECT_TRUE(got[i] == zero, "zero-mode read x=%d: %f", x, got[i]);
    EXPECT_TRUE(got[32 + i] == clamp, "clamp-mode read x=%d: %f", x, got[32 + i]);
  }
  EXPECT_TRUE(got[64] == 0.0f && got[65] == 0.0f, "zero-mode reads off the rows: %f %f", got[64], got[65]);
  EXPECT_TRUE(got[66] == image[3] && got[67] == image[(kBH - 1) * kBW + 3],
              "clamp-mode reads off the rows: %f %f", got[66], got[67]);
  std::printf(
      "D boundary reads: zero x=-1 %.1f x=%d %.1f; clamp x=-1 %.1f x=%d %.1f; rows -1/%d zero %.1f/%.1f "
      "clamp %.1f/%.1f\n",
      got[0], kBW, got[kBW + 1], got[32], kBW, got[32 + kBW + 1], kBH, got[64], got[65], got[66], got[67]);
  std::vector<float> after(kBW * kBH);
  CHECK_CUDA(cudaMemcpy2DFromArray(after.data(), kBW * sizeof(float), array, 0, 0, kBW * sizeof(float), kBH,
                                   cudaMemcpyDeviceToHost));
  std::vector<float> want = image;
  want[4 * kBW + kBW - 1] = -3.0f;
  want[5 * kBW + 0] = -4.0f;
  want[(kBH - 1) * kBW + 5] = -5.0f;
  int changed = 0;
  for (int i = 0; i < kBW * kBH; ++i) changed += after[i] != image[i];
  for (int i = 0; i < kBW * kBH; ++i)
    EXPECT_TRUE(after[i] == want[i], "after boundary writes, element %d = %f want %f", i, after[i], want[i]);
  std::printf(
      "D boundary writes: %d elements changed (zero-mode writes dropped, clamp-mode writes clamped)\n",
      changed);
  CHECK_CUDA(cudaDestroySurfaceObject(surface));
  CHECK_CUDA(cudaFreeArray(array));
  CHECK_CUDA(cudaFree(reads));
}

// ---------------------------------------------------------------- E
constexpr int kMW = 40, kMH = 24, kLevels = 6;  // 40x24, 20x12, 10x6, 5x3, 2x1, 1x1

std::vector<float> runGrid(cudaTextureObject_t tex, int w, int h, float lod) {
  float* out = nullptr;
  CHECK_CUDA(cudaMalloc(&out, w * h * sizeof(float)));
  sampleGrid<<<dim3((w + 15) / 16, (h + 15) / 16), dim3(16, 16)>>>(tex, out, w, h, lod);
  CHECK_CUDA(cudaGetLastError());
  std::vector<float> got(w * h);
  CHECK_CUDA(cudaMemcpy(got.data(), out, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaFree(out));
  return got;
}

cudaTextureObject_t mipTexture(cudaMipmappedArray_t mip, cudaTextureFilterMode mipFilter, float minClamp,
                               float maxClamp, float bias) {
  cudaResourceDesc resource{};
  resource.resType = cudaResourceTypeMipmappedArray;
  resource.res.mipmap.mipmap = mip;
  cudaTextureDesc texture{};
  texture.addressMode[0] = texture.addressMode[1] = cudaAddressModeClamp;
  texture.filterMode = cudaFilterModePoint;
  texture.mipmapFilterMode = mipFilter;
  texture.readMode = cudaReadModeElementType;
  texture.normalizedCoords = 1;
  texture.minMipmapLevelClamp = minClamp;
  texture.maxMipmapLevelClamp = maxClamp;
  texture.mipmapLevelBias = bias;
  texture.disableTrilinearOptimization = 1;
  cudaTextureObject_t tex = 0;
  CHECK_CUDA(cudaCreateTextureObject(&tex, &resource, &texture, nullptr));
  return tex;
}

void mipmaps() {
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaMipmappedArray_t mip = nullptr;
  CHECK_CUDA(cudaMallocMipmappedArray(&mip, &desc, make_cudaExtent(kMW, kMH, 0), kLevels,
                                      cudaArraySurfaceLoadStore));
  std::vector<std::vector<float>> cpu(kLevels);
  int w[kLevels], h[kLevels];
  cudaArray_t levels[kLevels];
  for (int l = 0; l < kLevels; ++l) {
    CHECK_CUDA(cudaGetMipmappedArrayLevel(&levels[l], mip, l));
    w[l] = std::max(1, kMW >> l);
    h[l] = std::max(1, kMH >> l);
    cudaExtent extent{};
    unsigned flags = 0;
    CHECK_CUDA(cudaArrayGetInfo(nullptr, &extent, &flags, levels[l]));
    std::printf("E level %d: %zux%zux%zu flags=0x%x\n", l, extent.width, extent.height, extent.depth, flags);
    EXPECT_TRUE(extent.width == static_cast<size_t>(w[l]) && extent.height == static_cast<size_t>(h[l]),
                "level %d extent", l);
  }
  SHOW_ERROR("E cudaGetMipmappedArrayLevel past the last level",
             cudaGetMipmappedArrayLevel(&levels[0], mip, kLevels));
  CHECK_CUDA(cudaGetMipmappedArrayLevel(&levels[0], mip, 0));

  cpu[0].resize(kMW * kMH);
  for (int i = 0; i < kMW * kMH; ++i) cpu[0][i] = static_cast<float>(mix32(i + 2024) % 256);
  CHECK_CUDA(cudaMemcpy2DToArray(levels[0], 0, 0, cpu[0].data(), kMW * sizeof(float), kMW * sizeof(float),
                                 kMH, cudaMemcpyHostToDevice));
  // Mip generation through surfaces on consecutive levels.
  for (int l = 1; l < kLevels; ++l) {
    cudaSurfaceObject_t src = arraySurface(levels[l - 1]), dst = arraySurface(levels[l]);
    downsample<<<dim3((w[l] + 7) / 8, (h[l] + 7) / 8), dim3(8, 8)>>>(src, dst, w[l], h[l]);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDestroySurfaceObject(src));
    CHECK_CUDA(cudaDestroySurfaceObject(dst));
    cpu[l].resize(w[l] * h[l]);
    const int pw = w[l - 1], ph = h[l - 1];
    const std::vector<float>& p = cpu[l - 1];
    auto at = [&](int x, int y) { return p[std::min(y, ph - 1) * pw + std::min(x, pw - 1)]; };
    for (int y = 0; y < h[l]; ++y)
      for (int x = 0; x < w[l]; ++x)
        cpu[l][y * w[l] + x] =
            (((at(2 * x, 2 * y) + at(2 * x + 1, 2 * y)) + at(2 * x, 2 * y + 1)) + at(2 * x + 1, 2 * y + 1)) *
            0.25f;
  }
  // Every level through tex2DLod.
  cudaTextureObject_t tex = mipTexture(mip, cudaFilterModePoint, 0.0f, kLevels - 1, 0.0f);
  for (int l = 0; l < kLevels; ++l) {
    const std::vector<float> got = runGrid(tex, w[l], h[l], static_cast<float>(l));
    for (int i = 0; i < w[l] * h[l]; ++i)
      EXPECT_TRUE(got[i] == cpu[l][i], "level %d texel %d = %f want %f", l, i, got[i], cpu[l][i]);
    std::printf("E generated level %d (%dx%d) via tex2DLod: fnv=%016llx\n", l, w[l], h[l],
                static_cast<unsigned long long>(fnv1a64(got.data(), got.size() * sizeof(float))));
  }
  CHECK_CUDA(cudaDestroyTextureObject(tex));

  // Linear between levels 0 and 1 at lod 0.5, point within each level.
  tex = mipTexture(mip, cudaFilterModeLinear, 0.0f, kLevels - 1, 0.0f);
  {
    const std::vector<float> got = runGrid(tex, w[0], h[0], 0.5f);
    double sum = 0;
    for (int y = 0; y < h[0]; ++y)
      for (int x = 0; x < w[0]; ++x) {
        const float want = 0.5f * cpu[0][y * w[0] + x] + 0.5f * cpu[1][(y / 2) * w[1] + x / 2];
        EXPECT_TRUE(std::fabs(got[y * w[0] + x] - want) < 1e-3f, "lod 0.5 (%d,%d) = %f want %f", x, y,
                    got[y * w[0] + x], want);
        sum += std::round(got[y * w[0] + x] * 100.0) / 100.0;
      }
    std::printf("E mipmapFilterMode linear at lod 0.5: sum=%.2f\n", sum);
  }
  CHECK_CUDA(cudaDestroyTextureObject(tex));

  // Clamps: lod 4 with max clamp 2 reads level 2; lod 0 with min clamp 1 reads level 1.
  tex = mipTexture(mip, cudaFilterModePoint, 0.0f, 2.0f, 0.0f);
  {
    const std::vector<float> got = runGrid(tex, w[2], h[2], 4.0f);
    EXPECT_TRUE(got == cpu[2], "max level clamp");
    std::printf("E maxMipmapLevelClamp 2 at lod 4 reads level 2: yes\n");
  }
  CHECK_CUDA(cudaDestroyTextureObject(tex));
  tex = mipTexture(mip, cudaFilterModePoint, 1.0f, kLevels - 1, 0.0f);
  {
    const std::vector<float> got = runGrid(tex, w[1], h[1], 0.0f);
    EXPECT_TRUE(got == cpu[1], "min level clamp");
    std::printf("E minMipmapLevelClamp 1 at lod 0 reads level 1: yes\n");
  }
  CHECK_CUDA(cudaDestroyTextureObject(tex));
  // Bias 1 at lod 1: which level answers is printed, not expected.
  tex = mipTexture(mip, cudaFilterModePoint, 0.0f, kLevels - 1, 1.0f);
  {
    int matched = -1;
    for (int l = 0; l < kLevels && matched < 0; ++l) {
      if (runGrid(tex, w[l], h[l], 1.0f) == cpu[l]) matched = l;
    }
    std::printf("E mipmapLevelBias 1 at lod 1 reads level: %d\n", matched);
    cudaTextureDesc back{};
    CHECK_CUDA(cudaGetTextureObjectTextureDesc(&back, tex));
    std::printf("E texture desc back: mipFilter=%d bias=%.2f min=%.2f max=%.2f noTrilinearOpt=%d\n",
                static_cast<int>(back.mipmapFilterMode), back.mipmapLevelBias, back.minMipmapLevelClamp,
                back.maxMipmapLevelClamp, back.disableTrilinearOptimization);
    cudaResourceDesc resource{};
    CHECK_CUDA(cudaGetTextureObjectResourceDesc(&resource, tex));
    std::printf("E resource back: type=%d mipmap==given:%d\n", static_cast<int>(resource.resType),
                resource.res.mipmap.mipmap == mip ? 1 : 0);
  }
  CHECK_CUDA(cudaDestroyTextureObject(tex));

  // Level 3 (5x3) straight to the host; level 1 to a plain array, then to the host with cudaMemcpy3D.
  std::vector<float> level3(w[3] * h[3], -1.0f);
  CHECK_CUDA(cudaMemcpy2DFromArray(level3.data(), w[3] * sizeof(float), levels[3], 0, 0, w[3] * sizeof(float),
                                   h[3], cudaMemcpyDeviceToHost));
  EXPECT_TRUE(level3 == cpu[3], "level 3 readback");
  cudaArray_t plain = nullptr;
  CHECK_CUDA(cudaMallocArray(&plain, &desc, w[1], h[1]));
  CHECK_CUDA(cudaMemcpy2DArrayToArray(plain, 0, 0, levels[1], 0, 0, w[1] * sizeof(float), h[1],
                                      cudaMemcpyDeviceToDevice));
  std::vector<float> level1(w[1] * h[1], -1.0f);
  cudaMemcpy3DParms down{};
  down.srcArray = plain;
  down.dstPtr = make_cudaPitchedPtr(level1.data(), w[1] * sizeof(float), w[1], h[1]);
  down.extent = make_cudaExtent(w[1], h[1], 1);
  down.kind = cudaMemcpyDefault;
  CHECK_CUDA(cudaMemcpy3D(&down));
  EXPECT_TRUE(level1 == cpu[1], "level 1 via a plain array");
  std::printf("E level readbacks (cudaMemcpy2DFromArray, cudaMemcpy2DArrayToArray+cudaMemcpy3D): exact\n");
  CHECK_CUDA(cudaFreeArray(plain));
  CHECK_CUDA(cudaFreeMipmappedArray(mip));

  // numLevels is documented as clamped to [1, 1 + floor(log2(max extent))].
  cudaMipmappedArray_t clamped = nullptr;
  const cudaError_t tooMany = cudaMallocMipmappedArray(&clamped, &desc, make_cudaExtent(kMW, kMH, 0), 10, 0);
  std::printf("E cudaMallocMipmappedArray with 10 levels of 40x24: %s\n", cudaGetErrorName(tooMany));
  (void)cudaGetLastError();
  if (tooMany == cudaSuccess) {
    cudaArray_t level = nullptr;
    SHOW_ERROR("E   its level 5", cudaGetMipmappedArrayLevel(&level, clamped, 5));
    SHOW_ERROR("E   its level 6", cudaGetMipmappedArrayLevel(&level, clamped, 6));
    CHECK_CUDA(cudaFreeMipmappedArray(clamped));
  }
  clamped = nullptr;
  const cudaError_t none = cudaMallocMipmappedArray(&clamped, &desc, make_cudaExtent(kMW, kMH, 0), 0, 0);
  std::printf("E cudaMallocMipmappedArray with 0 levels: %s\n", cudaGetErrorName(none));
  (void)cudaGetLastError();
  if (none == cudaSuccess) {
    cudaArray_t level = nullptr;
    SHOW_ERROR("E   its level 0", cudaGetMipmappedArrayLevel(&level, clamped, 0));
    SHOW_ERROR("E   its level 1", cudaGetMipmappedArrayLevel(&level, clamped, 1));
    CHECK_CUDA(cudaFreeMipmappedArray(clamped));
  }
}

// ---------------------------------------------------------------- F
void gatherTexture() {
  constexpr int kW = 8, kH = 8;
  std::vector<float> image(kW * kH);
  for (int y = 0; y < kH; ++y)
    for (int x = 0; x < kW; ++x) image[y * kW + x] = static_cast<float>(y * 16 + x);
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaArray_t array = nullptr;
  const cudaError_t made = cudaMallocArray(&array, &desc, kW, kH, cudaArrayTextureGather);
  std::printf("F cudaMallocArray(cudaArrayTextureGather): %s\n", cudaGetErrorName(made));
  if (made != cudaSuccess) {
    (void)cudaGetLastError();
    return;
  }
  printInfo("F gather array", array);
  CHECK_CUDA(cudaMemcpy2DToArray(array, 0, 0, image.data(), kW * sizeof(float), kW * sizeof(float), kH,
                                 cudaMemcpyHostToDevice));
  cudaTextureObject_t tex =
      arrayTexture(array, cudaAddressModeClamp, cudaFilterModePoint, cudaReadModeElementType, false);
  float4* out = nullptr;
  CHECK_CUDA(cudaMalloc(&out, (kW - 1) * (kH - 1) * sizeof(float4)));
  gather<<<kH, kW>>>(tex, out, kW, kH);
  CHECK_CUDA(cudaGetLastError());
  std::vector<float4> got((kW - 1) * (kH - 1));
  CHECK_CUDA(cudaMemcpy(got.data(), out, got.size() * sizeof(float4), cudaMemcpyDeviceToHost));
  for (int y = 0; y < kH - 1; ++y)
    for (int x = 0; x < kW - 1; ++x) {
      const float4 g = got[y * (kW - 1) + x];
      float have[4] = {g.x, g.y, g.z, g.w};
      float want[4] = {image[y * kW + x], image[y * kW + x + 1], image[(y + 1) * kW + x],
                       image[(y + 1) * kW + x + 1]};
      std::sort(have, have + 4);
      std::sort(want, want + 4);
      EXPECT_TRUE(std::memcmp(have, want, sizeof have) == 0, "gather (%d,%d)", x, y);
    }
  const float4 first = got[0];
  std::printf("F tex2Dgather at (1,1): (%.0f,%.0f,%.0f,%.0f) fnv=%016llx\n", first.x, first.y, first.z,
              first.w, static_cast<unsigned long long>(fnv1a64(got.data(), got.size() * sizeof(float4))));
  CHECK_CUDA(cudaDestroyTextureObject(tex));
  CHECK_CUDA(cudaFreeArray(array));
  CHECK_CUDA(cudaFree(out));
}

// ---------------------------------------------------------------- G
void channelDescs() {
  struct Case {
    const char* label;
    cudaChannelFormatDesc desc;
    cudaExtent extent;
    unsigned flags;
  } cases[] = {
      {"G uchar4 2D", cudaCreateChannelDesc<uchar4>(), make_cudaExtent(33, 17, 0), 0},
      {"G short2 3D", cudaCreateChannelDesc<short2>(), make_cudaExtent(9, 5, 3), 0},
      {"G half 2D layered", cudaCreateChannelDescHalf(), make_cudaExtent(16, 16, 4), cudaArrayLayered},
      {"G int4 1D layered", cudaCreateChannelDesc<int4>(), make_cudaExtent(100, 0, 7), cudaArrayLayered},
      {"G float2 surface", cudaCreateChannelDesc<float2>(), make_cudaExtent(12, 12, 0),
       cudaArraySurfaceLoadStore},
      {"G uint cubemap", cudaCreateChannelDesc<unsigned int>(), make_cudaExtent(8, 8, 6), cudaArrayCubemap},
  };
  for (const Case& c : cases) {
    cudaArray_t array = nullptr;
    const cudaError_t error = cudaMalloc3DArray(&array, &c.desc, c.extent, c.flags);
    if (error != cudaSuccess) {
      std::printf("%s cudaMalloc3DArray: %s\n", c.label, cudaGetErrorName(error));
      (void)cudaGetLastError();
      continue;
    }
    printInfo(c.label, array);
    CHECK_CUDA(cudaFreeArray(array));
  }
  // Three channels: not an array format the hardware has.
  cudaChannelFormatDesc three = cudaCreateChannelDesc(32, 32, 32, 0, cudaChannelFormatKindFloat);
  cudaArray_t array = nullptr;
  SHOW_ERROR("G float3 array", cudaMallocArray(&array, &three, 8, 8));
  if (array != nullptr) CHECK_CUDA(cudaFreeArray(array));
}

}  // namespace

int main() {
  oneDimensional();
  threeDimensionalCopies();
  surfaces3D();
  boundaryModes();
  mipmaps();
  gatherTexture();
  channelDescs();
  CHECK_CUDA(cudaDeviceSynchronize());
  std::printf("probe_arrays_3d_mipmap OK\n");
  return 0;
}
