// Probe: stream-ordered allocation inside stream capture (graph memory nodes made by capture), as
// PyTorch's CUDA graphs and CUB-in-a-graph produce them, beyond the suite's single-stream case.
// A. cudaMallocAsync on the origin stream, the block used on a forked stream, joined back, copied
//    out and cudaFreeAsync'd on the origin; the graph's node types; 4 launches, the pinned input
//    changed between launches;
// B. the block freed on the forked stream (after its last use there), joined back afterwards;
// C. cudaMallocFromPoolAsync (an explicit pool) and cudaMallocAsync in ThreadLocal and Relaxed
//    captures, and a temp-storage allocation inside a captured two-pass reduction;
// D. an allocation the graph does not free: cudaGraphInstantiateWithFlags(AutoFreeOnLaunch),
//    cudaGraphExecGetFlags, three launches each read through the captured pointer, the graph memory
//    attributes, then cudaFreeAsync outside the graph and cudaDeviceGraphMemTrim;
// E. cudaFreeAsync in a capture of memory that is not a graph allocation (cudaMallocAsync'd before
//    the capture; cudaMalloc'd), printed by error name;
// F. cudaGraphExecUpdate of an executable graph with memory nodes from a second capture;
// G. two captured graphs with allocations launched concurrently on two streams, 8 rounds;
// H. cudaStreamBeginCaptureToGraph into a program-made graph with a captured allocation.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "tests/gpu/programs/check.cuh"
#include "tests/gpu/programs/graph_names.cuh"

namespace {

constexpr int kN = 1 << 16;
constexpr size_t kBytes = kN * sizeof(std::uint32_t);
const char* yesNo(bool v) { return v ? "yes" : "no"; }
const char* name(cudaError_t e) { return cudaGetErrorName(e); }

__host__ __device__ inline std::uint32_t affineValue(std::uint32_t x, std::uint32_t i, std::uint32_t mul,
                                                     std::uint32_t add) {
  return x * mul + add + i;
}
__global__ void affine(std::uint32_t* x, int n, std::uint32_t mul, std::uint32_t add) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    x[i] = affineValue(x[i], static_cast<std::uint32_t>(i), mul, add);
}
__global__ void fillSalt(std::uint32_t* x, int n, std::uint32_t salt) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    x[i] = mix32(static_cast<std::uint32_t>(i) ^ salt);
}
__global__ void partialSums(const std::uint32_t* in, int n, unsigned long long* partial) {
  unsigned long long local = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) local += in[i];
  atomicAdd(&partial[blockIdx.x % 8], local);
}
__global__ void finalSum(const unsigned long long* partial, unsigned long long* out) {
  if (threadIdx.x == 0) {
    unsigned long long s = 0;
    for (int b = 0; b < 8; ++b) s += partial[b];
    *out = s;
  }
}
void cpuAffine(std::vector<std::uint32_t>& x, std::uint32_t mul, std::uint32_t add) {
  for (size_t i = 0; i < x.size(); ++i) x[i] = affineValue(x[i], static_cast<std::uint32_t>(i), mul, add);
}

void describe(const char* label, cudaGraph_t graph) {
  size_t count = 0, edges = 0;
  CHECK_CUDA(cudaGraphGetNodes(graph, nullptr, &count));
  CHECK_CUDA(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &edges));
  std::vector<cudaGraphNode_t> nodes(count);
  if (count) CHECK_CUDA(cudaGraphGetNodes(graph, nodes.data(), &count));
  std::printf("%s: %zu nodes, %zu edges:", label, count, edges);
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType t;
    CHECK_CUDA(cudaGraphNodeGetType(node, &t));
    std::printf(" %s", graphNodeTypeName(t));
  }
  std::printf("\n");
}

void expectWords(const char* label, const std::uint32_t* got, const std::vector<std::uint32_t>& want) {
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_TRUE(got[i] == want[i], "%s: word %zu is 0x%08x, expected 0x%08x", label, i, got[i], want[i]);
}

struct Host {
  std::uint32_t* in = nullptr;
  std::uint32_t* out = nullptr;
};

void setInput(Host& h, std::uint32_t seed) {
  for (int i = 0; i < kN; ++i) h.in[i] = mix32(static_cast<std::uint32_t>(i) * 3u + seed);
}

// ================================================================ A, B
void forkedUse(Host& h, cudaStream_t s0, cudaStream_t s1, bool freeOnFork) {
  const char* label = freeOnFork ? "B" : "A";
  cudaEvent_t fork, join;
  CHECK_CUDA(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  CHECK_CUDA(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
  std::uint32_t* buf = nullptr;
  CHECK_CUDA(cudaMallocAsync(reinterpret_cast<void**>(&buf), kBytes, s0));
  CHECK_CUDA(cudaMemcpyAsync(buf, h.in, kBytes, cudaMemcpyHostToDevice, s0));
  CHECK_CUDA(cudaEventRecord(fork, s0));
  CHECK_CUDA(cudaStreamWaitEvent(s1, fork, 0));
  affine<<<64, 256, 0, s1>>>(buf, kN, 3u, 1u);
  CHECK_CUDA(cudaGetLastError());
  if (freeOnFork) {
    CHECK_CUDA(cudaMemcpyAsync(h.out, buf, kBytes, cudaMemcpyDeviceToHost, s1));
    CHECK_CUDA(cudaFreeAsync(buf, s1));
    CHECK_CUDA(cudaEventRecord(join, s1));
    CHECK_CUDA(cudaStreamWaitEvent(s0, join, 0));
  } else {
    CHECK_CUDA(cudaEventRecord(join, s1));
    CHECK_CUDA(cudaStreamWaitEvent(s0, join, 0));
    affine<<<64, 256, 0, s0>>>(buf, kN, 5u, 2u);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaMemcpyAsync(h.out, buf, kBytes, cudaMemcpyDeviceToHost, s0));
    CHECK_CUDA(cudaFreeAsync(buf, s0));
  }
  cudaGraph_t graph = nullptr;
  CHECK_CUDA(cudaStreamEndCapture(s0, &graph));
  std::fprintf(stderr, "%s: captured allocation at %p\n", label, static_cast<void*>(buf));
  describe(freeOnFork ? "B: graph (freed on the forked stream)" : "A: graph (used on a forked stream)",
           graph);
  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int launch = 0; launch < 4; ++launch) {
    setInput(h, 100u * static_cast<std::uint32_t>(launch) + (freeOnFork ? 7u : 0u));
    std::memset(h.out, 0, kBytes);
    CHECK_CUDA(cudaGraphLaunch(exec, s0));
    CHECK_CUDA(cudaStreamSynchronize(s0));
    std::vector<std::uint32_t> want(h.in, h.in + kN);
    cpuAffine(want, 3, 1);
    if (!freeOnFork) cpuAffine(want, 5, 2);
    expectWords(label, h.out, want);
  }
  std::printf("%s: 4 launches with new input each: exact, fnv=%016llx\n", label,
              static_cast<unsigned long long>(fnv1a64(h.out, kBytes)));
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
  CHECK_CUDA(cudaEventDestroy(fork));
  CHECK_CUDA(cudaEventDestroy(join));
}

// ================================================================ C
void poolsAndModes(Host& h, cudaStream_t s0) {
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  cudaMemPool_t pool = nullptr;
  CHECK_CUDA(cudaMemPoolCreate(&pool, &props));
  struct Case {
    const char* label;
    cudaStreamCaptureMode mode;
    bool fromPool;
  } cases[] = {{"C explicit pool, Global", cudaStreamCaptureModeGlobal, true},
               {"C default pool, ThreadLocal", cudaStreamCaptureModeThreadLocal, false},
               {"C default pool, Relaxed", cudaStreamCaptureModeRelaxed, false}};
  for (const Case& c : cases) {
    CHECK_CUDA(cudaStreamBeginCapture(s0, c.mode));
    std::uint32_t* buf = nullptr;
    const cudaError_t allocated =
        c.fromPool ? cudaMallocFromPoolAsync(reinterpret_cast<void**>(&buf), kBytes, pool, s0)
                   : cudaMallocAsync(reinterpret_cast<void**>(&buf), kBytes, s0);
    std::printf("%s: allocation during capture: %s\n", c.label, name(allocated));
    if (allocated == cudaSuccess) {
      CHECK_CUDA(cudaMemcpyAsync(buf, h.in, kBytes, cudaMemcpyHostToDevice, s0));
      affine<<<64, 256, 0, s0>>>(buf, kN, 7u, 3u);
      CHECK_CUDA(cudaGetLastError());
      CHECK_CUDA(cudaMemcpyAsync(h.out, buf, kBytes, cudaMemcpyDeviceToHost, s0));
      CHECK_CUDA(cudaFreeAsync(buf, s0));
    }
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(s0, &graph);
    std::printf("%s: end capture: %s\n", c.label, name(ended));
    std::printf("%s: cudaGetLastError -> %s\n", c.label, name(cudaGetLastError()));
    if (ended == cudaSuccess && allocated == cudaSuccess) {
      describe(c.label, graph);
      cudaGraphExec_t exec = nullptr;
      CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
      setInput(h, 0xC0u);
      std::memset(h.out, 0, kBytes);
      CHECK_CUDA(cudaGraphLaunch(exec, s0));
      CHECK_CUDA(cudaStreamSynchronize(s0));
      std::vector<std::uint32_t> want(h.in, h.in + kN);
      cpuAffine(want, 7, 3);
      expectWords(c.label, h.out, want);
      std::printf("%s: launch exact\n", c.label);
      CHECK_CUDA(cudaGraphExecDestroy(exec));
    }
    if (graph != nullptr) CHECK_CUDA(cudaGraphDestroy(graph));
  }
  CHECK_CUDA(cudaMemPoolDestroy(pool));

  // A captured reduction with its temp storage allocated and freed inside the capture.
  std::uint32_t* in = nullptr;
  unsigned long long* result = nullptr;
  CHECK_CUDA(cudaMalloc(&in, kBytes));
  CHECK_CUDA(cudaMalloc(&result, sizeof(unsigned long long)));
  CHECK_CUDA(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
  CHECK_CUDA(cudaMemcpyAsync(in, h.in, kBytes, cudaMemcpyHostToDevice, s0));
  unsigned long long* temp = nullptr;
  CHECK_CUDA(cudaMallocAsync(reinterpret_cast<void**>(&temp), 8 * sizeof(unsigned long long), s0));
  CHECK_CUDA(cudaMemsetAsync(temp, 0, 8 * sizeof(unsigned long long), s0));
  partialSums<<<32, 256, 0, s0>>>(in, kN, temp);
  finalSum<<<1, 32, 0, s0>>>(temp, result);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaFreeAsync(temp, s0));
  cudaGraph_t graph = nullptr;
  CHECK_CUDA(cudaStreamEndCapture(s0, &graph));
  describe("C captured reduction", graph);
  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int launch = 0; launch < 3; ++launch) {
    setInput(h, 0x5u + static_cast<std::uint32_t>(launch));
    CHECK_CUDA(cudaGraphLaunch(exec, s0));
    unsigned long long got = 0;
    CHECK_CUDA(cudaMemcpyAsync(&got, result, sizeof got, cudaMemcpyDeviceToHost, s0));
    CHECK_CUDA(cudaStreamSynchronize(s0));
    unsigned long long want = 0;
    for (int i = 0; i < kN; ++i) want += h.in[i];
    EXPECT_TRUE(got == want, "captured reduction launch %d: %llu vs %llu", launch, got, want);
  }
  std::printf("C captured reduction: 3 launches exact\n");
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
  CHECK_CUDA(cudaFree(in));
  CHECK_CUDA(cudaFree(result));
}

// ================================================================ D
void outliving(cudaStream_t s0) {
  CHECK_CUDA(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
  std::uint32_t* p = nullptr;
  CHECK_CUDA(cudaMallocAsync(reinterpret_cast<void**>(&p), kBytes, s0));
  fillSalt<<<64, 256, 0, s0>>>(p, kN, 0xD00Du);
  CHECK_CUDA(cudaGetLastError());
  cudaGraph_t graph = nullptr;
  CHECK_CUDA(cudaStreamEndCapture(s0, &graph));
  describe("D graph (allocation not freed)", graph);
  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiateWithFlags(&exec, graph, cudaGraphInstantiateFlagAutoFreeOnLaunch));
  unsigned long long flags = 0;
  CHECK_CUDA(cudaGraphExecGetFlags(exec, &flags));
  std::printf("D: cudaGraphExecGetFlags: %llu (AutoFreeOnLaunch is %llu)\n", flags,
              static_cast<unsigned long long>(cudaGraphInstantiateFlagAutoFreeOnLaunch));
  std::vector<std::uint32_t> want(kN), got(kN);
  for (int i = 0; i < kN; ++i) want[i] = mix32(static_cast<std::uint32_t>(i) ^ 0xD00Du);
  for (int launch = 0; launch < 3; ++launch) {
    CHECK_CUDA(cudaGraphLaunch(exec, s0));
    CHECK_CUDA(cudaMemcpyAsync(got.data(), p, kBytes, cudaMemcpyDeviceToHost, s0));
    CHECK_CUDA(cudaStreamSynchronize(s0));
    expectWords("D launch", got.data(), want);
  }
  std::printf("D: 3 launches, each read through the captured pointer after the launch: exact\n");
  unsigned long long used = 0, reserved = 0;
  CHECK_CUDA(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemCurrent, &used));
  CHECK_CUDA(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrReservedMemCurrent, &reserved));
  std::fprintf(stderr, "graph memory used %llu reserved %llu\n", used, reserved);
  std::printf("D: graph memory while live: used >= allocation %s, reserved >= used %s\n",
              yesNo(used >= kBytes), yesNo(reserved >= used));
  const cudaError_t freed = cudaFreeAsync(p, s0);
  std::printf("D: cudaFreeAsync of the graph's allocation outside the graph: %s\n", name(freed));
  CHECK_CUDA(cudaStreamSynchronize(s0));
  CHECK_CUDA(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrUsedMemCurrent, &used));
  std::fprintf(stderr, "graph memory used after the free: %llu\n", used);  // not fixed natively: stderr only
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
  std::printf("D: cudaDeviceGraphMemTrim: %s\n", name(cudaDeviceGraphMemTrim(0)));
  CHECK_CUDA(cudaDeviceGetGraphMemAttribute(0, cudaGraphMemAttrReservedMemCurrent, &reserved));
  std::fprintf(stderr, "graph memory reserved after trim %llu\n", reserved);
}

// ================================================================ E
void foreignFrees(cudaStream_t s0) {
  void* pooled = nullptr;
  void* plain = nullptr;
  CHECK_CUDA(cudaMallocAsync(&pooled, 4096, s0));
  CHECK_CUDA(cudaMalloc(&plain, 4096));
  CHECK_CUDA(cudaStreamSynchronize(s0));
  for (int k = 0; k < 2; ++k) {
    const char* label = k == 0 ? "E cudaMallocAsync'd before the capture" : "E cudaMalloc'd";
    CHECK_CUDA(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
    affine<<<1, 32, 0, s0>>>(static_cast<std::uint32_t*>(plain), 32, 1u, 0u);
    CHECK_CUDA(cudaGetLastError());
    const cudaError_t freed = cudaFreeAsync(k == 0 ? pooled : plain, s0);
    std::printf("%s: cudaFreeAsync during capture: %s\n", label, name(freed));
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    CHECK_CUDA(cudaStreamIsCapturing(s0, &st));
    std::printf("%s: capture status %d\n", label, static_cast<int>(st));
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(s0, &graph);
    std::printf("%s: end capture: %s\n", label, name(ended));
    std::printf("%s: cudaGetLastError -> %s\n", label, name(cudaGetLastError()));
    if (graph != nullptr) {
      describe(label, graph);
      CHECK_CUDA(cudaGraphDestroy(graph));
    }
  }
  CHECK_CUDA(cudaFreeAsync(pooled, s0));
  CHECK_CUDA(cudaStreamSynchronize(s0));
  CHECK_CUDA(cudaFree(plain));
  std::printf("E: both blocks freed normally afterwards\n");
}

// ================================================================ F
cudaGraph_t captureRoundTrip(Host& h, cudaStream_t s0, std::uint32_t mul) {
  CHECK_CUDA(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
  std::uint32_t* buf = nullptr;
  CHECK_CUDA(cudaMallocAsync(reinterpret_cast<void**>(&buf), kBytes, s0));
  CHECK_CUDA(cudaMemcpyAsync(buf, h.in, kBytes, cudaMemcpyHostToDevice, s0));
  affine<<<64, 256, 0, s0>>>(buf, kN, mul, 1u);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaMemcpyAsync(h.out, buf, kBytes, cudaMemcpyDeviceToHost, s0));
  CHECK_CUDA(cudaFreeAsync(buf, s0));
  cudaGraph_t graph = nullptr;
  CHECK_CUDA(cudaStreamEndCapture(s0, &graph));
  return graph;
}

void updateWithMemoryNodes(Host& h, cudaStream_t s0) {
  cudaGraph_t first = captureRoundTrip(h, s0, 3u);
  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&exec, first, 0));
  cudaGraph_t second = captureRoundTrip(h, s0, 9u);
  cudaGraphExecUpdateResultInfo info{};
  const cudaError_t status = cudaGraphExecUpdate(exec, second, &info);
  std::printf("F: cudaGraphExecUpdate with memory nodes: %s, result %d, error node set %s\n", name(status),
              static_cast<int>(info.result), yesNo(info.errorNode != nullptr));
  std::printf("F: cudaGetLastError -> %s\n", name(cudaGetLastError()));
  setInput(h, 0xF0u);
  std::memset(h.out, 0, kBytes);
  CHECK_CUDA(cudaGraphLaunch(exec, s0));
  CHECK_CUDA(cudaStreamSynchronize(s0));
  std::vector<std::uint32_t> want(h.in, h.in + kN);
  cpuAffine(want, status == cudaSuccess ? 9u : 3u, 1u);
  expectWords("F launch after the update", h.out, want);
  std::printf("F: launch after the update: exact for the graph the result says is in effect\n");
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(first));
  CHECK_CUDA(cudaGraphDestroy(second));
}

// ================================================================ G
void concurrentGraphs(cudaStream_t s0, cudaStream_t s1) {
  std::uint32_t* hostOut[2];
  std::uint32_t* dOut[2];
  cudaGraphExec_t exec[2];
  cudaStream_t streams[2] = {s0, s1};
  for (int g = 0; g < 2; ++g) {
    CHECK_CUDA(cudaMallocHost(&hostOut[g], kBytes));
    CHECK_CUDA(cudaMalloc(&dOut[g], kBytes));
    CHECK_CUDA(cudaStreamBeginCapture(streams[g], cudaStreamCaptureModeThreadLocal));
    std::uint32_t *a = nullptr, *b = nullptr;
    CHECK_CUDA(cudaMallocAsync(reinterpret_cast<void**>(&a), kBytes, streams[g]));
    CHECK_CUDA(cudaMallocAsync(reinterpret_cast<void**>(&b), kBytes / 2, streams[g]));
    fillSalt<<<64, 256, 0, streams[g]>>>(a, kN, 0x6000u + static_cast<std::uint32_t>(g));
    fillSalt<<<64, 256, 0, streams[g]>>>(b, kN / 2, 0x7000u + static_cast<std::uint32_t>(g));
    affine<<<64, 256, 0, streams[g]>>>(a, kN, 3u + static_cast<std::uint32_t>(g), 1u);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaMemcpyAsync(dOut[g], a, kBytes / 2, cudaMemcpyDeviceToDevice, streams[g]));
    CHECK_CUDA(cudaMemcpyAsync(dOut[g] + kN / 2, b, kBytes / 2, cudaMemcpyDeviceToDevice, streams[g]));
    CHECK_CUDA(cudaFreeAsync(b, streams[g]));
    CHECK_CUDA(cudaFreeAsync(a, streams[g]));
    CHECK_CUDA(cudaMemcpyAsync(hostOut[g], dOut[g], kBytes, cudaMemcpyDeviceToHost, streams[g]));
    cudaGraph_t graph = nullptr;
    CHECK_CUDA(cudaStreamEndCapture(streams[g], &graph));
    CHECK_CUDA(cudaGraphInstantiate(&exec[g], graph, 0));
    CHECK_CUDA(cudaGraphDestroy(graph));
  }
  std::vector<std::uint32_t> want[2];
  for (int g = 0; g < 2; ++g) {
    std::vector<std::uint32_t> a(kN);
    for (int i = 0; i < kN; ++i)
      a[i] = mix32(static_cast<std::uint32_t>(i) ^ (0x6000u + static_cast<std::uint32_t>(g)));
    cpuAffine(a, 3u + static_cast<std::uint32_t>(g), 1u);
    want[g].assign(a.begin(), a.begin() + kN / 2);
    for (int i = 0; i < kN / 2; ++i)
      want[g].push_back(mix32(static_cast<std::uint32_t>(i) ^ (0x7000u + static_cast<std::uint32_t>(g))));
  }
  for (int round = 0; round < 8; ++round) {
    for (int g = 0; g < 2; ++g) std::memset(hostOut[g], 0, kBytes);
    CHECK_CUDA(cudaGraphLaunch(exec[0], s0));
    CHECK_CUDA(cudaGraphLaunch(exec[1], s1));
    CHECK_CUDA(cudaStreamSynchronize(s0));
    CHECK_CUDA(cudaStreamSynchronize(s1));
    for (int g = 0; g < 2; ++g) expectWords("G concurrent graphs", hostOut[g], want[g]);
  }
  std::printf(
      "G: two graphs with allocations, 8 concurrent rounds on two streams: exact, fnv %016llx %016llx\n",
      static_cast<unsigned long long>(fnv1a64(hostOut[0], kBytes)),
      static_cast<unsigned long long>(fnv1a64(hostOut[1], kBytes)));
  for (int g = 0; g < 2; ++g) {
    CHECK_CUDA(cudaGraphExecDestroy(exec[g]));
    CHECK_CUDA(cudaFreeHost(hostOut[g]));
    CHECK_CUDA(cudaFree(dOut[g]));
  }
}

// ================================================================ H
void captureToGraphWithAllocation(Host& h, cudaStream_t s0) {
  cudaGraph_t graph = nullptr;
  CHECK_CUDA(cudaGraphCreate(&graph, 0));
  cudaGraphNode_t first = nullptr;
  CHECK_CUDA(cudaGraphAddEmptyNode(&first, graph, nullptr, 0));
  const cudaError_t begun =
      cudaStreamBeginCaptureToGraph(s0, graph, &first, nullptr, 1, cudaStreamCaptureModeGlobal);
  std::printf("H: begin capture into a program-made graph: %s\n", name(begun));
  if (begun != cudaSuccess) {
    CHECK_CUDA(cudaGraphDestroy(graph));
    return;
  }
  std::uint32_t* buf = nullptr;
  const cudaError_t allocated = cudaMallocAsync(reinterpret_cast<void**>(&buf), kBytes, s0);
  std::printf("H: cudaMallocAsync in it: %s\n", name(allocated));
  if (allocated == cudaSuccess) {
    CHECK_CUDA(cudaMemcpyAsync(buf, h.in, kBytes, cudaMemcpyHostToDevice, s0));
    affine<<<64, 256, 0, s0>>>(buf, kN, 11u, 5u);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaMemcpyAsync(h.out, buf, kBytes, cudaMemcpyDeviceToHost, s0));
    CHECK_CUDA(cudaFreeAsync(buf, s0));
  }
  cudaGraph_t ended = nullptr;
  const cudaError_t endStatus = cudaStreamEndCapture(s0, &ended);
  std::printf("H: end capture: %s, same graph %s\n", name(endStatus), yesNo(ended == graph));
  std::printf("H: cudaGetLastError -> %s\n", name(cudaGetLastError()));
  if (endStatus == cudaSuccess && allocated == cudaSuccess) {
    describe("H: graph", graph);
    cudaGraphExec_t exec = nullptr;
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    setInput(h, 0x77u);
    std::memset(h.out, 0, kBytes);
    CHECK_CUDA(cudaGraphLaunch(exec, s0));
    CHECK_CUDA(cudaStreamSynchronize(s0));
    std::vector<std::uint32_t> want(h.in, h.in + kN);
    cpuAffine(want, 11, 5);
    expectWords("H launch", h.out, want);
    std::printf("H: launch exact\n");
    CHECK_CUDA(cudaGraphExecDestroy(exec));
  }
  CHECK_CUDA(cudaGraphDestroy(graph));
}

}  // namespace

int main() {
  Host h;
  CHECK_CUDA(cudaMallocHost(&h.in, kBytes));
  CHECK_CUDA(cudaMallocHost(&h.out, kBytes));
  cudaStream_t s0, s1;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  forkedUse(h, s0, s1, false);
  forkedUse(h, s0, s1, true);
  poolsAndModes(h, s0);
  outliving(s0);
  foreignFrees(s0);
  updateWithMemoryNodes(h, s0);
  concurrentGraphs(s0, s1);
  captureToGraphWithAllocation(h, s0);
  CHECK_CUDA(cudaDeviceSynchronize());
  EXPECT_ERROR("final cudaGetLastError", cudaGetLastError(), cudaSuccess);
  CHECK_CUDA(cudaStreamDestroy(s0));
  CHECK_CUDA(cudaStreamDestroy(s1));
  CHECK_CUDA(cudaFreeHost(h.in));
  CHECK_CUDA(cudaFreeHost(h.out));
  std::printf("probe_graph_alloc_capture OK\n");
  return 0;
}
