// Stream-ordered allocation as frameworks use it, beyond stream_ordered_alloc (written at stop 39
// as a probe of what real programs do; it printed what native CUDA printed on the H100):
// A. allocations whose life crosses streams: made and filled on stream A, read and freed on stream B
//    after an event, A allocating again at once (A waits on B's free every 8 rounds, so the pool may
//    hand the memory back through event dependencies); 96 rounds, every block's sum checked;
// B. an explicit pool's reuse policies and release threshold set and read back, allocation churn with
//    every reuse policy off; attribute misuse printed by error name;
// C. cudaMemPoolTrimTo with a live allocation (which must keep its contents) and with a floor;
// D. cudaMemPoolDestroy while an allocation of the pool is live (CUDA returns at once and frees the
//    pool later): the allocation stays usable until its cudaFreeAsync;
// E. destroying the device's current pool makes the default pool current again;
// F. a pool with maxSize: the allocation that would exceed it fails, and succeeds after a free;
// G. mixing the two allocators: cudaMallocAsync freed by cudaFree, cudaMalloc freed by cudaFreeAsync,
//    cudaFreeAsync followed at once by cudaStreamDestroy;
// H. the CUB pattern: ask for the temporary storage size, cudaMallocAsync it, two-pass reduction,
//    cudaFreeAsync; 48 sizes, on a created stream and on the legacy stream;
// I. four threads, each on its own stream, and two on cudaStreamPerThread, allocating concurrently;
// J. the CUDA 13 location API (cudaMemGetDefaultMemPool, cudaMemGetMemPool, cudaMemSetMemPool) for the
//    device, cudaMallocFromPoolAsync naming the default pool, cudaPointerGetAttributes of a pool
//    allocation, copies and memsets at interior offsets of pool allocations, an impossible size.
// Only relations that hold natively for sure are printed; byte counts go to stderr.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "tests/gpu/programs/check.cuh"

namespace {

constexpr size_t kMiB = size_t{1} << 20;
const char* yesNo(bool v) { return v ? "yes" : "no"; }
const char* name(cudaError_t e) { return cudaGetErrorName(e); }

__host__ __device__ inline std::uint32_t pattern(std::uint32_t tag, std::uint32_t i) {
  return tag ^ (i * 2654435761u) ^ (i >> 7);
}
__global__ void fillPattern(std::uint32_t* p, size_t words, std::uint32_t tag) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < words;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    p[i] = pattern(tag, static_cast<std::uint32_t>(i));
}
__global__ void sumWords(const std::uint32_t* p, size_t words, unsigned long long* out) {
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < words;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    local += p[i];
  atomicAdd(out, local);
}
unsigned long long expectedSum(std::uint32_t tag, size_t words) {
  unsigned long long s = 0;
  for (size_t i = 0; i < words; ++i) s += pattern(tag, static_cast<std::uint32_t>(i));
  return s;
}

// Two-pass reduction in the CUB style: pass 1 writes one partial sum per block into temp storage,
// pass 2 adds them up.
constexpr int kReduceBlocks = 120;
constexpr int kReduceThreads = 256;
size_t reduceTempBytes(size_t n) { return n == 0 ? 1 : kReduceBlocks * sizeof(unsigned long long) + 256; }
__global__ void reducePass1(const std::uint32_t* in, size_t n, unsigned long long* partial) {
  __shared__ unsigned long long shared[kReduceThreads];
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    local += in[i];
  shared[threadIdx.x] = local;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (static_cast<int>(threadIdx.x) < stride) shared[threadIdx.x] += shared[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = shared[0];
}
__global__ void reducePass2(const unsigned long long* partial, int blocks, unsigned long long* out) {
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    unsigned long long s = 0;
    for (int b = 0; b < blocks; ++b) s += partial[b];
    *out = s;
  }
}

std::uint64_t poolAttr(cudaMemPool_t pool, cudaMemPoolAttr attr) {
  std::uint64_t v = 0;
  CHECK_CUDA(cudaMemPoolGetAttribute(pool, attr, &v));
  return v;
}
int poolInt(cudaMemPool_t pool, cudaMemPoolAttr attr) {
  int v = -1;
  CHECK_CUDA(cudaMemPoolGetAttribute(pool, attr, &v));
  return v;
}
cudaMemPool_t makePool(size_t maxSize = 0) {
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  props.maxSize = maxSize;
  cudaMemPool_t pool = nullptr;
  CHECK_CUDA(cudaMemPoolCreate(&pool, &props));
  return pool;
}

// Fills, reads back and checks `words` words at `p` on `s`.
void checkBlock(const char* label, std::uint32_t* p, size_t words, std::uint32_t tag, cudaStream_t s) {
  fillPattern<<<64, 256, 0, s>>>(p, words, tag);
  CHECK_CUDA(cudaGetLastError());
  std::vector<std::uint32_t> host(words);
  CHECK_CUDA(cudaMemcpyAsync(host.data(), p, words * 4, cudaMemcpyDeviceToHost, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
  for (size_t i = 0; i < words; ++i)
    EXPECT_TRUE(host[i] == pattern(tag, static_cast<std::uint32_t>(i)), "%s: word %zu wrong", label, i);
}

// ================================================================ A
void crossStream(cudaStream_t a, cudaStream_t b) {
  constexpr int kRounds = 96;
  unsigned long long* sums = nullptr;
  CHECK_CUDA(cudaMalloc(&sums, kRounds * sizeof(unsigned long long)));
  CHECK_CUDA(cudaMemset(sums, 0, kRounds * sizeof(unsigned long long)));
  CHECK_CUDA(cudaDeviceSynchronize());
  cudaEvent_t filled, freed;
  CHECK_CUDA(cudaEventCreateWithFlags(&filled, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventCreateWithFlags(&freed, cudaEventDisableTiming));
  std::vector<size_t> words(kRounds);
  std::vector<std::uint32_t> tags(kRounds);
  for (int r = 0; r < kRounds; ++r) {
    const std::uint32_t h = mix32(static_cast<std::uint32_t>(r) + 0xA11Cu);
    words[r] = (size_t{1024} << (h % 10)) + (h >> 20);  // 4 KiB .. ~2 MiB
    tags[r] = mix32(h);
    std::uint32_t* p = nullptr;
    CHECK_CUDA(cudaMallocAsync(reinterpret_cast<void**>(&p), words[r] * 4, a));
    fillPattern<<<64, 256, 0, a>>>(p, words[r], tags[r]);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaEventRecord(filled, a));
    CHECK_CUDA(cudaStreamWaitEvent(b, filled, 0));
    sumWords<<<64, 256, 0, b>>>(p, words[r], &sums[r]);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaFreeAsync(p, b));
    if (r % 8 == 7) {
      CHECK_CUDA(cudaEventRecord(freed, b));
      CHECK_CUDA(cudaStreamWaitEvent(a, freed, 0));
    }
  }
  CHECK_CUDA(cudaStreamSynchronize(a));
  CHECK_CUDA(cudaStreamSynchronize(b));
  std::vector<unsigned long long> got(kRounds);
  CHECK_CUDA(cudaMemcpy(got.data(), sums, kRounds * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
  for (int r = 0; r < kRounds; ++r)
    EXPECT_TRUE(got[r] == expectedSum(tags[r], words[r]), "round %d: sum %llu, expected %llu", r, got[r],
                expectedSum(tags[r], words[r]));
  std::printf("A: %d rounds allocated on A, freed on B: sums exact, fnv=%016llx\n", kRounds,
              static_cast<unsigned long long>(fnv1a64(got.data(), got.size() * sizeof got[0])));
  CHECK_CUDA(cudaEventDestroy(filled));
  CHECK_CUDA(cudaEventDestroy(freed));
  CHECK_CUDA(cudaFree(sums));
}

// ================================================================ B
void policies(cudaStream_t a, cudaStream_t b) {
  cudaMemPool_t pool = makePool();
  std::printf("B: explicit pool reuse defaults: follow=%d opportunistic=%d internal=%d, threshold %llu\n",
              poolInt(pool, cudaMemPoolReuseFollowEventDependencies),
              poolInt(pool, cudaMemPoolReuseAllowOpportunistic),
              poolInt(pool, cudaMemPoolReuseAllowInternalDependencies),
              static_cast<unsigned long long>(poolAttr(pool, cudaMemPoolAttrReleaseThreshold)));
  int zero = 0;
  for (cudaMemPoolAttr attr : {cudaMemPoolReuseFollowEventDependencies, cudaMemPoolReuseAllowOpportunistic,
                               cudaMemPoolReuseAllowInternalDependencies})
    CHECK_CUDA(cudaMemPoolSetAttribute(pool, attr, &zero));
  std::uint64_t threshold = 48 * kMiB;
  CHECK_CUDA(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  std::printf("B: after setting: follow=%d opportunistic=%d internal=%d, threshold %llu\n",
              poolInt(pool, cudaMemPoolReuseFollowEventDependencies),
              poolInt(pool, cudaMemPoolReuseAllowOpportunistic),
              poolInt(pool, cudaMemPoolReuseAllowInternalDependencies),
              static_cast<unsigned long long>(poolAttr(pool, cudaMemPoolAttrReleaseThreshold)));
  // churn with the policies off: the memory of a free on one stream must not reach the other early
  unsigned long long* sums = nullptr;
  constexpr int kRounds = 40;
  CHECK_CUDA(cudaMalloc(&sums, kRounds * 2 * sizeof(unsigned long long)));
  CHECK_CUDA(cudaMemset(sums, 0, kRounds * 2 * sizeof(unsigned long long)));
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<unsigned long long> want(kRounds * 2);
  for (int r = 0; r < kRounds; ++r) {
    for (int side = 0; side < 2; ++side) {
      cudaStream_t s = side ? b : a;
      const size_t words = (size_t{4096} << (r % 6)) + static_cast<size_t>(side) * 17;
      const std::uint32_t tag = mix32(static_cast<std::uint32_t>(r * 2 + side) + 0xB0u);
      std::uint32_t* p = nullptr;
      CHECK_CUDA(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&p), words * 4, pool, s));
      fillPattern<<<32, 256, 0, s>>>(p, words, tag);
      sumWords<<<32, 256, 0, s>>>(p, words, &sums[r * 2 + side]);
      CHECK_CUDA(cudaGetLastError());
      CHECK_CUDA(cudaFreeAsync(p, s));
      want[r * 2 + side] = expectedSum(tag, words);
    }
  }
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<unsigned long long> got(kRounds * 2);
  CHECK_CUDA(cudaMemcpy(got.data(), sums, got.size() * sizeof got[0], cudaMemcpyDeviceToHost));
  EXPECT_TRUE(got == want, "churn with reuse policies off: sums differ");
  std::printf("B: churn on two streams with every reuse policy off: exact\n");
  CHECK_CUDA(cudaFree(sums));

  std::uint64_t big = 1;
  std::printf("B: set UsedMemCurrent: %s\n",
              name(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &big)));
  std::printf("B: cudaGetLastError -> %s\n", name(cudaGetLastError()));
  std::printf("B: set UsedMemHigh to 1: %s\n",
              name(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &big)));
  std::printf("B: cudaGetLastError -> %s\n", name(cudaGetLastError()));
  std::uint64_t value = 0;
  std::printf("B: get attribute 0x7777: %s\n",
              name(cudaMemPoolGetAttribute(pool, static_cast<cudaMemPoolAttr>(0x7777), &value)));
  std::printf("B: cudaGetLastError -> %s\n", name(cudaGetLastError()));
  int two = 2;
  const cudaError_t setTwo = cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowOpportunistic, &two);
  std::printf("B: set a reuse policy to 2: %s, reads back %d\n", name(setTwo),
              poolInt(pool, cudaMemPoolReuseAllowOpportunistic));
  std::printf("B: cudaGetLastError -> %s\n", name(cudaGetLastError()));
  CHECK_CUDA(cudaMemPoolDestroy(pool));
}

// ================================================================ C
void trim(cudaStream_t s) {
  cudaMemPool_t pool = makePool();
  std::uint64_t threshold = UINT64_MAX;
  CHECK_CUDA(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  std::uint32_t *live = nullptr, *gone = nullptr;
  const size_t liveWords = 4 * kMiB / 4, goneWords = 8 * kMiB / 4;
  CHECK_CUDA(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&live), liveWords * 4, pool, s));
  CHECK_CUDA(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&gone), goneWords * 4, pool, s));
  fillPattern<<<64, 256, 0, s>>>(live, liveWords, 0x7717u);
  fillPattern<<<64, 256, 0, s>>>(gone, goneWords, 0x6006u);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaFreeAsync(gone, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
  const std::uint64_t reservedBefore = poolAttr(pool, cudaMemPoolAttrReservedMemCurrent);
  const std::uint64_t used = poolAttr(pool, cudaMemPoolAttrUsedMemCurrent);
  std::printf("C: before trim: used >= 4 MiB %s, used < 12 MiB %s, reserved >= 12 MiB %s\n",
              yesNo(used >= 4 * kMiB), yesNo(used < 12 * kMiB), yesNo(reservedBefore >= 12 * kMiB));
  std::printf("C: cudaMemPoolTrimTo(0) with 4 MiB live: %s\n", name(cudaMemPoolTrimTo(pool, 0)));
  const std::uint64_t reservedAfter = poolAttr(pool, cudaMemPoolAttrReservedMemCurrent);
  std::fprintf(stderr, "trim: used %llu reserved %llu -> %llu\n", static_cast<unsigned long long>(used),
               static_cast<unsigned long long>(reservedBefore),
               static_cast<unsigned long long>(reservedAfter));
  std::printf("C: after trim: reserved >= 4 MiB %s, reserved <= before %s\n",
              yesNo(reservedAfter >= 4 * kMiB), yesNo(reservedAfter <= reservedBefore));
  std::vector<std::uint32_t> host(liveWords);
  CHECK_CUDA(cudaMemcpyAsync(host.data(), live, liveWords * 4, cudaMemcpyDeviceToHost, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
  for (size_t i = 0; i < liveWords; ++i)
    EXPECT_TRUE(host[i] == pattern(0x7717u, static_cast<std::uint32_t>(i)),
                "live block changed by trim at word %zu", i);
  std::printf("C: the live allocation kept its contents through the trim\n");
  CHECK_CUDA(cudaFreeAsync(live, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
  std::printf("C: cudaMemPoolTrimTo(64 MiB) with nothing live: %s\n",
              name(cudaMemPoolTrimTo(pool, 64 * kMiB)));
  std::printf("C: cudaMemPoolTrimTo(0) with nothing live: %s, used == 0 %s\n",
              name(cudaMemPoolTrimTo(pool, 0)), yesNo(poolAttr(pool, cudaMemPoolAttrUsedMemCurrent) == 0));
  CHECK_CUDA(cudaMemPoolDestroy(pool));
}

// ================================================================ D, E
void destroyWhileLive(cudaStream_t s) {
  cudaMemPool_t pool = makePool();
  std::uint32_t* p = nullptr;
  const size_t words = kMiB / 4;
  CHECK_CUDA(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&p), words * 4, pool, s));
  checkBlock("D before destroy", p, words, 0xD1u, s);
  const cudaError_t destroyed = cudaMemPoolDestroy(pool);
  std::printf("D: cudaMemPoolDestroy with a live allocation: %s\n", name(destroyed));
  std::printf("D: cudaGetLastError -> %s\n", name(cudaGetLastError()));
  if (destroyed == cudaSuccess) {
    checkBlock("D after destroy", p, words, 0xD2u, s);
    std::printf("D: the allocation is still usable after its pool was destroyed\n");
    const cudaError_t freed = cudaFreeAsync(p, s);
    std::printf("D: cudaFreeAsync of it: %s\n", name(freed));
    std::printf("D: synchronize: %s\n", name(cudaStreamSynchronize(s)));
    std::printf("D: cudaGetLastError -> %s\n", name(cudaGetLastError()));
  } else {
    CHECK_CUDA(cudaFreeAsync(p, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK_CUDA(cudaMemPoolDestroy(pool));
  }

  cudaMemPool_t defaultPool = nullptr, current = nullptr;
  CHECK_CUDA(cudaDeviceGetDefaultMemPool(&defaultPool, 0));
  cudaMemPool_t pool2 = makePool();
  CHECK_CUDA(cudaDeviceSetMemPool(0, pool2));
  CHECK_CUDA(cudaDeviceGetMemPool(&current, 0));
  std::printf("E: current pool is the explicit one: %s\n", yesNo(current == pool2));
  std::printf("E: cudaMemPoolDestroy of the current pool: %s\n", name(cudaMemPoolDestroy(pool2)));
  CHECK_CUDA(cudaDeviceGetMemPool(&current, 0));
  std::printf("E: current pool is the default again: %s\n", yesNo(current == defaultPool));
  std::uint32_t* q = nullptr;
  CHECK_CUDA(cudaMallocAsync(reinterpret_cast<void**>(&q), 64 * 1024, s));
  checkBlock("E after destroying the current pool", q, 16 * 1024, 0xE1u, s);
  CHECK_CUDA(cudaFreeAsync(q, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
  std::printf("E: cudaMallocAsync works afterwards\n");
  std::printf("E: cudaMemPoolDestroy of the default pool: %s\n", name(cudaMemPoolDestroy(defaultPool)));
  std::printf("E: cudaGetLastError -> %s\n", name(cudaGetLastError()));
}

// ================================================================ F
void maxSize(cudaStream_t s) {
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  props.maxSize = 64 * kMiB;
  cudaMemPool_t pool = nullptr;
  const cudaError_t made = cudaMemPoolCreate(&pool, &props);
  std::printf("F: cudaMemPoolCreate with maxSize 64 MiB: %s\n", name(made));
  if (made != cudaSuccess) {
    std::printf("F: cudaGetLastError -> %s\n", name(cudaGetLastError()));
    return;
  }
  void *first = nullptr, *second = nullptr;
  CHECK_CUDA(cudaMallocFromPoolAsync(&first, 40 * kMiB, pool, s));
  const cudaError_t over = cudaMallocFromPoolAsync(&second, 40 * kMiB, pool, s);
  std::printf("F: a second 40 MiB allocation (80 MiB > maxSize): %s, pointer null %s\n", name(over),
              yesNo(second == nullptr));
  std::printf("F: cudaGetLastError -> %s\n", name(cudaGetLastError()));
  if (over == cudaSuccess) CHECK_CUDA(cudaFreeAsync(second, s));
  CHECK_CUDA(cudaFreeAsync(first, s));
  second = nullptr;
  const cudaError_t after = cudaMallocFromPoolAsync(&second, 40 * kMiB, pool, s);
  std::printf("F: 40 MiB again after the first was freed on the same stream: %s\n", name(after));
  if (after == cudaSuccess) {
    checkBlock("F after free", static_cast<std::uint32_t*>(second), 40 * kMiB / 4, 0xF1u, s);
    CHECK_CUDA(cudaFreeAsync(second, s));
  }
  CHECK_CUDA(cudaStreamSynchronize(s));
  std::printf("F: cudaGetLastError -> %s\n", name(cudaGetLastError()));
  CHECK_CUDA(cudaMemPoolDestroy(pool));
}

// ================================================================ G
void mixedAllocators(cudaStream_t s) {
  std::uint32_t* p = nullptr;
  CHECK_CUDA(cudaMallocAsync(reinterpret_cast<void**>(&p), 1 * kMiB, s));
  checkBlock("G async then cudaFree", p, kMiB / 4, 0x61u, s);
  std::printf("G: cudaFree of a cudaMallocAsync block: %s\n", name(cudaFree(p)));
  std::printf("G: cudaGetLastError -> %s\n", name(cudaGetLastError()));

  std::uint32_t* q = nullptr;
  CHECK_CUDA(cudaMalloc(&q, kMiB));
  checkBlock("G cudaMalloc then cudaFreeAsync", q, kMiB / 4, 0x62u, s);
  const cudaError_t freedAsync = cudaFreeAsync(q, s);
  std::printf("G: cudaFreeAsync of a cudaMalloc block: %s\n", name(freedAsync));
  std::printf("G: synchronize: %s\n", name(cudaStreamSynchronize(s)));
  std::printf("G: cudaGetLastError -> %s\n", name(cudaGetLastError()));
  if (freedAsync != cudaSuccess) CHECK_CUDA(cudaFree(q));

  cudaStream_t shortLived;
  CHECK_CUDA(cudaStreamCreateWithFlags(&shortLived, cudaStreamNonBlocking));
  std::uint32_t* r = nullptr;
  CHECK_CUDA(cudaMallocAsync(reinterpret_cast<void**>(&r), 2 * kMiB, shortLived));
  fillPattern<<<64, 256, 0, shortLived>>>(r, 2 * kMiB / 4, 0x63u);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaFreeAsync(r, shortLived));
  CHECK_CUDA(cudaStreamDestroy(shortLived));
  std::uint32_t* t = nullptr;
  CHECK_CUDA(cudaMallocAsync(reinterpret_cast<void**>(&t), 2 * kMiB, s));
  checkBlock("G after a stream destroyed with a pending free", t, 2 * kMiB / 4, 0x64u, s);
  CHECK_CUDA(cudaFreeAsync(t, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
  std::printf(
      "G: stream destroyed right after cudaFreeAsync; the next allocation on another stream: exact\n");
}

// ================================================================ H
void cubPattern(cudaStream_t s) {
  constexpr size_t kMax = 3 * kMiB;
  std::vector<std::uint32_t> input(kMax);
  for (size_t i = 0; i < kMax; ++i) input[i] = mix32(static_cast<std::uint32_t>(i) ^ 0xCBu);
  std::uint32_t* dIn = nullptr;
  CHECK_CUDA(cudaMalloc(&dIn, kMax * 4));
  CHECK_CUDA(cudaMemcpy(dIn, input.data(), kMax * 4, cudaMemcpyHostToDevice));
  constexpr int kSizes = 48;
  unsigned long long* dOut = nullptr;
  CHECK_CUDA(cudaMalloc(&dOut, kSizes * sizeof(unsigned long long)));
  std::vector<unsigned long long> want(kSizes);
  for (int j = 0; j < kSizes; ++j) {
    const size_t n =
        j == 0 ? 1 : std::min(kMax, static_cast<size_t>(mix32(static_cast<std::uint32_t>(j)) % kMax) + 1);
    cudaStream_t stream = (j % 3 == 2) ? cudaStream_t{0} : s;
    size_t tempBytes = reduceTempBytes(n);  // the "query" call
    void* temp = nullptr;
    CHECK_CUDA(cudaMallocAsync(&temp, tempBytes, stream));
    reducePass1<<<kReduceBlocks, kReduceThreads, 0, stream>>>(dIn, n, static_cast<unsigned long long*>(temp));
    reducePass2<<<1, 32, 0, stream>>>(static_cast<unsigned long long*>(temp), kReduceBlocks, &dOut[j]);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaFreeAsync(temp, stream));
    unsigned long long sum = 0;
    for (size_t i = 0; i < n; ++i) sum += input[i];
    want[j] = sum;
  }
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<unsigned long long> got(kSizes);
  CHECK_CUDA(cudaMemcpy(got.data(), dOut, kSizes * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
  for (int j = 0; j < kSizes; ++j)
    EXPECT_TRUE(got[j] == want[j], "reduction %d: %llu vs %llu", j, got[j], want[j]);
  std::printf("H: %d temp-storage reductions (a third on the legacy stream): exact, fnv=%016llx\n", kSizes,
              static_cast<unsigned long long>(fnv1a64(got.data(), got.size() * sizeof got[0])));
  CHECK_CUDA(cudaFree(dIn));
  CHECK_CUDA(cudaFree(dOut));
}

// ================================================================ I
void threadWork(int k, cudaStream_t stream, std::vector<unsigned long long>* got,
                std::vector<unsigned long long>* want) {
  unsigned long long* sums = nullptr;
  constexpr int kRounds = 40;
  CHECK_CUDA(cudaMallocAsync(reinterpret_cast<void**>(&sums), kRounds * sizeof(unsigned long long), stream));
  CHECK_CUDA(cudaMemsetAsync(sums, 0, kRounds * sizeof(unsigned long long), stream));
  for (int r = 0; r < kRounds; ++r) {
    const std::uint32_t h = mix32(static_cast<std::uint32_t>(k * 1000 + r));
    const size_t words = (size_t{256} << (h % 12)) + (h >> 24);
    std::uint32_t* p = nullptr;
    CHECK_CUDA(cudaMallocAsync(reinterpret_cast<void**>(&p), words * 4, stream));
    fillPattern<<<32, 256, 0, stream>>>(p, words, h);
    sumWords<<<32, 256, 0, stream>>>(p, words, &sums[r]);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaFreeAsync(p, stream));
    want->push_back(expectedSum(h, words));
  }
  got->resize(kRounds);
  CHECK_CUDA(cudaMemcpyAsync(got->data(), sums, kRounds * sizeof(unsigned long long), cudaMemcpyDeviceToHost,
                             stream));
  CHECK_CUDA(cudaFreeAsync(sums, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
}

void threads() {
  constexpr int kThreads = 6;
  cudaStream_t streams[kThreads];
  for (int k = 0; k < kThreads; ++k) {
    if (k < 4) {
      CHECK_CUDA(cudaStreamCreateWithFlags(&streams[k], cudaStreamNonBlocking));
    } else {
      streams[k] = cudaStreamPerThread;
    }
  }
  std::vector<unsigned long long> got[kThreads], want[kThreads];
  std::vector<std::thread> workers;
  for (int k = 0; k < kThreads; ++k) workers.emplace_back(threadWork, k, streams[k], &got[k], &want[k]);
  for (auto& w : workers) w.join();
  std::uint64_t h = 0;
  for (int k = 0; k < kThreads; ++k) {
    EXPECT_TRUE(got[k] == want[k], "thread %d: sums differ", k);
    h ^= fnv1a64(got[k].data(), got[k].size() * sizeof(unsigned long long)) * (k + 1);
    if (k < 4) CHECK_CUDA(cudaStreamDestroy(streams[k]));
  }
  std::printf(
      "I: 4 threads on their own streams and 2 on cudaStreamPerThread, 40 rounds each: exact, hash=%016llx\n",
      static_cast<unsigned long long>(h));
}

// ================================================================ J
void locationApi(cudaStream_t s, cudaStream_t other) {
  cudaMemPool_t byDevice = nullptr, byLocation = nullptr, current = nullptr, currentByLocation = nullptr;
  CHECK_CUDA(cudaDeviceGetDefaultMemPool(&byDevice, 0));
  cudaMemLocation loc{};
  loc.type = cudaMemLocationTypeDevice;
  loc.id = 0;
  const cudaError_t e1 = cudaMemGetDefaultMemPool(&byLocation, &loc, cudaMemAllocationTypePinned);
  std::printf("J: cudaMemGetDefaultMemPool(device 0): %s, same as cudaDeviceGetDefaultMemPool %s\n", name(e1),
              yesNo(byLocation == byDevice));
  CHECK_CUDA(cudaDeviceGetMemPool(&current, 0));
  const cudaError_t e2 = cudaMemGetMemPool(&currentByLocation, &loc, cudaMemAllocationTypePinned);
  std::printf("J: cudaMemGetMemPool(device 0): %s, same as cudaDeviceGetMemPool %s\n", name(e2),
              yesNo(currentByLocation == current));
  cudaMemPool_t pool = makePool();
  const cudaError_t e3 = cudaMemSetMemPool(&loc, cudaMemAllocationTypePinned, pool);
  CHECK_CUDA(cudaDeviceGetMemPool(&current, 0));
  std::printf("J: cudaMemSetMemPool(device 0, explicit): %s, cudaDeviceGetMemPool sees it %s\n", name(e3),
              yesNo(current == pool));
  CHECK_CUDA(cudaDeviceSetMemPool(0, byDevice));
  std::printf("J: cudaGetLastError -> %s\n", name(cudaGetLastError()));

  std::uint32_t* p = nullptr;
  CHECK_CUDA(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&p), 3 * kMiB, byDevice, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
  cudaPointerAttributes attrs{};
  CHECK_CUDA(cudaPointerGetAttributes(&attrs, p + 100));
  std::printf(
      "J: pool allocation attributes: type %d, device %d, devicePointer is the pointer %s, hostPointer null "
      "%s\n",
      static_cast<int>(attrs.type), attrs.device, yesNo(attrs.devicePointer == p + 100),
      yesNo(attrs.hostPointer == nullptr));
  // interior copies and memsets between pool allocations on two streams
  std::uint32_t* q = nullptr;
  CHECK_CUDA(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&q), 3 * kMiB, pool, other));
  const size_t words = 3 * kMiB / 4;
  fillPattern<<<64, 256, 0, s>>>(p, words, 0x4A4Au);
  CHECK_CUDA(cudaGetLastError());
  cudaEvent_t ready;
  CHECK_CUDA(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
  CHECK_CUDA(cudaEventRecord(ready, s));
  CHECK_CUDA(cudaStreamWaitEvent(other, ready, 0));
  CHECK_CUDA(cudaMemsetAsync(q, 0x5C, words * 4, other));
  CHECK_CUDA(cudaMemcpyAsync(q + 1001, p + 7, 123457 * 4, cudaMemcpyDeviceToDevice, other));
  CHECK_CUDA(cudaMemsetAsync(reinterpret_cast<unsigned char*>(q) + 3, 0xA7, 9999, other));
  std::vector<std::uint32_t> host(words);
  CHECK_CUDA(cudaMemcpyAsync(host.data(), q, words * 4, cudaMemcpyDeviceToHost, other));
  CHECK_CUDA(cudaFreeAsync(q, other));
  CHECK_CUDA(cudaEventRecord(ready, other));
  CHECK_CUDA(cudaStreamWaitEvent(s, ready, 0));
  CHECK_CUDA(cudaFreeAsync(p, s));
  CHECK_CUDA(cudaStreamSynchronize(other));
  CHECK_CUDA(cudaStreamSynchronize(s));
  std::vector<std::uint32_t> model(words, 0x5C5C5C5Cu);
  for (size_t i = 0; i < 123457; ++i) model[1001 + i] = pattern(0x4A4Au, static_cast<std::uint32_t>(7 + i));
  std::memset(reinterpret_cast<unsigned char*>(model.data()) + 3, 0xA7, 9999);
  EXPECT_TRUE(host == model, "interior copies between pool allocations differ");
  std::printf("J: interior copies and memsets between pool allocations on two streams: exact, fnv=%016llx\n",
              static_cast<unsigned long long>(fnv1a64(host.data(), words * 4)));
  CHECK_CUDA(cudaEventDestroy(ready));
  CHECK_CUDA(cudaMemPoolDestroy(pool));

  void* huge = nullptr;
  const cudaError_t tooBig = cudaMallocAsync(&huge, size_t{1} << 50, s);
  std::printf("J: cudaMallocAsync(1 PiB): %s, pointer null %s\n", name(tooBig), yesNo(huge == nullptr));
  std::printf("J: cudaGetLastError -> %s\n", name(cudaGetLastError()));
  std::uint32_t* after = nullptr;
  CHECK_CUDA(cudaMallocAsync(reinterpret_cast<void**>(&after), 4096, s));
  checkBlock("J after the impossible size", after, 1024, 0x4Bu, s);
  CHECK_CUDA(cudaFreeAsync(after, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
  std::printf("J: allocation works after the impossible size\n");
}

}  // namespace

int main() {
  CHECK_CUDA(cudaSetDevice(0));
  cudaStream_t a, b;
  CHECK_CUDA(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  crossStream(a, b);
  policies(a, b);
  trim(a);
  destroyWhileLive(a);
  maxSize(a);
  mixedAllocators(a);
  cubPattern(a);
  threads();
  locationApi(a, b);
  CHECK_CUDA(cudaDeviceSynchronize());
  EXPECT_ERROR("final cudaGetLastError", cudaGetLastError(), cudaSuccess);
  CHECK_CUDA(cudaStreamDestroy(a));
  CHECK_CUDA(cudaStreamDestroy(b));
  std::printf("pool_streams: done\n");
  return 0;
}
