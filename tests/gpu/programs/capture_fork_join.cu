// Stream capture as real programs use it, beyond a single fork and join (written at stop 39 as a
// probe of what real programs do; it printed what native CUDA printed on the H100):
// A. a three-stream capture with a nested fork, a cross-branch join and a final join, captured in
//    each mode (Global, ThreadLocal, Relaxed); cudaStreamGetCaptureInfo on every stream of the
//    capture (same id and graph on a forked stream, dependency counts and the dependencies' node
//    types); the captured graph's node order (GetNodes), edges, roots; 3 launches per mode, each
//    checked against a CPU reference;
// B. nodes added by hand to the graph of a capture in progress (cudaStreamGetCaptureInfo's graph,
//    cudaGraphAddKernelNode / cudaGraphAddHostNode) and joined into the stream with
//    cudaStreamUpdateCaptureDependencies (Set and Add flags), as NCCL and PyTorch do;
// C. cudaStreamBeginCaptureToGraph: three captures appended to one program-made graph, after a
//    node of it, after the previous capture's last node, and as a new root (on another stream);
// D. cudaEventRecordWithFlags(cudaEventRecordExternal) and cudaStreamWaitEvent(cudaEventWaitExternal)
//    inside a capture: an outside stream waits for the graph's event record node, and the graph's
//    wait node waits for a slow kernel of an outside stream;
// E. two threads capturing their own streams at the same time (ThreadLocal mode);
// F. a capture of cudaStreamPerThread in a worker thread, and of a blocking stream (cudaStreamCreate);
// G. an empty capture: its graph, instantiated and launched.
// stdout: values, checksums and error names only.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/gpu/programs/check.cuh"
#include "tests/gpu/programs/graph_names.cuh"

namespace {

constexpr int kN = 1 << 16;
constexpr size_t kBytes = kN * sizeof(std::uint32_t);

__host__ __device__ inline std::uint32_t affineValue(std::uint32_t x, std::uint32_t i, std::uint32_t mul,
                                                     std::uint32_t add) {
  return x * mul + add + i;
}
__host__ __device__ inline std::uint32_t rotl5(std::uint32_t v) { return (v << 5) | (v >> 27); }
__host__ __device__ inline std::uint32_t mixValue(std::uint32_t out, std::uint32_t a, std::uint32_t b) {
  return out * 7u + (a ^ rotl5(b));
}

__global__ void affine(std::uint32_t* x, int n, std::uint32_t mul, std::uint32_t add) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    x[i] = affineValue(x[i], static_cast<std::uint32_t>(i), mul, add);
}

// Many dependent rounds: slow enough that a reader on another stream would overtake it without
// the event that orders them.
__global__ void slowAffine(std::uint32_t* x, int n, std::uint32_t mul, std::uint32_t add, int rounds) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    std::uint32_t v = x[i];
    for (int r = 0; r < rounds; ++r) v = affineValue(v, static_cast<std::uint32_t>(i), mul, add);
    x[i] = v;
  }
}

__global__ void mixInto(const std::uint32_t* a, const std::uint32_t* b, std::uint32_t* out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = mixValue(out[i], a[i], b[i]);
}

void cpuAffine(std::vector<std::uint32_t>& x, std::uint32_t mul, std::uint32_t add, int rounds = 1) {
  for (size_t i = 0; i < x.size(); ++i)
    for (int r = 0; r < rounds; ++r) x[i] = affineValue(x[i], static_cast<std::uint32_t>(i), mul, add);
}
void cpuMix(const std::vector<std::uint32_t>& a, const std::vector<std::uint32_t>& b,
            std::vector<std::uint32_t>& out) {
  for (size_t i = 0; i < out.size(); ++i) out[i] = mixValue(out[i], a[i], b[i]);
}

const char* yesNo(bool v) { return v ? "yes" : "no"; }

std::string nodeTypeOf(cudaGraphNode_t node) {
  cudaGraphNodeType type;
  CHECK_CUDA(cudaGraphNodeGetType(node, &type));
  return graphNodeTypeName(type);
}

// Sorted type names of a list of nodes, e.g. "kernel,memset".
std::string typeList(const cudaGraphNode_t* nodes, size_t count) {
  std::vector<std::string> names;
  for (size_t i = 0; i < count; ++i) names.push_back(nodeTypeOf(nodes[i]));
  std::sort(names.begin(), names.end());
  std::string joined;
  for (const auto& n : names) joined += (joined.empty() ? "" : ",") + n;
  return joined.empty() ? "-" : joined;
}

// Node count, edge count, root count, and the node types in cudaGraphGetNodes order.
void describe(const char* label, cudaGraph_t graph) {
  size_t count = 0;
  CHECK_CUDA(cudaGraphGetNodes(graph, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  if (count > 0) CHECK_CUDA(cudaGraphGetNodes(graph, nodes.data(), &count));
  size_t edges = 0, roots = 0;
  CHECK_CUDA(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &edges));
  CHECK_CUDA(cudaGraphGetRootNodes(graph, nullptr, &roots));
  std::printf("%s: %zu nodes, %zu edges, %zu roots; order:", label, count, edges, roots);
  for (cudaGraphNode_t node : nodes) std::printf(" %s", nodeTypeOf(node).c_str());
  std::printf("\n");
}

std::uint64_t fnvWords(const std::uint32_t* p, size_t n) { return fnv1a64(p, n * sizeof(std::uint32_t)); }

void expectEqual(const char* label, const std::uint32_t* got, const std::vector<std::uint32_t>& want) {
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_TRUE(got[i] == want[i], "%s: word %zu is 0x%08x, expected 0x%08x", label, i, got[i], want[i]);
  }
}

struct Buffers {
  std::uint32_t *A = nullptr, *B = nullptr, *C = nullptr, *D = nullptr;
  std::uint32_t *hostIn = nullptr, *hostOut = nullptr, *hostOut2 = nullptr;
};

void hostCounter(void* data) { ++*static_cast<int*>(data); }

// ---- A. three streams, nested fork, cross-branch join
void forkJoin(const Buffers& b, cudaStream_t s0, cudaStream_t s1, cudaStream_t s2, cudaStreamCaptureMode mode,
              unsigned long long* lastId) {
  const char* m = captureModeName(mode);
  cudaEvent_t eFork, eB, eC2, eD;
  CHECK_CUDA(cudaEventCreateWithFlags(&eFork, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventCreateWithFlags(&eB, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventCreateWithFlags(&eC2, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventCreateWithFlags(&eD, cudaEventDisableTiming));
  const int n = kN;

  CHECK_CUDA(cudaStreamBeginCapture(s0, mode));
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  unsigned long long id0 = 0, id1 = 0, id2 = 0;
  cudaGraph_t g0 = nullptr, g1 = nullptr, g2 = nullptr;
  const cudaGraphNode_t* deps = nullptr;
  size_t nd = 99;
  CHECK_CUDA(cudaStreamGetCaptureInfo(s0, &st, &id0, &g0, &deps, nullptr, &nd));
  std::printf("A %s: after begin: status %s, dependencies %zu, id differs from previous capture %s\n", m,
              captureStatusName(st), nd, yesNo(id0 != *lastId));
  *lastId = id0;

  CHECK_CUDA(cudaMemcpyAsync(b.A, b.hostIn, kBytes, cudaMemcpyHostToDevice, s0));
  CHECK_CUDA(cudaEventRecord(eFork, s0));
  CHECK_CUDA(cudaStreamWaitEvent(s1, eFork, 0));
  CHECK_CUDA(cudaStreamWaitEvent(s2, eFork, 0));
  CHECK_CUDA(cudaStreamGetCaptureInfo(s1, &st, &id1, &g1, &deps, nullptr, &nd));
  std::printf("A %s: forked stream 1: status %s, same id %s, same graph %s, dependencies %zu (%s)\n", m,
              captureStatusName(st), yesNo(id1 == id0), yesNo(g1 == g0), nd, typeList(deps, nd).c_str());
  // branch 1: B = A; affine(B)
  CHECK_CUDA(cudaMemcpyAsync(b.B, b.A, kBytes, cudaMemcpyDeviceToDevice, s1));
  affine<<<64, 256, 0, s1>>>(b.B, n, 3u, 1u);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaEventRecord(eB, s1));
  // branch 2: C = A; affine(C); then waits for branch 1 and mixes B into C
  CHECK_CUDA(cudaMemcpyAsync(b.C, b.A, kBytes, cudaMemcpyDeviceToDevice, s2));
  affine<<<64, 256, 0, s2>>>(b.C, n, 5u, 7u);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaStreamWaitEvent(s2, eB, 0));
  CHECK_CUDA(cudaStreamGetCaptureInfo(s2, &st, &id2, &g2, &deps, nullptr, &nd));
  std::printf("A %s: stream 2 after the cross-branch wait: same id %s, dependencies %zu (%s)\n", m,
              yesNo(id2 == id0), nd, typeList(deps, nd).c_str());
  mixInto<<<64, 256, 0, s2>>>(b.B, b.A, b.C, n);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaEventRecord(eC2, s2));
  // branch 1 continues with an independent buffer D
  CHECK_CUDA(cudaMemsetAsync(b.D, 0x11, kBytes, s1));
  affine<<<64, 256, 0, s1>>>(b.D, n, 13u, 3u);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaEventRecord(eD, s1));
  // join both back into stream 0
  CHECK_CUDA(cudaStreamWaitEvent(s0, eC2, 0));
  CHECK_CUDA(cudaStreamWaitEvent(s0, eD, 0));
  CHECK_CUDA(cudaStreamGetCaptureInfo(s0, &st, &id0, &g0, &deps, nullptr, &nd));
  std::printf("A %s: origin after the joins: dependencies %zu (%s)\n", m, nd, typeList(deps, nd).c_str());
  mixInto<<<64, 256, 0, s0>>>(b.C, b.D, b.A, n);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaMemcpyAsync(b.hostOut, b.A, kBytes, cudaMemcpyDeviceToHost, s0));
  cudaGraph_t graph = nullptr;
  CHECK_CUDA(cudaStreamEndCapture(s0, &graph));
  CHECK_CUDA(cudaStreamIsCapturing(s1, &st));
  std::printf("A %s: after end: stream 1 status %s\n", m, captureStatusName(st));
  describe((std::string("A ") + m + ": graph").c_str(), graph);

  // CPU reference
  std::vector<std::uint32_t> A(b.hostIn, b.hostIn + kN), B = A, C = A, D(kN, 0x11111111u);
  cpuAffine(B, 3, 1);
  cpuAffine(C, 5, 7);
  cpuMix(B, A, C);
  cpuAffine(D, 13, 3);
  cpuMix(C, D, A);

  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int launch = 0; launch < 3; ++launch) {
    std::memset(b.hostOut, 0, kBytes);
    CHECK_CUDA(cudaGraphLaunch(exec, s0));
    CHECK_CUDA(cudaStreamSynchronize(s0));
    expectEqual("fork/join launch", b.hostOut, A);
  }
  std::printf("A %s: 3 launches exact, fnv=%016llx\n", m,
              static_cast<unsigned long long>(fnvWords(b.hostOut, kN)));
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
  for (cudaEvent_t e : {eFork, eB, eC2, eD}) CHECK_CUDA(cudaEventDestroy(e));
}

// ---- B. nodes added by hand to the capture's graph
void manualNodes(const Buffers& b, cudaStream_t s0) {
  int hostCalls = 0;
  const int n = kN;
  CHECK_CUDA(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
  CHECK_CUDA(cudaMemcpyAsync(b.A, b.hostIn, kBytes, cudaMemcpyHostToDevice, s0));
  affine<<<64, 256, 0, s0>>>(b.A, n, 3u, 1u);
  CHECK_CUDA(cudaGetLastError());
  cudaStreamCaptureStatus st;
  cudaGraph_t capturing = nullptr;
  const cudaGraphNode_t* deps = nullptr;
  size_t nd = 0;
  CHECK_CUDA(cudaStreamGetCaptureInfo(s0, &st, nullptr, &capturing, &deps, nullptr, &nd));
  std::printf("B: before the manual kernel: dependencies %zu (%s)\n", nd, typeList(deps, nd).c_str());
  std::uint32_t* A = b.A;
  int count = n;
  std::uint32_t mul = 5, add = 2;
  void* args[] = {&A, &count, &mul, &add};
  cudaKernelNodeParams kp{};
  kp.func = reinterpret_cast<void*>(affine);
  kp.gridDim = dim3(32);
  kp.blockDim = dim3(128);
  kp.kernelParams = args;
  cudaGraphNode_t manualKernel = nullptr;
  CHECK_CUDA(cudaGraphAddKernelNode(&manualKernel, capturing, deps, nd, &kp));
  CHECK_CUDA(
      cudaStreamUpdateCaptureDependencies(s0, &manualKernel, nullptr, 1, cudaStreamSetCaptureDependencies));
  CHECK_CUDA(cudaStreamGetCaptureInfo(s0, &st, nullptr, nullptr, &deps, nullptr, &nd));
  std::printf("B: after Set: dependencies %zu (%s), the manual node %s\n", nd, typeList(deps, nd).c_str(),
              yesNo(nd == 1 && deps[0] == manualKernel));
  affine<<<64, 256, 0, s0>>>(b.A, n, 7u, 3u);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaStreamGetCaptureInfo(s0, &st, nullptr, nullptr, &deps, nullptr, &nd));
  cudaHostNodeParams hp{hostCounter, &hostCalls};
  cudaGraphNode_t manualHost = nullptr;
  CHECK_CUDA(cudaGraphAddHostNode(&manualHost, capturing, deps, nd, &hp));
  CHECK_CUDA(
      cudaStreamUpdateCaptureDependencies(s0, &manualHost, nullptr, 1, cudaStreamAddCaptureDependencies));
  CHECK_CUDA(cudaStreamGetCaptureInfo(s0, &st, nullptr, nullptr, &deps, nullptr, &nd));
  std::printf("B: after Add: dependencies %zu (%s)\n", nd, typeList(deps, nd).c_str());
  CHECK_CUDA(cudaMemcpyAsync(b.hostOut, b.A, kBytes, cudaMemcpyDeviceToHost, s0));
  cudaGraph_t graph = nullptr;
  CHECK_CUDA(cudaStreamEndCapture(s0, &graph));
  std::printf("B: the capture's graph is the one GetCaptureInfo gave: %s\n", yesNo(graph == capturing));
  describe("B: graph", graph);
  size_t hostDeps = 0, copyDeps = 0;
  CHECK_CUDA(cudaGraphNodeGetDependencies(manualHost, nullptr, nullptr, &hostDeps));
  size_t count2 = 0;
  CHECK_CUDA(cudaGraphGetNodes(graph, nullptr, &count2));
  std::vector<cudaGraphNode_t> nodes(count2);
  CHECK_CUDA(cudaGraphGetNodes(graph, nodes.data(), &count2));
  for (cudaGraphNode_t node : nodes) {  // the copy out: the memcpy node with dependencies
    cudaGraphNodeType t;
    CHECK_CUDA(cudaGraphNodeGetType(node, &t));
    if (t != cudaGraphNodeTypeMemcpy) continue;
    size_t deps = 0;
    CHECK_CUDA(cudaGraphNodeGetDependencies(node, nullptr, nullptr, &deps));
    copyDeps = std::max(copyDeps, deps);
  }
  std::printf("B: manual host node has %zu dependencies, the copy out %zu\n", hostDeps, copyDeps);

  std::vector<std::uint32_t> want(b.hostIn, b.hostIn + kN);
  cpuAffine(want, 3, 1);
  cpuAffine(want, 5, 2);
  cpuAffine(want, 7, 3);
  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int launch = 0; launch < 2; ++launch) {
    std::memset(b.hostOut, 0, kBytes);
    CHECK_CUDA(cudaGraphLaunch(exec, s0));
    CHECK_CUDA(cudaStreamSynchronize(s0));
    expectEqual("manual nodes", b.hostOut, want);
  }
  EXPECT_TRUE(hostCalls == 2, "host node ran %d times", hostCalls);
  std::printf("B: 2 launches exact, host node ran %d times, fnv=%016llx\n", hostCalls,
              static_cast<unsigned long long>(fnvWords(b.hostOut, kN)));
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
}

// ---- C. captures appended to one graph
void captureToGraph(const Buffers& b, cudaStream_t s0, cudaStream_t s1) {
  const int n = kN;
  cudaGraph_t graph = nullptr;
  CHECK_CUDA(cudaGraphCreate(&graph, 0));
  cudaMemsetParams ms{};
  ms.dst = b.A;
  ms.value = 0x01;
  ms.elementSize = 1;
  ms.width = kBytes;
  ms.height = 1;
  cudaGraphNode_t memsetNode = nullptr;
  CHECK_CUDA(cudaGraphAddMemsetNode(&memsetNode, graph, nullptr, 0, &ms));

  CHECK_CUDA(cudaStreamBeginCaptureToGraph(s0, graph, &memsetNode, nullptr, 1, cudaStreamCaptureModeGlobal));
  affine<<<64, 256, 0, s0>>>(b.A, n, 3u, 1u);
  CHECK_CUDA(cudaGetLastError());
  cudaStreamCaptureStatus st;
  cudaGraph_t inProgress = nullptr;
  const cudaGraphNode_t* deps = nullptr;
  size_t nd = 0;
  CHECK_CUDA(cudaStreamGetCaptureInfo(s0, &st, nullptr, &inProgress, &deps, nullptr, &nd));
  std::printf("C: first capture: into the program's graph %s, dependencies %zu\n", yesNo(inProgress == graph),
              nd);
  EXPECT_TRUE(nd == 1, "one dependency expected, got %zu", nd);
  cudaGraphNode_t leaf = deps[0];
  cudaGraph_t ended = nullptr;
  CHECK_CUDA(cudaStreamEndCapture(s0, &ended));
  std::printf("C: first capture ended, returned graph is the program's: %s\n", yesNo(ended == graph));

  CHECK_CUDA(cudaStreamBeginCaptureToGraph(s0, graph, &leaf, nullptr, 1, cudaStreamCaptureModeThreadLocal));
  affine<<<64, 256, 0, s0>>>(b.A, n, 5u, 2u);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaMemcpyAsync(b.hostOut, b.A, kBytes, cudaMemcpyDeviceToHost, s0));
  ended = nullptr;
  CHECK_CUDA(cudaStreamEndCapture(s0, &ended));
  std::printf("C: second capture ended, returned graph is the program's: %s\n", yesNo(ended == graph));

  CHECK_CUDA(cudaStreamBeginCaptureToGraph(s1, graph, nullptr, nullptr, 0, cudaStreamCaptureModeRelaxed));
  CHECK_CUDA(cudaMemsetAsync(b.B, 0x2B, kBytes, s1));
  affine<<<64, 256, 0, s1>>>(b.B, n, 9u, 4u);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaMemcpyAsync(b.hostOut2, b.B, kBytes, cudaMemcpyDeviceToHost, s1));
  ended = nullptr;
  CHECK_CUDA(cudaStreamEndCapture(s1, &ended));
  std::printf("C: third capture (new root, other stream) ended, returned graph is the program's: %s\n",
              yesNo(ended == graph));
  describe("C: graph", graph);

  std::vector<std::uint32_t> wantA(kN, 0x01010101u), wantB(kN, 0x2B2B2B2Bu);
  cpuAffine(wantA, 3, 1);
  cpuAffine(wantA, 5, 2);
  cpuAffine(wantB, 9, 4);
  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int launch = 0; launch < 2; ++launch) {
    std::memset(b.hostOut, 0, kBytes);
    std::memset(b.hostOut2, 0, kBytes);
    CHECK_CUDA(cudaGraphLaunch(exec, s0));
    CHECK_CUDA(cudaStreamSynchronize(s0));
    expectEqual("capture to graph, A", b.hostOut, wantA);
    expectEqual("capture to graph, B", b.hostOut2, wantB);
  }
  std::printf("C: 2 launches exact, fnv A=%016llx B=%016llx\n",
              static_cast<unsigned long long>(fnvWords(b.hostOut, kN)),
              static_cast<unsigned long long>(fnvWords(b.hostOut2, kN)));
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
}

// ---- D. external event record and wait nodes made by capture
void externalEvents(const Buffers& b, cudaStream_t s0, cudaStream_t s1) {
  const int n = kN;
  cudaEvent_t evExt, evOut;
  CHECK_CUDA(cudaEventCreateWithFlags(&evExt, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventCreateWithFlags(&evOut, cudaEventDisableTiming));

  CHECK_CUDA(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
  CHECK_CUDA(cudaMemcpyAsync(b.A, b.hostIn, kBytes, cudaMemcpyHostToDevice, s0));
  CHECK_CUDA(cudaMemsetAsync(b.B, 0, kBytes, s0));
  slowAffine<<<32, 128, 0, s0>>>(b.A, n, 3u, 1u, 200);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaEventRecordWithFlags(evExt, s0, cudaEventRecordExternal));
  slowAffine<<<32, 128, 0, s0>>>(b.B, n, 5u, 2u, 2000);
  CHECK_CUDA(cudaGetLastError());
  cudaGraph_t graph = nullptr;
  CHECK_CUDA(cudaStreamEndCapture(s0, &graph));
  describe("D: external record graph", graph);

  std::vector<std::uint32_t> wantA(b.hostIn, b.hostIn + kN), wantB(kN, 0u);
  cpuAffine(wantA, 3, 1, 200);
  cpuAffine(wantB, 5, 2, 2000);
  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int launch = 0; launch < 2; ++launch) {
    std::memset(b.hostOut, 0, kBytes);
    CHECK_CUDA(cudaGraphLaunch(exec, s0));
    CHECK_CUDA(cudaStreamWaitEvent(s1, evExt, 0));
    CHECK_CUDA(cudaMemcpyAsync(b.hostOut, b.A, kBytes, cudaMemcpyDeviceToHost, s1));
    CHECK_CUDA(cudaStreamSynchronize(s1));
    expectEqual("external record: A read after the graph's event", b.hostOut, wantA);
    CHECK_CUDA(cudaStreamSynchronize(s0));
  }
  CHECK_CUDA(cudaMemcpy(b.hostOut2, b.B, kBytes, cudaMemcpyDeviceToHost));
  expectEqual("external record: B", b.hostOut2, wantB);
  std::printf("D: outside stream waited on the graph's event record node: exact, fnv=%016llx\n",
              static_cast<unsigned long long>(fnvWords(b.hostOut, kN)));
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));

  // A wait node on an event an outside stream records before each launch.
  CHECK_CUDA(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
  CHECK_CUDA(cudaStreamWaitEvent(s0, evOut, cudaEventWaitExternal));
  CHECK_CUDA(cudaMemcpyAsync(b.A, b.C, kBytes, cudaMemcpyDeviceToDevice, s0));
  CHECK_CUDA(cudaMemcpyAsync(b.hostOut, b.A, kBytes, cudaMemcpyDeviceToHost, s0));
  CHECK_CUDA(cudaStreamEndCapture(s0, &graph));
  describe("D: external wait graph", graph);
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int launch = 0; launch < 2; ++launch) {
    const std::uint32_t salt = 0x40u + static_cast<std::uint32_t>(launch);
    CHECK_CUDA(cudaMemsetAsync(b.C, static_cast<int>(salt), kBytes, s1));
    slowAffine<<<32, 128, 0, s1>>>(b.C, n, 11u, salt, 3000);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaEventRecord(evOut, s1));
    std::memset(b.hostOut, 0, kBytes);
    CHECK_CUDA(cudaGraphLaunch(exec, s0));
    CHECK_CUDA(cudaStreamSynchronize(s0));
    std::vector<std::uint32_t> want(kN, salt * 0x01010101u);
    cpuAffine(want, 11, salt, 3000);
    expectEqual("external wait node", b.hostOut, want);
  }
  CHECK_CUDA(cudaStreamSynchronize(s1));
  std::printf("D: the graph's wait node waited for the outside kernel: exact, fnv=%016llx\n",
              static_cast<unsigned long long>(fnvWords(b.hostOut, kN)));
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
  CHECK_CUDA(cudaEventDestroy(evExt));
  CHECK_CUDA(cudaEventDestroy(evOut));
}

// ---- E. two threads capturing at the same time
struct ThreadResult {
  std::vector<std::uint32_t> out;
  bool began = false;
  size_t nodes = 0;
};

void threadCapture(int k, cudaStream_t stream, std::uint32_t* dev, std::uint32_t* pinned,
                   std::atomic<int>* arrived, ThreadResult* result) {
  CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  result->began = true;
  arrived->fetch_add(1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (arrived->load() < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  const int n = kN;
  CHECK_CUDA(cudaMemsetAsync(dev, 0, kBytes, stream));
  for (int r = 0; r < 10; ++r) {
    affine<<<64, 256, 0, stream>>>(dev, n, 3u + static_cast<std::uint32_t>(k), static_cast<std::uint32_t>(r));
    CHECK_CUDA(cudaGetLastError());
  }
  CHECK_CUDA(cudaMemcpyAsync(pinned, dev, kBytes, cudaMemcpyDeviceToHost, stream));
  cudaGraph_t graph = nullptr;
  CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
  CHECK_CUDA(cudaGraphGetNodes(graph, nullptr, &result->nodes));
  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int launch = 0; launch < 3; ++launch) CHECK_CUDA(cudaGraphLaunch(exec, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  result->out.assign(pinned, pinned + kN);
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
}

void concurrentCaptures() {
  cudaStream_t streams[2];
  std::uint32_t* dev[2];
  std::uint32_t* pinned[2];
  for (int k = 0; k < 2; ++k) {
    CHECK_CUDA(cudaStreamCreateWithFlags(&streams[k], cudaStreamNonBlocking));
    CHECK_CUDA(cudaMalloc(&dev[k], kBytes));
    CHECK_CUDA(cudaMallocHost(&pinned[k], kBytes));
  }
  std::atomic<int> arrived{0};
  ThreadResult results[2];
  std::thread t0(threadCapture, 0, streams[0], dev[0], pinned[0], &arrived, &results[0]);
  std::thread t1(threadCapture, 1, streams[1], dev[1], pinned[1], &arrived, &results[1]);
  t0.join();
  t1.join();
  for (int k = 0; k < 2; ++k) {
    std::vector<std::uint32_t> want(kN, 0u);
    for (int r = 0; r < 10; ++r)
      cpuAffine(want, 3u + static_cast<std::uint32_t>(k), static_cast<std::uint32_t>(r));
    EXPECT_TRUE(results[k].out.size() == want.size(), "thread %d produced no result", k);
    expectEqual("concurrent capture", results[k].out.data(), want);
    std::printf(
        "E: thread %d: captured %zu nodes while the other thread captured, 3 launches exact, fnv=%016llx\n",
        k, results[k].nodes, static_cast<unsigned long long>(fnvWords(results[k].out.data(), kN)));
    CHECK_CUDA(cudaStreamDestroy(streams[k]));
    CHECK_CUDA(cudaFree(dev[k]));
    CHECK_CUDA(cudaFreeHost(pinned[k]));
  }
}

// ---- F. cudaStreamPerThread in a worker thread; a blocking stream
void perThreadCapture(const Buffers& b) {
  std::thread worker([&b]() {
    const cudaError_t begun = cudaStreamBeginCapture(cudaStreamPerThread, cudaStreamCaptureModeGlobal);
    std::printf("F: begin capture of cudaStreamPerThread: %s\n", cudaGetErrorName(begun));
    if (begun != cudaSuccess) {
      std::printf("F: cudaGetLastError -> %s\n", cudaGetErrorName(cudaGetLastError()));
      return;
    }
    cudaStreamCaptureStatus st;
    CHECK_CUDA(cudaStreamIsCapturing(cudaStreamPerThread, &st));
    std::printf("F: cudaStreamPerThread status %s\n", captureStatusName(st));
    const int n = kN;
    CHECK_CUDA(cudaMemsetAsync(b.D, 0x05, kBytes, cudaStreamPerThread));
    affine<<<64, 256, 0, cudaStreamPerThread>>>(b.D, n, 17u, 5u);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaMemcpyAsync(b.hostOut2, b.D, kBytes, cudaMemcpyDeviceToHost, cudaStreamPerThread));
    cudaGraph_t graph = nullptr;
    CHECK_CUDA(cudaStreamEndCapture(cudaStreamPerThread, &graph));
    describe("F: per-thread stream graph", graph);
    cudaGraphExec_t exec = nullptr;
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    std::memset(b.hostOut2, 0, kBytes);
    CHECK_CUDA(cudaGraphLaunch(exec, cudaStreamPerThread));
    CHECK_CUDA(cudaStreamSynchronize(cudaStreamPerThread));
    std::vector<std::uint32_t> want(kN, 0x05050505u);
    cpuAffine(want, 17, 5);
    expectEqual("per-thread stream capture", b.hostOut2, want);
    std::printf("F: per-thread stream graph launched on cudaStreamPerThread: exact\n");
    CHECK_CUDA(cudaGraphExecDestroy(exec));
    CHECK_CUDA(cudaGraphDestroy(graph));
  });
  worker.join();

  cudaStream_t blocking;
  CHECK_CUDA(cudaStreamCreate(&blocking));
  CHECK_CUDA(cudaStreamBeginCapture(blocking, cudaStreamCaptureModeGlobal));
  const int n = kN;
  CHECK_CUDA(cudaMemsetAsync(b.D, 0x06, kBytes, blocking));
  affine<<<64, 256, 0, blocking>>>(b.D, n, 19u, 6u);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaMemcpyAsync(b.hostOut2, b.D, kBytes, cudaMemcpyDeviceToHost, blocking));
  cudaGraph_t graph = nullptr;
  CHECK_CUDA(cudaStreamEndCapture(blocking, &graph));
  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  std::memset(b.hostOut2, 0, kBytes);
  // launched on the legacy stream, which the blocking stream synchronizes with
  CHECK_CUDA(cudaGraphLaunch(exec, 0));
  CHECK_CUDA(cudaStreamSynchronize(0));
  std::vector<std::uint32_t> want(kN, 0x06060606u);
  cpuAffine(want, 19, 6);
  expectEqual("blocking stream capture", b.hostOut2, want);
  std::printf("F: blocking-stream capture launched on the legacy stream: exact\n");
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
  CHECK_CUDA(cudaStreamDestroy(blocking));
}

// ---- G. an empty capture
void emptyCapture(cudaStream_t s0) {
  CHECK_CUDA(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(s0, &graph);
  std::printf("G: end of an empty capture: %s, graph set %s\n", cudaGetErrorName(ended),
              yesNo(graph != nullptr));
  if (ended != cudaSuccess || graph == nullptr) {
    std::printf("G: cudaGetLastError -> %s\n", cudaGetErrorName(cudaGetLastError()));
    return;
  }
  describe("G: empty graph", graph);
  cudaGraphExec_t exec = nullptr;
  const cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
  std::printf("G: instantiate the empty graph: %s\n", cudaGetErrorName(inst));
  if (inst == cudaSuccess) {
    std::printf("G: launch the empty graph: %s\n", cudaGetErrorName(cudaGraphLaunch(exec, s0)));
    std::printf("G: synchronize: %s\n", cudaGetErrorName(cudaStreamSynchronize(s0)));
    CHECK_CUDA(cudaGraphExecDestroy(exec));
  }
  std::printf("G: cudaGetLastError -> %s\n", cudaGetErrorName(cudaGetLastError()));
  CHECK_CUDA(cudaGraphDestroy(graph));
}

}  // namespace

int main() {
  Buffers b;
  CHECK_CUDA(cudaMalloc(&b.A, kBytes));
  CHECK_CUDA(cudaMalloc(&b.B, kBytes));
  CHECK_CUDA(cudaMalloc(&b.C, kBytes));
  CHECK_CUDA(cudaMalloc(&b.D, kBytes));
  CHECK_CUDA(cudaMallocHost(&b.hostIn, kBytes));
  CHECK_CUDA(cudaMallocHost(&b.hostOut, kBytes));
  CHECK_CUDA(cudaMallocHost(&b.hostOut2, kBytes));
  for (int i = 0; i < kN; ++i) b.hostIn[i] = mix32(static_cast<std::uint32_t>(i) + 0x1234u);
  cudaStream_t s0, s1, s2;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));

  unsigned long long lastId = 0;
  for (cudaStreamCaptureMode mode :
       {cudaStreamCaptureModeGlobal, cudaStreamCaptureModeThreadLocal, cudaStreamCaptureModeRelaxed}) {
    forkJoin(b, s0, s1, s2, mode, &lastId);
  }
  manualNodes(b, s0);
  captureToGraph(b, s0, s1);
  externalEvents(b, s0, s1);
  concurrentCaptures();
  perThreadCapture(b);
  emptyCapture(s0);

  EXPECT_ERROR("final cudaGetLastError", cudaGetLastError(), cudaSuccess);
  CHECK_CUDA(cudaStreamDestroy(s0));
  CHECK_CUDA(cudaStreamDestroy(s1));
  CHECK_CUDA(cudaStreamDestroy(s2));
  CHECK_CUDA(cudaFree(b.A));
  CHECK_CUDA(cudaFree(b.B));
  CHECK_CUDA(cudaFree(b.C));
  CHECK_CUDA(cudaFree(b.D));
  CHECK_CUDA(cudaFreeHost(b.hostIn));
  CHECK_CUDA(cudaFreeHost(b.hostOut));
  CHECK_CUDA(cudaFreeHost(b.hostOut2));
  std::printf("capture_fork_join: done\n");
  return 0;
}
