// Conditional graph nodes, compared with a native run (client/session/graph_conditionals.h; the
// worker defines cudaGraphSetConditional in the module: ptx/graph_conditionals.h):
// 1. IF/ELSE: a kernel sets the condition from device memory; the true body or the ELSE body runs;
// 2. WHILE (do-while through a default of 1): a body kernel counts down and clears the condition;
// 3. WHILE built by capture into the node's body, the condition set by the kernel each round;
// 4. SWITCH of four bodies: the body named by the value runs, none for a value past the last;
// 5. a nested IF inside a WHILE body.
// Each body kernel adds a distinct bit pattern to a log word, printed after each launch.
#include <cstdint>

#include "check.cuh"

__global__ void setFromByte(const unsigned* input, cudaGraphConditionalHandle handle) {
  cudaGraphSetConditional(handle, *input);
}

__global__ void addToLog(unsigned* log, unsigned value) { atomicAdd(log, value); }

__global__ void countDown(unsigned* counter, unsigned* log, cudaGraphConditionalHandle handle) {
  *log += 1;
  if (--(*counter) == 0) cudaGraphSetConditional(handle, 0);
}

__global__ void countDownAndSet(unsigned* counter, unsigned* log, cudaGraphConditionalHandle handle) {
  if (*counter > 0) {
    --(*counter);
    *log += 100;
  }
  cudaGraphSetConditional(handle, *counter);
}

namespace {

cudaGraphNode_t addKernel(cudaGraph_t graph, const cudaGraphNode_t* deps, size_t count, void* function,
                          void** args) {
  cudaGraphNodeParams params{};
  params.type = cudaGraphNodeTypeKernel;
  params.kernel.func = function;
  params.kernel.gridDim = dim3(1);
  params.kernel.blockDim = dim3(1);
  params.kernel.kernelParams = args;
  cudaGraphNode_t node = nullptr;
  CHECK_CUDA(cudaGraphAddNode(&node, graph, deps, nullptr, count, &params));
  return node;
}

cudaGraphNode_t addConditional(cudaGraph_t graph, const cudaGraphNode_t* deps, size_t count,
                               cudaGraphConditionalHandle handle, cudaGraphConditionalNodeType type,
                               unsigned size, cudaGraph_t** bodies) {
  cudaGraphNodeParams params{};
  params.type = cudaGraphNodeTypeConditional;
  params.conditional.handle = handle;
  params.conditional.type = type;
  params.conditional.size = size;
  cudaGraphNode_t node = nullptr;
  CHECK_CUDA(cudaGraphAddNode(&node, graph, deps, nullptr, count, &params));
  *bodies = params.conditional.phGraph_out;
  return node;
}

unsigned readWord(const unsigned* device) {
  unsigned value = 0;
  CHECK_CUDA(cudaMemcpy(&value, device, sizeof value, cudaMemcpyDeviceToHost));
  return value;
}

void setWord(unsigned* device, unsigned value) {
  CHECK_CUDA(cudaMemcpy(device, &value, sizeof value, cudaMemcpyHostToDevice));
}

// Sets `input` (when given) and clears the log, launches, and returns the log.
unsigned launchAndReadLog(cudaGraphExec_t exec, cudaStream_t stream, unsigned* input, unsigned value,
                          unsigned* log) {
  if (input != nullptr) setWord(input, value);
  setWord(log, 0);
  CHECK_CUDA(cudaGraphLaunch(exec, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  return readWord(log);
}

// A graph whose first node sets `handle` from *input, followed by a conditional node of `type`.
cudaGraph_t graphSetFromInput(unsigned** input, cudaGraphConditionalHandle* handle,
                              cudaGraphConditionalNodeType type, unsigned size, cudaGraph_t** bodies) {
  cudaGraph_t graph = nullptr;
  CHECK_CUDA(cudaGraphCreate(&graph, 0));
  CHECK_CUDA(cudaGraphConditionalHandleCreate(handle, graph));
  void* setArgs[] = {input, handle};
  cudaGraphNode_t setter = addKernel(graph, nullptr, 0, reinterpret_cast<void*>(setFromByte), setArgs);
  addConditional(graph, &setter, 1, *handle, type, size, bodies);
  return graph;
}

void ifElse(unsigned* input, unsigned* log) {
  cudaGraphConditionalHandle handle = 0;
  cudaGraph_t* bodies = nullptr;
  cudaGraph_t graph = graphSetFromInput(&input, &handle, cudaGraphCondTypeIf, 2, &bodies);
  unsigned thenValue = 1, elseValue = 10;
  void* thenArgs[] = {&log, &thenValue};
  void* elseArgs[] = {&log, &elseValue};
  addKernel(bodies[0], nullptr, 0, reinterpret_cast<void*>(addToLog), thenArgs);
  addKernel(bodies[1], nullptr, 0, reinterpret_cast<void*>(addToLog), elseArgs);
  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (unsigned condition : {1u, 0u, 7u, 0u}) {
    const unsigned got = launchAndReadLog(exec, 0, input, condition, log);
    std::printf("if/else: condition %u -> log %u\n", condition, got);
    EXPECT_TRUE(got == (condition != 0 ? 1u : 10u), "if/else log %u for condition %u", got, condition);
  }
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
}

void doWhile(unsigned* counter, unsigned* log) {
  cudaGraph_t graph = nullptr;
  CHECK_CUDA(cudaGraphCreate(&graph, 0));
  cudaGraphConditionalHandle handle = 0;
  CHECK_CUDA(cudaGraphConditionalHandleCreate(&handle, graph, 1, cudaGraphCondAssignDefault));
  cudaGraph_t* bodies = nullptr;
  addConditional(graph, nullptr, 0, handle, cudaGraphCondTypeWhile, 1, &bodies);
  void* args[] = {&counter, &log, &handle};
  addKernel(bodies[0], nullptr, 0, reinterpret_cast<void*>(countDown), args);
  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (unsigned rounds : {10u, 3u, 1u}) {
    const unsigned got = launchAndReadLog(exec, 0, counter, rounds, log);
    std::printf("do-while: %u rounds -> log %u, counter %u\n", rounds, got, readWord(counter));
    EXPECT_TRUE(got == rounds, "do-while ran %u times for %u", got, rounds);
  }
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
}

void capturedWhile(unsigned* counter, unsigned* log) {
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  cudaStreamCaptureStatus status{};
  cudaGraph_t graph = nullptr;
  const cudaGraphNode_t* deps = nullptr;
  size_t count = 0;
  CHECK_CUDA(cudaStreamGetCaptureInfo(stream, &status, nullptr, &graph, &deps, nullptr, &count));
  cudaGraphConditionalHandle handle = 0;
  CHECK_CUDA(cudaGraphConditionalHandleCreate(&handle, graph));
  countDownAndSet<<<1, 1, 0, stream>>>(counter, log, handle);
  CHECK_CUDA(cudaStreamGetCaptureInfo(stream, &status, nullptr, &graph, &deps, nullptr, &count));
  cudaGraph_t* bodies = nullptr;
  cudaGraphNode_t loop = addConditional(graph, deps, count, handle, cudaGraphCondTypeWhile, 1, &bodies);
  CHECK_CUDA(
      cudaStreamUpdateCaptureDependencies(stream, &loop, nullptr, 1, cudaStreamSetCaptureDependencies));
  unsigned endValue = 100000;
  addToLog<<<1, 1, 0, stream>>>(log, endValue);
  cudaGraph_t captured = nullptr;
  CHECK_CUDA(cudaStreamEndCapture(stream, &captured));
  cudaStream_t bodyStream = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&bodyStream, cudaStreamNonBlocking));
  CHECK_CUDA(
      cudaStreamBeginCaptureToGraph(bodyStream, bodies[0], nullptr, nullptr, 0, cudaStreamCaptureModeGlobal));
  countDownAndSet<<<1, 1, 0, bodyStream>>>(counter, log, handle);
  CHECK_CUDA(cudaStreamEndCapture(bodyStream, nullptr));
  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&exec, captured, 0));
  for (unsigned start : {0u, 5u}) {
    const unsigned got = launchAndReadLog(exec, stream, counter, start, log);
    std::printf("captured while: from %u -> log %u\n", start, got);
    EXPECT_TRUE(got == 100000u + 100u * start, "captured while log %u from %u", got, start);
  }
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(captured));
  CHECK_CUDA(cudaStreamDestroy(bodyStream));
  CHECK_CUDA(cudaStreamDestroy(stream));
}

void switchOfFour(unsigned* input, unsigned* log) {
  cudaGraphConditionalHandle handle = 0;
  cudaGraph_t* bodies = nullptr;
  cudaGraph_t graph = graphSetFromInput(&input, &handle, cudaGraphCondTypeSwitch, 4, &bodies);
  unsigned values[4] = {1, 20, 300, 4000};
  void* args[4][2];
  for (int i = 0; i < 4; ++i) {
    args[i][0] = &log;
    args[i][1] = &values[i];
    addKernel(bodies[i], nullptr, 0, reinterpret_cast<void*>(addToLog), args[i]);
  }
  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (unsigned condition : {2u, 0u, 3u, 9u}) {
    const unsigned got = launchAndReadLog(exec, 0, input, condition, log);
    std::printf("switch: condition %u -> log %u\n", condition, got);
    EXPECT_TRUE(got == (condition < 4 ? values[condition] : 0u), "switch log %u for %u", got, condition);
  }
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
}

void nested(unsigned* counter, unsigned* input, unsigned* log) {
  cudaGraph_t graph = nullptr;
  CHECK_CUDA(cudaGraphCreate(&graph, 0));
  cudaGraphConditionalHandle loopHandle = 0;
  CHECK_CUDA(cudaGraphConditionalHandleCreate(&loopHandle, graph, 1, cudaGraphCondAssignDefault));
  cudaGraph_t* loopBody = nullptr;
  addConditional(graph, nullptr, 0, loopHandle, cudaGraphCondTypeWhile, 1, &loopBody);
  cudaGraphConditionalHandle ifHandle = 0;
  CHECK_CUDA(cudaGraphConditionalHandleCreate(&ifHandle, loopBody[0]));
  void* setArgs[] = {&input, &ifHandle};
  cudaGraphNode_t setter = addKernel(loopBody[0], nullptr, 0, reinterpret_cast<void*>(setFromByte), setArgs);
  cudaGraph_t* ifBody = nullptr;
  cudaGraphNode_t inner = addConditional(loopBody[0], &setter, 1, ifHandle, cudaGraphCondTypeIf, 1, &ifBody);
  unsigned inside = 7;
  void* insideArgs[] = {&log, &inside};
  addKernel(ifBody[0], nullptr, 0, reinterpret_cast<void*>(addToLog), insideArgs);
  unsigned* countLog = log + 1;
  void* countArgs[] = {&counter, &countLog, &loopHandle};
  addKernel(loopBody[0], &inner, 1, reinterpret_cast<void*>(countDown), countArgs);
  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  setWord(counter, 4);
  setWord(input, 1);
  setWord(log, 0);
  setWord(countLog, 0);
  CHECK_CUDA(cudaGraphLaunch(exec, 0));
  CHECK_CUDA(cudaDeviceSynchronize());
  const unsigned got = readWord(log);
  std::printf("nested: log %u after %u rounds\n", got, readWord(countLog));
  EXPECT_TRUE(got == 28u, "nested log %u", got);
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
}

}  // namespace

int main() {
  unsigned* words = nullptr;
  CHECK_CUDA(cudaMalloc(&words, 4 * sizeof(unsigned)));
  unsigned* input = words;
  unsigned* counter = words + 1;
  unsigned* log = words + 2;  // and words[3] for nested's count
  ifElse(input, log);
  doWhile(counter, log);
  capturedWhile(counter, log);
  switchOfFour(input, log);
  nested(counter, input, log);
  CHECK_CUDA(cudaFree(words));
  std::printf("graph_conditionals: done\n");
  return 0;
}
