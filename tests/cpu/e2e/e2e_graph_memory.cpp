// Graph memory nodes through the whole stack on the fake GPU (client/session/graph_memory.h): an
// allocation node's address is fixed when it is added and the same at every launch; the memory
// may be named only while it is live; a graph whose allocation lives cannot be launched again; a
// free node, cudaFreeAsync or cudaFree (here or in another graph) frees it; cudaMallocAsync and
// cudaFreeAsync captured into a graph become such nodes; an allocation ordered after a free node
// of the same graph takes its address; destroying the graphs gives the memory back. Host code
// only: copies and memsets stand in for kernels. Each check prints one line; exit 1 on a failure.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "tests/cpu/e2e/e2e_runtime_checks.h"

namespace {

using agileos::e2e::check;
using agileos::e2e::checkError;

constexpr size_t kBytes = 64 * 1024;

cudaMemAllocNodeParams allocParams(size_t bytes) {
  cudaMemAllocNodeParams params{};
  params.poolProps.allocType = cudaMemAllocationTypePinned;
  params.poolProps.location.type = cudaMemLocationTypeDevice;
  params.poolProps.location.id = 0;
  params.bytesize = bytes;
  return params;
}

unsigned long long graphMemory(cudaGraphMemAttributeType attribute) {
  unsigned long long value = ~0ull;
  checkError(cudaDeviceGetGraphMemAttribute(0, attribute, &value), cudaSuccess,
             "cudaDeviceGetGraphMemAttribute");
  return value;
}

// alloc -> memset(value) -> copy to host [-> free]
struct FillGraph {
  cudaGraph_t graph = nullptr;
  cudaGraphNode_t alloc = nullptr, fill = nullptr, copy = nullptr, free = nullptr;
  void* address = nullptr;
};

FillGraph buildFillGraph(unsigned char value, void* host, bool withFree) {
  FillGraph built;
  checkError(cudaGraphCreate(&built.graph, 0), cudaSuccess, "cudaGraphCreate");
  cudaMemAllocNodeParams params = allocParams(kBytes);
  checkError(cudaGraphAddMemAllocNode(&built.alloc, built.graph, nullptr, 0, &params), cudaSuccess,
             "cudaGraphAddMemAllocNode");
  built.address = params.dptr;
  cudaMemsetParams fill{};
  fill.dst = built.address;
  fill.value = value;
  fill.elementSize = 1;
  fill.width = kBytes;
  fill.height = 1;
  checkError(cudaGraphAddMemsetNode(&built.fill, built.graph, &built.alloc, 1, &fill), cudaSuccess,
             "memset node on the allocation");
  checkError(cudaGraphAddMemcpyNode1D(&built.copy, built.graph, &built.fill, 1, host, built.address, kBytes,
                                      cudaMemcpyDeviceToHost),
             cudaSuccess, "copy node from the allocation");
  if (withFree) {
    checkError(cudaGraphAddMemFreeNode(&built.free, built.graph, &built.copy, 1, built.address), cudaSuccess,
               "cudaGraphAddMemFreeNode");
  }
  return built;
}

bool all(const std::vector<unsigned char>& bytes, unsigned char value) {
  for (unsigned char byte : bytes) {
    if (byte != value) return false;
  }
  return true;
}

void checkExplicitGraph(cudaStream_t stream) {
  std::vector<unsigned char> host(kBytes, 0);
  FillGraph built = buildFillGraph(0x5A, host.data(), true);
  check(built.address != nullptr, "the allocation node has its address at once");
  checkError(cudaMemcpy(built.address, host.data(), 16, cudaMemcpyHostToDevice), cudaErrorInvalidValue,
             "a copy into the allocation before any launch is refused");
  cudaMemAllocNodeParams got{};
  checkError(cudaGraphMemAllocNodeGetParams(built.alloc, &got), cudaSuccess,
             "cudaGraphMemAllocNodeGetParams");
  check(got.dptr == built.address && got.bytesize == kBytes && got.poolProps.location.id == 0,
        "the allocation node's parameters");
  void* freed = nullptr;
  checkError(cudaGraphMemFreeNodeGetParams(built.free, &freed), cudaSuccess, "cudaGraphMemFreeNodeGetParams");
  check(freed == built.address, "the free node's address");
  cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
  checkError(cudaGraphNodeGetType(built.alloc, &type), cudaSuccess, "cudaGraphNodeGetType");
  check(type == cudaGraphNodeTypeMemAlloc, "an allocation node's type");
  checkError(cudaGraphNodeGetType(built.free, &type), cudaSuccess, "cudaGraphNodeGetType");
  check(type == cudaGraphNodeTypeMemFree, "a free node's type");

  // What CUDA refuses for a graph with memory nodes.
  cudaGraph_t copy = nullptr;
  checkError(cudaGraphClone(&copy, built.graph), cudaErrorNotSupported,
             "a graph with memory nodes is not cloned");
  checkError(cudaGraphDestroyNode(built.fill), cudaErrorNotSupported, "its nodes are not deleted");
  cudaGraphNode_t again = nullptr;
  checkError(cudaGraphAddMemFreeNode(&again, built.graph, &built.free, 1, built.address),
             cudaErrorInvalidValue, "an allocation freed twice in one graph");
  int plain = 0;
  void* device = nullptr;
  checkError(cudaMalloc(&device, 256), cudaSuccess, "cudaMalloc");
  checkError(cudaGraphAddMemFreeNode(&again, built.graph, nullptr, 0, device), cudaErrorInvalidValue,
             "a free node of memory no allocation node made");
  checkError(cudaGraphAddMemFreeNode(&again, built.graph, nullptr, 0, &plain), cudaErrorInvalidValue,
             "a free node of a host address");
  checkError(cudaFree(device), cudaSuccess, "cudaFree");

  cudaGraphExec_t exec = nullptr;
  checkError(cudaGraphInstantiate(&exec, built.graph, 0), cudaSuccess, "cudaGraphInstantiate");
  cudaGraphExec_t second = nullptr;
  checkError(cudaGraphInstantiate(&second, built.graph, 0), cudaErrorInvalidValue,
             "one executable graph at a time for a graph with memory nodes");
  for (int launch = 0; launch < 2; ++launch) {
    std::fill(host.begin(), host.end(), 0);
    checkError(cudaGraphLaunch(exec, stream), cudaSuccess, "cudaGraphLaunch (alloc, fill, copy, free)");
    checkError(cudaStreamSynchronize(stream), cudaSuccess, "cudaStreamSynchronize");
    check(all(host, 0x5A), "the launch filled the allocation and read it back");
  }
  checkError(cudaMemcpy(host.data(), built.address, 16, cudaMemcpyDeviceToHost), cudaErrorInvalidValue,
             "the allocation is freed at the end of each launch");
  checkError(cudaGraphInstantiate(&second, built.graph, 0), cudaErrorInvalidValue,
             "still one executable graph at a time");
  checkError(cudaGraphExecDestroy(exec), cudaSuccess, "cudaGraphExecDestroy");
  checkError(cudaGraphInstantiate(&exec, built.graph, 0), cudaSuccess,
             "instantiated again once the first went");
  checkError(cudaGraphLaunch(exec, stream), cudaSuccess, "the new executable graph launches");
  checkError(cudaStreamSynchronize(stream), cudaSuccess, "cudaStreamSynchronize");
  checkError(cudaGraphExecDestroy(exec), cudaSuccess, "cudaGraphExecDestroy");
  checkError(cudaGraphDestroy(built.graph), cudaSuccess, "cudaGraphDestroy");
}

// The graph's allocation outlives the launch: it is the program's until freed, by cudaFree, by
// cudaFreeAsync or by a free node of another graph, and the graph cannot be launched meanwhile.
void checkAllocationOutlivingTheLaunch(cudaStream_t stream) {
  std::vector<unsigned char> host(kBytes, 0);
  FillGraph built = buildFillGraph(0x42, host.data(), false);
  cudaGraphExec_t exec = nullptr;
  checkError(cudaGraphInstantiate(&exec, built.graph, 0), cudaSuccess, "cudaGraphInstantiate (no free node)");
  checkError(cudaGraphDestroy(built.graph), cudaSuccess,
             "the graph goes; its executable graph keeps the memory");
  checkError(cudaGraphLaunch(exec, stream), cudaSuccess, "cudaGraphLaunch");
  checkError(cudaStreamSynchronize(stream), cudaSuccess, "cudaStreamSynchronize");
  std::vector<unsigned char> probe(kBytes, 0);
  checkError(cudaMemcpy(probe.data(), built.address, kBytes, cudaMemcpyDeviceToHost), cudaSuccess,
             "the live allocation is the program's after the launch");
  check(all(probe, 0x42), "it holds what the graph wrote");
  checkError(cudaGraphLaunch(exec, stream), cudaErrorInvalidValue, "a relaunch while the allocation lives");
  checkError(cudaFree(built.address), cudaSuccess, "cudaFree of the graph's allocation");
  checkError(cudaMemcpy(probe.data(), built.address, 16, cudaMemcpyDeviceToHost), cudaErrorInvalidValue,
             "freed: refused");
  checkError(cudaFree(built.address), cudaErrorInvalidValue, "freed twice");

  checkError(cudaGraphLaunch(exec, stream), cudaSuccess, "relaunched once freed, at the same address");
  checkError(cudaFreeAsync(built.address, stream), cudaSuccess, "cudaFreeAsync of the graph's allocation");
  checkError(cudaStreamSynchronize(stream), cudaSuccess, "cudaStreamSynchronize");

  // Freed by a free node of another graph.
  cudaGraph_t freer = nullptr;
  cudaGraphNode_t freeNode = nullptr;
  checkError(cudaGraphCreate(&freer, 0), cudaSuccess, "cudaGraphCreate (free graph)");
  checkError(cudaGraphAddMemFreeNode(&freeNode, freer, nullptr, 0, built.address), cudaSuccess,
             "a free node of another graph's allocation");
  cudaGraphExec_t freerExec = nullptr;
  checkError(cudaGraphInstantiate(&freerExec, freer, 0), cudaSuccess, "cudaGraphInstantiate (free graph)");
  checkError(cudaGraphLaunch(freerExec, stream), cudaErrorInvalidValue,
             "the free graph refuses to free an allocation that is not live");
  checkError(cudaGraphLaunch(exec, stream), cudaSuccess, "cudaGraphLaunch");
  checkError(cudaGraphLaunch(freerExec, stream), cudaSuccess, "the free graph frees it");
  checkError(cudaGraphLaunch(exec, stream), cudaSuccess, "and the graph launches again");
  checkError(cudaStreamSynchronize(stream), cudaSuccess, "cudaStreamSynchronize");
  checkError(cudaGraphLaunch(freerExec, stream), cudaSuccess, "freed by the free graph again");
  checkError(cudaStreamSynchronize(stream), cudaSuccess, "cudaStreamSynchronize");
  checkError(cudaGraphExecDestroy(freerExec), cudaSuccess, "cudaGraphExecDestroy (free graph)");
  checkError(cudaGraphDestroy(freer), cudaSuccess, "cudaGraphDestroy (free graph)");

  // Instantiated to free its allocations on launch: a relaunch frees the live one first.
  cudaGraphExecDestroy(exec);
  built = buildFillGraph(0x43, host.data(), false);
  checkError(cudaGraphInstantiate(&exec, built.graph, cudaGraphInstantiateFlagAutoFreeOnLaunch), cudaSuccess,
             "cudaGraphInstantiate (auto free on launch)");
  checkError(cudaGraphLaunch(exec, stream), cudaSuccess, "cudaGraphLaunch (auto free)");
  checkError(cudaGraphLaunch(exec, stream), cudaSuccess, "relaunched: the live allocation was freed first");
  checkError(cudaStreamSynchronize(stream), cudaSuccess, "cudaStreamSynchronize");
  checkError(cudaGraphExecDestroy(exec), cudaSuccess, "cudaGraphExecDestroy while the allocation lives");
  checkError(cudaMemcpy(probe.data(), built.address, 16, cudaMemcpyDeviceToHost), cudaSuccess,
             "the allocation lives on after its executable graph");
  checkError(cudaGraphDestroy(built.graph), cudaSuccess, "cudaGraphDestroy");
  checkError(cudaFree(built.address), cudaSuccess, "cudaFree of an allocation whose graphs are gone");
  checkError(cudaMemcpy(probe.data(), built.address, 16, cudaMemcpyDeviceToHost), cudaErrorInvalidValue,
             "gone");
}

// As graphMemoryNodes' sample does: an allocation ordered after a free node of the same graph takes
// the freed allocation's address.
void checkAddressReuse() {
  cudaGraph_t graph = nullptr;
  checkError(cudaGraphCreate(&graph, 0), cudaSuccess, "cudaGraphCreate");
  cudaMemAllocNodeParams params = allocParams(kBytes);
  cudaGraphNode_t allocA = nullptr, allocB = nullptr, freeA = nullptr, allocC = nullptr, allocD = nullptr;
  checkError(cudaGraphAddMemAllocNode(&allocA, graph, nullptr, 0, &params), cudaSuccess, "allocation a");
  void* a = params.dptr;
  checkError(cudaGraphAddMemAllocNode(&allocB, graph, &allocA, 1, &params), cudaSuccess, "allocation b");
  void* b = params.dptr;
  check(a != b, "two live allocations have two addresses");
  checkError(cudaGraphAddMemFreeNode(&freeA, graph, &allocB, 1, a), cudaSuccess, "free a");
  params.bytesize = kBytes / 2;
  checkError(cudaGraphAddMemAllocNode(&allocC, graph, &freeA, 1, &params), cudaSuccess,
             "allocation c after free a");
  check(params.dptr == a, "c takes a's address");
  params.bytesize = kBytes;
  checkError(cudaGraphAddMemAllocNode(&allocD, graph, &freeA, 1, &params), cudaSuccess,
             "allocation d after free a, beside c");
  check(params.dptr != a && params.dptr != b, "d does not share c's address (both may live at once)");
  checkError(cudaGraphDestroy(graph), cudaSuccess, "cudaGraphDestroy");
}

// cudaMallocAsync and cudaFreeAsync in a capture.
void checkCapture(cudaStream_t stream) {
  std::vector<unsigned char> host(kBytes, 0);
  void* outside = nullptr;
  checkError(cudaMallocAsync(&outside, 256, stream), cudaSuccess, "cudaMallocAsync outside a capture");
  checkError(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess,
             "cudaStreamBeginCapture");
  void* first = nullptr;
  checkError(cudaMallocAsync(&first, kBytes, stream), cudaSuccess, "captured cudaMallocAsync");
  check(first != nullptr, "the captured allocation has its address at once");
  checkError(cudaMemsetAsync(first, 0x3C, kBytes, stream), cudaSuccess, "captured memset of it");
  checkError(cudaFreeAsync(first, stream), cudaSuccess, "captured cudaFreeAsync");
  void* second = nullptr;
  checkError(cudaMallocAsync(&second, kBytes, stream), cudaSuccess,
             "captured cudaMallocAsync after the free");
  check(second == first, "it takes the freed allocation's address");
  checkError(cudaMemsetAsync(second, 0x3D, kBytes, stream), cudaSuccess, "captured memset");
  checkError(cudaMemcpyAsync(host.data(), second, kBytes, cudaMemcpyDeviceToHost, stream), cudaSuccess,
             "captured copy to the host");
  checkError(cudaFreeAsync(second, stream), cudaSuccess, "captured cudaFreeAsync");
  cudaGraph_t graph = nullptr;
  checkError(cudaStreamEndCapture(stream, &graph), cudaSuccess, "cudaStreamEndCapture");
  size_t nodes = 0;
  checkError(cudaGraphGetNodes(graph, nullptr, &nodes), cudaSuccess, "cudaGraphGetNodes");
  check(nodes == 7, "seven nodes: two allocations, two memsets, a copy, two frees");
  cudaGraphExec_t exec = nullptr;
  checkError(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess, "cudaGraphInstantiate");
  for (int launch = 0; launch < 2; ++launch) {
    std::fill(host.begin(), host.end(), 0);
    checkError(cudaGraphLaunch(exec, stream), cudaSuccess, "cudaGraphLaunch (captured)");
    checkError(cudaStreamSynchronize(stream), cudaSuccess, "cudaStreamSynchronize");
    check(all(host, 0x3D), "the captured graph ran");
  }
  checkError(cudaGraphExecDestroy(exec), cudaSuccess, "cudaGraphExecDestroy");
  checkError(cudaGraphDestroy(graph), cudaSuccess, "cudaGraphDestroy");

  // A capture may not free memory no allocation node made.
  checkError(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess,
             "cudaStreamBeginCapture");
  checkError(cudaFreeAsync(outside, stream), cudaErrorInvalidValue, "captured cudaFreeAsync of other memory");
  (void)cudaGetLastError();
  // The capture goes on, as natively, and the memory was not freed.
  checkError(cudaStreamEndCapture(stream, &graph), cudaSuccess, "the capture is not invalidated");
  size_t nodeCount = 1;
  checkError(cudaGraphGetNodes(graph, nullptr, &nodeCount), cudaSuccess, "cudaGraphGetNodes");
  check(nodeCount == 0, "the refused free added no node");
  checkError(cudaGraphDestroy(graph), cudaSuccess, "cudaGraphDestroy (empty)");
  checkError(cudaFreeAsync(outside, stream), cudaSuccess, "cudaFreeAsync outside the capture");
  checkError(cudaStreamSynchronize(stream), cudaSuccess, "cudaStreamSynchronize");
}

void checkAttributes() {
  checkError(cudaDeviceGraphMemTrim(0), cudaSuccess, "cudaDeviceGraphMemTrim");
  const unsigned long long before = graphMemory(cudaGraphMemAttrReservedMemCurrent);
  std::vector<unsigned char> host(kBytes, 0);
  FillGraph built = buildFillGraph(1, host.data(), false);
  check(graphMemory(cudaGraphMemAttrReservedMemCurrent) == before, "adding the node binds no memory");
  check(graphMemory(cudaGraphMemAttrUsedMemCurrent) == 0, "not used before a launch");
  cudaStream_t stream = nullptr;
  cudaStreamCreate(&stream);
  cudaGraphExec_t exec = nullptr;
  checkError(cudaGraphInstantiate(&exec, built.graph, 0), cudaSuccess, "cudaGraphInstantiate");
  checkError(cudaGraphLaunch(exec, stream), cudaSuccess, "cudaGraphLaunch");
  checkError(cudaStreamSynchronize(stream), cudaSuccess, "cudaStreamSynchronize");
  // Physical memory, rounded up to the granularity as natively.
  const unsigned long long used = graphMemory(cudaGraphMemAttrUsedMemCurrent);
  check(used >= kBytes && graphMemory(cudaGraphMemAttrReservedMemCurrent) == before + used,
        "the launch bound the memory");
  checkError(cudaFree(built.address), cudaSuccess, "cudaFree");
  check(
      graphMemory(cudaGraphMemAttrUsedMemCurrent) == used && graphMemory(cudaGraphMemAttrUsedMemHigh) == used,
      "freed: the memory stays with the graph until a trim");
  checkError(cudaDeviceGraphMemTrim(0), cudaSuccess, "cudaDeviceGraphMemTrim");
  check(graphMemory(cudaGraphMemAttrUsedMemCurrent) == 0 &&
            graphMemory(cudaGraphMemAttrReservedMemCurrent) == before,
        "a trim gives back what no live allocation holds");
  check(graphMemory(cudaGraphMemAttrUsedMemHigh) == used, "the high-water mark stays");
  unsigned long long zero = 0, one = 1;
  checkError(cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &zero), cudaSuccess,
             "reset the used high-water mark");
  check(graphMemory(cudaGraphMemAttrUsedMemHigh) == 0, "reset to the current value");
  checkError(cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrUsedMemHigh, &one), cudaErrorInvalidValue,
             "only 0 may be set");
  checkError(cudaDeviceSetGraphMemAttribute(0, cudaGraphMemAttrUsedMemCurrent, &zero), cudaErrorInvalidValue,
             "a current value cannot be set");
  std::fill(host.begin(), host.end(), 0);
  checkError(cudaGraphLaunch(exec, stream), cudaSuccess, "relaunched after the trim");
  checkError(cudaStreamSynchronize(stream), cudaSuccess, "cudaStreamSynchronize");
  check(all(host, 1), "the relaunch ran on memory bound again");
  checkError(cudaGraphExecDestroy(exec), cudaSuccess, "cudaGraphExecDestroy");
  checkError(cudaGraphDestroy(built.graph), cudaSuccess, "cudaGraphDestroy");
  cudaStreamDestroy(stream);
}

}  // namespace

// One executable graph launched on two streams in turn: each launch is ordered after the previous
// one (cudaGraphLaunch's contract), so the second stream waits for an event recorded on the first
// (the ctest e2e_fake_gpu_graph_memory_unwaited_frees finds those calls in the tally); the fake
// GPU runs work at once, so here the results only show that nothing else changed.
void checkLaunchesOnTwoStreams(cudaStream_t stream) {
  cudaStream_t other = nullptr;
  checkError(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking), cudaSuccess, "second stream");
  std::vector<unsigned char> host(kBytes, 0);
  FillGraph built = buildFillGraph(0x5a, host.data(), /*withFree=*/true);
  cudaGraphExec_t exec = nullptr;
  checkError(cudaGraphInstantiate(&exec, built.graph, 0), cudaSuccess, "two streams: instantiate");
  for (int round = 0; round < 4; ++round) {
    std::fill(host.begin(), host.end(), 0);
    cudaStream_t on = round % 2 == 0 ? stream : other;
    checkError(cudaGraphLaunch(exec, on), cudaSuccess, "two streams: launch");
    checkError(cudaStreamSynchronize(on), cudaSuccess, "two streams: synchronize");
    check(all(host, 0x5a), "two streams: the launch filled the host buffer");
  }
  checkError(cudaGraphExecDestroy(exec), cudaSuccess, "two streams: exec destroyed");
  checkError(cudaGraphDestroy(built.graph), cudaSuccess, "two streams: graph destroyed");
  checkError(cudaStreamDestroy(other), cudaSuccess, "second stream destroyed");
}

int main() {
  cudaStream_t stream = nullptr;
  checkError(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess, "cudaStreamCreate");
  checkExplicitGraph(stream);
  checkAllocationOutlivingTheLaunch(stream);
  checkAddressReuse();
  checkCapture(stream);
  checkAttributes();
  checkLaunchesOnTwoStreams(stream);
  checkError(cudaStreamDestroy(stream), cudaSuccess, "cudaStreamDestroy");
  std::printf("%d failed\n", agileos::e2e::failures());
  return agileos::e2e::failures() == 0 ? 0 : 1;
}
