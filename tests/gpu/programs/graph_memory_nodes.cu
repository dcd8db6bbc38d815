// CUDA graph memory nodes, compared with a native run (client/session/graph_memory.h):
// 1. a graph built node by node as cuda-samples' graphMemoryNodes builds it: two allocations, a
//    copy in, a kernel, a free, a third allocation after the free (which takes the freed one's
//    address), a second kernel, a copy out and the frees; launched 3 times, each checked against a
//    CPU reference, the allocations at the same addresses every time;
// 2. an allocation that outlives its graph's launch: read by a kernel and a copy after the launch,
//    a relaunch refused while it lives, then freed by cudaFree, by cudaFreeAsync, by a free node
//    of another graph, and by cudaGraphInstantiateFlagAutoFreeOnLaunch;
// 3. cudaMallocAsync and cudaFreeAsync captured into a graph, launched twice;
// 4. what CUDA refuses: a free node of memory no allocation node made, a second free of one
//    allocation in one graph, a second executable graph of a graph with memory nodes, a clone;
// 5. cudaDeviceGraphMemTrim and the graph memory attributes (no byte counts are printed here: they
//    depend on what earlier steps left in the pool; cuda-samples' graphMemoryFootprint compares
//    them with native, step by step).
// Addresses go to stderr; stdout compares equal natively and through AgileOS.
#include <cstdint>
#include <cstring>
#include <vector>

#include "check.cuh"

constexpr int kN = 8000000;  // as the sample's NUM_ELEMENTS
constexpr std::size_t kBytes = kN * sizeof(std::uint32_t);
constexpr int kThreads = 256;
constexpr int kBlocks = (kN + kThreads - 1) / kThreads;

__global__ void square(const std::uint32_t* in, std::uint32_t* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * in[i];
}

__global__ void negate(const std::uint32_t* in, std::uint32_t* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 0u - in[i];
}

__global__ void fillIndex(std::uint32_t* out, int n, std::uint32_t salt) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = mix32(static_cast<std::uint32_t>(i) ^ salt);
}

cudaMemAllocNodeParams allocParams(int device) {
  cudaMemAllocNodeParams params;
  std::memset(&params, 0, sizeof params);
  params.bytesize = kBytes;
  params.poolProps.allocType = cudaMemAllocationTypePinned;
  params.poolProps.location.type = cudaMemLocationTypeDevice;
  params.poolProps.location.id = device;
  return params;
}

cudaKernelNodeParams kernelParams(void* function, void** args) {
  cudaKernelNodeParams params = {};
  params.func = function;
  params.gridDim = dim3(kBlocks);
  params.blockDim = dim3(kThreads);
  params.kernelParams = args;
  return params;
}

void printChecksum(const char* label, const std::vector<std::uint32_t>& values) {
  std::printf("%s checksum %016llx\n", label,
              static_cast<unsigned long long>(fnv1a64(values.data(), values.size() * sizeof values[0])));
}

// 1. The sample's graph.
void explicitGraph(cudaStream_t stream, int device, const std::vector<std::uint32_t>& input) {
  std::printf("== explicit graph\n");
  int n = kN;
  std::vector<std::uint32_t> squares(kN), negSquares(kN);
  cudaGraph_t graph;
  CHECK_CUDA(cudaGraphCreate(&graph, 0));
  cudaMemAllocNodeParams params = allocParams(device);
  cudaGraphNode_t allocIn, allocSquare, copyIn, squareNode, copySquare, freeIn, allocNeg, negateNode,
      freeSquare, copyNeg, freeNeg;
  CHECK_CUDA(cudaGraphAddMemAllocNode(&allocIn, graph, nullptr, 0, &params));
  auto* dIn = static_cast<std::uint32_t*>(params.dptr);
  CHECK_CUDA(cudaGraphAddMemAllocNode(&allocSquare, graph, &allocIn, 1, &params));
  auto* dSquare = static_cast<std::uint32_t*>(params.dptr);
  CHECK_CUDA(cudaGraphAddMemcpyNode1D(&copyIn, graph, &allocSquare, 1, dIn, input.data(), kBytes,
                                      cudaMemcpyHostToDevice));
  void* squareArgs[] = {&dIn, &dSquare, &n};
  cudaKernelNodeParams squareParams = kernelParams(reinterpret_cast<void*>(square), squareArgs);
  CHECK_CUDA(cudaGraphAddKernelNode(&squareNode, graph, &copyIn, 1, &squareParams));
  CHECK_CUDA(cudaGraphAddMemcpyNode1D(&copySquare, graph, &squareNode, 1, squares.data(), dSquare, kBytes,
                                      cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaGraphAddMemFreeNode(&freeIn, graph, &squareNode, 1, dIn));
  CHECK_CUDA(cudaGraphAddMemAllocNode(&allocNeg, graph, &freeIn, 1, &params));
  auto* dNeg = static_cast<std::uint32_t*>(params.dptr);
  std::printf("the allocation after the free shares the freed one's address: %s\n",
              dNeg == dIn ? "yes" : "no");
  std::fprintf(stderr, "in %p square %p neg %p\n", static_cast<void*>(dIn), static_cast<void*>(dSquare),
               static_cast<void*>(dNeg));
  void* negateArgs[] = {&dSquare, &dNeg, &n};
  cudaKernelNodeParams negateParams = kernelParams(reinterpret_cast<void*>(negate), negateArgs);
  CHECK_CUDA(cudaGraphAddKernelNode(&negateNode, graph, &allocNeg, 1, &negateParams));
  cudaGraphNode_t squareDone[] = {copySquare, negateNode};
  CHECK_CUDA(cudaGraphAddMemFreeNode(&freeSquare, graph, squareDone, 2, dSquare));
  CHECK_CUDA(cudaGraphAddMemcpyNode1D(&copyNeg, graph, &negateNode, 1, negSquares.data(), dNeg, kBytes,
                                      cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaGraphAddMemFreeNode(&freeNeg, graph, &copyNeg, 1, dNeg));

  cudaMemAllocNodeParams got;
  CHECK_CUDA(cudaGraphMemAllocNodeGetParams(allocNeg, &got));
  std::printf("allocation node parameters: bytesize %zu, same address %s\n", got.bytesize,
              got.dptr == dNeg ? "yes" : "no");
  void* freed = nullptr;
  CHECK_CUDA(cudaGraphMemFreeNodeGetParams(freeSquare, &freed));
  std::printf("free node parameter: same address %s\n", freed == dSquare ? "yes" : "no");
  cudaGraphNodeType type;
  CHECK_CUDA(cudaGraphNodeGetType(allocIn, &type));
  std::printf("node types: %d", static_cast<int>(type));
  CHECK_CUDA(cudaGraphNodeGetType(freeIn, &type));
  std::printf(" %d\n", static_cast<int>(type));

  cudaGraphExec_t exec;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  CHECK_CUDA(cudaGraphDestroy(graph));
  for (int launch = 0; launch < 3; ++launch) {
    std::fill(squares.begin(), squares.end(), 0u);
    std::fill(negSquares.begin(), negSquares.end(), 0u);
    CHECK_CUDA(cudaGraphLaunch(exec, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    bool ok = true;
    for (int i = 0; i < kN; ++i)
      ok = ok && squares[i] == input[i] * input[i] && negSquares[i] == 0u - squares[i];
    std::printf("launch %d: %s\n", launch, ok ? "matches the CPU" : "MISMATCH");
    EXPECT_TRUE(ok, "launch %d differs from the CPU reference", launch);
  }
  printChecksum("negated squares", negSquares);
  CHECK_CUDA(cudaGraphExecDestroy(exec));
}

// alloc -> fillIndex kernel, no free node: the allocation outlives the launch.
cudaGraphExec_t outlivingGraph(int device, unsigned long long flags, std::uint32_t** address,
                               std::uint32_t* salt) {
  cudaGraph_t graph;
  CHECK_CUDA(cudaGraphCreate(&graph, 0));
  cudaMemAllocNodeParams params = allocParams(device);
  cudaGraphNode_t alloc, fill;
  CHECK_CUDA(cudaGraphAddMemAllocNode(&alloc, graph, nullptr, 0, &params));
  *address = static_cast<std::uint32_t*>(params.dptr);
  int n = kN;
  void* args[] = {address, &n, salt};
  cudaKernelNodeParams fillParams = kernelParams(reinterpret_cast<void*>(fillIndex), args);
  CHECK_CUDA(cudaGraphAddKernelNode(&fill, graph, &alloc, 1, &fillParams));
  cudaGraphExec_t exec;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, flags));
  CHECK_CUDA(cudaGraphDestroy(graph));
  return exec;
}

void checkFilled(const char* label, const std::uint32_t* device, std::uint32_t salt, cudaStream_t stream) {
  std::vector<std::uint32_t> host(kN);
  std::vector<std::uint32_t> negated(kN);
  std::uint32_t* scratch = nullptr;
  CHECK_CUDA(cudaMalloc(&scratch, kBytes));
  // A kernel outside the graph reads the graph's allocation, as the sample's validateGPU does.
  negate<<<kBlocks, kThreads, 0, stream>>>(device, scratch, kN);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaMemcpyAsync(host.data(), device, kBytes, cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaMemcpyAsync(negated.data(), scratch, kBytes, cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_CUDA(cudaFree(scratch));
  bool ok = true;
  for (int i = 0; i < kN; ++i) {
    const std::uint32_t want = mix32(static_cast<std::uint32_t>(i) ^ salt);
    ok = ok && host[i] == want && negated[i] == 0u - want;
  }
  std::printf("%s: %s\n", label, ok ? "the allocation holds what the graph wrote" : "MISMATCH");
  EXPECT_TRUE(ok, "%s: the allocation differs", label);
}

// 2. An allocation that outlives the launch, freed four ways.
void outlivingAllocation(cudaStream_t stream, int device) {
  std::printf("== an allocation that outlives the launch\n");
  std::uint32_t* dOut = nullptr;
  std::uint32_t salt = 7;
  cudaGraphExec_t exec = outlivingGraph(device, 0, &dOut, &salt);
  CHECK_CUDA(cudaGraphLaunch(exec, stream));
  checkFilled("after the launch", dOut, salt, stream);
  EXPECT_ERROR("relaunch while the allocation lives", cudaGraphLaunch(exec, stream), cudaErrorInvalidValue);
  cudaGetLastError();  // the refusal is the thread's last error, natively too
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_CUDA(cudaFree(dOut));
  std::printf("freed by cudaFree\n");

  std::uint32_t* again = dOut;
  CHECK_CUDA(cudaGraphLaunch(exec, stream));
  checkFilled("relaunched", again, salt, stream);
  CHECK_CUDA(cudaFreeAsync(dOut, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  std::printf("freed by cudaFreeAsync\n");

  cudaGraph_t freer;
  cudaGraphNode_t freeNode;
  CHECK_CUDA(cudaGraphCreate(&freer, 0));
  CHECK_CUDA(cudaGraphAddMemFreeNode(&freeNode, freer, nullptr, 0, dOut));
  cudaGraphExec_t freerExec;
  CHECK_CUDA(cudaGraphInstantiate(&freerExec, freer, 0));
  CHECK_CUDA(cudaGraphDestroy(freer));
  CHECK_CUDA(cudaGraphLaunch(exec, stream));
  checkFilled("relaunched again", dOut, salt, stream);
  CHECK_CUDA(cudaGraphLaunch(freerExec, stream));
  CHECK_CUDA(cudaGraphLaunch(exec, stream));
  CHECK_CUDA(cudaGraphLaunch(freerExec, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  std::printf("freed by a free node of another graph, twice\n");
  CHECK_CUDA(cudaGraphExecDestroy(freerExec));
  CHECK_CUDA(cudaGraphExecDestroy(exec));

  salt = 11;
  exec = outlivingGraph(device, cudaGraphInstantiateFlagAutoFreeOnLaunch, &dOut, &salt);
  CHECK_CUDA(cudaGraphLaunch(exec, stream));
  CHECK_CUDA(cudaGraphLaunch(exec, stream));
  checkFilled("auto free on launch: relaunched", dOut, salt, stream);
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaFree(dOut));
  std::printf("freed by cudaFree after its executable graph was destroyed\n");
}

// 3. Stream-ordered allocation captured into a graph.
void capturedAllocation(cudaStream_t stream, const std::vector<std::uint32_t>& input) {
  std::printf("== captured cudaMallocAsync and cudaFreeAsync\n");
  std::vector<std::uint32_t> out(kN);
  CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  std::uint32_t *dIn = nullptr, *dSquare = nullptr;
  CHECK_CUDA(cudaMallocAsync(&dIn, kBytes, stream));
  CHECK_CUDA(cudaMallocAsync(&dSquare, kBytes, stream));
  CHECK_CUDA(cudaMemcpyAsync(dIn, input.data(), kBytes, cudaMemcpyHostToDevice, stream));
  square<<<kBlocks, kThreads, 0, stream>>>(dIn, dSquare, kN);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaFreeAsync(dIn, stream));
  std::uint32_t* dNeg = nullptr;
  CHECK_CUDA(cudaMallocAsync(&dNeg, kBytes, stream));
  negate<<<kBlocks, kThreads, 0, stream>>>(dSquare, dNeg, kN);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaMemcpyAsync(out.data(), dNeg, kBytes, cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaFreeAsync(dSquare, stream));
  CHECK_CUDA(cudaFreeAsync(dNeg, stream));
  cudaGraph_t graph;
  CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
  std::fprintf(stderr, "captured in %p square %p neg %p\n", static_cast<void*>(dIn),
               static_cast<void*>(dSquare), static_cast<void*>(dNeg));
  std::size_t nodes = 0;
  CHECK_CUDA(cudaGraphGetNodes(graph, nullptr, &nodes));
  std::printf("captured nodes: %zu\n", nodes);
  cudaGraphExec_t exec;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int launch = 0; launch < 2; ++launch) {
    std::fill(out.begin(), out.end(), 0u);
    CHECK_CUDA(cudaGraphLaunch(exec, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    bool ok = true;
    for (int i = 0; i < kN; ++i) ok = ok && out[i] == 0u - input[i] * input[i];
    std::printf("captured launch %d: %s\n", launch, ok ? "matches the CPU" : "MISMATCH");
    EXPECT_TRUE(ok, "captured launch %d differs", launch);
  }
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
}

// 4. What CUDA refuses.
void refusals(int device) {
  std::printf("== refusals\n");
  cudaGraph_t graph;
  CHECK_CUDA(cudaGraphCreate(&graph, 0));
  cudaMemAllocNodeParams params = allocParams(device);
  cudaGraphNode_t alloc, freeNode, extra;
  CHECK_CUDA(cudaGraphAddMemAllocNode(&alloc, graph, nullptr, 0, &params));
  CHECK_CUDA(cudaGraphAddMemFreeNode(&freeNode, graph, &alloc, 1, params.dptr));
  EXPECT_ERROR("a second free of the allocation in its graph",
               cudaGraphAddMemFreeNode(&extra, graph, &freeNode, 1, params.dptr), cudaErrorInvalidValue);
  cudaGetLastError();  // the refusal is the thread's last error, natively too
  void* plain = nullptr;
  CHECK_CUDA(cudaMalloc(&plain, 256));
  EXPECT_ERROR("a free node of cudaMalloc memory", cudaGraphAddMemFreeNode(&extra, graph, nullptr, 0, plain),
               cudaErrorInvalidValue);
  cudaGetLastError();  // the refusal is the thread's last error, natively too
  CHECK_CUDA(cudaFree(plain));
  cudaGraphExec_t first, second;
  CHECK_CUDA(cudaGraphInstantiate(&first, graph, 0));
  const cudaError_t twice = cudaGraphInstantiate(&second, graph, 0);
  std::printf("a second executable graph refused: %s\n", twice != cudaSuccess ? "yes" : "no");
  cudaGetLastError();
  cudaGraph_t clone;
  const cudaError_t cloned = cudaGraphClone(&clone, graph);
  std::printf("a clone refused: %s\n", cloned != cudaSuccess ? "yes" : "no");
  cudaGetLastError();
  CHECK_CUDA(cudaGraphExecDestroy(first));
  CHECK_CUDA(cudaGraphDestroy(graph));
}

// 5. Trim and attributes.
void attributes(cudaStream_t stream, int device) {
  std::printf("== attributes\n");
  std::uint32_t* dOut = nullptr;
  std::uint32_t salt = 3;
  cudaGraphExec_t exec = outlivingGraph(device, 0, &dOut, &salt);
  CHECK_CUDA(cudaGraphLaunch(exec, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  unsigned long long used = 0, usedHigh = 0, reserved = 0, reservedHigh = 0;
  CHECK_CUDA(cudaDeviceGetGraphMemAttribute(device, cudaGraphMemAttrUsedMemCurrent, &used));
  CHECK_CUDA(cudaDeviceGetGraphMemAttribute(device, cudaGraphMemAttrUsedMemHigh, &usedHigh));
  CHECK_CUDA(cudaDeviceGetGraphMemAttribute(device, cudaGraphMemAttrReservedMemCurrent, &reserved));
  CHECK_CUDA(cudaDeviceGetGraphMemAttribute(device, cudaGraphMemAttrReservedMemHigh, &reservedHigh));
  std::fprintf(stderr, "used %llu (high %llu), reserved %llu (high %llu)\n", used, usedHigh, reserved,
               reservedHigh);
  std::printf(
      "a live allocation is used and reserved: %s\n",
      used >= kBytes && reserved >= used && usedHigh >= used && reservedHigh >= reserved ? "yes" : "no");
  unsigned long long zero = 0;
  CHECK_CUDA(cudaDeviceSetGraphMemAttribute(device, cudaGraphMemAttrUsedMemHigh, &zero));
  CHECK_CUDA(cudaDeviceSetGraphMemAttribute(device, cudaGraphMemAttrReservedMemHigh, &zero));
  EXPECT_ERROR("setting a current value",
               cudaDeviceSetGraphMemAttribute(device, cudaGraphMemAttrUsedMemCurrent, &zero),
               cudaErrorInvalidValue);
  cudaGetLastError();  // the refusal is the thread's last error, natively too
  CHECK_CUDA(cudaFree(dOut));
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaDeviceGraphMemTrim(device));
  std::printf("cudaDeviceGraphMemTrim: done\n");
}

int main() {
  int device = 0;
  CHECK_CUDA(cudaGetDevice(&device));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::vector<std::uint32_t> input(kN);
  for (int i = 0; i < kN; ++i) input[i] = mix32(static_cast<std::uint32_t>(i)) & 0xffffu;
  explicitGraph(stream, device, input);
  outlivingAllocation(stream, device);
  capturedAllocation(stream, input);
  refusals(device);
  attributes(stream, device);
  CHECK_CUDA(cudaStreamDestroy(stream));
  std::printf("graph_memory_nodes: done\n");
  return 0;
}
