// __managed__ variables (scalars, an array, a struct) the way programs use them: initial values
// read on the host before any launch (the runtime's lazy module load, __cudaInitModule), kernels
// incrementing them with atomics, host reads after a synchronize, host writes then kernel reads,
// &var handed to a kernel as a pointer, cudaMemcpyToSymbol / FromSymbol and
// cudaGetSymbolAddress / cudaGetSymbolSize on them, and device code reaching an element at a
// constant offset and through a device function. Under AgileOS each variable lives in host
// memory shared with the worker at one address for the program and the device
// (docs/architecture.md, "Mapped, registered and managed host memory"), so this program
// synchronizes before the host touches it, as programs must when concurrentManagedAccess is 0.
#include <cstdint>

#include "check.cuh"

struct Stats {
  int hits;
  unsigned long long sum;
  float scale;
};

__managed__ int counter = 5;
__managed__ float table[16];
__managed__ Stats stats = {1, 2, 0.5f};
__managed__ unsigned long long wide[4] = {10, 20, 30, 40};
__device__ int plainDevice = 7;  // a __device__ variable in the same module keeps working

__device__ void bumpWide(int i) { atomicAdd(&wide[i & 3], 1ull); }

__global__ void increment(int perThread) {
  for (int i = 0; i < perThread; ++i) atomicAdd(&counter, 1);
  atomicAdd(&stats.hits, 1);
  atomicAdd(&stats.sum, static_cast<unsigned long long>(threadIdx.x));
  bumpWide(threadIdx.x);
}

__global__ void scaleTable() {
  const int i = threadIdx.x;
  if (i < 16) table[i] = table[i] * stats.scale + static_cast<float>(plainDevice);
}

// Reads the host's writes: a constant offset into the array and the scalar.
__global__ void readBack(int* out) {
  out[0] = counter;
  out[1] = static_cast<int>(table[3]);
  out[2] = static_cast<int>(wide[2]);
  out[3] = stats.hits;
}

__global__ void addThroughPointer(int* p, float* t, int amount) {
  atomicAdd(p, amount);
  if (threadIdx.x < 16) t[threadIdx.x] += 1.0f;
}

int main() {
  // Before any launch: the host's first touch loads the module.
  std::printf("initial counter=%d stats={%d,%llu,%.2f} wide={%llu,%llu,%llu,%llu} table[0]=%.1f\n", counter,
              stats.hits, stats.sum, stats.scale, wide[0], wide[1], wide[2], wide[3], table[0]);
  EXPECT_TRUE(counter == 5 && stats.hits == 1 && wide[3] == 40, "initial values");

  increment<<<4, 64>>>(3);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  std::printf("after increment counter=%d hits=%d sum=%llu wide={%llu,%llu,%llu,%llu}\n", counter, stats.hits,
              stats.sum, wide[0], wide[1], wide[2], wide[3]);
  EXPECT_TRUE(counter == 5 + 4 * 64 * 3, "counter %d", counter);
  EXPECT_TRUE(stats.hits == 1 + 256, "hits %d", stats.hits);

  // Host writes, then kernels read them.
  for (int i = 0; i < 16; ++i) table[i] = static_cast<float>(i * 2);
  stats.scale = 3.0f;
  scaleTable<<<1, 32>>>();
  CHECK_CUDA(cudaDeviceSynchronize());
  float tableSum = 0;
  for (int i = 0; i < 16; ++i) tableSum += table[i];
  std::printf("table after scale: [3]=%.1f sum=%.1f\n", table[3], tableSum);
  EXPECT_TRUE(table[3] == 6.0f * 3.0f + 7.0f, "table[3] %f", table[3]);

  counter = 1000;
  wide[2] = 77;
  int* out = nullptr;
  CHECK_CUDA(cudaMalloc(&out, 4 * sizeof(int)));
  readBack<<<1, 1>>>(out);
  int seen[4] = {};
  CHECK_CUDA(cudaMemcpy(seen, out, sizeof seen, cudaMemcpyDeviceToHost));
  std::printf("kernel saw counter=%d table[3]=%d wide[2]=%d hits=%d\n", seen[0], seen[1], seen[2], seen[3]);
  EXPECT_TRUE(seen[0] == 1000 && seen[2] == 77, "kernel view");

  // &var as a kernel argument: the same memory.
  addThroughPointer<<<1, 32>>>(&counter, table, 2);
  CHECK_CUDA(cudaDeviceSynchronize());
  std::printf("after addThroughPointer counter=%d table[0]=%.1f\n", counter, table[0]);
  EXPECT_TRUE(counter == 1000 + 64, "counter %d", counter);

  // The symbol API.
  void* address = nullptr;
  CHECK_CUDA(cudaGetSymbolAddress(&address, counter));
  EXPECT_TRUE(address == static_cast<void*>(&counter), "symbol address %p vs %p", address,
              static_cast<void*>(&counter));
  std::printf("symbol address equals &counter: %d\n", address == static_cast<void*>(&counter));
  size_t size = 0;
  CHECK_CUDA(cudaGetSymbolSize(&size, table));
  std::printf("sizeof table=%zu\n", size);
  const int fresh = 42;
  CHECK_CUDA(cudaMemcpyToSymbol(counter, &fresh, sizeof fresh));
  std::printf("counter after cudaMemcpyToSymbol=%d\n", counter);
  const float tail[2] = {100.0f, 200.0f};
  CHECK_CUDA(cudaMemcpyToSymbol(table, tail, sizeof tail, 14 * sizeof(float)));
  readBack<<<1, 1>>>(out);
  float fromSymbol[16] = {};
  CHECK_CUDA(cudaMemcpyFromSymbol(fromSymbol, table, sizeof fromSymbol));
  int counterCopy = 0;
  CHECK_CUDA(cudaMemcpyFromSymbol(&counterCopy, counter, sizeof counterCopy));
  CHECK_CUDA(cudaMemcpy(seen, out, sizeof seen, cudaMemcpyDeviceToHost));
  std::printf("from symbol table[14]=%.1f table[15]=%.1f counter=%d kernel counter=%d\n", fromSymbol[14],
              fromSymbol[15], counterCopy, seen[0]);
  EXPECT_TRUE(fromSymbol[15] == 200.0f && counterCopy == 42 && seen[0] == 42, "symbol copies");
  CHECK_CUDA(cudaFree(out));
  std::printf("done\n");
  return 0;
}
