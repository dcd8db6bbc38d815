// Probe: launch attributes other than clusters, as libraries (CUTLASS, TensorRT-LLM, PyTorch's
// PDL kernels) use them; the suite has none of these.
//   A  programmatic dependent launch: a chain primary -> secondary -> tertiary repeated 20 times
//      on one stream, the dependents launched with cudaLaunchAttributeProgrammaticStreamSerialization;
//      each kernel does independent work, then cudaGridDependencySynchronize(), then dependent
//      work; triggers (cudaTriggerProgrammaticLaunchCompletion) placed early, late, or not at all;
//      a PSS kernel whose predecessor is a copy; PSS with value 0;
//   B  the same chain captured into a graph: cudaGraphGetEdges with and without edge data (the
//      lossy query's error printed), each edge's ports and type printed, the graph replayed;
//   C  cooperative launch of a four-phase kernel with grid.sync() between phases and dynamic
//      shared memory, through cudaLaunchCooperativeKernel and through cudaLaunchKernelEx with
//      cudaLaunchAttributeCooperative; grid.is_valid() under a cooperative and an ordinary launch
//      (attribute value 0 included); a too-large cooperative grid through the attribute (error
//      printed); cooperative + cluster attributes together (error printed);
//   D  cudaLaunchAttributePriority on launches (greatest, least and out of range), priority
//      streams queried with cudaStreamGetPriority and cudaStreamGetAttribute, set with
//      cudaStreamSetAttribute;
//   E  several attributes in one launch (PSS + priority + scheduling policy without a cluster).
#include <cooperative_groups.h>

#include <vector>

#include "tests/gpu/programs/check.cuh"

namespace cg = cooperative_groups;

#define SHOW_ERROR(label, call)                                          \
  do {                                                                   \
    const cudaError_t show_error_got_ = (call);                          \
    std::printf("%s: %s\n", (label), cudaGetErrorName(show_error_got_)); \
    (void)cudaGetLastError();                                            \
  } while (0)

namespace {

constexpr int kN = 1 << 16;
constexpr int kIterations = 20;

__device__ int independent(int i, int iteration) {
  return static_cast<int>(mix32(i * 31 + iteration) & 0xffff);
}

// a[i] = f(i, it). Trigger placement: 0 none, 1 first thing, 2 after the stores.
__global__ void primary(int* a, int n, int iteration, int trigger) {
  if (trigger == 1) cudaTriggerProgrammaticLaunchCompletion();
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int mine = i < n ? independent(i, iteration) : 0;
  cudaGridDependencySynchronize();  // the previous tertiary is done with everything
  if (i < n) a[i] = mine ^ iteration;
  if (trigger == 2) cudaTriggerProgrammaticLaunchCompletion();
}

// b[i] = a[i] + g(i): g is computed before the dependency is resolved.
__global__ void secondary(const int* a, int* b, int n, int iteration) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int g = i < n ? independent(i + 7, iteration) : 0;
  cudaTriggerProgrammaticLaunchCompletion();
  cudaGridDependencySynchronize();
  if (i < n) b[i] = a[i] + g;
}

// sums[iteration] += b[i] * (i % 3 + 1).
__global__ void tertiary(const int* b, long long* sums, int n, int iteration) {
  cudaGridDependencySynchronize();
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    atomicAdd(reinterpret_cast<unsigned long long*>(&sums[iteration]),
              static_cast<unsigned long long>(static_cast<long long>(b[i]) * (i % 3 + 1)));
}

long long hostChain(int iteration) {
  long long sum = 0;
  for (int i = 0; i < kN; ++i) {
    const int a = static_cast<int>(mix32(i * 31 + iteration) & 0xffff) ^ iteration;
    const int b = a + static_cast<int>(mix32((i + 7) * 31 + iteration) & 0xffff);
    sum += static_cast<long long>(b) * (i % 3 + 1);
  }
  return sum;
}

cudaLaunchAttribute pss(int value) {
  cudaLaunchAttribute a{};
  a.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  a.val.programmaticStreamSerializationAllowed = value;
  return a;
}

void launchChain(cudaStream_t stream, int* a, int* b, long long* sums, int iteration, int trigger,
                 int pssValue) {
  cudaLaunchAttribute attribute = pss(pssValue);
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(kN / 256);
  config.blockDim = dim3(256);
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  // The primary also follows the previous tertiary programmatically.
  CHECK_CUDA(cudaLaunchKernelEx(&config, primary, a, kN, iteration, trigger));
  CHECK_CUDA(cudaLaunchKernelEx(&config, secondary, static_cast<const int*>(a), b, kN, iteration));
  CHECK_CUDA(cudaLaunchKernelEx(&config, tertiary, static_cast<const int*>(b), sums, kN, iteration));
}

// ---------------------------------------------------------------- A
void programmaticChain(int* a, int* b, long long* sums, const std::vector<long long>& want) {
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const int triggers[3] = {0, 1, 2};
  for (int trigger : triggers) {
    CHECK_CUDA(cudaMemsetAsync(sums, 0, kIterations * sizeof(long long), stream));
    for (int it = 0; it < kIterations; ++it) launchChain(stream, a, b, sums, it, trigger, 1);
    std::vector<long long> got(kIterations);
    CHECK_CUDA(
        cudaMemcpyAsync(got.data(), sums, kIterations * sizeof(long long), cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    for (int it = 0; it < kIterations; ++it)
      EXPECT_TRUE(got[it] == want[it], "trigger %d iteration %d: %lld want %lld", trigger, it, got[it],
                  want[it]);
    std::printf("A PSS chain x%d, primary trigger mode %d: exact, fnv=%016llx\n", kIterations, trigger,
                static_cast<unsigned long long>(fnv1a64(got.data(), got.size() * sizeof(long long))));
  }
  // PSS with value 0: ordinary serialization.
  CHECK_CUDA(cudaMemsetAsync(sums, 0, kIterations * sizeof(long long), stream));
  for (int it = 0; it < 4; ++it) launchChain(stream, a, b, sums, it, 2, 0);
  std::vector<long long> got(kIterations);
  CHECK_CUDA(
      cudaMemcpyAsync(got.data(), sums, kIterations * sizeof(long long), cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  for (int it = 0; it < 4; ++it) EXPECT_TRUE(got[it] == want[it], "pss 0 iteration %d", it);
  std::printf("A PSS value 0: exact\n");

  // A PSS kernel right after a host-to-device copy into its input.
  std::vector<int> host(kN);
  for (int i = 0; i < kN; ++i) host[i] = i % 1000;
  CHECK_CUDA(cudaMemsetAsync(sums, 0, sizeof(long long), stream));
  CHECK_CUDA(cudaMemcpyAsync(b, host.data(), kN * sizeof(int), cudaMemcpyHostToDevice, stream));
  cudaLaunchAttribute attribute = pss(1);
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(kN / 256);
  config.blockDim = dim3(256);
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  CHECK_CUDA(cudaLaunchKernelEx(&config, tertiary, static_cast<const int*>(b), sums, kN, 0));
  long long fromCopy = 0;
  CHECK_CUDA(cudaMemcpyAsync(&fromCopy, sums, sizeof fromCopy, cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  long long wantCopy = 0;
  for (int i = 0; i < kN; ++i) wantCopy += static_cast<long long>(host[i]) * (i % 3 + 1);
  EXPECT_TRUE(fromCopy == wantCopy, "PSS after a copy: %lld want %lld", fromCopy, wantCopy);
  std::printf("A PSS kernel after a copy: sum=%lld\n", fromCopy);
  CHECK_CUDA(cudaStreamDestroy(stream));
}

// ---------------------------------------------------------------- B
void capturedChain(int* a, int* b, long long* sums, const std::vector<long long>& want) {
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph = nullptr;
  CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  CHECK_CUDA(cudaMemsetAsync(sums, 0, kIterations * sizeof(long long), stream));
  for (int it = 0; it < 3; ++it) launchChain(stream, a, b, sums, it, 2, 1);
  CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
  size_t nodes = 0;
  CHECK_CUDA(cudaGraphGetNodes(graph, nullptr, &nodes));
  size_t countOnly = 0;
  SHOW_ERROR("B cudaGraphGetEdges count only (all pointers null)",
             cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &countOnly));
  constexpr size_t kRoom = 64;
  std::vector<cudaGraphNode_t> from(kRoom), to(kRoom);
  std::vector<cudaGraphEdgeData> data(kRoom);
  size_t count = kRoom;
  CHECK_CUDA(cudaGraphGetEdges(graph, from.data(), to.data(), data.data(), &count));
  std::printf("B captured PSS chain: %zu nodes, %zu edges (count-only query said %zu)\n", nodes, count,
              countOnly);
  size_t lossy = kRoom;
  SHOW_ERROR("B cudaGraphGetEdges without edge data",
             cudaGraphGetEdges(graph, from.data(), to.data(), nullptr, &lossy));
  count = kRoom;
  CHECK_CUDA(cudaGraphGetEdges(graph, from.data(), to.data(), data.data(), &count));
  int programmatic = 0;
  for (size_t e = 0; e < count; ++e) {
    cudaGraphNodeType fromType, toType;
    CHECK_CUDA(cudaGraphNodeGetType(from[e], &fromType));
    CHECK_CUDA(cudaGraphNodeGetType(to[e], &toType));
    std::printf("B   edge %zu: node type %d -> %d, from_port=%u to_port=%u type=%u\n", e,
                static_cast<int>(fromType), static_cast<int>(toType), data[e].from_port, data[e].to_port,
                data[e].type);
    programmatic += data[e].type == cudaGraphDependencyTypeProgrammatic;
  }
  std::printf("B   programmatic edges: %d\n", programmatic);
  // A captured dependent's node attribute.
  std::vector<cudaGraphNode_t> all(nodes);
  CHECK_CUDA(cudaGraphGetNodes(graph, all.data(), &nodes));
  int kernels = 0, withPss = 0;
  for (cudaGraphNode_t node : all) {
    cudaGraphNodeType type;
    CHECK_CUDA(cudaGraphNodeGetType(node, &type));
    if (type != cudaGraphNodeTypeKernel) continue;
    ++kernels;
    cudaLaunchAttributeValue value{};
    if (cudaGraphKernelNodeGetAttribute(node, cudaLaunchAttributeProgrammaticStreamSerialization, &value) ==
            cudaSuccess &&
        value.programmaticStreamSerializationAllowed != 0)
      ++withPss;
    (void)cudaGetLastError();
  }
  std::printf("B   kernel nodes %d, reporting the PSS attribute %d\n", kernels, withPss);
  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 3; ++replay) {
    CHECK_CUDA(cudaGraphLaunch(exec, stream));
    std::vector<long long> got(3);
    CHECK_CUDA(cudaMemcpyAsync(got.data(), sums, 3 * sizeof(long long), cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    for (int it = 0; it < 3; ++it) EXPECT_TRUE(got[it] == want[it], "replay %d iteration %d", replay, it);
  }
  std::printf("B captured PSS chain replayed 3 times: exact\n");
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
  CHECK_CUDA(cudaStreamDestroy(stream));
}

// ---------------------------------------------------------------- C
// Phase 1: block sums; 2: block 0 totals them; 3: every element shifted by the total's residue;
// 4: block 0 sums the shifted elements. results: total, shifted sum, is_valid, num_blocks.
__global__ void fourPhases(const int* in, int* out, long long* partial, long long* results, int n) {
  extern __shared__ long long reduction[];
  cg::grid_group grid = cg::this_grid();
  long long local = 0;
  for (int i = static_cast<int>(grid.thread_rank()); i < n; i += static_cast<int>(grid.size()))
    local += in[i];
  reduction[threadIdx.x] = local;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) reduction[threadIdx.x] += reduction[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = reduction[0];
  grid.sync();
  if (grid.block_rank() == 0 && threadIdx.x == 0) {
    long long total = 0;
    for (unsigned b = 0; b < grid.num_blocks(); ++b) total += partial[b];
    results[0] = total;
    results[2] = grid.is_valid() ? 1 : 0;
    results[3] = static_cast<long long>(grid.num_blocks());
  }
  grid.sync();
  const int shift = static_cast<int>(results[0] % 1000);
  for (int i = static_cast<int>(grid.thread_rank()); i < n; i += static_cast<int>(grid.size()))
    out[i] = in[i] - shift;
  grid.sync();
  if (grid.block_rank() == 0) {
    long long s = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += out[i];
    reduction[threadIdx.x] = s;
    __syncthreads();
    for (unsigned st = blockDim.x / 2; st > 0; st >>= 1) {
      if (threadIdx.x < st) reduction[threadIdx.x] += reduction[threadIdx.x + st];
      __syncthreads();
    }
    if (threadIdx.x == 0) results[1] = reduction[0];
  }
}

__global__ void validity(int* out) {
  cg::grid_group grid = cg::this_grid();
  if (grid.thread_rank() == 0) *out = grid.is_valid() ? 1 : 0;
}

void cooperative() {
  constexpr int kElements = 1 << 20, kBlocks = 32, kThreads = 256;
  std::vector<int> in(kElements);
  long long total = 0;
  for (int i = 0; i < kElements; ++i) {
    in[i] = static_cast<int>(mix32(i + 99) % 20001) - 10000;
    total += in[i];
  }
  const int shift = static_cast<int>(total % 1000);
  long long shifted = 0;
  for (int v : in) shifted += v - shift;
  int *dIn = nullptr, *dOut = nullptr, *flag = nullptr;
  long long *partial = nullptr, *results = nullptr;
  CHECK_CUDA(cudaMalloc(&dIn, kElements * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&dOut, kElements * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&partial, kBlocks * sizeof(long long)));
  CHECK_CUDA(cudaMalloc(&results, 4 * sizeof(long long)));
  CHECK_CUDA(cudaMalloc(&flag, sizeof(int)));
  CHECK_CUDA(cudaMemcpy(dIn, in.data(), kElements * sizeof(int), cudaMemcpyHostToDevice));
  const size_t smem = kThreads * sizeof(long long);
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));

  auto check = [&](const char* how) {
    long long got[4] = {};
    CHECK_CUDA(cudaMemcpy(got, results, sizeof got, cudaMemcpyDeviceToHost));
    EXPECT_TRUE(got[0] == total && got[1] == shifted && got[2] == 1 && got[3] == kBlocks,
                "%s: total %lld shifted %lld valid %lld blocks %lld", how, got[0], got[1], got[2], got[3]);
    std::printf("C four-phase grid.sync() kernel via %s: total=%lld shifted=%lld valid=%lld blocks=%lld\n",
                how, got[0], got[1], got[2], got[3]);
  };
  const int* cIn = dIn;
  int n = kElements;
  void* args[] = {&cIn, &dOut, &partial, &results, &n};
  CHECK_CUDA(cudaMemset(results, 0, 4 * sizeof(long long)));
  CHECK_CUDA(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(fourPhases), dim3(kBlocks),
                                         dim3(kThreads), args, smem, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  check("cudaLaunchCooperativeKernel");

  cudaLaunchAttribute coop{};
  coop.id = cudaLaunchAttributeCooperative;
  coop.val.cooperative = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(kBlocks);
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = &coop;
  config.numAttrs = 1;
  CHECK_CUDA(cudaMemset(results, 0, 4 * sizeof(long long)));
  CHECK_CUDA(cudaLaunchKernelEx(&config, fourPhases, cIn, dOut, partial, results, n));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  check("cudaLaunchKernelEx(cooperative)");

  // is_valid: cooperative attribute 1, attribute 0, plain launch.
  config.dynamicSmemBytes = 0;
  int valid = -1;
  CHECK_CUDA(cudaLaunchKernelEx(&config, validity, flag));
  CHECK_CUDA(cudaMemcpy(&valid, flag, sizeof valid, cudaMemcpyDeviceToHost));
  std::printf("C grid.is_valid() under the cooperative attribute: %d\n", valid);
  EXPECT_TRUE(valid == 1, "cooperative is_valid %d", valid);
  coop.val.cooperative = 0;
  CHECK_CUDA(cudaLaunchKernelEx(&config, validity, flag));
  CHECK_CUDA(cudaMemcpy(&valid, flag, sizeof valid, cudaMemcpyDeviceToHost));
  std::printf("C grid.is_valid() with the cooperative attribute 0: %d\n", valid);
  validity<<<kBlocks, kThreads, 0, stream>>>(flag);
  CHECK_CUDA(cudaMemcpy(&valid, flag, sizeof valid, cudaMemcpyDeviceToHost));
  std::printf("C grid.is_valid() under <<<>>>: %d\n", valid);

  // Too many blocks for a cooperative launch, through the attribute (a kernel without
  // grid.sync(), so that a launch that should have been refused cannot hang).
  int perSm = 0, sms = 0;
  CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, validity, kThreads, 0));
  CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  std::fprintf(stderr, "%d blocks per SM, %d SMs\n", perSm, sms);
  coop.val.cooperative = 1;
  config.gridDim = dim3(static_cast<unsigned>(perSm * sms + 1));
  SHOW_ERROR("C cooperative attribute, one block more than fits",
             cudaLaunchKernelEx(&config, validity, flag));
  CHECK_CUDA(cudaStreamSynchronize(stream));

  // Cooperative together with a cluster.
  cudaLaunchAttribute both[2] = {coop, {}};
  both[1].id = cudaLaunchAttributeClusterDimension;
  both[1].val.clusterDim.x = 2;
  both[1].val.clusterDim.y = 1;
  both[1].val.clusterDim.z = 1;
  config.gridDim = dim3(kBlocks);
  config.dynamicSmemBytes = 0;
  config.attrs = both;
  config.numAttrs = 2;
  const cudaError_t bothLaunch = cudaLaunchKernelEx(&config, validity, flag);
  const cudaError_t bothSync = cudaStreamSynchronize(stream);
  std::printf("C cooperative + cluster 2: launch %s, sync %s\n", cudaGetErrorName(bothLaunch),
              cudaGetErrorName(bothSync));
  (void)cudaGetLastError();
  if (bothLaunch == cudaSuccess && bothSync == cudaSuccess) {
    CHECK_CUDA(cudaMemcpy(&valid, flag, sizeof valid, cudaMemcpyDeviceToHost));
    std::printf("C   is_valid %d\n", valid);
  }
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFree(dIn));
  CHECK_CUDA(cudaFree(dOut));
  CHECK_CUDA(cudaFree(partial));
  CHECK_CUDA(cudaFree(results));
  CHECK_CUDA(cudaFree(flag));
}

// ---------------------------------------------------------------- D
__global__ void scale(int* p, int n, int factor) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) p[i] *= factor;
}

void priorities() {
  int least = 0, greatest = 0;
  CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  std::printf("D stream priority range: least %d greatest %d\n", least, greatest);
  cudaStream_t high, low;
  CHECK_CUDA(cudaStreamCreateWithPriority(&high, cudaStreamNonBlocking, greatest));
  CHECK_CUDA(cudaStreamCreateWithPriority(&low, cudaStreamNonBlocking, least));
  int p = 99;
  CHECK_CUDA(cudaStreamGetPriority(high, &p));
  std::printf("D high stream: cudaStreamGetPriority %d\n", p);
  cudaLaunchAttributeValue value{};
  SHOW_ERROR("D cudaStreamGetAttribute(priority) on the high stream",
             cudaStreamGetAttribute(high, cudaStreamAttributePriority, &value));
  std::printf("D   value %d\n", value.priority);
  value.priority = least;
  SHOW_ERROR("D cudaStreamSetAttribute(priority = least) on the high stream",
             cudaStreamSetAttribute(high, cudaStreamAttributePriority, &value));
  p = 99;
  CHECK_CUDA(cudaStreamGetPriority(high, &p));
  cudaLaunchAttributeValue back{};
  SHOW_ERROR("D cudaStreamGetAttribute(priority) after setting it",
             cudaStreamGetAttribute(high, cudaStreamAttributePriority, &back));
  std::printf("D   cudaStreamGetPriority %d, attribute %d\n", p, back.priority);

  constexpr int kCount = 100000;
  int* data = nullptr;
  CHECK_CUDA(cudaMalloc(&data, kCount * sizeof(int)));
  std::vector<int> host(kCount);
  for (int i = 0; i < kCount; ++i) host[i] = i % 77 + 1;
  CHECK_CUDA(cudaMemcpy(data, host.data(), kCount * sizeof(int), cudaMemcpyHostToDevice));
  const int values[3] = {greatest, least, greatest - 10};
  const char* names[3] = {"greatest", "least", "greatest-10 (out of range)"};
  int factor = 1;
  for (int k = 0; k < 3; ++k) {
    cudaLaunchAttribute attribute{};
    attribute.id = cudaLaunchAttributePriority;
    attribute.val.priority = values[k];
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(64);
    config.blockDim = dim3(256);
    config.stream = low;
    config.attrs = &attribute;
    config.numAttrs = 1;
    const cudaError_t launched = cudaLaunchKernelEx(&config, scale, data, kCount, 2);
    const cudaError_t synced = cudaStreamSynchronize(low);
    std::printf("D launch with priority %s: launch %s, sync %s\n", names[k], cudaGetErrorName(launched),
                cudaGetErrorName(synced));
    (void)cudaGetLastError();
    if (launched == cudaSuccess) factor *= 2;
  }
  std::vector<int> got(kCount);
  CHECK_CUDA(cudaMemcpy(got.data(), data, kCount * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < kCount; ++i)
    EXPECT_TRUE(got[i] == host[i] * factor, "priority launches: element %d", i);
  std::printf("D data after the priority launches: scaled by %d, exact\n", factor);
  CHECK_CUDA(cudaFree(data));
  CHECK_CUDA(cudaStreamDestroy(high));
  CHECK_CUDA(cudaStreamDestroy(low));
}

// ---------------------------------------------------------------- E
void combined(int* a, int* b, long long* sums, const std::vector<long long>& want) {
  int least = 0, greatest = 0;
  CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaLaunchAttribute attributes[3] = {pss(1), {}, {}};
  attributes[1].id = cudaLaunchAttributePriority;
  attributes[1].val.priority = greatest;
  attributes[2].id = cudaLaunchAttributeClusterSchedulingPolicyPreference;
  attributes[2].val.clusterSchedulingPolicyPreference = cudaClusterSchedulingPolicyLoadBalancing;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(kN / 256);
  config.blockDim = dim3(256);
  config.stream = stream;
  config.attrs = attributes;
  config.numAttrs = 3;
  CHECK_CUDA(cudaMemsetAsync(sums, 0, kIterations * sizeof(long long), stream));
  for (int it = 0; it < 5; ++it) {
    CHECK_CUDA(cudaLaunchKernelEx(&config, primary, a, kN, it, 1));
    CHECK_CUDA(cudaLaunchKernelEx(&config, secondary, static_cast<const int*>(a), b, kN, it));
    CHECK_CUDA(cudaLaunchKernelEx(&config, tertiary, static_cast<const int*>(b), sums, kN, it));
  }
  std::vector<long long> got(5);
  CHECK_CUDA(cudaMemcpyAsync(got.data(), sums, 5 * sizeof(long long), cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  for (int it = 0; it < 5; ++it) EXPECT_TRUE(got[it] == want[it], "combined iteration %d", it);
  std::printf("E PSS + priority + scheduling policy in one launch: exact\n");
  CHECK_CUDA(cudaStreamDestroy(stream));
}

}  // namespace

int main() {
  int *a = nullptr, *b = nullptr;
  long long* sums = nullptr;
  CHECK_CUDA(cudaMalloc(&a, kN * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&b, kN * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&sums, kIterations * sizeof(long long)));
  std::vector<long long> want(kIterations);
  for (int it = 0; it < kIterations; ++it) want[it] = hostChain(it);
  programmaticChain(a, b, sums, want);
  capturedChain(a, b, sums, want);
  cooperative();
  priorities();
  combined(a, b, sums, want);
  CHECK_CUDA(cudaFree(a));
  CHECK_CUDA(cudaFree(b));
  CHECK_CUDA(cudaFree(sums));
  std::printf("probe_launch_pdl_coop OK\n");
  return 0;
}
