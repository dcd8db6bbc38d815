// Probe: what CUDA allows and refuses while a stream captures, printed by error NAME (the native
// run is the reference; nothing here expects a particular code unless the documentation fixes it).
// Each case begins a capture, does one thing, prints the call's result, the capture status, the
// result of ending the capture and the thread's last error, so that a difference shows on its line.
//  R1  cudaStreamBeginCapture on a stream that already captures
//  R2  cudaStreamEndCapture on a forked (non-origin) stream
//  R3  a wait that would merge two captures (isolation)
//  R4  a plain wait on an event recorded outside the capture
//  R5  cudaEventWaitExternal / cudaEventRecordExternal outside any capture
//  R6  a legacy-stream memset while a blocking stream captures, and while a non-blocking one does
//  R7  cudaStreamQuery of the capturing stream; a launch into the invalidated capture
//  R8  cudaEventQuery of an event recorded in the capture, during and after it
//  R9  cudaMalloc / cudaFree during capture in each mode, from the capturing thread and another thread
//  R10 PyTorch's guard: cudaThreadExchangeStreamCaptureMode(Relaxed) around cudaMalloc during a
//      Global capture
//  R11 a synchronous cudaMemcpy, cudaDeviceSynchronize, and synchronizing another stream, during capture
//  R12 cudaGraphLaunch into a capturing stream (a graph inside a capture)
//  R13 cudaLaunchHostFunc and cudaStreamAddCallback during capture
//  R14 pageable host memory in captured copies: the graph reads the host buffer when it runs
//  R15 an invalid capture mode; cudaStreamEndCapture with a null graph pointer
// The streams must work normally at the end.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <thread>
#include <vector>

#include "tests/gpu/programs/check.cuh"
#include "tests/gpu/programs/graph_names.cuh"

namespace {

constexpr int kN = 1 << 14;
constexpr size_t kBytes = kN * sizeof(std::uint32_t);

__host__ __device__ inline std::uint32_t affineValue(std::uint32_t x, std::uint32_t i, std::uint32_t mul,
                                                     std::uint32_t add) {
  return x * mul + add + i;
}

__global__ void affine(std::uint32_t* x, int n, std::uint32_t mul, std::uint32_t add) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    x[i] = affineValue(x[i], static_cast<std::uint32_t>(i), mul, add);
}

void cpuAffine(std::vector<std::uint32_t>& x, std::uint32_t mul, std::uint32_t add) {
  for (size_t i = 0; i < x.size(); ++i) x[i] = affineValue(x[i], static_cast<std::uint32_t>(i), mul, add);
}

const char* yesNo(bool v) { return v ? "yes" : "no"; }
const char* name(cudaError_t e) { return cudaGetErrorName(e); }

void status(const char* label, cudaStream_t s) {
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  const cudaError_t e = cudaStreamIsCapturing(s, &st);
  std::printf("%s: status %s (%s)\n", label, captureStatusName(st), name(e));
}

void nodeTypes(const char* label, cudaGraph_t graph) {
  size_t count = 0;
  CHECK_CUDA(cudaGraphGetNodes(graph, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  if (count) CHECK_CUDA(cudaGraphGetNodes(graph, nodes.data(), &count));
  std::printf("%s: %zu nodes:", label, count);
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType t;
    CHECK_CUDA(cudaGraphNodeGetType(node, &t));
    std::printf(" %s", graphNodeTypeName(t));
  }
  std::printf("\n");
}

// Ends the capture of `s`, prints the result, destroys a graph it returns (after printing its node
// types when `describe`), and prints (clearing) the thread's last error.
cudaGraph_t endCapture(const char* label, cudaStream_t s, bool keep = false) {
  cudaGraph_t graph = nullptr;
  const cudaError_t e = cudaStreamEndCapture(s, &graph);
  std::printf("%s: end capture: %s, graph set %s\n", label, name(e), yesNo(graph != nullptr));
  if (graph != nullptr) nodeTypes(label, graph);
  std::printf("%s: cudaGetLastError -> %s\n", label, name(cudaGetLastError()));
  if (graph != nullptr && !keep) {
    CHECK_CUDA(cudaGraphDestroy(graph));
    graph = nullptr;
  }
  return graph;
}

void report(const char* label, cudaError_t e) { std::printf("%s: %s\n", label, name(e)); }

void launchAffine(const char* label, std::uint32_t* p, cudaStream_t s) {
  affine<<<16, 128, 0, s>>>(p, kN, 3u, 1u);
  std::printf("%s: launch -> %s\n", label, name(cudaGetLastError()));
}

// Makes sure no stream of `streams` is left capturing (a case that left one so is printed).
void settle(const char* label, std::initializer_list<cudaStream_t> streams) {
  int index = 0;
  for (cudaStream_t s : streams) {
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    CHECK_CUDA(cudaStreamIsCapturing(s, &st));
    if (st != cudaStreamCaptureStatusNone) {
      std::printf("%s: stream %d still %s\n", label, index, captureStatusName(st));
      cudaGraph_t g = nullptr;
      cudaStreamEndCapture(s, &g);
      if (g != nullptr) cudaGraphDestroy(g);
    }
    ++index;
  }
  cudaGetLastError();
}

void hostNoop(void* data) { ++*static_cast<int*>(data); }
void CUDART_CB callbackNoop(cudaStream_t, cudaError_t, void* data) { ++*static_cast<int*>(data); }

}  // namespace

int main() {
  std::uint32_t *dev = nullptr, *dev2 = nullptr, *spare = nullptr;
  CHECK_CUDA(cudaMalloc(&dev, kBytes));
  CHECK_CUDA(cudaMalloc(&dev2, kBytes));
  CHECK_CUDA(cudaMalloc(&spare, kBytes));
  CHECK_CUDA(cudaMemset(dev, 0, kBytes));
  CHECK_CUDA(cudaMemset(dev2, 0, kBytes));
  cudaStream_t s0, s1, s2, sb;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreate(&sb));  // blocking: synchronizes with the legacy stream
  cudaEvent_t e1, e2, eOut;
  CHECK_CUDA(cudaEventCreateWithFlags(&e1, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventCreateWithFlags(&e2, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventCreateWithFlags(&eOut, cudaEventDisableTiming));
  CHECK_CUDA(cudaDeviceSynchronize());

  // R1
  CHECK_CUDA(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
  report("R1 begin again on a capturing stream", cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
  status("R1", s0);
  endCapture("R1", s0);
  settle("R1", {s0});

  // R2
  CHECK_CUDA(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
  CHECK_CUDA(cudaEventRecord(e1, s0));
  CHECK_CUDA(cudaStreamWaitEvent(s1, e1, 0));
  launchAffine("R2 forked", dev, s1);
  {
    cudaGraph_t g = nullptr;
    report("R2 end capture on the forked stream", cudaStreamEndCapture(s1, &g));
    std::printf("R2: graph set %s\n", yesNo(g != nullptr));
    if (g != nullptr) CHECK_CUDA(cudaGraphDestroy(g));
  }
  std::printf("R2: cudaGetLastError -> %s\n", name(cudaGetLastError()));
  status("R2 origin", s0);
  status("R2 forked", s1);
  report("R2 join record", cudaEventRecord(e2, s1));
  report("R2 join wait", cudaStreamWaitEvent(s0, e2, 0));
  endCapture("R2", s0);
  settle("R2", {s0, s1});

  // R3
  CHECK_CUDA(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
  CHECK_CUDA(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  launchAffine("R3 capture 0", dev, s0);
  launchAffine("R3 capture 1", dev2, s1);
  CHECK_CUDA(cudaEventRecord(e1, s0));
  report("R3 wait across two captures", cudaStreamWaitEvent(s1, e1, 0));
  status("R3 s0", s0);
  status("R3 s1", s1);
  endCapture("R3 s1", s1);
  endCapture("R3 s0", s0);
  settle("R3", {s0, s1});

  // R4
  launchAffine("R4 outside", dev2, s2);
  CHECK_CUDA(cudaEventRecord(eOut, s2));
  CHECK_CUDA(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
  report("R4 plain wait on an event recorded outside the capture", cudaStreamWaitEvent(s0, eOut, 0));
  status("R4", s0);
  launchAffine("R4 after the wait", dev, s0);
  endCapture("R4", s0);
  settle("R4", {s0});
  CHECK_CUDA(cudaStreamSynchronize(s2));

  // R5
  report("R5 cudaStreamWaitEvent(cudaEventWaitExternal) outside capture",
         cudaStreamWaitEvent(s2, eOut, cudaEventWaitExternal));
  std::printf("R5: cudaGetLastError -> %s\n", name(cudaGetLastError()));
  report("R5 cudaEventRecordWithFlags(cudaEventRecordExternal) outside capture",
         cudaEventRecordWithFlags(eOut, s2, cudaEventRecordExternal));
  std::printf("R5: cudaGetLastError -> %s\n", name(cudaGetLastError()));
  CHECK_CUDA(cudaStreamSynchronize(s2));

  // R6
  CHECK_CUDA(cudaStreamBeginCapture(sb, cudaStreamCaptureModeGlobal));
  launchAffine("R6 blocking", dev, sb);
  report("R6 legacy-stream memset while a blocking stream captures", cudaMemsetAsync(spare, 0, kBytes, 0));
  status("R6 blocking", sb);
  endCapture("R6 blocking", sb);
  settle("R6", {sb});
  CHECK_CUDA(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
  launchAffine("R6 non-blocking", dev, s0);
  report("R6 legacy-stream memset while a non-blocking stream captures",
         cudaMemsetAsync(spare, 0, kBytes, 0));
  status("R6 non-blocking", s0);
  endCapture("R6 non-blocking", s0);
  settle("R6", {s0});
  CHECK_CUDA(cudaDeviceSynchronize());

  // R7
  CHECK_CUDA(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
  launchAffine("R7", dev, s0);
  report("R7 cudaStreamQuery of the capturing stream", cudaStreamQuery(s0));
  {
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    unsigned long long id = 0;
    report("R7 cudaStreamGetCaptureInfo", cudaStreamGetCaptureInfo(s0, &st, &id));
    std::printf("R7: capture info status %s, id set %s\n", captureStatusName(st), yesNo(id != 0));
  }
  launchAffine("R7 into the invalidated capture", dev, s0);
  report("R7 memset into the invalidated capture", cudaMemsetAsync(dev, 0, kBytes, s0));
  endCapture("R7", s0);
  settle("R7", {s0});

  // R8
  CHECK_CUDA(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
  launchAffine("R8", dev, s0);
  CHECK_CUDA(cudaEventRecord(e1, s0));
  report("R8 cudaEventQuery of an event recorded in the capture, during it", cudaEventQuery(e1));
  status("R8", s0);
  endCapture("R8", s0);
  settle("R8", {s0});
  CHECK_CUDA(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
  launchAffine("R8 second", dev, s0);
  CHECK_CUDA(cudaEventRecord(e2, s0));
  cudaGraph_t kept = endCapture("R8 second", s0, true);
  report("R8 cudaEventQuery after the capture ended", cudaEventQuery(e2));
  std::printf("R8: cudaGetLastError -> %s\n", name(cudaGetLastError()));
  report("R8 cudaEventSynchronize after the capture ended", cudaEventSynchronize(e2));
  std::printf("R8: cudaGetLastError -> %s\n", name(cudaGetLastError()));
  report("R8 cudaStreamWaitEvent on it after the capture ended", cudaStreamWaitEvent(s2, e2, 0));
  std::printf("R8: cudaGetLastError -> %s\n", name(cudaGetLastError()));
  CHECK_CUDA(cudaStreamSynchronize(s2));
  if (kept != nullptr) CHECK_CUDA(cudaGraphDestroy(kept));
  settle("R8", {s0, s2});

  // R9
  void* preAllocated = nullptr;
  CHECK_CUDA(cudaMalloc(&preAllocated, 4096));
  for (cudaStreamCaptureMode mode :
       {cudaStreamCaptureModeGlobal, cudaStreamCaptureModeThreadLocal, cudaStreamCaptureModeRelaxed}) {
    char label[96];
    std::snprintf(label, sizeof label, "R9 %s", captureModeName(mode));
    CHECK_CUDA(cudaStreamBeginCapture(s0, mode));
    launchAffine(label, dev, s0);
    void* same = nullptr;
    const cudaError_t sameThread = cudaMalloc(&same, 4096);
    std::printf("%s: cudaMalloc on the capturing thread: %s\n", label, name(sameThread));
    std::printf("%s: cudaGetLastError -> %s\n", label, name(cudaGetLastError()));
    cudaError_t otherThread = cudaSuccess, otherLast = cudaSuccess;
    void* other = nullptr;
    std::thread worker([&]() {
      otherThread = cudaMalloc(&other, 4096);
      otherLast = cudaGetLastError();
    });
    worker.join();
    std::printf("%s: cudaMalloc on another thread: %s (its last error %s)\n", label, name(otherThread),
                name(otherLast));
    status(label, s0);
    // cudaFree of memory allocated before the capture began
    const cudaError_t freed = cudaFree(preAllocated);
    std::printf("%s: cudaFree (of pre-capture memory) on the capturing thread: %s\n", label, name(freed));
    std::printf("%s: cudaGetLastError -> %s\n", label, name(cudaGetLastError()));
    status(label, s0);
    endCapture(label, s0);
    settle(label, {s0});
    if (freed != cudaSuccess) CHECK_CUDA(cudaFree(preAllocated));
    CHECK_CUDA(cudaMalloc(&preAllocated, 4096));
    if (sameThread == cudaSuccess && same != nullptr) CHECK_CUDA(cudaFree(same));
    if (otherThread == cudaSuccess && other != nullptr) CHECK_CUDA(cudaFree(other));
  }
  CHECK_CUDA(cudaFree(preAllocated));

  // R10
  {
    CHECK_CUDA(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
    launchAffine("R10", dev, s0);
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    CHECK_CUDA(cudaThreadExchangeStreamCaptureMode(&mode));
    std::printf("R10: thread mode before the guard: %s\n", captureModeName(mode));
    void* p = nullptr;
    const cudaError_t allocated = cudaMalloc(&p, 1 << 20);
    std::printf("R10: cudaMalloc under the Relaxed guard: %s\n", name(allocated));
    CHECK_CUDA(cudaThreadExchangeStreamCaptureMode(&mode));
    std::printf("R10: thread mode restored from: %s\n", captureModeName(mode));
    status("R10", s0);
    launchAffine("R10 after the guard", dev, s0);
    endCapture("R10", s0);
    settle("R10", {s0});
    if (allocated == cudaSuccess) CHECK_CUDA(cudaFree(p));
  }

  // R11
  {
    std::vector<std::uint32_t> host(kN);
    CHECK_CUDA(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
    launchAffine("R11 memcpy", dev, s0);
    report("R11 synchronous cudaMemcpy D2H during capture",
           cudaMemcpy(host.data(), spare, kBytes, cudaMemcpyDeviceToHost));
    status("R11 memcpy", s0);
    endCapture("R11 memcpy", s0);
    settle("R11", {s0});

    CHECK_CUDA(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
    launchAffine("R11 device sync", dev, s0);
    report("R11 cudaDeviceSynchronize during capture", cudaDeviceSynchronize());
    status("R11 device sync", s0);
    endCapture("R11 device sync", s0);
    settle("R11", {s0});

    CHECK_CUDA(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
    launchAffine("R11 other stream", dev, s0);
    report("R11 cudaStreamSynchronize of another (idle) stream during capture", cudaStreamSynchronize(s2));
    status("R11 other stream", s0);
    endCapture("R11 other stream", s0);
    settle("R11", {s0});
    CHECK_CUDA(cudaDeviceSynchronize());
  }

  // R12
  {
    cudaGraph_t inner = nullptr;
    CHECK_CUDA(cudaGraphCreate(&inner, 0));
    std::uint32_t* p = dev;
    int n = kN;
    std::uint32_t mul = 5, add = 2;
    void* args[] = {&p, &n, &mul, &add};
    cudaKernelNodeParams kp{};
    kp.func = reinterpret_cast<void*>(affine);
    kp.gridDim = dim3(16);
    kp.blockDim = dim3(128);
    kp.kernelParams = args;
    cudaGraphNode_t k = nullptr;
    CHECK_CUDA(cudaGraphAddKernelNode(&k, inner, nullptr, 0, &kp));
    cudaGraphExec_t innerExec = nullptr;
    CHECK_CUDA(cudaGraphInstantiate(&innerExec, inner, 0));

    std::vector<std::uint32_t> host(kN);
    CHECK_CUDA(cudaMemset(dev, 0, kBytes));
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
    affine<<<16, 128, 0, s0>>>(dev, kN, 3u, 1u);
    CHECK_CUDA(cudaGetLastError());
    const cudaError_t launched = cudaGraphLaunch(innerExec, s0);
    report("R12 cudaGraphLaunch into a capturing stream", launched);
    status("R12", s0);
    affine<<<16, 128, 0, s0>>>(dev, kN, 7u, 3u);
    std::printf("R12: launch after it -> %s\n", name(cudaGetLastError()));
    cudaGraph_t outer = endCapture("R12", s0, true);
    settle("R12", {s0});
    if (outer != nullptr) {
      cudaGraphExec_t outerExec = nullptr;
      const cudaError_t inst = cudaGraphInstantiate(&outerExec, outer, 0);
      report("R12 instantiate the outer graph", inst);
      if (inst == cudaSuccess) {
        for (int launch = 0; launch < 2; ++launch) {
          CHECK_CUDA(cudaMemsetAsync(dev, 0, kBytes, s0));
          CHECK_CUDA(cudaGraphLaunch(outerExec, s0));
          CHECK_CUDA(cudaMemcpyAsync(host.data(), dev, kBytes, cudaMemcpyDeviceToHost, s0));
          CHECK_CUDA(cudaStreamSynchronize(s0));
        }
        std::vector<std::uint32_t> want(kN, 0u);
        cpuAffine(want, 3, 1);
        if (launched == cudaSuccess) cpuAffine(want, 5, 2);
        cpuAffine(want, 7, 3);
        bool same = std::memcmp(want.data(), host.data(), kBytes) == 0;
        std::printf("R12: outer graph result matches the CPU: %s\n", yesNo(same));
        EXPECT_TRUE(same, "the outer graph's result differs from the CPU reference");
        CHECK_CUDA(cudaGraphExecDestroy(outerExec));
      }
      std::printf("R12: cudaGetLastError -> %s\n", name(cudaGetLastError()));
      CHECK_CUDA(cudaGraphDestroy(outer));
    }
    CHECK_CUDA(cudaGraphExecDestroy(innerExec));
    CHECK_CUDA(cudaGraphDestroy(inner));
  }

  // R13
  {
    int hostCalls = 0, callbackCalls = 0;
    CHECK_CUDA(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
    launchAffine("R13 host func", dev, s0);
    report("R13 cudaLaunchHostFunc during capture", cudaLaunchHostFunc(s0, hostNoop, &hostCalls));
    std::printf("R13: host function ran during capture: %s\n", yesNo(hostCalls != 0));
    cudaGraph_t g = endCapture("R13 host func", s0, true);
    settle("R13", {s0});
    if (g != nullptr) {
      cudaGraphExec_t exec = nullptr;
      CHECK_CUDA(cudaGraphInstantiate(&exec, g, 0));
      CHECK_CUDA(cudaGraphLaunch(exec, s0));
      CHECK_CUDA(cudaStreamSynchronize(s0));
      std::printf("R13: host function ran %d time(s) after one launch\n", hostCalls);
      CHECK_CUDA(cudaGraphExecDestroy(exec));
      CHECK_CUDA(cudaGraphDestroy(g));
    }
    CHECK_CUDA(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
    launchAffine("R13 callback", dev, s0);
    report("R13 cudaStreamAddCallback during capture",
           cudaStreamAddCallback(s0, callbackNoop, &callbackCalls, 0));
    status("R13 callback", s0);
    endCapture("R13 callback", s0);
    settle("R13", {s0});
    CHECK_CUDA(cudaStreamSynchronize(s0));
    std::printf("R13: callback calls %d\n", callbackCalls);
  }

  // R14
  {
    std::vector<std::uint32_t> in(kN), out(kN, 0u);
    for (int i = 0; i < kN; ++i) in[i] = mix32(static_cast<std::uint32_t>(i));
    CHECK_CUDA(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
    const cudaError_t copyIn = cudaMemcpyAsync(dev, in.data(), kBytes, cudaMemcpyHostToDevice, s0);
    report("R14 captured H2D from pageable memory", copyIn);
    affine<<<16, 128, 0, s0>>>(dev, kN, 9u, 4u);
    CHECK_CUDA(cudaGetLastError());
    const cudaError_t copyOut = cudaMemcpyAsync(out.data(), dev, kBytes, cudaMemcpyDeviceToHost, s0);
    report("R14 captured D2H to pageable memory", copyOut);
    cudaGraph_t g = endCapture("R14", s0, true);
    settle("R14", {s0});
    if (g != nullptr && copyIn == cudaSuccess && copyOut == cudaSuccess) {
      cudaGraphExec_t exec = nullptr;
      CHECK_CUDA(cudaGraphInstantiate(&exec, g, 0));
      for (int launch = 0; launch < 3; ++launch) {
        for (int i = 0; i < kN; ++i)
          in[i] = mix32(static_cast<std::uint32_t>(i) + 77u * static_cast<std::uint32_t>(launch));
        std::fill(out.begin(), out.end(), 0u);
        CHECK_CUDA(cudaGraphLaunch(exec, s0));
        CHECK_CUDA(cudaStreamSynchronize(s0));
        std::vector<std::uint32_t> want = in;
        cpuAffine(want, 9, 4);
        EXPECT_TRUE(want == out, "R14 launch %d: the graph did not read the host buffer's new contents",
                    launch);
      }
      std::printf("R14: 3 launches, each read the pageable input as it was at launch: exact, fnv=%016llx\n",
                  static_cast<unsigned long long>(fnv1a64(out.data(), kBytes)));
      CHECK_CUDA(cudaGraphExecDestroy(exec));
    }
    if (g != nullptr) CHECK_CUDA(cudaGraphDestroy(g));
  }

  // R15
  report("R15 begin capture with mode 7", cudaStreamBeginCapture(s0, static_cast<cudaStreamCaptureMode>(7)));
  std::printf("R15: cudaGetLastError -> %s\n", name(cudaGetLastError()));
  status("R15", s0);
  settle("R15", {s0});
  CHECK_CUDA(cudaStreamBeginCapture(s0, cudaStreamCaptureModeGlobal));
  launchAffine("R15 null graph pointer", dev, s0);
  report("R15 cudaStreamEndCapture(stream, nullptr)", cudaStreamEndCapture(s0, nullptr));
  std::printf("R15: cudaGetLastError -> %s\n", name(cudaGetLastError()));
  status("R15 after the null end", s0);
  settle("R15", {s0});

  // The streams work normally afterwards.
  std::vector<std::uint32_t> host(kN);
  for (cudaStream_t s : {s0, s1, s2, sb}) {
    CHECK_CUDA(cudaMemsetAsync(dev2, 0, kBytes, s));
    affine<<<16, 128, 0, s>>>(dev2, kN, 11u, 5u);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaMemcpyAsync(host.data(), dev2, kBytes, cudaMemcpyDeviceToHost, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    std::vector<std::uint32_t> want(kN, 0u);
    cpuAffine(want, 11, 5);
    EXPECT_TRUE(want == host, "a stream does not work normally after the capture cases");
  }
  std::printf("all streams work normally afterwards\n");
  EXPECT_ERROR("final cudaGetLastError", cudaGetLastError(), cudaSuccess);

  CHECK_CUDA(cudaEventDestroy(e1));
  CHECK_CUDA(cudaEventDestroy(e2));
  CHECK_CUDA(cudaEventDestroy(eOut));
  for (cudaStream_t s : {s0, s1, s2, sb}) CHECK_CUDA(cudaStreamDestroy(s));
  CHECK_CUDA(cudaFree(dev));
  CHECK_CUDA(cudaFree(dev2));
  CHECK_CUDA(cudaFree(spare));
  std::printf("probe_capture_rules OK\n");
  return 0;
}
