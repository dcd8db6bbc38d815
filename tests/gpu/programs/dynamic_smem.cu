// Dynamic shared memory above the 48 KiB default: a launch asking for more is
// refused until cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize)
// raises the limit; then the kernel uses all of it (writes every word, reads
// them back reversed), and cudaFuncGetAttributes reports the new limit.
#include <cstdint>
#include <vector>

#include "check.cuh"

__global__ void reverseThroughShared(const std::uint32_t* in, std::uint32_t* out, int words) {
  extern __shared__ std::uint32_t shared[];
  for (int i = threadIdx.x; i < words; i += blockDim.x) shared[i] = in[i];
  __syncthreads();
  for (int i = threadIdx.x; i < words; i += blockDim.x) out[i] = shared[words - 1 - i];
}

static void runAndCheck(const char* label, const std::uint32_t* dIn, std::uint32_t* dOut,
                        const std::vector<std::uint32_t>& in, size_t sharedBytes) {
  const int words = static_cast<int>(sharedBytes / sizeof(std::uint32_t));
  CHECK_CUDA(cudaMemset(dOut, 0, in.size() * sizeof(std::uint32_t)));
  reverseThroughShared<<<1, 256, sharedBytes>>>(dIn, dOut, words);
  CHECK_CUDA(cudaGetLastError());
  std::vector<std::uint32_t> out(words);
  CHECK_CUDA(cudaMemcpy(out.data(), dOut, sharedBytes, cudaMemcpyDeviceToHost));
  for (int i = 0; i < words; ++i) {
    EXPECT_TRUE(out[i] == in[words - 1 - i], "%s: out[%d] = %u, expected %u", label, i, out[i],
                in[words - 1 - i]);
  }
  std::printf("%s: %zu bytes of dynamic shared memory ok, fnv=%016llx\n", label, sharedBytes,
              static_cast<unsigned long long>(fnv1a64(out.data(), sharedBytes)));
}

int main() {
  const size_t big = 100 * 1024;
  std::vector<std::uint32_t> in(big / sizeof(std::uint32_t));
  for (size_t i = 0; i < in.size(); ++i) in[i] = mix32(static_cast<std::uint32_t>(i));
  std::uint32_t *dIn = nullptr, *dOut = nullptr;
  CHECK_CUDA(cudaMalloc(&dIn, big));
  CHECK_CUDA(cudaMalloc(&dOut, big));
  CHECK_CUDA(cudaMemcpy(dIn, in.data(), big, cudaMemcpyHostToDevice));

  runAndCheck("40 KiB without opt-in", dIn, dOut, in, 40 * 1024);

  reverseThroughShared<<<1, 256, big>>>(dIn, dOut, static_cast<int>(big / 4));
  const cudaError_t refused = cudaGetLastError();
  std::printf("100 KiB before opt-in: %s\n", cudaGetErrorName(refused));
  EXPECT_TRUE(refused != cudaSuccess, "100 KiB launch succeeded without the attribute");

  cudaFuncAttributes attributes;
  CHECK_CUDA(cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(&reverseThroughShared)));
  std::printf("maxDynamicSharedSizeBytes before=%d\n", attributes.maxDynamicSharedSizeBytes);
  CHECK_CUDA(cudaFuncSetAttribute(reinterpret_cast<const void*>(&reverseThroughShared),
                                  cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(big)));
  CHECK_CUDA(cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(&reverseThroughShared)));
  std::printf("maxDynamicSharedSizeBytes after=%d\n", attributes.maxDynamicSharedSizeBytes);
  EXPECT_TRUE(attributes.maxDynamicSharedSizeBytes == static_cast<int>(big), "attribute not applied");

  runAndCheck("100 KiB after opt-in", dIn, dOut, in, big);

  int optin = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
  const cudaError_t tooMuch = cudaFuncSetAttribute(reinterpret_cast<const void*>(&reverseThroughShared),
                                                   cudaFuncAttributeMaxDynamicSharedMemorySize, optin + 1);
  std::printf("attribute above the opt-in maximum: %s\n", cudaGetErrorName(tooMuch));
  EXPECT_TRUE(tooMuch != cudaSuccess, "limit above the device maximum accepted");
  cudaGetLastError();

  CHECK_CUDA(cudaFuncSetAttribute(reinterpret_cast<const void*>(&reverseThroughShared),
                                  cudaFuncAttributePreferredSharedMemoryCarveout, 100));
  runAndCheck("100 KiB with carveout 100", dIn, dOut, in, big);

  CHECK_CUDA(cudaFree(dIn));
  CHECK_CUDA(cudaFree(dOut));
  std::printf("dynamic_smem OK\n");
  return 0;
}
