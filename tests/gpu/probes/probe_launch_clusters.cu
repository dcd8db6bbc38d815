// Probe: thread-block clusters (sm_90) the way CUTLASS/cuBLASLt-style code and the CUDA
// programming guide use them; the suite launches no cluster at all.
//   A  cudaLaunchKernelEx with cudaLaunchAttributeClusterDimension: 1D clusters of 2, 4, 8 and a
//      2D cluster (2,2,1) over a 2D grid; each block reads a neighbour's shared memory through
//      cluster.map_shared_rank (distributed shared memory) between two cluster.sync();
//      block_rank, num_blocks and dim_blocks checked against the CPU; a plain <<<>>> launch of the
//      same kernel (implicit clusters of one);
//   B  a distributed-shared-memory histogram (the programming guide's example), with more than
//      48 KiB of dynamic shared memory per block (cudaFuncAttributeMaxDynamicSharedMemorySize);
//   C  a kernel with __cluster_dims__(2,1,1) launched with <<<>>>; cudaFuncGetAttributes on it and
//      on an ordinary kernel; cudaFuncSetAttribute(RequiredClusterWidth) on it (error printed);
//   D  cudaOccupancyMaxActiveClusters / cudaOccupancyMaxPotentialClusterSize (values to stderr);
//      the cluster scheduling policy attribute; the preferred-cluster attribute (error printed);
//      a non-portable cluster of 16 before and after cudaFuncAttributeNonPortableClusterSizeAllowed;
//   E  a cluster launch captured into a graph: the kernel node's cluster attribute read back, the
//      graph launched twice; a graph built with cudaGraphAddKernelNode whose cluster is set with
//      cudaGraphKernelNodeSetAttribute;
//   F  last (errors that may surface late; launch and sync errors printed separately): a grid
//      that the cluster attribute does not divide; cluster dimensions set at run time with
//      cudaFuncAttributeRequiredClusterWidth/Height/Depth; cudaLaunchKernelEx naming the compiled
//      or another cluster size for a __cluster_dims__ kernel; grids that a compiled or required
//      cluster does not divide; then an ordinary launch to show the device is still usable.
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

// Per block: rank, cluster size, the neighbour's value (block rank + 1 in the cluster), packed
// cluster dims.
template <int Tag>
__global__ void ring(int* out) {
  __shared__ int mine;
  cg::cluster_group cluster = cg::this_cluster();
  const unsigned rank = cluster.block_rank();
  const unsigned size = cluster.num_blocks();
  const int linear = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  if (threadIdx.x == 0) mine = linear * 16 + 1 + Tag;
  cluster.sync();
  const int theirs = *cluster.map_shared_rank(&mine, static_cast<int>((rank + 1) % size));
  cluster.sync();  // no block leaves while another may still read its shared memory
  if (threadIdx.x == 0) {
    const dim3 d = cluster.dim_blocks();
    out[linear * 4 + 0] = static_cast<int>(rank);
    out[linear * 4 + 1] = static_cast<int>(size);
    out[linear * 4 + 2] = theirs;
    out[linear * 4 + 3] = static_cast<int>(d.x | (d.y << 8) | (d.z << 16));
  }
}

__global__ void __cluster_dims__(2, 1, 1) fixedPairs(int* out) {
  __shared__ int mine;
  cg::cluster_group cluster = cg::this_cluster();
  const unsigned rank = cluster.block_rank();
  if (threadIdx.x == 0) mine = static_cast<int>(blockIdx.x) * 10 + 3;
  cluster.sync();
  const int theirs = *cluster.map_shared_rank(&mine, static_cast<int>(rank ^ 1u));
  cluster.sync();
  if (threadIdx.x == 0) {
    out[blockIdx.x * 2] = static_cast<int>(cluster.num_blocks());
    out[blockIdx.x * 2 + 1] = theirs;
  }
}

__global__ void clusterHistogram(int* bins, int binsPerBlock, const int* input, int n) {
  extern __shared__ int smem[];
  cg::cluster_group cluster = cg::this_cluster();
  const unsigned rank = cluster.block_rank();
  const int nbins = binsPerBlock * static_cast<int>(cluster.num_blocks());
  for (int i = threadIdx.x; i < binsPerBlock; i += blockDim.x) smem[i] = 0;
  cluster.sync();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const int bin = input[i] % nbins;
    int* dst = cluster.map_shared_rank(smem, bin / binsPerBlock);
    atomicAdd(dst + bin % binsPerBlock, 1);
  }
  cluster.sync();
  for (int i = threadIdx.x; i < binsPerBlock; i += blockDim.x)
    if (smem[i] != 0) atomicAdd(&bins[rank * binsPerBlock + i], smem[i]);
}

__global__ void store(int* p, int v) { *p = v; }

cudaLaunchAttribute clusterAttribute(unsigned x, unsigned y, unsigned z) {
  cudaLaunchAttribute a{};
  a.id = cudaLaunchAttributeClusterDimension;
  a.val.clusterDim.x = x;
  a.val.clusterDim.y = y;
  a.val.clusterDim.z = z;
  return a;
}

// Checks ring's output for a grid and cluster shape; returns a checksum line's fnv.
std::uint64_t checkRing(const std::vector<int>& out, dim3 grid, dim3 cluster, int tag, const char* label) {
  const unsigned size = cluster.x * cluster.y * cluster.z;
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        const unsigned linear = bx + grid.x * (by + grid.y * bz);
        const unsigned rank =
            (bx % cluster.x) + (by % cluster.y) * cluster.x + (bz % cluster.z) * cluster.x * cluster.y;
        const unsigned next = (rank + 1) % size;
        const unsigned nx = bx - bx % cluster.x + next % cluster.x;
        const unsigned ny = by - by % cluster.y + (next / cluster.x) % cluster.y;
        const unsigned nz = bz - bz % cluster.z + next / (cluster.x * cluster.y);
        const int neighbour = static_cast<int>((nx + grid.x * (ny + grid.y * nz)) * 16 + 1 + tag);
        const int dims = static_cast<int>(cluster.x | (cluster.y << 8) | (cluster.z << 16));
        EXPECT_TRUE(out[linear * 4] == static_cast<int>(rank) &&
                        out[linear * 4 + 1] == static_cast<int>(size) && out[linear * 4 + 2] == neighbour &&
                        out[linear * 4 + 3] == dims,
                    "%s: block %u got rank %d size %d neighbour %d dims %x; want %u %u %d %x", label, linear,
                    out[linear * 4], out[linear * 4 + 1], out[linear * 4 + 2], out[linear * 4 + 3], rank,
                    size, neighbour, dims);
      }
  return fnv1a64(out.data(), out.size() * sizeof(int));
}

std::vector<int> readBack(const int* device, size_t count) {
  std::vector<int> host(count);
  CHECK_CUDA(cudaMemcpy(host.data(), device, count * sizeof(int), cudaMemcpyDeviceToHost));
  return host;
}

void printFuncAttributes(const char* label, const void* func) {
  cudaFuncAttributes a{};
  CHECK_CUDA(cudaFuncGetAttributes(&a, func));
  std::printf(
      "%s attributes: clusterDimMustBeSet=%d required=(%d,%d,%d) nonPortableAllowed=%d schedulingPolicy=%d\n",
      label, a.clusterDimMustBeSet, a.requiredClusterWidth, a.requiredClusterHeight, a.requiredClusterDepth,
      a.nonPortableClusterSizeAllowed, a.clusterSchedulingPolicyPreference);
}

// ---------------------------------------------------------------- A
void launchAttributeClusters(int* out, cudaStream_t stream) {
  struct Shape {
    dim3 grid, cluster;
  } shapes[] = {
      {dim3(16), dim3(2)},
      {dim3(16), dim3(4)},
      {dim3(24), dim3(8)},
      {dim3(4, 6), dim3(2, 2)},
      {dim3(4, 2, 2), dim3(1, 1, 2)},
  };
  for (const Shape& s : shapes) {
    CHECK_CUDA(cudaMemsetAsync(out, 0xff, 4096 * sizeof(int), stream));
    cudaLaunchAttribute attribute = clusterAttribute(s.cluster.x, s.cluster.y, s.cluster.z);
    cudaLaunchConfig_t config{};
    config.gridDim = s.grid;
    config.blockDim = dim3(64);
    config.stream = stream;
    config.attrs = &attribute;
    config.numAttrs = 1;
    CHECK_CUDA(cudaLaunchKernelEx(&config, ring<0>, out));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    const size_t blocks = static_cast<size_t>(s.grid.x) * s.grid.y * s.grid.z;
    char label[96];
    std::snprintf(label, sizeof label, "grid (%u,%u,%u) cluster (%u,%u,%u)", s.grid.x, s.grid.y, s.grid.z,
                  s.cluster.x, s.cluster.y, s.cluster.z);
    const std::uint64_t fnv = checkRing(readBack(out, blocks * 4), s.grid, s.cluster, 0, label);
    std::printf("A %s: DSMEM ring exact, fnv=%016llx\n", label, static_cast<unsigned long long>(fnv));
  }
  // The same kernel with <<<>>>: clusters of one block.
  ring<0><<<8, 64, 0, stream>>>(out);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaStreamSynchronize(stream));
  checkRing(readBack(out, 8 * 4), dim3(8), dim3(1), 0, "<<<>>>");
  std::printf("A <<<>>> launch of the cluster kernel: clusters of one block\n");
}

// ---------------------------------------------------------------- B
void histogram(cudaStream_t stream) {
  constexpr int kN = 1 << 20;
  constexpr int kBinsPerBlock = 25000;  // 100000 bytes of shared memory per block
  constexpr unsigned kCluster = 2;
  constexpr int kBins = kBinsPerBlock * kCluster;
  std::vector<int> input(kN);
  for (int i = 0; i < kN; ++i) input[i] = static_cast<int>(mix32(i + 7) & 0x7fffffff);
  int *dInput = nullptr, *dBins = nullptr;
  CHECK_CUDA(cudaMalloc(&dInput, kN * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&dBins, kBins * sizeof(int)));
  CHECK_CUDA(cudaMemcpy(dInput, input.data(), kN * sizeof(int), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemset(dBins, 0, kBins * sizeof(int)));
  CHECK_CUDA(
      cudaDeviceSynchronize());  // the setup on the legacy stream, before the non-blocking stream's kernel
  const size_t smem = kBinsPerBlock * sizeof(int);
  CHECK_CUDA(cudaFuncSetAttribute(clusterHistogram, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(smem)));
  cudaLaunchAttribute attribute = clusterAttribute(kCluster, 1, 1);
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(32);
  config.blockDim = dim3(256);
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  CHECK_CUDA(cudaLaunchKernelEx(&config, clusterHistogram, dBins, kBinsPerBlock,
                                static_cast<const int*>(dInput), kN));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  std::vector<int> bins = readBack(dBins, kBins);
  std::vector<int> want(kBins, 0);
  for (int v : input) ++want[v % kBins];
  EXPECT_TRUE(bins == want, "histogram differs");
  std::printf(
      "B DSMEM histogram, %d bins over a cluster of %u blocks with %zu B of shared memory each: "
      "fnv=%016llx\n",
      kBins, kCluster, smem,
      static_cast<unsigned long long>(fnv1a64(bins.data(), bins.size() * sizeof(int))));
  CHECK_CUDA(cudaFree(dInput));
  CHECK_CUDA(cudaFree(dBins));
}

// ---------------------------------------------------------------- C
void compileTimeClusters(int* out, cudaStream_t stream) {
  printFuncAttributes("C fixedPairs (__cluster_dims__(2,1,1))", reinterpret_cast<const void*>(fixedPairs));
  printFuncAttributes("C ring<0>", reinterpret_cast<const void*>(ring<0>));
  fixedPairs<<<8, 32, 0, stream>>>(out);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaStreamSynchronize(stream));
  std::vector<int> got = readBack(out, 16);
  for (int b = 0; b < 8; ++b)
    EXPECT_TRUE(got[b * 2] == 2 && got[b * 2 + 1] == (b ^ 1) * 10 + 3, "fixedPairs block %d: %d %d", b,
                got[b * 2], got[b * 2 + 1]);
  std::printf("C __cluster_dims__(2,1,1) with <<<8>>>: pairs exchanged exactly\n");

  SHOW_ERROR("C cudaFuncSetAttribute(RequiredClusterWidth) on a __cluster_dims__ kernel",
             cudaFuncSetAttribute(fixedPairs, cudaFuncAttributeRequiredClusterWidth, 4));
}

// ---------------------------------------------------------------- D
void occupancyAndPolicies(int* out, cudaStream_t stream) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(64);
  config.blockDim = dim3(128);
  config.stream = stream;
  for (unsigned size : {2u, 4u, 8u}) {
    cudaLaunchAttribute attribute = clusterAttribute(size, 1, 1);
    config.attrs = &attribute;
    config.numAttrs = 1;
    int clusters = -1;
    CHECK_CUDA(cudaOccupancyMaxActiveClusters(&clusters, ring<0>, &config));
    std::fprintf(stderr, "max active clusters of %u: %d\n", size, clusters);
    std::printf("D cudaOccupancyMaxActiveClusters, cluster of %u: positive %s\n", size,
                clusters > 0 ? "yes" : "no");
    EXPECT_TRUE(clusters > 0, "no cluster of %u fits", size);
  }
  config.attrs = nullptr;
  config.numAttrs = 0;
  int potential = -1;
  CHECK_CUDA(cudaOccupancyMaxPotentialClusterSize(&potential, ring<0>, &config));
  std::fprintf(stderr, "max potential cluster size: %d\n", potential);
  std::printf("D cudaOccupancyMaxPotentialClusterSize >= 8: %s\n", potential >= 8 ? "yes" : "no");
  EXPECT_TRUE(potential >= 8, "potential cluster size %d", potential);

  // Scheduling policy spread, with a cluster of 4.
  cudaLaunchAttribute two[2] = {clusterAttribute(4, 1, 1), {}};
  two[1].id = cudaLaunchAttributeClusterSchedulingPolicyPreference;
  two[1].val.clusterSchedulingPolicyPreference = cudaClusterSchedulingPolicySpread;
  config.gridDim = dim3(32);
  config.attrs = two;
  config.numAttrs = 2;
  CHECK_CUDA(cudaLaunchKernelEx(&config, ring<0>, out));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  checkRing(readBack(out, 32 * 4), dim3(32), dim3(4), 0, "spread");
  std::printf("D cluster of 4 with cudaClusterSchedulingPolicySpread: exact\n");

  // Preferred cluster dimension (documented for newer architectures): printed.
  cudaLaunchAttribute preferred[2] = {clusterAttribute(2, 1, 1), {}};
  preferred[1].id = cudaLaunchAttributePreferredClusterDimension;
  preferred[1].val.preferredClusterDim.x = 4;
  preferred[1].val.preferredClusterDim.y = 1;
  preferred[1].val.preferredClusterDim.z = 1;
  config.attrs = preferred;
  const cudaError_t preferredError = cudaLaunchKernelEx(&config, ring<0>, out);
  const cudaError_t preferredSync = cudaStreamSynchronize(stream);
  std::printf("D cluster 2 with preferred cluster 4: launch %s, sync %s\n", cudaGetErrorName(preferredError),
              cudaGetErrorName(preferredSync));
  (void)cudaGetLastError();
  if (preferredError == cudaSuccess && preferredSync == cudaSuccess) {
    const std::vector<int> got = readBack(out, 32 * 4);
    std::printf("D   block 0 saw cluster size %d\n", got[1]);
  }

  // A cluster of 16: non-portable.
  cudaLaunchAttribute sixteen = clusterAttribute(16, 1, 1);
  config.attrs = &sixteen;
  config.numAttrs = 1;
  const cudaError_t before = cudaLaunchKernelEx(&config, ring<1>, out);
  std::printf("D cluster of 16 without opting in: %s\n", cudaGetErrorName(before));
  (void)cudaGetLastError();
  CHECK_CUDA(cudaStreamSynchronize(stream));
  SHOW_ERROR("D cudaFuncSetAttribute(NonPortableClusterSizeAllowed, 1)",
             cudaFuncSetAttribute(ring<1>, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  printFuncAttributes("D ring<1> after opting in", reinterpret_cast<const void*>(ring<1>));
  int potential16 = -1;
  config.attrs = nullptr;
  config.numAttrs = 0;
  CHECK_CUDA(cudaOccupancyMaxPotentialClusterSize(&potential16, ring<1>, &config));
  std::fprintf(stderr, "max potential cluster size after opting in: %d\n", potential16);
  config.attrs = &sixteen;
  config.numAttrs = 1;
  const cudaError_t after = cudaLaunchKernelEx(&config, ring<1>, out);
  std::printf("D cluster of 16 after opting in: %s\n", cudaGetErrorName(after));
  (void)cudaGetLastError();
  CHECK_CUDA(cudaStreamSynchronize(stream));
  if (after == cudaSuccess) {
    checkRing(readBack(out, 32 * 4), dim3(32), dim3(16), 1, "sixteen");
    std::printf("D   cluster of 16: exact\n");
  }
}

// ---------------------------------------------------------------- E
void graphs(int* out, cudaStream_t stream) {
  cudaStream_t capture;
  CHECK_CUDA(cudaStreamCreateWithFlags(&capture, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamBeginCapture(capture, cudaStreamCaptureModeThreadLocal));
  cudaLaunchAttribute attribute = clusterAttribute(4, 1, 1);
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(16);
  config.blockDim = dim3(64);
  config.stream = capture;
  config.attrs = &attribute;
  config.numAttrs = 1;
  const cudaError_t captured = cudaLaunchKernelEx(&config, ring<2>, out);
  cudaGraph_t graph = nullptr;
  CHECK_CUDA(cudaStreamEndCapture(capture, &graph));
  std::printf("E cluster launch during capture: %s\n", cudaGetErrorName(captured));
  EXPECT_TRUE(captured == cudaSuccess, "capture of a cluster launch");
  size_t count = 0;
  CHECK_CUDA(cudaGraphGetNodes(graph, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  CHECK_CUDA(cudaGraphGetNodes(graph, nodes.data(), &count));
  std::printf("E captured graph has %zu node(s)\n", count);
  EXPECT_TRUE(count == 1, "node count");
  cudaLaunchAttributeValue value{};
  SHOW_ERROR("E cudaGraphKernelNodeGetAttribute(ClusterDimension)",
             cudaGraphKernelNodeGetAttribute(nodes[0], cudaLaunchAttributeClusterDimension, &value));
  std::printf("E   node cluster dims (%u,%u,%u)\n", value.clusterDim.x, value.clusterDim.y,
              value.clusterDim.z);
  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int launch = 0; launch < 2; ++launch) {
    CHECK_CUDA(cudaMemsetAsync(out, 0, 16 * 4 * sizeof(int), stream));
    CHECK_CUDA(cudaGraphLaunch(exec, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    checkRing(readBack(out, 16 * 4), dim3(16), dim3(4), 2, "captured");
  }
  std::printf("E captured cluster launch replayed twice: exact\n");
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));

  // Built by hand: a kernel node whose cluster comes from cudaGraphKernelNodeSetAttribute.
  CHECK_CUDA(cudaGraphCreate(&graph, 0));
  cudaKernelNodeParams params{};
  void* args[] = {&out};
  params.func = reinterpret_cast<void*>(ring<3>);
  params.gridDim = dim3(4, 4);
  params.blockDim = dim3(32);
  params.kernelParams = args;
  cudaGraphNode_t node = nullptr;
  CHECK_CUDA(cudaGraphAddKernelNode(&node, graph, nullptr, 0, &params));
  cudaLaunchAttributeValue set{};
  set.clusterDim.x = 2;
  set.clusterDim.y = 2;
  set.clusterDim.z = 1;
  const cudaError_t setError =
      cudaGraphKernelNodeSetAttribute(node, cudaLaunchAttributeClusterDimension, &set);
  std::printf("E cudaGraphKernelNodeSetAttribute(ClusterDimension 2x2): %s\n", cudaGetErrorName(setError));
  (void)cudaGetLastError();
  cudaLaunchAttributeValue back{};
  CHECK_CUDA(cudaGraphKernelNodeGetAttribute(node, cudaLaunchAttributeClusterDimension, &back));
  std::printf("E   read back (%u,%u,%u)\n", back.clusterDim.x, back.clusterDim.y, back.clusterDim.z);
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  CHECK_CUDA(cudaGraphLaunch(exec, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  if (setError == cudaSuccess) {
    checkRing(readBack(out, 16 * 4), dim3(4, 4), dim3(2, 2), 3, "node attribute");
    std::printf("E hand-built node with a 2x2 cluster: exact\n");
  }
  CHECK_CUDA(cudaGraphExecDestroy(exec));
  CHECK_CUDA(cudaGraphDestroy(graph));
  CHECK_CUDA(cudaStreamDestroy(capture));
}

// ---------------------------------------------------------------- F
void lateErrors(int* out, cudaStream_t stream) {
  cudaLaunchAttribute attribute = clusterAttribute(4, 1, 1);
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(6);
  config.blockDim = dim3(64);
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  cudaError_t launched = cudaLaunchKernelEx(&config, ring<0>, out);
  cudaError_t synced = cudaStreamSynchronize(stream);
  std::printf("F cluster 4 over a grid of 6 (attribute): launch %s, sync %s\n", cudaGetErrorName(launched),
              cudaGetErrorName(synced));
  (void)cudaGetLastError();

  // Cluster dimensions set at run time on an ordinary kernel.
  const cudaError_t w = cudaFuncSetAttribute(ring<4>, cudaFuncAttributeRequiredClusterWidth, 2);
  const cudaError_t h = cudaFuncSetAttribute(ring<4>, cudaFuncAttributeRequiredClusterHeight, 1);
  const cudaError_t d = cudaFuncSetAttribute(ring<4>, cudaFuncAttributeRequiredClusterDepth, 1);
  std::printf("F cudaFuncSetAttribute RequiredCluster width/height/depth: %s %s %s\n", cudaGetErrorName(w),
              cudaGetErrorName(h), cudaGetErrorName(d));
  (void)cudaGetLastError();
  printFuncAttributes("F ring<4>", reinterpret_cast<const void*>(ring<4>));
  ring<4><<<8, 32, 0, stream>>>(out);
  launched = cudaGetLastError();
  synced = cudaStreamSynchronize(stream);
  std::printf("F ring<4><<<8>>> after setting a required cluster: launch %s, sync %s\n",
              cudaGetErrorName(launched), cudaGetErrorName(synced));
  (void)cudaGetLastError();
  if (launched == cudaSuccess && synced == cudaSuccess) {
    const std::vector<int> got = readBack(out, 8 * 4);
    std::printf("F   block 0 saw cluster size %d\n", got[1]);
  }

  // A __cluster_dims__ kernel launched with a cluster attribute: the compiled size, then another.
  config.gridDim = dim3(8);
  config.blockDim = dim3(32);
  cudaLaunchAttribute same = clusterAttribute(2, 1, 1);
  config.attrs = &same;
  launched = cudaLaunchKernelEx(&config, fixedPairs, out);
  synced = cudaStreamSynchronize(stream);
  std::printf("F cudaLaunchKernelEx naming fixedPairs' compiled cluster size (2): launch %s, sync %s\n",
              cudaGetErrorName(launched), cudaGetErrorName(synced));
  (void)cudaGetLastError();
  cudaLaunchAttribute other = clusterAttribute(4, 1, 1);
  config.attrs = &other;
  launched = cudaLaunchKernelEx(&config, fixedPairs, out);
  synced = cudaStreamSynchronize(stream);
  std::printf("F cudaLaunchKernelEx naming another cluster size (4) for fixedPairs: launch %s, sync %s\n",
              cudaGetErrorName(launched), cudaGetErrorName(synced));
  (void)cudaGetLastError();

  // Grids that the compiled or run-time-required cluster does not divide.
  ring<4><<<7, 32, 0, stream>>>(out);
  launched = cudaGetLastError();
  synced = cudaStreamSynchronize(stream);
  std::printf("F ring<4><<<7>>> (not a multiple of the required cluster): launch %s, sync %s\n",
              cudaGetErrorName(launched), cudaGetErrorName(synced));
  (void)cudaGetLastError();
  fixedPairs<<<7, 32, 0, stream>>>(out);
  launched = cudaGetLastError();
  synced = cudaStreamSynchronize(stream);
  std::printf("F __cluster_dims__(2) over a grid of 7: launch %s, sync %s\n", cudaGetErrorName(launched),
              cudaGetErrorName(synced));
  (void)cudaGetLastError();

  // The device is still usable.
  store<<<1, 1, 0, stream>>>(out, 4242);
  const cudaError_t last = cudaGetLastError();
  const cudaError_t storeSync = cudaStreamSynchronize(stream);
  std::printf("F the ordinary launch's stream sync: %s\n", cudaGetErrorName(storeSync));
  int value = 0;
  const cudaError_t copied = cudaMemcpy(&value, out, sizeof value, cudaMemcpyDeviceToHost);
  std::printf("F an ordinary launch afterwards: launch %s, copy %s, value %d\n", cudaGetErrorName(last),
              cudaGetErrorName(copied), value);
  EXPECT_TRUE(last == cudaSuccess && copied == cudaSuccess && value == 4242,
              "device unusable after cluster errors");
}

}  // namespace

int main() {
  int major = 0, clusterLaunch = 0;
  CHECK_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
  CHECK_CUDA(cudaDeviceGetAttribute(&clusterLaunch, cudaDevAttrClusterLaunch, 0));
  std::printf("cluster launch supported: %d (compute capability major >= 9: %s)\n", clusterLaunch,
              major >= 9 ? "yes" : "no");
  EXPECT_TRUE(clusterLaunch == 1, "this probe needs cluster launch");
  int* out = nullptr;
  CHECK_CUDA(cudaMalloc(&out, 4096 * sizeof(int)));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  launchAttributeClusters(out, stream);
  histogram(stream);
  compileTimeClusters(out, stream);
  occupancyAndPolicies(out, stream);
  graphs(out, stream);
  lateErrors(out, stream);
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFree(out));
  std::printf("probe_launch_clusters OK\n");
  return 0;
}
