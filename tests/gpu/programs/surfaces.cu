// Surface objects, checked exactly against a CPU reference: a kernel reads and rewrites a 2D array
// through a surface (as in the simpleSurfaceWrite sample), the result is read back with
// cudaMemcpy2DFromArray and through a texture over the same array; a layered surface is written
// layer by layer and read back with cudaMemcpy3D. Also the query and the refusal of a surface on
// an array made without cudaArraySurfaceLoadStore.
#include <vector>

#include "check.cuh"

constexpr int kW = 40, kH = 24, kLayers = 3;

__global__ void rewrite(cudaSurfaceObject_t surface, int width, int height) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  float value = 0;
  surf2Dread(&value, surface, x * sizeof(float), y);
  surf2Dwrite(value * 2.f + 1.f, surface, x * sizeof(float), y);
}

__global__ void readBack(cudaTextureObject_t tex, float* out, int width, int height) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < width && y < height) out[y * width + x] = tex2D<float>(tex, x + 0.5f, y + 0.5f);
}

__global__ void writeLayers(cudaSurfaceObject_t surface, int width, int height, int layers) {
  const int x = threadIdx.x, y = blockIdx.x;
  if (x >= width || y >= height) return;
  for (int layer = 0; layer < layers; ++layer)
    surf2DLayeredwrite(static_cast<float>(x + y * width + layer * 10000), surface, x * sizeof(float), y,
                       layer);
}

int main() {
  std::vector<float> host(kW * kH);
  for (int i = 0; i < kW * kH; ++i) host[i] = static_cast<float>(mix32(i) % 500);
  cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
  cudaArray_t array = nullptr;
  CHECK_CUDA(cudaMallocArray(&array, &desc, kW, kH, cudaArraySurfaceLoadStore));
  CHECK_CUDA(cudaMemcpy2DToArray(array, 0, 0, host.data(), kW * sizeof(float), kW * sizeof(float), kH,
                                 cudaMemcpyHostToDevice));
  cudaResourceDesc resource{};
  resource.resType = cudaResourceTypeArray;
  resource.res.array.array = array;
  cudaSurfaceObject_t surface = 0;
  CHECK_CUDA(cudaCreateSurfaceObject(&surface, &resource));
  cudaResourceDesc resourceBack{};
  CHECK_CUDA(cudaGetSurfaceObjectResourceDesc(&resourceBack, surface));
  EXPECT_TRUE(resourceBack.resType == cudaResourceTypeArray && resourceBack.res.array.array == array,
              "resource");
  const dim3 block(8, 8), grid((kW + 7) / 8, (kH + 7) / 8);
  rewrite<<<grid, block>>>(surface, kW, kH);
  CHECK_CUDA(cudaGetLastError());
  std::vector<float> back(kW * kH);
  CHECK_CUDA(cudaMemcpy2DFromArray(back.data(), kW * sizeof(float), array, 0, 0, kW * sizeof(float), kH,
                                   cudaMemcpyDeviceToHost));
  for (int i = 0; i < kW * kH; ++i) EXPECT_TRUE(back[i] == host[i] * 2.f + 1.f, "surface texel %d", i);
  std::printf("surface rewrite fnv=%016llx\n",
              static_cast<unsigned long long>(fnv1a64(back.data(), back.size() * sizeof(float))));

  cudaTextureDesc texture{};
  texture.filterMode = cudaFilterModePoint;
  texture.readMode = cudaReadModeElementType;
  cudaTextureObject_t tex = 0;
  CHECK_CUDA(cudaCreateTextureObject(&tex, &resource, &texture, nullptr));
  float* out = nullptr;
  CHECK_CUDA(cudaMalloc(&out, kW * kH * sizeof(float)));
  readBack<<<grid, block>>>(tex, out, kW, kH);
  CHECK_CUDA(cudaGetLastError());
  std::vector<float> viaTexture(kW * kH);
  CHECK_CUDA(cudaMemcpy(viaTexture.data(), out, viaTexture.size() * sizeof(float), cudaMemcpyDeviceToHost));
  EXPECT_TRUE(viaTexture == back, "the texture sees what the surface wrote");
  std::printf("texture over the surface's array agrees\n");
  CHECK_CUDA(cudaDestroyTextureObject(tex));
  CHECK_CUDA(cudaDestroySurfaceObject(surface));

  // A layered surface, read back with cudaMemcpy3D.
  cudaArray_t layered = nullptr;
  CHECK_CUDA(cudaMalloc3DArray(&layered, &desc, make_cudaExtent(kW, kH, kLayers),
                               cudaArrayLayered | cudaArraySurfaceLoadStore));
  resource.res.array.array = layered;
  CHECK_CUDA(cudaCreateSurfaceObject(&surface, &resource));
  writeLayers<<<kH, kW>>>(surface, kW, kH, kLayers);
  CHECK_CUDA(cudaGetLastError());
  std::vector<float> layers(kW * kH * kLayers, -1.f);
  cudaMemcpy3DParms copy{};
  copy.srcArray = layered;
  copy.dstPtr = make_cudaPitchedPtr(layers.data(), kW * sizeof(float), kW, kH);
  copy.extent = make_cudaExtent(kW, kH, kLayers);
  copy.kind = cudaMemcpyDeviceToHost;
  CHECK_CUDA(cudaMemcpy3D(&copy));
  for (int layer = 0; layer < kLayers; ++layer)
    for (int i = 0; i < kW * kH; ++i)
      EXPECT_TRUE(layers[layer * kW * kH + i] == static_cast<float>(i + layer * 10000), "layer %d texel %d",
                  layer, i);
  std::printf("layered surface: %d layers written and read back\n", kLayers);
  CHECK_CUDA(cudaDestroySurfaceObject(surface));

  // A surface on an array made without the load-store flag: the driver accepts it (cudaSuccess
  // natively on the H200), and so does AgileOS.
  cudaArray_t plain = nullptr;
  CHECK_CUDA(cudaMallocArray(&plain, &desc, 8, 8));
  resource.res.array.array = plain;
  cudaSurfaceObject_t accepted = 0;
  EXPECT_ERROR("surface without cudaArraySurfaceLoadStore", cudaCreateSurfaceObject(&accepted, &resource),
               cudaSuccess);
  CHECK_CUDA(cudaDestroySurfaceObject(accepted));
  CHECK_CUDA(cudaFreeArray(plain));
  CHECK_CUDA(cudaFreeArray(layered));
  CHECK_CUDA(cudaFreeArray(array));
  CHECK_CUDA(cudaFree(out));
  std::printf("surfaces OK\n");
  return 0;
}
