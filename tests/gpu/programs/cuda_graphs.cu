// CUDA graphs and stream capture, compared with a native run:
// 1. a graph built node by node: a copy in, a memset, two kernels on separate branches joined by
//    a third, a host node, an event record and wait, an empty node, a child graph, a copy out;
//    launched several times, each launch checked against a CPU reference;
// 2. stream capture across two streams (a fork and a join through events), with async copies, a
//    memset, kernels and a host function; the capture's status, graph and dependencies as
//    cudaStreamGetCaptureInfo reports them; the captured graph's node types and edges;
// 3. changing an executable graph: cudaGraphExecKernelNodeSetParams, cudaGraphExecUpdate from a
//    second capture of the same shape, a disabled node, a clone and cudaGraphNodeFindInClone;
// 4. the capture errors a program can cause: ending a capture that was not begun, synchronizing a
//    capturing stream (which invalidates the capture), a fork that is not joined, capturing the
//    legacy stream;
// 5. the generic node form (cudaGraphAddNode, cudaGraphExecNodeSetParams) with a kernel node, and
//    copy nodes that name a __device__ variable, changed with the *SetParamsToSymbol and
//    *SetParamsFromSymbol calls.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "check.cuh"
#include "graph_names.cuh"

constexpr int kN = 1 << 16;

__global__ void scaleAdd(const std::uint32_t* in, std::uint32_t* out, int n, std::uint32_t scale,
                         std::uint32_t add) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    out[i] = in[i] * scale + add;
  }
}

__global__ void combine(const std::uint32_t* a, const std::uint32_t* b, std::uint32_t* out, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    out[i] = a[i] ^ (b[i] + out[i]);  // out was set by a memset node before
  }
}

__device__ std::uint32_t gSymbolWords[16];

struct HostCounter {
  int calls = 0;
};
static void CUDART_CB countCall(void* data) { ++static_cast<HostCounter*>(data)->calls; }

// Page-locked host memory, as the cuda-samples use with graphs.
struct HostBuffer {
  std::uint32_t* data = nullptr;
  HostBuffer() { CHECK_CUDA(cudaMallocHost(&data, kN * sizeof(std::uint32_t))); }
  ~HostBuffer() { cudaFreeHost(data); }
  void clear() { std::fill(data, data + kN, 0u); }
  bool operator==(const std::vector<std::uint32_t>& other) const {
    return std::equal(other.begin(), other.end(), data);
  }
};

static std::uint64_t fnv(const HostBuffer& values) {
  std::uint64_t h = 1469598103934665603ull;
  for (int i = 0; i < kN; ++i) {
    h ^= values.data[i];
    h *= 1099511628211ull;
  }
  return h;
}

static std::vector<std::uint32_t> reference(const HostBuffer& in, std::uint32_t scaleA, std::uint32_t addA,
                                            std::uint32_t fill) {
  std::vector<std::uint32_t> out(kN);
  for (size_t i = 0; i < out.size(); ++i) {
    const std::uint32_t a = in.data[i] * scaleA + addA;
    const std::uint32_t b = in.data[i] * 7u + 11u;
    out[i] = a ^ (b + fill);
  }
  return out;
}

static cudaKernelNodeParams scaleAddParams(void** args) {
  cudaKernelNodeParams params{};
  params.func = reinterpret_cast<void*>(scaleAdd);
  params.gridDim = dim3(64);
  params.blockDim = dim3(256);
  params.sharedMemBytes = 0;
  params.kernelParams = args;
  return params;
}

// Node types of a graph, counted, in a fixed order.
static void printTypes(const char* label, cudaGraph_t graph) {
  size_t count = 0;
  CHECK_CUDA(cudaGraphGetNodes(graph, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  CHECK_CUDA(cudaGraphGetNodes(graph, nodes.data(), &count));
  int counts[8] = {};
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type;
    CHECK_CUDA(cudaGraphNodeGetType(node, &type));
    if (type >= 0 && type < 8) ++counts[type];
  }
  size_t edges = 0;
  CHECK_CUDA(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &edges));
  size_t roots = 0;
  CHECK_CUDA(cudaGraphGetRootNodes(graph, nullptr, &roots));
  std::printf("%s: %zu nodes, %zu edges, %zu roots:", label, count, edges, roots);
  for (int t = 0; t < 8; ++t) {
    if (counts[t] > 0) std::printf(" %s=%d", graphNodeTypeName(static_cast<cudaGraphNodeType>(t)), counts[t]);
  }
  std::printf("\n");
}

int main() {
  HostBuffer input;
  for (int i = 0; i < kN; ++i) input.data[i] = mix32(static_cast<std::uint32_t>(i));
  const size_t bytes = kN * sizeof(std::uint32_t);
  std::uint32_t *dIn = nullptr, *dA = nullptr, *dB = nullptr, *dOut = nullptr;
  CHECK_CUDA(cudaMalloc(&dIn, bytes));
  CHECK_CUDA(cudaMalloc(&dA, bytes));
  CHECK_CUDA(cudaMalloc(&dB, bytes));
  CHECK_CUDA(cudaMalloc(&dOut, bytes));
  HostBuffer output;
  cudaStream_t stream, side;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  cudaEvent_t marker, fork, join;
  CHECK_CUDA(cudaEventCreate(&marker));
  CHECK_CUDA(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  HostCounter counter;

  // ---- 1. a graph built node by node
  {
    cudaGraph_t graph;
    CHECK_CUDA(cudaGraphCreate(&graph, 0));
    cudaGraphNode_t copyIn, fill, kernelA, kernelB, joined, host, record, wait, empty, child, copyOut;
    cudaMemcpy3DParms in{};
    in.srcPtr = make_cudaPitchedPtr(input.data, bytes, kN, 1);
    in.dstPtr = make_cudaPitchedPtr(dIn, bytes, kN, 1);
    in.extent = make_cudaExtent(bytes, 1, 1);
    in.kind = cudaMemcpyHostToDevice;
    CHECK_CUDA(cudaGraphAddMemcpyNode(&copyIn, graph, nullptr, 0, &in));
    cudaMemsetParams memset{};
    memset.dst = dOut;
    memset.value = 0x05050505u;
    memset.elementSize = 4;
    memset.width = kN;
    memset.height = 1;
    CHECK_CUDA(cudaGraphAddMemsetNode(&fill, graph, nullptr, 0, &memset));
    int n = kN;
    std::uint32_t scaleA = 3, addA = 1, scaleB = 7, addB = 11;
    void* argsA[] = {&dIn, &dA, &n, &scaleA, &addA};
    void* argsB[] = {&dIn, &dB, &n, &scaleB, &addB};
    cudaKernelNodeParams paramsA = scaleAddParams(argsA), paramsB = scaleAddParams(argsB);
    CHECK_CUDA(cudaGraphAddKernelNode(&kernelA, graph, &copyIn, 1, &paramsA));
    scaleA = 999;  // the node keeps the values it was given
    CHECK_CUDA(cudaGraphAddKernelNode(&kernelB, graph, &copyIn, 1, &paramsB));
    // The child graph: an empty node and an event record, run after both branches.
    cudaGraph_t childGraph;
    CHECK_CUDA(cudaGraphCreate(&childGraph, 0));
    cudaGraphNode_t childEmpty;
    CHECK_CUDA(cudaGraphAddEmptyNode(&childEmpty, childGraph, nullptr, 0));
    cudaGraphNode_t branches[] = {kernelA, kernelB, fill};
    CHECK_CUDA(cudaGraphAddChildGraphNode(&child, graph, branches, 3, childGraph));
    CHECK_CUDA(cudaGraphDestroy(childGraph));  // the node has its own copy
    CHECK_CUDA(cudaGraphAddEventRecordNode(&record, graph, &child, 1, marker));
    CHECK_CUDA(cudaGraphAddEventWaitNode(&wait, graph, &record, 1, marker));
    void* argsJoin[] = {&dA, &dB, &dOut, &n};
    cudaKernelNodeParams paramsJoin{};
    paramsJoin.func = reinterpret_cast<void*>(combine);
    paramsJoin.gridDim = dim3(64);
    paramsJoin.blockDim = dim3(256);
    paramsJoin.kernelParams = argsJoin;
    CHECK_CUDA(cudaGraphAddKernelNode(&joined, graph, &wait, 1, &paramsJoin));
    CHECK_CUDA(cudaGraphAddEmptyNode(&empty, graph, &joined, 1));
    cudaHostNodeParams hostParams{countCall, &counter};
    CHECK_CUDA(cudaGraphAddHostNode(&host, graph, &empty, 1, &hostParams));
    CHECK_CUDA(cudaGraphAddMemcpyNode1D(&copyOut, graph, &host, 1, output.data, dOut, bytes,
                                        cudaMemcpyDeviceToHost));
    printTypes("built", graph);
    cudaKernelNodeParams readBack{};
    CHECK_CUDA(cudaGraphKernelNodeGetParams(kernelA, &readBack));
    std::printf("built: kernel A params: grid %u block %u scale %u add %u\n", readBack.gridDim.x,
                readBack.blockDim.x, *static_cast<std::uint32_t*>(readBack.kernelParams[3]),
                *static_cast<std::uint32_t*>(readBack.kernelParams[4]));
    size_t dependencies = 0;
    CHECK_CUDA(cudaGraphNodeGetDependencies(child, nullptr, nullptr, &dependencies));
    size_t dependents = 0;
    CHECK_CUDA(cudaGraphNodeGetDependentNodes(copyIn, nullptr, nullptr, &dependents));
    std::printf("built: child graph node after %zu nodes; copy-in before %zu nodes\n", dependencies,
                dependents);

    cudaGraphExec_t exec;
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    const std::vector<std::uint32_t> expected = reference(input, 3, 1, 0x05050505u);
    for (int launch = 0; launch < 3; ++launch) {
      output.clear();
      CHECK_CUDA(cudaGraphLaunch(exec, stream));
      CHECK_CUDA(cudaStreamSynchronize(stream));
      EXPECT_TRUE(output == expected, "launch %d differs from the reference\n", launch);
    }
    std::printf("built: 3 launches exact, host node ran %d times, output fnv=%016llx\n", counter.calls,
                static_cast<unsigned long long>(fnv(output)));

    // 3a. kernel parameters of the executable graph change; the graph's do not.
    std::uint32_t newScale = 5, newAdd = 9;
    void* argsNew[] = {&dIn, &dA, &n, &newScale, &newAdd};
    cudaKernelNodeParams paramsNew = scaleAddParams(argsNew);
    CHECK_CUDA(cudaGraphExecKernelNodeSetParams(exec, kernelA, &paramsNew));
    CHECK_CUDA(cudaGraphLaunch(exec, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    EXPECT_TRUE(output == reference(input, 5, 9, 0x05050505u), "after ExecKernelNodeSetParams\n");
    std::printf("exec set params: exact, fnv=%016llx\n", static_cast<unsigned long long>(fnv(output)));

    // 3b. a disabled memset node leaves dOut as the last launch wrote it.
    CHECK_CUDA(cudaGraphNodeSetEnabled(exec, fill, 0));
    unsigned enabled = 1;
    CHECK_CUDA(cudaGraphNodeGetEnabled(exec, fill, &enabled));
    CHECK_CUDA(cudaGraphLaunch(exec, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    std::printf("disabled memset node: enabled=%u, fnv=%016llx\n", enabled,
                static_cast<unsigned long long>(fnv(output)));

    // 3c. a clone is independent of its original.
    cudaGraph_t clone;
    CHECK_CUDA(cudaGraphClone(&clone, graph));
    cudaGraphNode_t clonedA;
    CHECK_CUDA(cudaGraphNodeFindInClone(&clonedA, kernelA, clone));
    cudaGraphNodeType clonedType;
    CHECK_CUDA(cudaGraphNodeGetType(clonedA, &clonedType));
    std::printf("clone: node A found, type %s, same handle %d\n", graphNodeTypeName(clonedType),
                clonedA == kernelA);
    printTypes("clone", clone);
    CHECK_CUDA(cudaGraphDestroy(clone));

    CHECK_CUDA(cudaGraphExecDestroy(exec));
    CHECK_CUDA(cudaGraphDestroy(graph));
  }

  // ---- 2. stream capture across two streams
  cudaGraph_t captured = nullptr;
  auto capture = [&](std::uint32_t scaleA, std::uint32_t addA, cudaGraph_t* out, bool report) {
    int n = kN;
    CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    cudaStreamCaptureStatus status;
    CHECK_CUDA(cudaStreamIsCapturing(stream, &status));
    if (report) std::printf("capture: stream status %d\n", static_cast<int>(status));
    CHECK_CUDA(cudaMemcpyAsync(dIn, input.data, bytes, cudaMemcpyHostToDevice, stream));
    CHECK_CUDA(cudaEventRecord(fork, stream));
    CHECK_CUDA(cudaStreamWaitEvent(side, fork, 0));
    CHECK_CUDA(cudaStreamIsCapturing(side, &status));
    if (report) std::printf("capture: side stream joined, status %d\n", static_cast<int>(status));
    scaleAdd<<<64, 256, 0, stream>>>(dIn, dA, n, scaleA, addA);
    CHECK_CUDA(cudaGetLastError());
    scaleAdd<<<64, 256, 0, side>>>(dIn, dB, n, 7u, 11u);
    CHECK_CUDA(cudaMemsetAsync(dOut, 0x05, bytes, side));
    CHECK_CUDA(cudaEventRecord(join, side));
    CHECK_CUDA(cudaStreamWaitEvent(stream, join, 0));
    cudaStreamCaptureStatus infoStatus;
    unsigned long long id = 0;
    cudaGraph_t inProgress = nullptr;
    const cudaGraphNode_t* frontier = nullptr;
    size_t frontierSize = 0;
    CHECK_CUDA(
        cudaStreamGetCaptureInfo(stream, &infoStatus, &id, &inProgress, &frontier, nullptr, &frontierSize));
    if (report) {
      std::printf("capture info: status %d, id set %d, graph set %d, %zu dependencies\n",
                  static_cast<int>(infoStatus), id != 0, inProgress != nullptr, frontierSize);
    }
    combine<<<64, 256, 0, stream>>>(dA, dB, dOut, n);
    CHECK_CUDA(cudaLaunchHostFunc(stream, countCall, &counter));
    CHECK_CUDA(cudaMemcpyAsync(output.data, dOut, bytes, cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaStreamEndCapture(stream, out));
    CHECK_CUDA(cudaStreamIsCapturing(stream, &status));
    if (report)
      std::printf("capture: ended, status %d, graph set %d\n", static_cast<int>(status), *out != nullptr);
  };
  const int callsBefore = counter.calls;
  capture(3, 1, &captured, true);
  EXPECT_TRUE(counter.calls == callsBefore, "a captured host function ran during capture\n");
  printTypes("captured", captured);
  cudaGraphExec_t capturedExec;
  CHECK_CUDA(cudaGraphInstantiate(&capturedExec, captured, 0));
  for (int launch = 0; launch < 5; ++launch) {
    output.clear();
    CHECK_CUDA(cudaGraphLaunch(capturedExec, stream));
  }
  CHECK_CUDA(cudaStreamSynchronize(stream));
  EXPECT_TRUE(output == reference(input, 3, 1, 0x05050505u), "captured graph result\n");
  std::printf("captured: 5 launches, host function ran %d times, fnv=%016llx\n", counter.calls - callsBefore,
              static_cast<unsigned long long>(fnv(output)));

  // 3d. cudaGraphExecUpdate from a second capture of the same shape.
  cudaGraph_t recaptured = nullptr;
  capture(5, 9, &recaptured, false);
  cudaGraphExecUpdateResultInfo updateInfo{};
  CHECK_CUDA(cudaGraphExecUpdate(capturedExec, recaptured, &updateInfo));
  CHECK_CUDA(cudaGraphLaunch(capturedExec, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  EXPECT_TRUE(output == reference(input, 5, 9, 0x05050505u), "after cudaGraphExecUpdate\n");
  std::printf("exec update: result %d, exact, fnv=%016llx\n", static_cast<int>(updateInfo.result),
              static_cast<unsigned long long>(fnv(output)));
  CHECK_CUDA(cudaGraphExecDestroy(capturedExec));
  CHECK_CUDA(cudaGraphDestroy(captured));
  CHECK_CUDA(cudaGraphDestroy(recaptured));

  // ---- 4. capture errors
  cudaGraph_t none = nullptr;
  // Error names CUDA documents for certain; for the rest only that the call fails.
  std::printf("end without begin: %s\n",
              cudaStreamEndCapture(stream, &none) != cudaSuccess ? "error" : "success");
  cudaGetLastError();
  CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
  scaleAdd<<<1, 32, 0, stream>>>(dIn, dA, 32, 1u, 0u);
  std::printf("synchronize while capturing: %s\n", cudaGetErrorName(cudaStreamSynchronize(stream)));
  cudaStreamCaptureStatus status;
  CHECK_CUDA(cudaStreamIsCapturing(stream, &status));
  std::printf("status after it: %d\n", static_cast<int>(status));
  std::printf("end of the invalidated capture: %s, graph set %d\n",
              cudaGetErrorName(cudaStreamEndCapture(stream, &none)), none != nullptr);
  cudaGetLastError();
  CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  CHECK_CUDA(cudaEventRecord(fork, stream));
  CHECK_CUDA(cudaStreamWaitEvent(side, fork, 0));
  scaleAdd<<<1, 32, 0, side>>>(dIn, dA, 32, 1u, 0u);
  std::printf("end with an unjoined fork: %s, graph set %d\n",
              cudaGetErrorName(cudaStreamEndCapture(stream, &none)), none != nullptr);
  cudaGetLastError();
  std::printf("capture of the legacy stream: %s\n",
              cudaStreamBeginCapture(cudaStreamLegacy, cudaStreamCaptureModeGlobal) != cudaSuccess
                  ? "error"
                  : "success");
  cudaGetLastError();

  // ---- 5. the generic node form and copies naming a __device__ variable
  {
    cudaGraph_t generic = nullptr;
    CHECK_CUDA(cudaGraphCreate(&generic, 0));
    int n = kN;
    std::uint32_t scale = 4, add = 2;
    void* args[] = {&dIn, &dA, &n, &scale, &add};
    cudaGraphNodeParams kernel{};
    kernel.type = cudaGraphNodeTypeKernel;
    kernel.kernel.func = reinterpret_cast<void*>(scaleAdd);
    kernel.kernel.gridDim = dim3(64);
    kernel.kernel.blockDim = dim3(256);
    kernel.kernel.kernelParams = args;
    cudaGraphNode_t kernelNode = nullptr, toSymbol = nullptr, fromSymbol = nullptr;
    CHECK_CUDA(cudaGraphAddNode(&kernelNode, generic, nullptr, nullptr, 0, &kernel));
    CHECK_CUDA(cudaGraphAddMemcpyNodeToSymbol(&toSymbol, generic, &kernelNode, 1, gSymbolWords, dA,
                                              sizeof gSymbolWords, 0, cudaMemcpyDeviceToDevice));
    CHECK_CUDA(cudaGraphAddMemcpyNodeFromSymbol(&fromSymbol, generic, &toSymbol, 1, output.data, gSymbolWords,
                                                sizeof gSymbolWords, 0, cudaMemcpyDeviceToHost));
    // Changed before instantiation: the kernel scales by 6 (generic form), the copy out reads the
    // variable's last 12 words into the output's start.
    scale = 6;
    CHECK_CUDA(cudaGraphNodeSetParams(kernelNode, &kernel));
    CHECK_CUDA(cudaGraphMemcpyNodeSetParamsFromSymbol(fromSymbol, output.data, gSymbolWords,
                                                      12 * sizeof(std::uint32_t), 4 * sizeof(std::uint32_t),
                                                      cudaMemcpyDeviceToHost));
    cudaGraphExec_t genericExec = nullptr;
    CHECK_CUDA(cudaGraphInstantiate(&genericExec, generic, 0));
    output.clear();
    CHECK_CUDA(cudaGraphLaunch(genericExec, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    bool same = true;
    for (int i = 0; i < 12; ++i) same &= output.data[i] == input.data[4 + i] * 6u + 2u;
    EXPECT_TRUE(same && output.data[12] == 0u, "generic kernel node and symbol copies\n");
    std::printf("generic node form: kernel and symbol copies exact, first word %u\n", output.data[0]);

    // The executable graph changed: the kernel adds 5, the copy in writes the input's first 8
    // words at the variable's word 4 (its other words keep the last launch's).
    add = 5;
    CHECK_CUDA(cudaGraphExecNodeSetParams(genericExec, kernelNode, &kernel));
    CHECK_CUDA(cudaGraphExecMemcpyNodeSetParamsToSymbol(genericExec, toSymbol, gSymbolWords, dIn,
                                                        8 * sizeof(std::uint32_t), 4 * sizeof(std::uint32_t),
                                                        cudaMemcpyDeviceToDevice));
    CHECK_CUDA(cudaGraphExecMemcpyNodeSetParamsFromSymbol(genericExec, fromSymbol, output.data, gSymbolWords,
                                                          sizeof gSymbolWords, 0, cudaMemcpyDeviceToHost));
    output.clear();
    CHECK_CUDA(cudaGraphLaunch(genericExec, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    same = true;
    for (int i = 0; i < 4; ++i) same &= output.data[i] == input.data[i] * 6u + 2u;
    for (int i = 0; i < 8; ++i) same &= output.data[4 + i] == input.data[i];
    for (int i = 12; i < 16; ++i) same &= output.data[i] == input.data[i] * 6u + 2u;
    EXPECT_TRUE(same, "executable graph with changed symbol copies\n");
    std::vector<std::uint32_t> kernelOut(16);
    CHECK_CUDA(cudaMemcpy(kernelOut.data(), dA, sizeof gSymbolWords, cudaMemcpyDeviceToHost));
    EXPECT_TRUE(kernelOut[0] == input.data[0] * 6u + 5u, "the kernel node's changed parameters\n");
    std::printf("exec node set params: symbol copies exact, kernel word %u\n", kernelOut[0]);
    std::printf("symbol copy past the variable's end: %s\n",
                cudaGraphExecMemcpyNodeSetParamsToSymbol(
                    genericExec, toSymbol, gSymbolWords, dIn, 8 * sizeof(std::uint32_t),
                    12 * sizeof(std::uint32_t), cudaMemcpyDeviceToDevice) != cudaSuccess
                    ? "error"
                    : "success");
    cudaGetLastError();
    CHECK_CUDA(cudaGraphExecDestroy(genericExec));
    CHECK_CUDA(cudaGraphDestroy(generic));
  }

  // The streams still work afterwards.
  CHECK_CUDA(cudaMemsetAsync(dOut, 0x11, bytes, stream));
  CHECK_CUDA(cudaMemcpyAsync(output.data, dOut, bytes, cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  EXPECT_TRUE(output.data[0] == 0x11111111u && output.data[kN - 1] == 0x11111111u,
              "the stream after the errors\n");
  std::printf("streams usable after the errors\n");

  CHECK_CUDA(cudaEventDestroy(marker));
  CHECK_CUDA(cudaEventDestroy(fork));
  CHECK_CUDA(cudaEventDestroy(join));
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaStreamDestroy(side));
  CHECK_CUDA(cudaFree(dIn));
  CHECK_CUDA(cudaFree(dA));
  CHECK_CUDA(cudaFree(dB));
  CHECK_CUDA(cudaFree(dOut));
  std::printf("cuda_graphs OK\n");
  return 0;
}
