// Constant memory and __device__ globals reached through the symbol API:
// cudaMemcpyToSymbol / FromSymbol (with offsets, and their Async forms),
// cudaGetSymbolAddress, cudaGetSymbolSize, and a copy past the end of a symbol.
#include <cstdint>
#include <vector>

#include "check.cuh"

struct Pair {
  int key;
  double value;
};

__constant__ float cCoefficients[16];
__constant__ int cScale;
__device__ int dCounter;
__device__ float dTable[256];
__device__ Pair dPair;

__global__ void useSymbols(float* out) {
  const int i = threadIdx.x;
  out[i] = cCoefficients[i % 16] * static_cast<float>(cScale) + dTable[i];
  atomicAdd(&dCounter, 1);
  if (i == 0) {
    dPair.key += 1;
    dPair.value *= 2.0;
  }
}

__global__ void writeThroughPointer(float* table, int n) {
  const int i = threadIdx.x;
  if (i < n) table[i] = static_cast<float>(i) * 0.25f;
}

int main() {
  size_t size = 0;
  CHECK_CUDA(cudaGetSymbolSize(&size, cCoefficients));
  std::printf("sizeof cCoefficients=%zu\n", size);
  EXPECT_TRUE(size == 16 * sizeof(float), "cCoefficients size %zu", size);
  CHECK_CUDA(cudaGetSymbolSize(&size, cScale));
  std::printf("sizeof cScale=%zu\n", size);
  CHECK_CUDA(cudaGetSymbolSize(&size, dTable));
  std::printf("sizeof dTable=%zu\n", size);
  CHECK_CUDA(cudaGetSymbolSize(&size, dPair));
  std::printf("sizeof dPair=%zu\n", size);

  // Constant memory: whole, then the upper half again through an offset.
  float coefficients[16];
  for (int i = 0; i < 16; ++i) coefficients[i] = static_cast<float>(i + 1);
  CHECK_CUDA(cudaMemcpyToSymbol(cCoefficients, coefficients, sizeof(coefficients)));
  const float upper[8] = {100, 101, 102, 103, 104, 105, 106, 107};
  CHECK_CUDA(cudaMemcpyToSymbol(cCoefficients, upper, sizeof(upper), 8 * sizeof(float)));
  for (int i = 0; i < 8; ++i) coefficients[8 + i] = upper[i];
  const int scale = 3;
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  CHECK_CUDA(cudaMemcpyToSymbolAsync(cScale, &scale, sizeof(scale), 0, cudaMemcpyHostToDevice, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));

  // __device__ globals: zero the counter, fill the table from device memory (D2D to a symbol).
  const int zero = 0;
  CHECK_CUDA(cudaMemcpyToSymbol(dCounter, &zero, sizeof(zero)));
  std::vector<float> table(256);
  for (int i = 0; i < 256; ++i) table[i] = static_cast<float>(i) * 0.5f;
  float* staging = nullptr;
  CHECK_CUDA(cudaMalloc(&staging, sizeof(float) * 256));
  CHECK_CUDA(cudaMemcpy(staging, table.data(), sizeof(float) * 256, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpyToSymbol(dTable, staging, sizeof(float) * 256, 0, cudaMemcpyDeviceToDevice));
  const Pair pair{41, 1.5};
  CHECK_CUDA(cudaMemcpyToSymbol(dPair, &pair, sizeof(pair)));

  float* out = nullptr;
  CHECK_CUDA(cudaMalloc(&out, sizeof(float) * 256));
  useSymbols<<<1, 256, 0, stream>>>(out);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaStreamSynchronize(stream));

  std::vector<float> result(256);
  CHECK_CUDA(cudaMemcpy(result.data(), out, sizeof(float) * 256, cudaMemcpyDeviceToHost));
  for (int i = 0; i < 256; ++i) {
    const float expected = coefficients[i % 16] * 3.0f + table[i];
    EXPECT_TRUE(result[i] == expected, "out[%d] = %f, expected %f", i, result[i], expected);
  }
  int counter = 0;
  CHECK_CUDA(cudaMemcpyFromSymbol(&counter, dCounter, sizeof(counter)));
  Pair pairBack{};
  CHECK_CUDA(
      cudaMemcpyFromSymbolAsync(&pairBack, dPair, sizeof(pairBack), 0, cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  float secondHalf[8];
  CHECK_CUDA(cudaMemcpyFromSymbol(secondHalf, cCoefficients, sizeof(secondHalf), 8 * sizeof(float)));
  EXPECT_TRUE(counter == 256, "counter %d", counter);
  EXPECT_TRUE(pairBack.key == 42 && pairBack.value == 3.0, "pair %d %f", pairBack.key, pairBack.value);
  EXPECT_TRUE(secondHalf[0] == 100.0f && secondHalf[7] == 107.0f, "constant readback %f %f", secondHalf[0],
              secondHalf[7]);
  std::printf("kernel out fnv=%016llx counter=%d pair=(%d, %.1f) cCoefficients[8..15]=%.0f..%.0f\n",
              static_cast<unsigned long long>(fnv1a64(result.data(), sizeof(float) * 256)), counter,
              pairBack.key, pairBack.value, secondHalf[0], secondHalf[7]);

  // The address of a __device__ global works as an ordinary device pointer.
  float* tableAddress = nullptr;
  CHECK_CUDA(cudaGetSymbolAddress(reinterpret_cast<void**>(&tableAddress), dTable));
  EXPECT_TRUE(tableAddress != nullptr, "null symbol address");
  writeThroughPointer<<<1, 256>>>(tableAddress, 256);
  CHECK_CUDA(cudaGetLastError());
  std::vector<float> viaSymbol(256), viaPointer(256);
  CHECK_CUDA(cudaMemcpyFromSymbol(viaSymbol.data(), dTable, sizeof(float) * 256));
  CHECK_CUDA(cudaMemcpy(viaPointer.data(), tableAddress + 128, sizeof(float) * 128, cudaMemcpyDeviceToHost));
  for (int i = 0; i < 256; ++i) EXPECT_TRUE(viaSymbol[i] == i * 0.25f, "dTable[%d] = %f", i, viaSymbol[i]);
  for (int i = 0; i < 128; ++i)
    EXPECT_TRUE(viaPointer[i] == (i + 128) * 0.25f, "ptr[%d] = %f", i, viaPointer[i]);
  std::printf("symbol address round trip ok, dTable[255]=%.2f\n", viaSymbol[255]);

  // Past the end of a symbol: refused, and the symbol is unchanged.
  const float tooMuch[17] = {};
  EXPECT_ERROR("copy 17 floats into a 16-float symbol",
               cudaMemcpyToSymbol(cCoefficients, tooMuch, sizeof(tooMuch)), cudaErrorInvalidValue);
  EXPECT_ERROR("copy 1 float at offset 16 floats",
               cudaMemcpyToSymbol(cCoefficients, tooMuch, sizeof(float), 16 * sizeof(float)),
               cudaErrorInvalidValue);
  cudaGetLastError();  // those errors are not sticky; clear the last-error slot
  CHECK_CUDA(cudaMemcpyFromSymbol(secondHalf, cCoefficients, sizeof(secondHalf), 8 * sizeof(float)));
  EXPECT_TRUE(secondHalf[0] == 100.0f, "symbol changed by a refused copy");

  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFree(staging));
  CHECK_CUDA(cudaFree(out));
  std::printf("symbols OK\n");
  return 0;
}
