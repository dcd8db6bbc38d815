// cudaMemset and cudaMemsetAsync with values other than zero, on sub-ranges
// with odd offsets and lengths; a value above 0xFF must use only its low byte.
// A kernel also reads the memset words, so the device-side view is checked too.
#include <cstdint>
#include <vector>

#include "check.cuh"

__global__ void sumWords(const std::uint32_t* words, int n, unsigned long long* out) {
  unsigned long long local = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) local += words[i];
  atomicAdd(out, local);
}

int main() {
  const size_t size = (1u << 22) + 12;  // whole 32-bit words
  unsigned char* dev = nullptr;
  CHECK_CUDA(cudaMalloc(&dev, size));
  std::vector<unsigned char> expected(size), got(size);

  struct Step {
    size_t offset, length;
    int value;
    bool async;
  };
  const Step steps[] = {
      {0, size, 0x00, false},    {0, size, 0xAB, false},
      {5, 1000, 0x11, false},    {4096, 3, 0x1FF, false},
      {size - 7, 7, 0x7F, true}, {123457, 654321, -1, true},
      {0, 1, 0xE4, true},        {1u << 20, 1u << 20, 0x80, false},
  };
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (const Step& step : steps) {
    if (step.async) {
      CHECK_CUDA(cudaMemsetAsync(dev + step.offset, step.value, step.length, stream));
      CHECK_CUDA(cudaStreamSynchronize(stream));
    } else {
      CHECK_CUDA(cudaMemset(dev + step.offset, step.value, step.length));
    }
    for (size_t i = 0; i < step.length; ++i)
      expected[step.offset + i] = static_cast<unsigned char>(step.value);
    CHECK_CUDA(cudaMemcpy(got.data(), dev, size, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < size; ++i) {
      EXPECT_TRUE(got[i] == expected[i], "after memset(+%zu, 0x%x, %zu): byte %zu is 0x%02x, expected 0x%02x",
                  step.offset, step.value, step.length, i, got[i], expected[i]);
    }
    std::printf("memset%s off=%zu len=%zu value=0x%x -> fnv=%016llx\n", step.async ? "Async" : "",
                step.offset, step.length, step.value,
                static_cast<unsigned long long>(fnv1a64(got.data(), size)));
  }

  // Device-side view: sum of the words as the GPU reads them.
  CHECK_CUDA(cudaMemset(dev, 0xAB, size));
  unsigned long long* dSum = nullptr;
  CHECK_CUDA(cudaMalloc(&dSum, sizeof(unsigned long long)));
  CHECK_CUDA(cudaMemsetAsync(dSum, 0, sizeof(unsigned long long), stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  const int words = static_cast<int>(size / 4);
  sumWords<<<128, 256>>>(reinterpret_cast<const std::uint32_t*>(dev), words, dSum);
  CHECK_CUDA(cudaGetLastError());
  unsigned long long sum = 0;
  CHECK_CUDA(cudaMemcpy(&sum, dSum, sizeof(sum), cudaMemcpyDeviceToHost));
  const unsigned long long expectedSum = static_cast<unsigned long long>(words) * 0xABABABABull;
  EXPECT_TRUE(sum == expectedSum, "device sum %llu != %llu", sum, expectedSum);
  std::printf("device reads 0xABABABAB x %d words: sum=%llu\n", words, sum);

  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFree(dSum));
  CHECK_CUDA(cudaFree(dev));
  std::printf("memset_values OK\n");
  return 0;
}
