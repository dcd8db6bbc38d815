// Probe: changing executable graphs the way inference engines do.
// A. llama.cpp's loop: every "token" captures the step again (Relaxed mode), updates the one
//    executable graph with cudaGraphExecUpdate (kernel arguments change every token; the number of
//    kernels changes every 50 tokens, which must fail with cudaErrorGraphExecUpdateFailure and
//    cudaGraphExecUpdateErrorTopologyChanged, after which the program clears the error,
//    re-instantiates and goes on), then launches it; 200 tokens, checked against a CPU model;
// B. llama.cpp's node patching: cudaGraphGetNodes, cudaGraphNodeGetType, cudaGraphKernelNodeGetParams
//    (its func identifies the kernel), a pointer argument replaced, cudaGraphKernelNodeSetParams on
//    the graph and cudaGraphExecUpdate; then cudaGraphExecKernelNodeSetParams directly;
// C. cudaGraphExecUpdate against graphs that differ from the executable's in one way each (kernel
//    arguments and grid, kernel function, an extra node, an extra edge, a memset node that became a
//    kernel node, a copy whose direction changed, a memset value, a memset width), printing the
//    error, the result enum, the error node and the last error; every launch after an update is
//    checked against a CPU model of the graph that the update result says is in effect;
// D. the per-node setters of an executable graph: cudaGraphExecMemcpyNodeSetParams1D,
//    cudaGraphExecMemsetNodeSetParams, cudaGraphExecKernelNodeSetParams with another function,
//    cudaGraphExecHostNodeSetParams, cudaGraphNodeSetEnabled/GetEnabled on a copy node (and on a
//    host node, which CUDA does not allow), and changes CUDA restricts (copy direction, 2D memset);
// E. a kernel taking a 400+-byte parameter struct (as CUTLASS kernels do): graph node, read back,
//    changed, and the same kernel captured;
// F. one executable graph launched 1000 times (arguments changed every 250 launches, after
//    cudaGraphInstantiateWithFlags, cudaGraphExecGetFlags and cudaGraphUpload), and launched 200
//    times alternating between two streams with no events: CUDA orders every launch of an
//    executable graph after its previous launch, whatever the stream.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "tests/gpu/programs/check.cuh"

namespace {

const char* yesNo(bool v) { return v ? "yes" : "no"; }
const char* name(cudaError_t e) { return cudaGetErrorName(e); }

const char* updateResultName(cudaGraphExecUpdateResult r) {
  switch (r) {
    case cudaGraphExecUpdateSuccess:
      return "Success";
    case cudaGraphExecUpdateError:
      return "Error";
    case cudaGraphExecUpdateErrorTopologyChanged:
      return "ErrorTopologyChanged";
    case cudaGraphExecUpdateErrorNodeTypeChanged:
      return "ErrorNodeTypeChanged";
    case cudaGraphExecUpdateErrorFunctionChanged:
      return "ErrorFunctionChanged";
    case cudaGraphExecUpdateErrorParametersChanged:
      return "ErrorParametersChanged";
    case cudaGraphExecUpdateErrorNotSupported:
      return "ErrorNotSupported";
    case cudaGraphExecUpdateErrorUnsupportedFunctionChange:
      return "ErrorUnsupportedFunctionChange";
    case cudaGraphExecUpdateErrorAttributesChanged:
      return "ErrorAttributesChanged";
  }
  return "unknown";
}

// ---------------------------------------------------------------- kernels
__host__ __device__ inline std::uint32_t stepValue(std::uint32_t x, std::uint32_t i, std::uint32_t token,
                                                   std::uint32_t k) {
  return x * 3u + token * 7u + k + i;
}
__global__ void step(std::uint32_t* x, int n, std::uint32_t token, std::uint32_t k) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    x[i] = stepValue(x[i], static_cast<std::uint32_t>(i), token, k);
}

__global__ void bump(std::uint32_t* x, int n, std::uint32_t v) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) x[i] += v;
}
__global__ void scaleInto(const std::uint32_t* src, std::uint32_t* dst, int n, std::uint32_t s) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) dst[i] = src[i] * s;
}

__host__ __device__ inline std::uint32_t fillValue(std::uint32_t in, std::uint32_t i, std::uint32_t mul,
                                                   std::uint32_t add) {
  return in * mul + add + i;
}
__host__ __device__ inline std::uint32_t fillAltValue(std::uint32_t in, std::uint32_t i, std::uint32_t mul,
                                                      std::uint32_t add) {
  return ((in + add) * mul) ^ (i << 3);
}
__global__ void fill(const std::uint32_t* in, std::uint32_t* out, int n, std::uint32_t mul,
                     std::uint32_t add) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = fillValue(in[i], static_cast<std::uint32_t>(i), mul, add);
}
__global__ void fillAlt(const std::uint32_t* in, std::uint32_t* out, int n, std::uint32_t mul,
                        std::uint32_t add) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = fillAltValue(in[i], static_cast<std::uint32_t>(i), mul, add);
}
__global__ void setWords(std::uint32_t* p, int n, std::uint32_t v) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) p[i] = v;
}
__host__ __device__ inline std::uint32_t combineValue(std::uint32_t a, std::uint32_t b) {
  return a ^ (b * 3u);
}
__host__ __device__ inline std::uint32_t combineAltValue(std::uint32_t a, std::uint32_t b) {
  return a + b * 5u;
}
__global__ void combine(const std::uint32_t* a, const std::uint32_t* b, std::uint32_t* c, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    c[i] = combineValue(a[i], b[i]);
}
__global__ void combineAlt(const std::uint32_t* a, const std::uint32_t* b, std::uint32_t* c, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    c[i] = combineAltValue(a[i], b[i]);
}

// Reads x[i], spends a while computing, then writes x[i] + v: two launches that overlap lose updates.
__host__ __device__ inline std::uint32_t accumulateTerm(std::uint32_t i, std::uint32_t k) {
  std::uint32_t v = i * k + 1u;
  for (int r = 0; r < 16; ++r) v = v * 1664525u + 1013904223u;
  return v;
}
__global__ void accumulate(std::uint32_t* x, int n, std::uint32_t k) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const std::uint32_t old = x[i];
    x[i] = old + accumulateTerm(static_cast<std::uint32_t>(i), k);
  }
}

struct BigParams {
  std::uint32_t* out;
  int n;
  std::uint32_t coeff[96];
  std::uint64_t tag;
  std::uint8_t flags[13];
};
__host__ __device__ inline std::uint32_t polyValue(const BigParams& p, std::uint32_t i) {
  std::uint32_t v = static_cast<std::uint32_t>(p.tag) ^ i;
  for (int k = 0; k < 96; ++k) v = v * p.coeff[k] + p.flags[k % 13];
  return v ^ static_cast<std::uint32_t>(p.tag >> 32);
}
__global__ void poly(BigParams p) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += gridDim.x * blockDim.x)
    p.out[i] = polyValue(p, static_cast<std::uint32_t>(i));
}

bool sameParams(const void* stored, const BigParams& want) {
  BigParams got;
  std::memcpy(&got, stored, sizeof got);
  if (got.out != want.out || got.n != want.n || got.tag != want.tag) return false;
  for (int k = 0; k < 96; ++k)
    if (got.coeff[k] != want.coeff[k]) return false;
  for (int k = 0; k < 13; ++k)
    if (got.flags[k] != want.flags[k]) return false;
  return true;
}

cudaKernelNodeParams kernelNode(void* func, void** args, unsigned grid = 64, unsigned block = 256) {
  cudaKernelNodeParams p{};
  p.func = func;
  p.gridDim = dim3(grid);
  p.blockDim = dim3(block);
  p.kernelParams = args;
  return p;
}

std::vector<std::uint32_t> readDevice(const std::uint32_t* dev, size_t n) {
  std::vector<std::uint32_t> host(n);
  CHECK_CUDA(cudaMemcpy(host.data(), dev, n * sizeof(std::uint32_t), cudaMemcpyDeviceToHost));
  return host;
}

void expectWords(const char* label, const std::uint32_t* got, const std::vector<std::uint32_t>& want) {
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_TRUE(got[i] == want[i], "%s: word %zu is 0x%08x, expected 0x%08x", label, i, got[i], want[i]);
}

std::uint64_t fnvVec(const std::vector<std::uint32_t>& v) { return fnv1a64(v.data(), v.size() * 4); }

// ================================================================ A. llama.cpp's loop
void llamaLoop(cudaStream_t stream) {
  constexpr int n = 4096;
  std::uint32_t* x = nullptr;
  CHECK_CUDA(cudaMalloc(&x, n * 4));
  CHECK_CUDA(cudaMemset(x, 0, n * 4));
  CHECK_CUDA(cudaDeviceSynchronize());  // a legacy-stream memset before work on a non-blocking stream
  std::vector<std::uint32_t> model(n, 0u);
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  int updated = 0, failed = 0, instantiations = 0;
  for (int token = 0; token < 200; ++token) {
    const int kernels = 3 + token / 50;
    if (graph != nullptr) {
      CHECK_CUDA(cudaGraphDestroy(graph));
      graph = nullptr;
    }
    CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
    for (int k = 0; k < kernels; ++k) {
      step<<<8, 256, 0, stream>>>(x, n, static_cast<std::uint32_t>(token), static_cast<std::uint32_t>(k));
      CHECK_CUDA(cudaGetLastError());
    }
    CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
    if (exec == nullptr) {
      CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
      ++instantiations;
    } else {
      cudaGraphExecUpdateResultInfo info{};
      const cudaError_t status = cudaGraphExecUpdate(exec, graph, &info);
      if (status == cudaErrorGraphExecUpdateFailure) {
        const cudaError_t last = cudaGetLastError();
        if (failed == 0) {
          std::printf(
              "A: token %d (%d kernels): update %s, result %s, error node null %s, cudaGetLastError -> %s\n",
              token, kernels, name(status), updateResultName(info.result), yesNo(info.errorNode == nullptr),
              name(last));
        }
        EXPECT_TRUE(info.result == cudaGraphExecUpdateErrorTopologyChanged, "token %d: result %d", token,
                    static_cast<int>(info.result));
        ++failed;
        CHECK_CUDA(cudaGraphExecDestroy(exec));
        exec = nullptr;
        CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
        ++instantiations;
      } else {
        CHECK_CUDA(status);
        EXPECT_TRUE(info.result == cudaGraphExecUpdateSuccess, "token %d: result %d", token,
                    static_cast<int>(info.result));
        ++updated;
      }
    }
    CHECK_CUDA(cudaGraphLaunch(exec, stream));
    for (int k = 0; k < kernels; ++k)
      for (int i = 0; i < n; ++i)
        model[i] = stepValue(model[i], static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(token),
                             static_cast<std::uint32_t>(k));
  }
  CHECK_CUDA(cudaStreamSynchronize(stream));
  const std::vector<std::uint32_t> got = readDevice(x, n);
  expectWords("llama loop", got.data(), model);
  std::printf("A: 200 tokens: %d updates, %d failed updates, %d instantiations; result exact, fnv=%016llx\n",
              updated, failed, instantiations, static_cast<unsigned long long>(fnvVec(got)));
  EXPECT_TRUE(updated == 196 && failed == 3 && instantiations == 4, "update counts %d %d %d", updated, failed,
              instantiations);
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
  CHECK_CUDA(cudaFree(x));
}

// ================================================================ B. node patching
void nodePatching(cudaStream_t stream) {
  constexpr int n = 8192;
  std::uint32_t *x = nullptr, *dst[4] = {};
  CHECK_CUDA(cudaMalloc(&x, n * 4));
  for (auto& d : dst) {
    CHECK_CUDA(cudaMalloc(&d, n * 4));
    CHECK_CUDA(cudaMemset(d, 0, n * 4));
  }
  std::vector<std::uint32_t> x0(n);
  for (int i = 0; i < n; ++i) x0[i] = mix32(static_cast<std::uint32_t>(i) ^ 0xB0B0u);
  CHECK_CUDA(cudaMemcpy(x, x0.data(), n * 4, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaDeviceSynchronize());

  cudaGraph_t graph = nullptr;
  CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
  bump<<<16, 256, 0, stream>>>(x, n, 1u);
  scaleInto<<<16, 256, 0, stream>>>(x, dst[0], n, 2u);
  bump<<<16, 256, 0, stream>>>(x, n, 2u);
  scaleInto<<<16, 256, 0, stream>>>(x, dst[1], n, 3u);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
  size_t count = 0;
  CHECK_CUDA(cudaGraphGetNodes(graph, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  CHECK_CUDA(cudaGraphGetNodes(graph, nodes.data(), &count));
  std::string kinds;
  std::vector<cudaGraphNode_t> copies;
  for (cudaGraphNode_t node : nodes) {
    cudaGraphNodeType type;
    CHECK_CUDA(cudaGraphNodeGetType(node, &type));
    if (type != cudaGraphNodeTypeKernel) {
      kinds += " non-kernel";
      continue;
    }
    cudaKernelNodeParams p{};
    CHECK_CUDA(cudaGraphKernelNodeGetParams(node, &p));
    if (p.func == reinterpret_cast<void*>(bump)) {
      kinds += " bump(" + std::to_string(*static_cast<std::uint32_t*>(p.kernelParams[2])) + ")";
    } else if (p.func == reinterpret_cast<void*>(scaleInto)) {
      kinds += " scaleInto(" + std::to_string(*static_cast<std::uint32_t*>(p.kernelParams[3])) + ")";
      copies.push_back(node);
    } else {
      kinds += " unknown-func";
    }
  }
  std::printf("B: captured nodes by func:%s\n", kinds.c_str());
  EXPECT_TRUE(copies.size() == 2, "expected 2 scaleInto nodes, found %zu", copies.size());

  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  auto runOnce = [&]() {
    CHECK_CUDA(cudaMemcpyAsync(x, x0.data(), n * 4, cudaMemcpyHostToDevice, stream));
    for (auto& d : dst) CHECK_CUDA(cudaMemsetAsync(d, 0, n * 4, stream));
    CHECK_CUDA(cudaGraphLaunch(exec, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
  };
  auto expectDst = [&](const char* label, int slot, std::uint32_t add, std::uint32_t scale) {
    std::vector<std::uint32_t> want(n);
    for (int i = 0; i < n; ++i) want[i] = scale == 0 ? 0u : (x0[i] + add) * scale;
    const std::vector<std::uint32_t> got = readDevice(dst[slot], n);
    expectWords(label, got.data(), want);
  };
  runOnce();
  expectDst("B original dst0", 0, 1, 2);
  expectDst("B original dst1", 1, 3, 3);
  std::printf("B: original graph: exact\n");

  // Redirect both copies to dst[2] and dst[3] in the graph, then update the executable graph.
  for (size_t c = 0; c < copies.size(); ++c) {
    cudaKernelNodeParams p{};
    CHECK_CUDA(cudaGraphKernelNodeGetParams(copies[c], &p));
    std::uint32_t* newDst = dst[2 + c];
    void* args[] = {p.kernelParams[0], &newDst, p.kernelParams[2], p.kernelParams[3]};
    cudaKernelNodeParams changed = p;
    changed.kernelParams = args;
    CHECK_CUDA(cudaGraphKernelNodeSetParams(copies[c], &changed));
    cudaKernelNodeParams back{};
    CHECK_CUDA(cudaGraphKernelNodeGetParams(copies[c], &back));
    std::printf("B: copy %zu read back: func same %s, new destination %s, scale %u\n", c,
                yesNo(back.func == reinterpret_cast<void*>(scaleInto)),
                yesNo(*static_cast<std::uint32_t**>(back.kernelParams[1]) == newDst),
                *static_cast<std::uint32_t*>(back.kernelParams[3]));
  }
  cudaGraphExecUpdateResultInfo info{};
  const cudaError_t status = cudaGraphExecUpdate(exec, graph, &info);
  std::printf("B: update after patching: %s, result %s\n", name(status), updateResultName(info.result));
  CHECK_CUDA(status);
  runOnce();
  expectDst("B patched dst0 untouched", 0, 0, 0);
  expectDst("B patched dst1 untouched", 1, 0, 0);
  expectDst("B patched dst2", 2, 1, 2);
  expectDst("B patched dst3", 3, 3, 3);
  std::printf("B: patched graph: exact\n");

  // cudaGraphExecKernelNodeSetParams directly: the second copy back to dst[1], scale 7.
  {
    cudaKernelNodeParams p{};
    CHECK_CUDA(cudaGraphKernelNodeGetParams(copies[1], &p));
    std::uint32_t* d1 = dst[1];
    std::uint32_t seven = 7;
    void* args[] = {p.kernelParams[0], &d1, p.kernelParams[2], &seven};
    cudaKernelNodeParams changed = p;
    changed.kernelParams = args;
    CHECK_CUDA(cudaGraphExecKernelNodeSetParams(exec, copies[1], &changed));
  }
  runOnce();
  expectDst("B exec-set dst1", 1, 3, 7);
  expectDst("B exec-set dst2", 2, 1, 2);
  expectDst("B exec-set dst3 untouched", 3, 0, 0);
  cudaKernelNodeParams graphSide{};
  CHECK_CUDA(cudaGraphKernelNodeGetParams(copies[1], &graphSide));
  std::printf("B: exec node set params: exact; the graph's node still scales by %u\n",
              *static_cast<std::uint32_t*>(graphSide.kernelParams[3]));
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
  CHECK_CUDA(cudaFree(x));
  for (auto& d : dst) CHECK_CUDA(cudaFree(d));
}

// ================================================================ C. the update matrix
constexpr int kC = 1 << 14;

struct Variant {
  const char* label = "base";
  std::uint32_t mul = 3, add = 1;
  unsigned grid = 64;
  bool alt = false;
  bool memsetKernel = false;
  unsigned memsetByte = 0x00;
  size_t memsetBytes = kC * 4;
  bool extraNode = false;
  bool edgeMtoK1 = false;
  bool copyD2D = false;
};

struct DevC {
  std::uint32_t *in, *a, *b, *c, *scratch, *hostOut;
};

struct Built {
  cudaGraph_t graph = nullptr;
  cudaGraphNode_t M = nullptr, K1 = nullptr, K2 = nullptr, C = nullptr, E = nullptr;
};

Built build(const Variant& v, const DevC& d) {
  Built b;
  CHECK_CUDA(cudaGraphCreate(&b.graph, 0));
  int n = kC;
  std::uint32_t* bp = d.b;
  std::uint32_t setValue = 0x33333333u;
  void* setArgs[] = {&bp, &n, &setValue};
  if (v.memsetKernel) {
    cudaKernelNodeParams p = kernelNode(reinterpret_cast<void*>(setWords), setArgs);
    CHECK_CUDA(cudaGraphAddKernelNode(&b.M, b.graph, nullptr, 0, &p));
  } else {
    cudaMemsetParams ms{};
    ms.dst = d.b;
    ms.value = v.memsetByte;
    ms.elementSize = 1;
    ms.width = v.memsetBytes;
    ms.height = 1;
    CHECK_CUDA(cudaGraphAddMemsetNode(&b.M, b.graph, nullptr, 0, &ms));
  }
  std::uint32_t* in = d.in;
  std::uint32_t* a = d.a;
  std::uint32_t mul = v.mul, add = v.add;
  void* fillArgs[] = {&in, &a, &n, &mul, &add};
  cudaKernelNodeParams fp =
      kernelNode(v.alt ? reinterpret_cast<void*>(fillAlt) : reinterpret_cast<void*>(fill), fillArgs, v.grid);
  CHECK_CUDA(cudaGraphAddKernelNode(&b.K1, b.graph, v.edgeMtoK1 ? &b.M : nullptr, v.edgeMtoK1 ? 1 : 0, &fp));
  std::uint32_t* c = d.c;
  void* combineArgs[] = {&a, &bp, &c, &n};
  cudaKernelNodeParams cp = kernelNode(reinterpret_cast<void*>(combine), combineArgs);
  cudaGraphNode_t k2deps[] = {b.K1, b.M};
  CHECK_CUDA(cudaGraphAddKernelNode(&b.K2, b.graph, k2deps, 2, &cp));
  if (v.copyD2D) {
    CHECK_CUDA(
        cudaGraphAddMemcpyNode1D(&b.C, b.graph, &b.K2, 1, d.scratch, d.c, kC * 4, cudaMemcpyDeviceToDevice));
  } else {
    CHECK_CUDA(
        cudaGraphAddMemcpyNode1D(&b.C, b.graph, &b.K2, 1, d.hostOut, d.c, kC * 4, cudaMemcpyDeviceToHost));
  }
  if (v.extraNode) CHECK_CUDA(cudaGraphAddEmptyNode(&b.E, b.graph, &b.C, 1));
  return b;
}

struct ModelC {
  std::vector<std::uint32_t> in, b, hostOut, scratch;
  void launch(const Variant& v) {
    if (v.memsetKernel) {
      std::fill(b.begin(), b.end(), 0x33333333u);
    } else {
      std::memset(b.data(), static_cast<int>(v.memsetByte), v.memsetBytes);
    }
    std::vector<std::uint32_t> c(kC);
    for (int i = 0; i < kC; ++i) {
      const std::uint32_t a = v.alt ? fillAltValue(in[i], static_cast<std::uint32_t>(i), v.mul, v.add)
                                    : fillValue(in[i], static_cast<std::uint32_t>(i), v.mul, v.add);
      c[i] = combineValue(a, b[i]);
    }
    std::fill(hostOut.begin(), hostOut.end(), 0u);
    if (v.copyD2D) {
      scratch = c;
    } else {
      hostOut = c;
    }
  }
};

const char* whichNode(cudaGraphNode_t node, const Built& b) {
  if (node == nullptr) return "null";
  if (node == b.M) return "M";
  if (node == b.K1) return "K1";
  if (node == b.K2) return "K2";
  if (node == b.C) return "C";
  if (node == b.E) return "E";
  return "other";
}

void updateMatrix(cudaStream_t stream) {
  DevC d{};
  CHECK_CUDA(cudaMalloc(&d.in, kC * 4));
  CHECK_CUDA(cudaMalloc(&d.a, kC * 4));
  CHECK_CUDA(cudaMalloc(&d.b, kC * 4));
  CHECK_CUDA(cudaMalloc(&d.c, kC * 4));
  CHECK_CUDA(cudaMalloc(&d.scratch, kC * 4));
  CHECK_CUDA(cudaMallocHost(&d.hostOut, kC * 4));
  ModelC model;
  model.in.resize(kC);
  for (int i = 0; i < kC; ++i) model.in[i] = mix32(static_cast<std::uint32_t>(i) + 0xC0DEu);
  model.b.assign(kC, 0u);
  model.hostOut.assign(kC, 0u);
  model.scratch.assign(kC, 0u);
  CHECK_CUDA(cudaMemcpy(d.in, model.in.data(), kC * 4, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemset(d.b, 0, kC * 4));
  CHECK_CUDA(cudaMemset(d.scratch, 0, kC * 4));
  CHECK_CUDA(cudaDeviceSynchronize());

  Variant current;
  Built base = build(current, d);
  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&exec, base.graph, 0));
  CHECK_CUDA(cudaGraphDestroy(base.graph));

  auto launch = [&](const char* label) {
    std::memset(d.hostOut, 0, kC * 4);
    CHECK_CUDA(cudaGraphLaunch(exec, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    model.launch(current);
    expectWords(label, d.hostOut, model.hostOut);
    const std::vector<std::uint32_t> scratch = readDevice(d.scratch, kC);
    expectWords(label, scratch.data(), model.scratch);
    return fnv1a64(d.hostOut, kC * 4) ^ (fnvVec(scratch) * 3u);
  };
  std::printf("C: base: launch exact, fnv=%016llx\n", static_cast<unsigned long long>(launch("C base")));

  std::vector<Variant> variants;
  {
    Variant v;
    v.label = "kernel arguments and grid";
    v.mul = 5;
    v.add = 9;
    v.grid = 32;
    variants.push_back(v);
  }
  {
    Variant v = variants.back();
    v.label = "kernel function";
    v.alt = true;
    variants.push_back(v);
  }
  {
    Variant v = variants.back();
    v.label = "an extra node";
    v.extraNode = true;
    variants.push_back(v);
  }
  {
    Variant v = variants[1];
    v.label = "an extra edge (memset before the first kernel)";
    v.edgeMtoK1 = true;
    variants.push_back(v);
  }
  {
    Variant v = variants[1];
    v.label = "memset node became a kernel node";
    v.memsetKernel = true;
    variants.push_back(v);
  }
  {
    Variant v = variants[1];
    v.label = "copy direction D2H -> D2D";
    v.copyD2D = true;
    variants.push_back(v);
  }
  {
    Variant v = variants[1];
    v.label = "memset value";
    v.memsetByte = 0x22;
    variants.push_back(v);
  }
  {
    Variant v = variants.back();
    v.label = "memset width (1D, half)";
    v.memsetBytes = kC * 2;
    variants.push_back(v);
  }
  {
    Variant v;
    v.label = "back to the base graph";
    variants.push_back(v);
  }

  for (const Variant& v : variants) {
    Built candidate = build(v, d);
    cudaGraphExecUpdateResultInfo info{};
    const cudaError_t status = cudaGraphExecUpdate(exec, candidate.graph, &info);
    const cudaError_t last = cudaGetLastError();
    std::printf("C: update [%s]: %s, result %s, error node %s, error-from node %s, cudaGetLastError -> %s\n",
                v.label, name(status), updateResultName(info.result), whichNode(info.errorNode, candidate),
                whichNode(info.errorFromNode, candidate), name(last));
    if (v.extraNode) {
      // The documentation is explicit: a different node count is a topology change.
      EXPECT_TRUE(status == cudaErrorGraphExecUpdateFailure, "extra node: update returned %s", name(status));
      EXPECT_TRUE(info.result == cudaGraphExecUpdateErrorTopologyChanged, "extra node: result %d",
                  static_cast<int>(info.result));
    }
    if (status == cudaSuccess) current = v;
    char label[160];
    std::snprintf(label, sizeof label, "C after [%s]", v.label);
    std::printf("C: launch after [%s]: %s graph in effect, exact, fnv=%016llx\n", v.label,
                status == cudaSuccess ? "the new" : "the previous",
                static_cast<unsigned long long>(launch(label)));
    CHECK_CUDA(cudaGraphDestroy(candidate.graph));
  }
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaFree(d.in));
  CHECK_CUDA(cudaFree(d.a));
  CHECK_CUDA(cudaFree(d.b));
  CHECK_CUDA(cudaFree(d.c));
  CHECK_CUDA(cudaFree(d.scratch));
  CHECK_CUDA(cudaFreeHost(d.hostOut));
}

// ================================================================ D. per-node setters
struct HostStats {
  const std::uint32_t* data = nullptr;
  int n = 0;
  int calls = 0;
  std::uint64_t sum = 0;
};
void sumHost(void* p) {
  auto* s = static_cast<HostStats*>(p);
  ++s->calls;
  for (int i = 0; i < s->n; ++i) s->sum += s->data[i];
}
void sumHostTimesTwo(void* p) {
  auto* s = static_cast<HostStats*>(p);
  ++s->calls;
  for (int i = 0; i < s->n; ++i) s->sum += 2ull * s->data[i];
}

void perNodeSetters(cudaStream_t stream) {
  constexpr int n = 1 << 14;
  constexpr size_t bytes = n * 4;
  std::uint32_t *hIn, *hIn2, *hOut, *a, *b, *c;
  CHECK_CUDA(cudaMallocHost(&hIn, bytes));
  CHECK_CUDA(cudaMallocHost(&hIn2, bytes));
  CHECK_CUDA(cudaMallocHost(&hOut, bytes));
  CHECK_CUDA(cudaMalloc(&a, bytes));
  CHECK_CUDA(cudaMalloc(&b, bytes));
  CHECK_CUDA(cudaMalloc(&c, bytes));
  for (int i = 0; i < n; ++i) {
    hIn[i] = mix32(static_cast<std::uint32_t>(i) + 1u);
    hIn2[i] = mix32(static_cast<std::uint32_t>(i) + 2u);
  }
  HostStats stats1, stats2;
  stats1.data = stats2.data = hOut;
  stats1.n = stats2.n = n;

  cudaGraph_t graph = nullptr;
  CHECK_CUDA(cudaGraphCreate(&graph, 0));
  cudaGraphNode_t H, M, K, O, S;
  CHECK_CUDA(cudaGraphAddMemcpyNode1D(&H, graph, nullptr, 0, a, hIn, bytes, cudaMemcpyHostToDevice));
  cudaMemsetParams ms{};
  ms.dst = b;
  ms.value = 0x01010101u;
  ms.elementSize = 4;
  ms.width = n;
  ms.height = 1;
  CHECK_CUDA(cudaGraphAddMemsetNode(&M, graph, nullptr, 0, &ms));
  int count = n;
  void* kargs[] = {&a, &b, &c, &count};
  cudaKernelNodeParams kp = kernelNode(reinterpret_cast<void*>(combine), kargs);
  cudaGraphNode_t kdeps[] = {H, M};
  CHECK_CUDA(cudaGraphAddKernelNode(&K, graph, kdeps, 2, &kp));
  CHECK_CUDA(cudaGraphAddMemcpyNode1D(&O, graph, &K, 1, hOut, c, bytes, cudaMemcpyDeviceToHost));
  cudaHostNodeParams hp{sumHost, &stats1};
  CHECK_CUDA(cudaGraphAddHostNode(&S, graph, &O, 1, &hp));
  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));

  // model
  std::vector<std::uint32_t> mA(n, 0u), mB(n, 0u);
  bool alt = false, copyOut = true;
  std::uint64_t want1 = 0, want2 = 0;
  int calls1 = 0, calls2 = 0;
  HostStats* active = &stats1;
  const std::uint32_t* src = hIn;
  size_t srcBytes = bytes;
  std::uint32_t fillWord = 0x01010101u;
  auto run = [&](const char* label) {
    std::memset(hOut, 0, bytes);
    CHECK_CUDA(cudaGraphLaunch(exec, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    std::memcpy(mA.data(), src, srcBytes);
    std::fill(mB.begin(), mB.end(), fillWord);
    std::vector<std::uint32_t> out(n, 0u);
    if (copyOut)
      for (int i = 0; i < n; ++i) out[i] = alt ? combineAltValue(mA[i], mB[i]) : combineValue(mA[i], mB[i]);
    expectWords(label, hOut, out);
    std::uint64_t s = 0;
    for (int i = 0; i < n; ++i) s += (active == &stats2 ? 2ull : 1ull) * out[i];
    (active == &stats1 ? want1 : want2) += s;
    ++(active == &stats1 ? calls1 : calls2);
    EXPECT_TRUE(stats1.sum == want1 && stats1.calls == calls1, "%s: host node 1 sum/calls differ", label);
    EXPECT_TRUE(stats2.sum == want2 && stats2.calls == calls2, "%s: host node 2 sum/calls differ", label);
    std::printf("D: %s: exact, host sums %llu/%d %llu/%d\n", label,
                static_cast<unsigned long long>(stats1.sum), stats1.calls,
                static_cast<unsigned long long>(stats2.sum), stats2.calls);
  };
  run("as built");

  // Each change is printed; the model follows it only where the call succeeded.
  // half of the input from another buffer; the other half keeps the last launch's bytes
  const cudaError_t copyIn =
      cudaGraphExecMemcpyNodeSetParams1D(exec, H, a, hIn2, bytes / 2, cudaMemcpyHostToDevice);
  std::printf("D: cudaGraphExecMemcpyNodeSetParams1D (other source, half the bytes): %s\n", name(copyIn));
  if (copyIn == cudaSuccess) {
    src = hIn2;
    srcBytes = bytes / 2;
  }
  cudaGetLastError();
  run("after the copy-in change");

  cudaMemsetParams ms2 = ms;
  ms2.value = 0x02020202u;
  const cudaError_t memsetValue = cudaGraphExecMemsetNodeSetParams(exec, M, &ms2);
  std::printf("D: cudaGraphExecMemsetNodeSetParams (new value): %s\n", name(memsetValue));
  if (memsetValue == cudaSuccess) fillWord = 0x02020202u;
  cudaGetLastError();
  run("after the memset change");

  cudaKernelNodeParams kp2 = kernelNode(reinterpret_cast<void*>(combineAlt), kargs, 32, 128);
  const cudaError_t kernelFunc = cudaGraphExecKernelNodeSetParams(exec, K, &kp2);
  std::printf("D: cudaGraphExecKernelNodeSetParams (another function, grid and block): %s\n",
              name(kernelFunc));
  if (kernelFunc == cudaSuccess) alt = true;
  cudaGetLastError();
  run("after the kernel change");

  cudaHostNodeParams hp2{sumHostTimesTwo, &stats2};
  const cudaError_t hostFunc = cudaGraphExecHostNodeSetParams(exec, S, &hp2);
  std::printf("D: cudaGraphExecHostNodeSetParams (another function and data): %s\n", name(hostFunc));
  if (hostFunc == cudaSuccess) active = &stats2;
  cudaGetLastError();
  run("after the host node change");

  // The graph's own host node changes; the executable graph does not.
  cudaHostNodeParams hp3{sumHost, &stats1};
  CHECK_CUDA(cudaGraphHostNodeSetParams(S, &hp3));
  run("graph's host node changed after instantiation");

  unsigned enabled = 7;
  CHECK_CUDA(cudaGraphNodeSetEnabled(exec, O, 0));
  CHECK_CUDA(cudaGraphNodeGetEnabled(exec, O, &enabled));
  std::printf("D: copy-out node enabled after disabling: %u\n", enabled);
  copyOut = false;
  run("copy-out node disabled");
  CHECK_CUDA(cudaGraphNodeSetEnabled(exec, O, 1));
  CHECK_CUDA(cudaGraphNodeGetEnabled(exec, O, &enabled));
  std::printf("D: copy-out node enabled after enabling: %u\n", enabled);
  copyOut = true;
  run("copy-out node enabled again");

  const cudaError_t hostDisable = cudaGraphNodeSetEnabled(exec, S, 0);
  std::printf("D: disable a host node: %s, cudaGetLastError -> %s\n", name(hostDisable),
              name(cudaGetLastError()));
  enabled = 7;
  const cudaError_t hostEnabled = cudaGraphNodeGetEnabled(exec, S, &enabled);
  std::printf("D: get enabled of a host node: %s (%u), cudaGetLastError -> %s\n", name(hostEnabled),
              hostEnabled == cudaSuccess ? enabled : 99u, name(cudaGetLastError()));
  if (hostDisable == cudaSuccess) CHECK_CUDA(cudaGraphNodeSetEnabled(exec, S, 1));
  run("after the host-node enable calls");

  // Changes CUDA restricts (printed only; the executable graph is not launched afterwards).
  const cudaError_t direction =
      cudaGraphExecMemcpyNodeSetParams1D(exec, H, a, c, bytes, cudaMemcpyDeviceToDevice);
  std::printf("D: copy-in node changed to device-to-device: %s, cudaGetLastError -> %s\n", name(direction),
              name(cudaGetLastError()));
  cudaMemsetParams ms3 = ms2;
  ms3.width = n / 4;
  ms3.height = 4;
  ms3.pitch = bytes / 4;
  const cudaError_t twoD = cudaGraphExecMemsetNodeSetParams(exec, M, &ms3);
  std::printf("D: 1D memset node changed to 2D: %s, cudaGetLastError -> %s\n", name(twoD),
              name(cudaGetLastError()));
  cudaKernelNodeParams kp3 = kernelNode(reinterpret_cast<void*>(combine), kargs);
  const cudaError_t onCopy = cudaGraphExecKernelNodeSetParams(exec, O, &kp3);
  std::printf("D: kernel parameters set on a copy node: %s, cudaGetLastError -> %s\n", name(onCopy),
              name(cudaGetLastError()));

  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
  CHECK_CUDA(cudaFreeHost(hIn));
  CHECK_CUDA(cudaFreeHost(hIn2));
  CHECK_CUDA(cudaFreeHost(hOut));
  CHECK_CUDA(cudaFree(a));
  CHECK_CUDA(cudaFree(b));
  CHECK_CUDA(cudaFree(c));
}

// ================================================================ E. a big parameter struct
void bigParams(cudaStream_t stream) {
  constexpr int n = 4096;
  std::uint32_t* out = nullptr;
  CHECK_CUDA(cudaMalloc(&out, n * 4));
  BigParams p{};
  p.out = out;
  p.n = n;
  for (int k = 0; k < 96; ++k) p.coeff[k] = mix32(static_cast<std::uint32_t>(k)) | 1u;
  p.tag = 0x0123456789abcdefull;
  for (int k = 0; k < 13; ++k) p.flags[k] = static_cast<std::uint8_t>(k * 17 + 3);
  std::printf("E: parameter struct is %zu bytes\n", sizeof(BigParams));
  auto expectPoly = [&](const char* label, const BigParams& q) {
    std::vector<std::uint32_t> want(n);
    for (int i = 0; i < n; ++i) want[i] = polyValue(q, static_cast<std::uint32_t>(i));
    const std::vector<std::uint32_t> got = readDevice(out, n);
    expectWords(label, got.data(), want);
    return fnvVec(got);
  };

  cudaGraph_t graph = nullptr;
  CHECK_CUDA(cudaGraphCreate(&graph, 0));
  void* args[] = {&p};
  cudaKernelNodeParams kp = kernelNode(reinterpret_cast<void*>(poly), args, 16, 128);
  cudaGraphNode_t node = nullptr;
  CHECK_CUDA(cudaGraphAddKernelNode(&node, graph, nullptr, 0, &kp));
  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  CHECK_CUDA(cudaGraphLaunch(exec, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  std::printf("E: explicit node: exact, fnv=%016llx\n",
              static_cast<unsigned long long>(expectPoly("E explicit", p)));

  cudaKernelNodeParams back{};
  CHECK_CUDA(cudaGraphKernelNodeGetParams(node, &back));
  std::printf("E: read back: struct fields equal %s\n", yesNo(sameParams(back.kernelParams[0], p)));
  BigParams q;
  std::memcpy(&q, back.kernelParams[0], sizeof q);
  q.coeff[5] = 77u;
  q.tag = 0xfedcba9876543210ull;
  q.flags[12] = 200;
  void* qargs[] = {&q};
  cudaKernelNodeParams kq = back;
  kq.kernelParams = qargs;
  CHECK_CUDA(cudaGraphExecKernelNodeSetParams(exec, node, &kq));
  CHECK_CUDA(cudaGraphLaunch(exec, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  std::printf("E: executable node changed: exact, fnv=%016llx\n",
              static_cast<unsigned long long>(expectPoly("E changed", q)));
  CHECK_CUDA(cudaGraphKernelNodeGetParams(node, &back));
  std::printf("E: the graph's node keeps the original struct: %s\n",
              yesNo(sameParams(back.kernelParams[0], p)));
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));

  // captured
  q.coeff[0] = 3u;
  CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  poly<<<16, 128, 0, stream>>>(q);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
  size_t count = 1;
  CHECK_CUDA(cudaGraphGetNodes(graph, &node, &count));
  CHECK_CUDA(cudaGraphKernelNodeGetParams(node, &back));
  std::printf("E: captured node: func is poly %s, grid %u block %u, struct fields equal %s\n",
              yesNo(back.func == reinterpret_cast<void*>(poly)), back.gridDim.x, back.blockDim.x,
              yesNo(sameParams(back.kernelParams[0], q)));
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  CHECK_CUDA(cudaMemset(out, 0, n * 4));
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaGraphLaunch(exec, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  std::printf("E: captured launch: exact, fnv=%016llx\n",
              static_cast<unsigned long long>(expectPoly("E captured", q)));
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
  CHECK_CUDA(cudaFree(out));
}

// ================================================================ F. many launches
void manyLaunches(cudaStream_t stream, cudaStream_t other) {
  constexpr int n = 1 << 16;
  std::uint32_t* x = nullptr;
  CHECK_CUDA(cudaMalloc(&x, n * 4));
  CHECK_CUDA(cudaMemset(x, 0, n * 4));
  CHECK_CUDA(cudaDeviceSynchronize());
  cudaGraph_t graph = nullptr;
  CHECK_CUDA(cudaGraphCreate(&graph, 0));
  int count = n;
  std::uint32_t k = 1;
  void* args[] = {&x, &count, &k};
  cudaKernelNodeParams kp = kernelNode(reinterpret_cast<void*>(accumulate), args, 64, 256);
  cudaGraphNode_t node = nullptr;
  CHECK_CUDA(cudaGraphAddKernelNode(&node, graph, nullptr, 0, &kp));
  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiateWithFlags(&exec, graph, 0));
  unsigned long long flags = 99;
  CHECK_CUDA(cudaGraphExecGetFlags(exec, &flags));
  std::printf("F: cudaGraphExecGetFlags after cudaGraphInstantiateWithFlags(0): %llu\n", flags);
  std::printf("F: cudaGraphUpload: %s\n", name(cudaGraphUpload(exec, stream)));
  std::vector<std::uint32_t> model(n, 0u), term(n, 0u);
  auto computeTerms = [&]() {
    for (int i = 0; i < n; ++i) term[i] = accumulateTerm(static_cast<std::uint32_t>(i), k);
  };
  for (int launch = 0; launch < 1000; ++launch) {
    if (launch % 250 == 0) {
      k = static_cast<std::uint32_t>(launch / 250 + 1);
      kp.kernelParams = args;
      CHECK_CUDA(cudaGraphExecKernelNodeSetParams(exec, node, &kp));
      computeTerms();
    }
    CHECK_CUDA(cudaGraphLaunch(exec, stream));
    for (int i = 0; i < n; ++i) model[i] += term[i];
  }
  CHECK_CUDA(cudaStreamSynchronize(stream));
  std::vector<std::uint32_t> got = readDevice(x, n);
  expectWords("1000 launches", got.data(), model);
  std::printf("F: 1000 launches on one stream: exact, fnv=%016llx\n",
              static_cast<unsigned long long>(fnvVec(got)));

  // Alternating streams, no events: each launch is ordered after the previous launch of exec.
  k = 9;
  CHECK_CUDA(cudaGraphExecKernelNodeSetParams(exec, node, &kp));
  computeTerms();
  for (int launch = 0; launch < 200; ++launch) {
    CHECK_CUDA(cudaGraphLaunch(exec, (launch & 1) ? other : stream));
    for (int i = 0; i < n; ++i) model[i] += term[i];
  }
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_CUDA(cudaStreamSynchronize(other));
  got = readDevice(x, n);
  size_t differing = 0;
  for (int i = 0; i < n; ++i) differing += got[i] != model[i];
  std::printf("F: 200 launches alternating between two streams: %zu words differ from the CPU\n", differing);
  EXPECT_TRUE(differing == 0,
              "launches of one executable graph on two streams overlapped (%zu words lost updates)",
              differing);
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
  CHECK_CUDA(cudaFree(x));
}

}  // namespace

int main() {
  cudaStream_t stream, other;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  llamaLoop(stream);
  nodePatching(stream);
  updateMatrix(stream);
  perNodeSetters(stream);
  bigParams(stream);
  manyLaunches(stream, other);
  EXPECT_ERROR("final cudaGetLastError", cudaGetLastError(), cudaSuccess);
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaStreamDestroy(other));
  std::printf("probe_graph_update OK\n");
  return 0;
}
