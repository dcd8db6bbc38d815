// The storage module's GPU-initiated reads against reading on the host and copying with
// cudaMemcpy (tests/bench/run_storage_bench.sh runs both in one go and formats the table).
//
//   agileos_storage_bench baseline PATH BYTES   host pread + cudaMemcpy per block (run natively)
//   agileos_storage_bench module NAME BYTES     the storage module (under AgileOS, AGILEOS_MODULES=storage)
// For each block size from 4 KiB to 1 MiB it reads the first min(BYTES, 64 MiB) of the file and
// prints one line per (mode, block size):
//   RESULT <mode> <block bytes> <GB/s> <p50 us> <p99 us> <reads>
// Latency is per block, from the start of the read to the data in device memory (module: device
// globaltimer from submission to the end of the copy into the user buffer, one read in flight;
// throughput: 32 reads in flight). The baseline is sequential: one pread then one cudaMemcpy.
// "direct": the module's reads straight into a registered user buffer (the service writes there:
// DMA registration), no copy on the device.
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "agileos/storage.h"
#include "client/include/agileos/modules.h"
#include "tests/gpu/programs/check.cuh"

namespace {

constexpr unsigned kBlockSizes[] = {4096, 16384, 65536, 262144, 1048576};
constexpr unsigned long long kPassBytes = 64ull << 20;

__device__ unsigned long long now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Block b reads blocks b, b + gridDim.x, ... through slot b; latencies[i] = ns of read i.
__global__ void readBlocks(unsigned file, unsigned long long total, unsigned block, unsigned char* out,
                           unsigned long long* latencies, int* failures) {
  __shared__ long long got;
  __shared__ unsigned long long started;
  const unsigned slot = blockIdx.x;
  const unsigned long long blocks = total / block;
  for (unsigned long long i = blockIdx.x; i < blocks; i += gridDim.x) {
    if (threadIdx.x == 0) {
      started = now();
      const int rc = agileos_storage_read_async(slot, file, i * block, block);
      got = rc != 0 ? rc : agileos_storage_wait(slot);
      if (got != block) atomicAdd(failures, 1);
    }
    __syncthreads();
    if (got > 0) agileos_storage_copy(slot, out + i * block, got, threadIdx.x, blockDim.x);
    __syncthreads();
    if (threadIdx.x == 0) latencies[i] = now() - started;
  }
}

// The same reads straight into the registered buffer `out` (target): no copy on the device.
__global__ void readBlocksInto(unsigned file, unsigned long long total, unsigned block, unsigned target,
                               unsigned long long* latencies, int* failures) {
  if (threadIdx.x != 0) return;
  const unsigned slot = blockIdx.x;
  const unsigned long long blocks = total / block;
  for (unsigned long long i = blockIdx.x; i < blocks; i += gridDim.x) {
    const unsigned long long started = now();
    const int rc = agileos_storage_read_into(slot, file, i * block, block, target, i * block);
    const long long got = rc != 0 ? rc : agileos_storage_wait(slot);
    if (got != block) atomicAdd(failures, 1);
    latencies[i] = now() - started;
  }
}

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t index =
      std::min(values.size() - 1, static_cast<std::size_t>(p * (values.size() - 1) + 0.5));
  return values[index];
}

int runBaseline(const char* path, unsigned long long fileBytes) {
  const unsigned long long pass = std::min(fileBytes, kPassBytes);
  unsigned char* device = nullptr;
  CHECK_CUDA(cudaMalloc(&device, pass));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  EXPECT_TRUE(fd >= 0, "cannot open %s\n", path);
  std::vector<unsigned char> host(1 << 20);  // pageable, as a plain program reads
  for (unsigned block : kBlockSizes) {
    std::vector<double> latencies;
    const auto begin = std::chrono::steady_clock::now();
    for (unsigned long long at = 0; at + block <= pass; at += block) {
      const auto t0 = std::chrono::steady_clock::now();
      EXPECT_TRUE(pread(fd, host.data(), block, static_cast<off_t>(at)) == static_cast<ssize_t>(block),
                  "pread\n");
      CHECK_CUDA(cudaMemcpy(device + at, host.data(), block, cudaMemcpyHostToDevice));
      latencies.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    std::printf("RESULT baseline %u %.3f %.1f %.1f %zu\n", block, pass / seconds / 1e9,
                percentile(latencies, 0.5), percentile(latencies, 0.99), latencies.size());
  }
  close(fd);
  CHECK_CUDA(cudaFree(device));
  return 0;
}

// For each block size: latency with one read in flight (up to 2000 reads, per-read device
// times), then throughput with one read per slot in flight over the whole pass; prints a RESULT
// line for `mode`. launch(grid, total bytes, block) starts the reads (one block per slot).
template <typename Launch>
void measureReads(const char* mode, unsigned long long pass, unsigned long long* latencies, int* failures,
                  Launch launch) {
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  for (unsigned block : kBlockSizes) {
    const unsigned long long blocks = pass / block;
    CHECK_CUDA(cudaMemset(failures, 0, sizeof(int)));
    const unsigned long long latencyBlocks = std::min<unsigned long long>(blocks, 2000);
    launch(1, latencyBlocks * block, block);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaDeviceSynchronize());
    std::vector<unsigned long long> ns(latencyBlocks);
    CHECK_CUDA(
        cudaMemcpy(ns.data(), latencies, latencyBlocks * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
    std::vector<double> us;
    for (unsigned long long v : ns) us.push_back(v / 1000.0);
    CHECK_CUDA(cudaEventRecord(start));
    launch(AGILEOS_STORAGE_SLOTS, blocks * block, block);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaEventRecord(stop));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    int failed = 0;
    CHECK_CUDA(cudaMemcpy(&failed, failures, sizeof failed, cudaMemcpyDeviceToHost));
    EXPECT_TRUE(failed == 0, "%d %s reads failed\n", failed, mode);
    std::printf("RESULT %s %u %.3f %.1f %.1f %llu\n", mode, block, blocks * block / (ms / 1e3) / 1e9,
                percentile(us, 0.5), percentile(us, 0.99), blocks);
  }
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
}

int runModule(const std::string& name) {
  auto control =
      reinterpret_cast<decltype(&agileosModuleControl)>(dlsym(RTLD_DEFAULT, "agileosModuleControl"));
  EXPECT_TRUE(control != nullptr, "run under AgileOS with AGILEOS_MODULES=storage\n");
  agileos_storage_opened opened{};
  CHECK_CUDA(control("storage", AGILEOS_STORAGE_CMD_OPEN, name.data(), name.size(), &opened, sizeof opened,
                     nullptr, nullptr));
  const unsigned long long pass = std::min<unsigned long long>(opened.file_bytes, kPassBytes);
  unsigned char* out = nullptr;
  unsigned long long* latencies = nullptr;
  int* failures = nullptr;
  CHECK_CUDA(cudaMalloc(&out, pass));
  CHECK_CUDA(cudaMalloc(&latencies, (pass / 4096) * sizeof(unsigned long long)));
  CHECK_CUDA(cudaMalloc(&failures, sizeof(int)));
  auto readIntoSlots = [&](unsigned grid, unsigned long long total, unsigned block) {
    readBlocks<<<grid, 256>>>(opened.file, total, block, out, latencies, failures);
  };
  measureReads("module", pass, latencies, failures, readIntoSlots);
  // Direct reads into the registered output buffer (DMA registration), same measurements.
  const agileos_storage_register range{reinterpret_cast<std::uint64_t>(out), pass};
  unsigned target = 0;
  CHECK_CUDA(control("storage", AGILEOS_STORAGE_CMD_REGISTER, &range, sizeof range, &target, sizeof target,
                     nullptr, nullptr));
  auto readIntoTarget = [&](unsigned grid, unsigned long long total, unsigned block) {
    readBlocksInto<<<grid, 32>>>(opened.file, total, block, target, latencies, failures);
  };
  measureReads("direct", pass, latencies, failures, readIntoTarget);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "baseline") == 0)
    return runBaseline(argv[2], std::strtoull(argv[3], nullptr, 10));
  if (argc == 4 && std::strcmp(argv[1], "module") == 0) return runModule(argv[2]);
  std::fprintf(stderr, "usage: agileos_storage_bench baseline PATH BYTES | module NAME BYTES\n");
  return 2;
}
