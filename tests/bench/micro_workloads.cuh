// The microbenchmarks of issue 3: the cost of single CUDA runtime calls.
//
// Each function measures one call pattern after a warm-up, verifies what the
// calls produced (so a call that silently did nothing cannot look fast), and
// prints one JSON line (bench_support.cuh). Latencies are host wall-clock times
// around the call (std::chrono::steady_clock), since that is what a program waits.
#pragma once

#include <cuda.h>

#include <cstring>

#include "bench_support.cuh"

namespace bench {

__global__ void emptyKernel() {}

__global__ void writePattern(std::uint32_t* words, std::size_t n) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    words[i] = mix32(static_cast<std::uint32_t>(i));
  }
}

__global__ void countPatternMismatches(const std::uint32_t* words, std::size_t n,
                                       unsigned long long* mismatches) {
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    local += words[i] != mix32(static_cast<std::uint32_t>(i)) ? 1 : 0;
  }
  if (local != 0) atomicAdd(mismatches, local);
}

// cudaMemcpy of 4 bytes, device to host: the smallest synchronous round trip.
inline void memcpyD2h4Bytes(const Scale& scale) {
  const int warmup = 200, samples = scale.pick(2000, 500);
  std::uint32_t* device = nullptr;
  BENCH_CUDA(cudaMalloc(&device, sizeof(std::uint32_t)));
  BENCH_CUDA(cudaMemset(device, 0x5A, sizeof(std::uint32_t)));
  Result result{"memcpy_d2h_4b", "us"};
  for (int i = 0; i < warmup + samples; ++i) {
    std::uint32_t host = 0;
    const auto start = Clock::now();
    BENCH_CUDA(cudaMemcpy(&host, device, sizeof(host), cudaMemcpyDeviceToHost));
    const double us = secondsSince(start) * 1e6;
    BENCH_VERIFY(host == 0x5A5A5A5Au, "copied 0x%08x, expected 0x5a5a5a5a", host);
    if (i >= warmup) result.samples.push_back(us);
  }
  BENCH_CUDA(cudaFree(device));
  result.throughput = 1e6 / median(result.samples);
  result.throughputUnit = "calls/s";
  result.parameters = {{"bytes", 4}};
  printResult(result);
}

// cudaStreamQuery on a stream with no work: a call that only asks a question.
inline void streamQueryIdle(const Scale& scale) {
  const int warmup = 200, samples = scale.pick(2000, 500);
  cudaStream_t stream = nullptr;
  BENCH_CUDA(cudaStreamCreate(&stream));
  BENCH_CUDA(cudaStreamSynchronize(stream));
  Result result{"stream_query_idle", "us"};
  for (int i = 0; i < warmup + samples; ++i) {
    const auto start = Clock::now();
    const cudaError_t status = cudaStreamQuery(stream);
    const double us = secondsSince(start) * 1e6;
    BENCH_VERIFY(status == cudaSuccess, "cudaStreamQuery on an idle stream returned %s",
                 cudaGetErrorName(status));
    if (i >= warmup) result.samples.push_back(us);
  }
  BENCH_CUDA(cudaStreamDestroy(stream));
  result.throughput = 1e6 / median(result.samples);
  result.throughputUnit = "calls/s";
  printResult(result);
}

// 10,000 empty-kernel launches, then one cudaDeviceSynchronize; a sample is the
// average time per launch of one such batch (enqueue rate including the drain).
inline void launchEmpty10k(const Scale& scale) {
  constexpr int kLaunches = 10000;
  const int repetitions = scale.pick(10, 5);
  Result result{"launch_empty_10k", "us"};
  for (int rep = -1; rep < repetitions; ++rep) {  // rep -1: warm-up (loads the kernel)
    const auto start = Clock::now();
    for (int i = 0; i < kLaunches; ++i) emptyKernel<<<1, 1>>>();
    BENCH_CUDA(cudaDeviceSynchronize());
    const double usPerLaunch = secondsSince(start) * 1e6 / kLaunches;
    BENCH_LAUNCHED();
    if (rep >= 0) result.samples.push_back(usPerLaunch);
  }
  result.throughput = 1e6 / median(result.samples);
  result.throughputUnit = "launches/s";
  result.parameters = {{"launches_per_sample", kLaunches}};
  printResult(result);
}

// One empty-kernel launch and cudaStreamSynchronize: the round trip of a program that waits for
// each kernel (issue 16: at most 1.3x native).
inline void launchSync(const Scale& scale) {
  const int warmup = 200, samples = scale.pick(2000, 500);
  Result result{"launch_sync", "us"};
  for (int i = 0; i < warmup + samples; ++i) {
    const auto start = Clock::now();
    emptyKernel<<<1, 1>>>();
    BENCH_CUDA(cudaStreamSynchronize(nullptr));
    const double us = secondsSince(start) * 1e6;
    BENCH_LAUNCHED();
    if (i >= warmup) result.samples.push_back(us);
  }
  result.throughput = 1e6 / median(result.samples);
  result.throughputUnit = "round trips/s";
  printResult(result);
}

__global__ void touchWord(std::uint32_t* word) { *word = 1; }

// A graph with memory nodes (allocation of 1 MiB, a kernel on it, its free), launched and waited
// for: the round trip of a program that runs such a graph per step. Under AgileOS the allocation
// node binds memory (after the first launch, the block already mapped there) and the free node
// releases it, each a request of its own (worker/graph_memory.h).
inline void graphMemoryLaunch(const Scale& scale) {
  const int warmup = 50, samples = scale.pick(1000, 200);
  cudaStream_t stream = nullptr;
  BENCH_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  int device = 0;
  BENCH_CUDA(cudaGetDevice(&device));
  cudaGraph_t graph = nullptr;
  BENCH_CUDA(cudaGraphCreate(&graph, 0));
  cudaMemAllocNodeParams alloc{};
  alloc.bytesize = 1 << 20;
  alloc.poolProps.allocType = cudaMemAllocationTypePinned;
  alloc.poolProps.location.type = cudaMemLocationTypeDevice;
  alloc.poolProps.location.id = device;
  cudaGraphNode_t allocNode = nullptr, kernelNode = nullptr, freeNode = nullptr;
  BENCH_CUDA(cudaGraphAddMemAllocNode(&allocNode, graph, nullptr, 0, &alloc));
  auto* word = static_cast<std::uint32_t*>(alloc.dptr);
  void* args[] = {&word};
  cudaKernelNodeParams kernel{};
  kernel.func = reinterpret_cast<void*>(touchWord);
  kernel.gridDim = dim3(1);
  kernel.blockDim = dim3(1);
  kernel.kernelParams = args;
  BENCH_CUDA(cudaGraphAddKernelNode(&kernelNode, graph, &allocNode, 1, &kernel));
  BENCH_CUDA(cudaGraphAddMemFreeNode(&freeNode, graph, &kernelNode, 1, alloc.dptr));
  cudaGraphExec_t exec = nullptr;
  BENCH_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  Result result{"graph_memory_launch", "us"};
  for (int i = 0; i < warmup + samples; ++i) {
    const auto start = Clock::now();
    BENCH_CUDA(cudaGraphLaunch(exec, stream));
    BENCH_CUDA(cudaStreamSynchronize(stream));
    const double us = secondsSince(start) * 1e6;
    BENCH_LAUNCHED();
    if (i >= warmup) result.samples.push_back(us);
  }
  BENCH_CUDA(cudaGraphExecDestroy(exec));
  BENCH_CUDA(cudaGraphDestroy(graph));
  BENCH_CUDA(cudaDeviceGraphMemTrim(device));
  BENCH_CUDA(cudaStreamDestroy(stream));
  result.throughput = 1e6 / median(result.samples);
  result.throughputUnit = "graphs/s";
  printResult(result);
}

// The driver API's launch path, as a program on libcuda.so.1 takes it: a module loaded from PTX
// (cuModuleLoadData), its function (cuModuleGetFunction), 10,000 cuLaunchKernel calls and one
// cuCtxSynchronize per sample, as launch_empty_10k. The driver calls are reached through
// cudaGetDriverEntryPointByVersion, so the program links only the runtime.
inline void driverLaunchEmpty10k(const Scale& scale) {
  static const char kPtx[] =
      ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry agileos_bench_empty()\n{\n  ret;\n}\n";
  using LoadData = CUresult (*)(CUmodule*, const void*);
  using GetFunction = CUresult (*)(CUfunction*, CUmodule, const char*);
  using LaunchKernel = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                    unsigned, CUstream, void**, void**);
  // Asked for at version 13000, cuCtxSynchronize is CUDA 13's ABI, which takes the context (null:
  // the current one); the older one takes nothing.
  using Synchronize = CUresult (*)(CUcontext);
  const auto entry = [](const char* name) {
    void* function = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    BENCH_CUDA(cudaGetDriverEntryPointByVersion(name, &function, 13000, cudaEnableDefault, &found));
    BENCH_VERIFY(found == cudaDriverEntryPointSuccess && function != nullptr, "no driver entry point %s",
                 name);
    return function;
  };
  const auto loadData = reinterpret_cast<LoadData>(entry("cuModuleLoadData"));
  const auto getFunction = reinterpret_cast<GetFunction>(entry("cuModuleGetFunction"));
  const auto launchKernel = reinterpret_cast<LaunchKernel>(entry("cuLaunchKernel"));
  const auto synchronize = reinterpret_cast<Synchronize>(entry("cuCtxSynchronize"));
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  BENCH_VERIFY(loadData(&module, kPtx) == CUDA_SUCCESS, "cuModuleLoadData failed");
  BENCH_VERIFY(getFunction(&function, module, "agileos_bench_empty") == CUDA_SUCCESS,
               "cuModuleGetFunction failed");
  constexpr int kLaunches = 10000;
  const int repetitions = scale.pick(10, 5);
  Result result{"driver_launch_empty_10k", "us"};
  for (int rep = -1; rep < repetitions; ++rep) {  // rep -1: warm-up
    const auto start = Clock::now();
    for (int i = 0; i < kLaunches; ++i) {
      const CUresult launched = launchKernel(function, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr);
      BENCH_VERIFY(launched == CUDA_SUCCESS, "cuLaunchKernel returned %d", static_cast<int>(launched));
    }
    BENCH_VERIFY(synchronize(nullptr) == CUDA_SUCCESS, "cuCtxSynchronize failed");
    if (rep >= 0) result.samples.push_back(secondsSince(start) * 1e6 / kLaunches);
  }
  result.throughput = 1e6 / median(result.samples);
  result.throughputUnit = "launches/s";
  result.parameters = {{"launches_per_sample", kLaunches}};
  printResult(result);
}

// Host memory for the bulk copies: pinned (cudaMallocHost) or pageable (malloc).
// Pageable memory is touched before any timing, so page faults are not measured.
class HostBuffer {
 public:
  HostBuffer(std::size_t bytes, bool pinned) : bytes_(bytes), pinned_(pinned) {
    if (pinned_) {
      BENCH_CUDA(cudaMallocHost(&data_, bytes_));
    } else {
      data_ = std::malloc(bytes_);
      BENCH_VERIFY(data_ != nullptr, "malloc(%zu) failed", bytes_);
    }
    std::memset(data_, 0, bytes_);
  }
  ~HostBuffer() {
    if (pinned_) {
      cudaFreeHost(data_);  // best effort at exit; the process ends right after
    } else {
      std::free(data_);
    }
  }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  std::uint32_t* words() const { return static_cast<std::uint32_t*>(data_); }

 private:
  std::size_t bytes_;
  bool pinned_;
  void* data_ = nullptr;
};

// 256 MiB cudaMemcpy in one direction, from/to pinned or pageable host memory.
// The bytes are checked after the timed copies: on the device by a kernel (H2D),
// on the host word by word (D2H).
inline void bulkCopy(const Scale& scale, const char* name, cudaMemcpyKind kind, bool pinned) {
  constexpr std::size_t kBytes = 256ull << 20;
  constexpr std::size_t kWords = kBytes / sizeof(std::uint32_t);
  const int repetitions = scale.pick(10, 3);
  HostBuffer host(kBytes, pinned);
  std::uint32_t* device = nullptr;
  unsigned long long* mismatches = nullptr;
  BENCH_CUDA(cudaMalloc(&device, kBytes));
  BENCH_CUDA(cudaMalloc(&mismatches, sizeof(*mismatches)));
  BENCH_CUDA(cudaMemset(mismatches, 0, sizeof(*mismatches)));
  const bool toDevice = kind == cudaMemcpyHostToDevice;
  if (toDevice) {
    for (std::size_t i = 0; i < kWords; ++i) host.words()[i] = mix32(static_cast<std::uint32_t>(i));
    BENCH_CUDA(cudaMemset(device, 0, kBytes));
  } else {
    writePattern<<<gridFor(kWords), 256>>>(device, kWords);
    BENCH_LAUNCHED();
  }
  BENCH_CUDA(cudaDeviceSynchronize());
  void* destination = toDevice ? static_cast<void*>(device) : static_cast<void*>(host.words());
  const void* source = toDevice ? static_cast<const void*>(host.words()) : static_cast<const void*>(device);

  Result result{name, "ms"};
  for (int rep = -1; rep < repetitions; ++rep) {  // rep -1: warm-up
    const auto start = Clock::now();
    BENCH_CUDA(cudaMemcpy(destination, source, kBytes, kind));
    const double ms = secondsSince(start) * 1e3;
    if (rep >= 0) result.samples.push_back(ms);
  }

  if (toDevice) {
    countPatternMismatches<<<gridFor(kWords), 256>>>(device, kWords, mismatches);
    BENCH_LAUNCHED();
    unsigned long long wrong = 0;
    BENCH_CUDA(cudaMemcpy(&wrong, mismatches, sizeof(wrong), cudaMemcpyDeviceToHost));
    BENCH_VERIFY(wrong == 0, "%s: %llu of %zu words differ on the device", name, wrong, kWords);
  } else {
    for (std::size_t i = 0; i < kWords; ++i) {
      BENCH_VERIFY(host.words()[i] == mix32(static_cast<std::uint32_t>(i)), "%s: host word %zu = 0x%08x",
                   name, i, host.words()[i]);
    }
  }
  BENCH_CUDA(cudaFree(device));
  BENCH_CUDA(cudaFree(mismatches));
  result.throughput = static_cast<double>(kBytes) / (median(result.samples) * 1e-3) / 1e9;
  result.throughputUnit = "GB/s";
  result.parameters = {{"bytes", static_cast<double>(kBytes)}};
  printResult(result);
}

// cudaMalloc immediately followed by cudaFree of the same size; a sample is the pair.
// The median of each call alone is recorded too.
inline void mallocFree(const Scale& scale, const char* name, std::size_t bytes, int fullSamples,
                       int quickSamples) {
  const int warmup = 20, samples = scale.pick(fullSamples, quickSamples);
  Result result{name, "us"};
  std::vector<double> mallocUs, freeUs;
  for (int i = 0; i < warmup + samples; ++i) {
    void* device = nullptr;
    const auto start = Clock::now();
    BENCH_CUDA(cudaMalloc(&device, bytes));
    const auto allocated = Clock::now();
    BENCH_CUDA(cudaFree(device));
    const auto end = Clock::now();
    BENCH_VERIFY(device != nullptr && reinterpret_cast<std::uintptr_t>(device) % 256 == 0,
                 "cudaMalloc(%zu) returned %p", bytes, device);
    if (i < warmup) continue;
    mallocUs.push_back(std::chrono::duration<double, std::micro>(allocated - start).count());
    freeUs.push_back(std::chrono::duration<double, std::micro>(end - allocated).count());
    result.samples.push_back(std::chrono::duration<double, std::micro>(end - start).count());
  }
  result.throughput = 1e6 / median(result.samples);
  result.throughputUnit = "pairs/s";
  result.parameters = {
      {"bytes", static_cast<double>(bytes)}, {"malloc_p50", median(mallocUs)}, {"free_p50", median(freeUs)}};
  printResult(result);
}

}  // namespace bench
