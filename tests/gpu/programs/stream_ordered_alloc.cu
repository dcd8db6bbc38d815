// Stream-ordered allocation (cudaMallocAsync / cudaFreeAsync and the memory-pool API), the way
// frameworks and NVIDIA's streamOrderedAllocation sample use it:
// - cudaDevAttrMemoryPoolsSupported; the default pool and its default attributes;
// - the sample's pattern: three cudaMallocAsync buffers, async copies, a kernel, cudaFreeAsync of
//   the inputs before the result is copied back, and the same under a high release threshold;
// - 200 allocations (1 KiB..8 MiB) on two streams, each kept live across the next allocation on
//   its stream, read back before its cudaFreeAsync (a live block must never be handed out again);
//   an event handoff: allocated and filled on stream A, read and freed on stream B;
// - the legacy default stream (0) and cudaStreamPerThread as allocation streams;
// - pool statistics (used/reserved, watermarks and their reset), cudaMemPoolTrimTo;
// - an explicit pool (cudaMemPoolCreate, cudaMallocFromPoolAsync, access flags), made the
//   device's current pool with cudaDeviceSetMemPool and then replaced by the default again;
// - error paths, printed by error NAME (the native run fixes the expected values).
// Only relations that hold natively for sure are printed (never pointers, reserved byte
// counts or times: those differ between implementations); raw values go to stderr.
#include <cstdint>
#include <vector>

#include "check.cuh"

// Prints the error name and requires only that the call failed; the native run is the reference
// for the exact code. The runtime's recorded last error is then read (and cleared) and printed.
#define EXPECT_FAILS_CLEARED(label, call)                                                       \
  do {                                                                                          \
    const cudaError_t expect_fails_got_ = (call);                                               \
    std::printf("%s: %s\n", (label), cudaGetErrorName(expect_fails_got_));                      \
    EXPECT_TRUE(expect_fails_got_ != cudaSuccess, "%s unexpectedly succeeded", #call);          \
    std::printf("%s: cudaGetLastError -> %s\n", (label), cudaGetErrorName(cudaGetLastError())); \
  } while (0)

namespace {

constexpr size_t kMiB = size_t{1} << 20;

const char* yesNo(bool value) { return value ? "yes" : "no"; }

__host__ __device__ inline std::uint32_t pattern(std::uint32_t tag, std::uint32_t i) {
  return tag ^ (i * 2654435761u);
}

__global__ void fillPattern(std::uint32_t* p, size_t words, std::uint32_t tag) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < words;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    p[i] = pattern(tag, static_cast<std::uint32_t>(i));
}

// Adds the words of p into *sum (64-bit wrap-around, so the order of the atomics does not matter).
__global__ void sumWords(const std::uint32_t* p, size_t words, unsigned long long* sum) {
  unsigned long long local = 0;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < words;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    local += p[i];
  atomicAdd(sum, local);
}

// Slow on purpose (dependent iterations), so a reader on another stream would overtake it
// without the event.
constexpr int kSlowRounds = 200;
__host__ __device__ inline std::uint32_t slowValue(std::uint32_t i, std::uint32_t salt) {
  std::uint32_t v = i ^ salt;
  for (int r = 0; r < kSlowRounds; ++r) v = v * 1664525u + 1013904223u;
  return v;
}
__global__ void slowFill(std::uint32_t* p, size_t words, std::uint32_t salt) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < words;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    p[i] = slowValue(static_cast<std::uint32_t>(i), salt);
}

__global__ void vectorAdd(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

unsigned long long expectedSum(std::uint32_t tag, size_t words) {
  unsigned long long sum = 0;
  for (size_t i = 0; i < words; ++i) sum += pattern(tag, static_cast<std::uint32_t>(i));
  return sum;
}

std::uint64_t poolAttr(cudaMemPool_t pool, cudaMemPoolAttr attr) {
  std::uint64_t value = 0;
  CHECK_CUDA(cudaMemPoolGetAttribute(pool, attr, &value));
  return value;
}

int poolIntAttr(cudaMemPool_t pool, cudaMemPoolAttr attr) {
  int value = -1;
  CHECK_CUDA(cudaMemPoolGetAttribute(pool, attr, &value));
  return value;
}

void logPool(const char* when, cudaMemPool_t pool) {
  std::fprintf(stderr, "pool %p %s: used=%llu usedHigh=%llu reserved=%llu reservedHigh=%llu\n",
               static_cast<void*>(pool), when,
               static_cast<unsigned long long>(poolAttr(pool, cudaMemPoolAttrUsedMemCurrent)),
               static_cast<unsigned long long>(poolAttr(pool, cudaMemPoolAttrUsedMemHigh)),
               static_cast<unsigned long long>(poolAttr(pool, cudaMemPoolAttrReservedMemCurrent)),
               static_cast<unsigned long long>(poolAttr(pool, cudaMemPoolAttrReservedMemHigh)));
}

// Allocates `words` words on `stream` (from `pool` when given), fills them, copies them back and
// frees them on the same stream; returns the checksum of what came back after checking it.
std::uint64_t roundTrip(const char* label, cudaStream_t stream, size_t words, std::uint32_t tag,
                        cudaMemPool_t pool = nullptr) {
  std::uint32_t* dev = nullptr;
  if (pool != nullptr) {
    CHECK_CUDA(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&dev), words * 4, pool, stream));
  } else {
    CHECK_CUDA(cudaMallocAsync(reinterpret_cast<void**>(&dev), words * 4, stream));
  }
  EXPECT_TRUE(dev != nullptr, "%s: cudaMallocAsync returned a null pointer", label);
  std::fprintf(stderr, "%s: %zu bytes at %p\n", label, words * 4, static_cast<void*>(dev));
  fillPattern<<<64, 256, 0, stream>>>(dev, words, tag);
  CHECK_CUDA(cudaGetLastError());
  std::vector<std::uint32_t> host(words);
  CHECK_CUDA(cudaMemcpyAsync(host.data(), dev, words * 4, cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaFreeAsync(dev, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  for (size_t i = 0; i < words; ++i) {
    EXPECT_TRUE(host[i] == pattern(tag, static_cast<std::uint32_t>(i)),
                "%s: word %zu is 0x%08x, expected 0x%08x", label, i, host[i],
                pattern(tag, static_cast<std::uint32_t>(i)));
  }
  return fnv1a64(host.data(), words * 4);
}

// The sample's basic pattern: a and b copied in, c = a + b, a and b freed before c is copied back.
std::uint64_t vectorAddRound(cudaStream_t stream, const std::vector<float>& a, const std::vector<float>& b) {
  const int n = static_cast<int>(a.size());
  const size_t bytes = a.size() * sizeof(float);
  float *dA = nullptr, *dB = nullptr, *dC = nullptr;
  CHECK_CUDA(cudaMallocAsync(reinterpret_cast<void**>(&dA), bytes, stream));
  CHECK_CUDA(cudaMallocAsync(reinterpret_cast<void**>(&dB), bytes, stream));
  CHECK_CUDA(cudaMallocAsync(reinterpret_cast<void**>(&dC), bytes, stream));
  CHECK_CUDA(cudaMemcpyAsync(dA, a.data(), bytes, cudaMemcpyHostToDevice, stream));
  CHECK_CUDA(cudaMemcpyAsync(dB, b.data(), bytes, cudaMemcpyHostToDevice, stream));
  vectorAdd<<<(n + 255) / 256, 256, 0, stream>>>(dA, dB, dC, n);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaFreeAsync(dA, stream));
  CHECK_CUDA(cudaFreeAsync(dB, stream));
  std::vector<float> c(a.size());
  CHECK_CUDA(cudaMemcpyAsync(c.data(), dC, bytes, cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaFreeAsync(dC, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  for (int i = 0; i < n; ++i) {
    EXPECT_TRUE(c[i] == a[i] + b[i], "vectorAdd: c[%d] = %f, expected %f", i, static_cast<double>(c[i]),
                static_cast<double>(a[i] + b[i]));
  }
  return fnv1a64(c.data(), bytes);
}

struct Live {
  std::uint32_t* p = nullptr;
  size_t words = 0;
  std::uint32_t tag = 0;
  int iteration = -1;
};

}  // namespace

int main() {
  const int device = 0;
  CHECK_CUDA(cudaSetDevice(device));

  // 1. Support, the default pool and its defaults.
  int poolsSupported = -1;
  CHECK_CUDA(cudaDeviceGetAttribute(&poolsSupported, cudaDevAttrMemoryPoolsSupported, device));
  std::printf("cudaDevAttrMemoryPoolsSupported: %d\n", poolsSupported);
  EXPECT_TRUE(poolsSupported == 1, "memory pools are not supported (%d)", poolsSupported);

  cudaMemPool_t defaultPool = nullptr;
  CHECK_CUDA(cudaDeviceGetDefaultMemPool(&defaultPool, device));
  EXPECT_TRUE(defaultPool != nullptr, "cudaDeviceGetDefaultMemPool returned a null pool");
  cudaMemPool_t currentPool = nullptr;
  CHECK_CUDA(cudaDeviceGetMemPool(&currentPool, device));
  std::printf("current pool is the default pool: %s\n", yesNo(currentPool == defaultPool));
  std::printf("default pool release threshold: %llu\n",
              static_cast<unsigned long long>(poolAttr(defaultPool, cudaMemPoolAttrReleaseThreshold)));
  std::printf(
      "default pool reuse: followEventDependencies=%d allowOpportunistic=%d allowInternalDependencies=%d\n",
      poolIntAttr(defaultPool, cudaMemPoolReuseFollowEventDependencies),
      poolIntAttr(defaultPool, cudaMemPoolReuseAllowOpportunistic),
      poolIntAttr(defaultPool, cudaMemPoolReuseAllowInternalDependencies));

  cudaStream_t streamA = nullptr, streamB = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&streamA, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&streamB, cudaStreamNonBlocking));

  // 2. One buffer round trip, then the sample's vector add.
  std::printf("round trip on a created stream: fnv=%016llx\n",
              static_cast<unsigned long long>(roundTrip("created stream", streamA, 1u << 20, 0x5eed0001u)));
  const int nelem = 1 << 20;
  std::vector<float> a(nelem), b(nelem);
  for (int i = 0; i < nelem; ++i) {  // small integers: the float sums are exact
    a[i] = static_cast<float>(mix32(static_cast<std::uint32_t>(i)) % 1000u);
    b[i] = static_cast<float>(mix32(static_cast<std::uint32_t>(i) + 0x9000000u) % 1000u);
  }
  std::printf("vectorAdd, inputs freed before the result is copied: fnv=%016llx\n",
              static_cast<unsigned long long>(vectorAddRound(streamA, a, b)));

  // 3. Churn on two streams: every allocation stays live across the next allocation on its
  //    stream and is summed again just before its cudaFreeAsync.
  constexpr int kIterations = 200;
  unsigned long long* sums = nullptr;  // 2 per iteration: after the fill, before the free
  CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&sums), 2 * kIterations * sizeof(unsigned long long)));
  CHECK_CUDA(cudaMemset(sums, 0, 2 * kIterations * sizeof(unsigned long long)));
  CHECK_CUDA(cudaDeviceSynchronize());
  cudaStream_t churnStreams[2] = {streamA, streamB};
  Live carried[2];
  std::vector<Live> all;
  size_t churnBytes = 0;
  int perStream[2] = {0, 0};
  for (int it = 0; it < kIterations; ++it) {
    const std::uint32_t r = mix32(static_cast<std::uint32_t>(it) + 0x1000u);
    const int s = static_cast<int>((r >> 4) & 1u);
    size_t bytes = (size_t{1024} << (r % 14)) + ((r >> 8) & 0x3Fu) * 4;  // 1 KiB .. 8 MiB
    if (bytes > 8 * kMiB) bytes = 8 * kMiB;
    Live cur;
    cur.words = bytes / 4;
    cur.tag = mix32(r ^ 0xA5A5A5A5u);
    cur.iteration = it;
    CHECK_CUDA(cudaMallocAsync(reinterpret_cast<void**>(&cur.p), bytes, churnStreams[s]));
    EXPECT_TRUE(cur.p != nullptr, "churn %d: null pointer", it);
    fillPattern<<<64, 256, 0, churnStreams[s]>>>(cur.p, cur.words, cur.tag);
    sumWords<<<64, 256, 0, churnStreams[s]>>>(cur.p, cur.words, &sums[2 * it]);
    CHECK_CUDA(cudaGetLastError());
    if (carried[s].p != nullptr) {
      sumWords<<<64, 256, 0, churnStreams[s]>>>(carried[s].p, carried[s].words,
                                                &sums[2 * carried[s].iteration + 1]);
      CHECK_CUDA(cudaGetLastError());
      CHECK_CUDA(cudaFreeAsync(carried[s].p, churnStreams[s]));
    }
    carried[s] = cur;
    all.push_back(cur);
    churnBytes += bytes;
    ++perStream[s];
  }
  for (int s = 0; s < 2; ++s) {
    if (carried[s].p == nullptr) continue;
    sumWords<<<64, 256, 0, churnStreams[s]>>>(carried[s].p, carried[s].words,
                                              &sums[2 * carried[s].iteration + 1]);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaFreeAsync(carried[s].p, churnStreams[s]));
  }
  CHECK_CUDA(cudaStreamSynchronize(streamA));
  CHECK_CUDA(cudaStreamSynchronize(streamB));
  std::vector<unsigned long long> gotSums(2 * kIterations);
  CHECK_CUDA(
      cudaMemcpy(gotSums.data(), sums, gotSums.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
  for (const Live& block : all) {
    const unsigned long long want = expectedSum(block.tag, block.words);
    EXPECT_TRUE(gotSums[2 * block.iteration] == want, "churn %d: sum after fill %llu, expected %llu",
                block.iteration, gotSums[2 * block.iteration], want);
    EXPECT_TRUE(gotSums[2 * block.iteration + 1] == want, "churn %d: sum before free %llu, expected %llu",
                block.iteration, gotSums[2 * block.iteration + 1], want);
  }
  std::printf(
      "churn: %d allocations (%d on A, %d on B), %zu bytes, sums fnv=%016llx\n", kIterations, perStream[0],
      perStream[1], churnBytes,
      static_cast<unsigned long long>(fnv1a64(gotSums.data(), gotSums.size() * sizeof(unsigned long long))));
  CHECK_CUDA(cudaFree(sums));

  // Handoff: allocated and (slowly) filled on A, read and freed on B after cudaStreamWaitEvent.
  cudaEvent_t filled = nullptr;
  CHECK_CUDA(cudaEventCreateWithFlags(&filled, cudaEventDisableTiming));
  std::uint64_t handoffFnv = 0xcbf29ce484222325ull;
  for (int j = 0; j < 8; ++j) {
    const size_t words = (size_t{16} << 10) << (j % 4);  // 16K .. 128K words
    const std::uint32_t salt = mix32(static_cast<std::uint32_t>(j) + 0x2000u);
    std::uint32_t* dev = nullptr;
    CHECK_CUDA(cudaMallocAsync(reinterpret_cast<void**>(&dev), words * 4, streamA));
    slowFill<<<32, 128, 0, streamA>>>(dev, words, salt);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaEventRecord(filled, streamA));
    CHECK_CUDA(cudaStreamWaitEvent(streamB, filled, 0));
    std::vector<std::uint32_t> host(words);
    CHECK_CUDA(cudaMemcpyAsync(host.data(), dev, words * 4, cudaMemcpyDeviceToHost, streamB));
    CHECK_CUDA(cudaFreeAsync(dev, streamB));
    CHECK_CUDA(cudaStreamSynchronize(streamB));
    for (size_t i = 0; i < words; ++i) {
      EXPECT_TRUE(host[i] == slowValue(static_cast<std::uint32_t>(i), salt),
                  "handoff %d: word %zu is 0x%08x, expected 0x%08x", j, i, host[i],
                  slowValue(static_cast<std::uint32_t>(i), salt));
    }
    const std::uint64_t h = fnv1a64(host.data(), words * 4);
    handoffFnv = (handoffFnv ^ h) * 0x100000001b3ull;
  }
  std::printf("handoff A -> B (event), 8 rounds: fnv=%016llx\n", static_cast<unsigned long long>(handoffFnv));
  CHECK_CUDA(cudaStreamSynchronize(streamA));
  CHECK_CUDA(cudaEventDestroy(filled));

  // 4. The legacy default stream and the per-thread default stream.
  std::printf("round trip on stream 0: fnv=%016llx\n",
              static_cast<unsigned long long>(roundTrip("legacy stream", nullptr, 300000, 0x5eed0002u)));
  std::printf("round trip on cudaStreamPerThread: fnv=%016llx\n",
              static_cast<unsigned long long>(
                  roundTrip("per-thread stream", cudaStreamPerThread, 300001, 0x5eed0003u)));

  // 5. Pool attributes and statistics (nothing is live in the default pool here).
  CHECK_CUDA(cudaDeviceSynchronize());
  logPool("before statistics", defaultPool);
  std::uint64_t threshold = 64 * kMiB;
  CHECK_CUDA(cudaMemPoolSetAttribute(defaultPool, cudaMemPoolAttrReleaseThreshold, &threshold));
  std::printf("release threshold after set: %llu\n",
              static_cast<unsigned long long>(poolAttr(defaultPool, cudaMemPoolAttrReleaseThreshold)));

  void* four = nullptr;
  CHECK_CUDA(cudaMallocAsync(&four, 4 * kMiB, streamA));
  CHECK_CUDA(cudaMemsetAsync(four, 0x3C, 4 * kMiB, streamA));
  CHECK_CUDA(cudaStreamSynchronize(streamA));
  logPool("4 MiB live", defaultPool);
  {
    const std::uint64_t used = poolAttr(defaultPool, cudaMemPoolAttrUsedMemCurrent);
    const std::uint64_t reserved = poolAttr(defaultPool, cudaMemPoolAttrReservedMemCurrent);
    std::printf("4 MiB live: used >= 4 MiB: %s\n", yesNo(used >= 4 * kMiB));
    std::printf("4 MiB live: reserved >= used: %s\n", yesNo(reserved >= used));
    std::printf("4 MiB live: used high >= 4 MiB: %s\n",
                yesNo(poolAttr(defaultPool, cudaMemPoolAttrUsedMemHigh) >= 4 * kMiB));
    std::printf("4 MiB live: reserved high >= reserved: %s\n",
                yesNo(poolAttr(defaultPool, cudaMemPoolAttrReservedMemHigh) >= reserved));
  }
  CHECK_CUDA(cudaFreeAsync(four, streamA));
  CHECK_CUDA(cudaStreamSynchronize(streamA));
  logPool("after free", defaultPool);
  {
    const std::uint64_t used = poolAttr(defaultPool, cudaMemPoolAttrUsedMemCurrent);
    std::printf("after free: used == 0: %s\n", yesNo(used == 0));
    std::printf("after free: reserved >= used: %s\n",
                yesNo(poolAttr(defaultPool, cudaMemPoolAttrReservedMemCurrent) >= used));
  }
  // Watermarks can only be reset to zero; afterwards the used high mark is back below 4 MiB.
  std::uint64_t zero = 0;
  CHECK_CUDA(cudaMemPoolSetAttribute(defaultPool, cudaMemPoolAttrUsedMemHigh, &zero));
  CHECK_CUDA(cudaMemPoolSetAttribute(defaultPool, cudaMemPoolAttrReservedMemHigh, &zero));
  logPool("after watermark reset", defaultPool);
  std::printf("after watermark reset: used high < 4 MiB: %s\n",
              yesNo(poolAttr(defaultPool, cudaMemPoolAttrUsedMemHigh) < 4 * kMiB));
  void* one = nullptr;
  CHECK_CUDA(cudaMallocAsync(&one, kMiB, streamA));
  CHECK_CUDA(cudaStreamSynchronize(streamA));
  std::printf("1 MiB live: used high >= 1 MiB: %s\n",
              yesNo(poolAttr(defaultPool, cudaMemPoolAttrUsedMemHigh) >= kMiB));
  std::printf("1 MiB live: used high < 4 MiB: %s\n",
              yesNo(poolAttr(defaultPool, cudaMemPoolAttrUsedMemHigh) < 4 * kMiB));
  CHECK_CUDA(cudaFreeAsync(one, streamA));
  CHECK_CUDA(cudaStreamSynchronize(streamA));

  // The sample's second part: a release threshold of UINT64_MAX keeps the pool's memory across
  // synchronizations; 20 timed rounds (the time goes to stderr only).
  threshold = UINT64_MAX;
  CHECK_CUDA(cudaMemPoolSetAttribute(defaultPool, cudaMemPoolAttrReleaseThreshold, &threshold));
  std::printf("release threshold after set: %llu\n",
              static_cast<unsigned long long>(poolAttr(defaultPool, cudaMemPoolAttrReleaseThreshold)));
  cudaEvent_t start = nullptr, end = nullptr;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&end));
  CHECK_CUDA(cudaEventRecord(start, streamA));
  std::uint64_t lastFnv = 0;
  for (int i = 0; i < 20; ++i) lastFnv = vectorAddRound(streamA, a, b);
  CHECK_CUDA(cudaEventRecord(end, streamA));
  CHECK_CUDA(cudaEventSynchronize(end));
  float ms = -1.0f;
  CHECK_CUDA(cudaEventElapsedTime(&ms, start, end));
  std::fprintf(stderr, "20 vectorAdd rounds with threshold UINT64_MAX: %.3f ms\n", static_cast<double>(ms));
  EXPECT_TRUE(ms >= 0.0f, "elapsed time %f < 0", static_cast<double>(ms));
  std::printf("20 vectorAdd rounds, threshold UINT64_MAX: fnv=%016llx\n",
              static_cast<unsigned long long>(lastFnv));
  logPool("after 20 rounds", defaultPool);
  const std::uint64_t reservedKept = poolAttr(defaultPool, cudaMemPoolAttrReservedMemCurrent);
  std::printf("threshold UINT64_MAX: reserved kept after sync (> 0): %s\n", yesNo(reservedKept > 0));
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(end));

  // 6. Trim (nothing is live).
  CHECK_CUDA(cudaDeviceSynchronize());
  EXPECT_ERROR("cudaMemPoolTrimTo(default, 0)", cudaMemPoolTrimTo(defaultPool, 0), cudaSuccess);
  logPool("after trim", defaultPool);
  std::printf("after trim: reserved <= before: %s\n",
              yesNo(poolAttr(defaultPool, cudaMemPoolAttrReservedMemCurrent) <= reservedKept));
  threshold = 0;
  CHECK_CUDA(cudaMemPoolSetAttribute(defaultPool, cudaMemPoolAttrReleaseThreshold, &threshold));
  std::printf("release threshold restored: %llu\n",
              static_cast<unsigned long long>(poolAttr(defaultPool, cudaMemPoolAttrReleaseThreshold)));

  // 7. An explicit pool.
  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t pool = nullptr;
  CHECK_CUDA(cudaMemPoolCreate(&pool, &props));
  EXPECT_TRUE(pool != nullptr, "cudaMemPoolCreate returned a null pool");
  std::printf("explicit pool differs from the default: %s\n", yesNo(pool != defaultPool));
  std::printf("explicit pool release threshold: %llu\n",
              static_cast<unsigned long long>(poolAttr(pool, cudaMemPoolAttrReleaseThreshold)));
  std::printf(
      "round trip from the explicit pool: fnv=%016llx\n",
      static_cast<unsigned long long>(roundTrip("explicit pool", streamB, 700000, 0x5eed0004u, pool)));
  {
    std::uint32_t* dev = nullptr;
    const size_t words = 3 * kMiB / 4;
    CHECK_CUDA(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&dev), words * 4, pool, streamB));
    fillPattern<<<64, 256, 0, streamB>>>(dev, words, 0x5eed0005u);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaStreamSynchronize(streamB));
    logPool("explicit, 3 MiB live", pool);
    std::printf("explicit pool, 3 MiB live: used >= 3 MiB: %s\n",
                yesNo(poolAttr(pool, cudaMemPoolAttrUsedMemCurrent) >= 3 * kMiB));
    std::printf("explicit pool, 3 MiB live: default pool used == 0: %s\n",
                yesNo(poolAttr(defaultPool, cudaMemPoolAttrUsedMemCurrent) == 0));
    CHECK_CUDA(cudaFreeAsync(dev, streamB));
    CHECK_CUDA(cudaStreamSynchronize(streamB));
    std::printf("explicit pool after free: used == 0: %s\n",
                yesNo(poolAttr(pool, cudaMemPoolAttrUsedMemCurrent) == 0));
  }
  cudaMemAccessDesc access = {};
  access.location.type = cudaMemLocationTypeDevice;
  access.location.id = device;
  access.flags = cudaMemAccessFlagsProtReadWrite;
  EXPECT_ERROR("cudaMemPoolSetAccess(device 0, ReadWrite)", cudaMemPoolSetAccess(pool, &access, 1),
               cudaSuccess);
  cudaMemLocation location = {};
  location.type = cudaMemLocationTypeDevice;
  location.id = device;
  cudaMemAccessFlags flags = cudaMemAccessFlagsProtNone;
  CHECK_CUDA(cudaMemPoolGetAccess(&flags, pool, &location));
  std::printf("cudaMemPoolGetAccess(device 0): %d\n", static_cast<int>(flags));
  // The owning device's access cannot be revoked.
  access.flags = cudaMemAccessFlagsProtNone;
  EXPECT_FAILS_CLEARED("cudaMemPoolSetAccess(owning device, None)", cudaMemPoolSetAccess(pool, &access, 1));
  flags = cudaMemAccessFlagsProtNone;
  CHECK_CUDA(cudaMemPoolGetAccess(&flags, pool, &location));
  std::printf("cudaMemPoolGetAccess(device 0) after the refused revoke: %d\n", static_cast<int>(flags));

  // 8. The explicit pool as the device's current pool; cudaMallocAsync then draws from it.
  CHECK_CUDA(cudaDeviceSetMemPool(device, pool));
  currentPool = nullptr;
  CHECK_CUDA(cudaDeviceGetMemPool(&currentPool, device));
  std::printf("cudaDeviceGetMemPool after cudaDeviceSetMemPool: same: %s\n", yesNo(currentPool == pool));
  {
    std::uint32_t* dev = nullptr;
    const size_t words = 2 * kMiB / 4;
    CHECK_CUDA(cudaMallocAsync(reinterpret_cast<void**>(&dev), words * 4, streamA));
    fillPattern<<<64, 256, 0, streamA>>>(dev, words, 0x5eed0006u);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaStreamSynchronize(streamA));
    std::printf("current = explicit, 2 MiB live: explicit used >= 2 MiB: %s\n",
                yesNo(poolAttr(pool, cudaMemPoolAttrUsedMemCurrent) >= 2 * kMiB));
    std::printf("current = explicit, 2 MiB live: default used == 0: %s\n",
                yesNo(poolAttr(defaultPool, cudaMemPoolAttrUsedMemCurrent) == 0));
    std::vector<std::uint32_t> host(words);
    CHECK_CUDA(cudaMemcpyAsync(host.data(), dev, words * 4, cudaMemcpyDeviceToHost, streamA));
    CHECK_CUDA(cudaFreeAsync(dev, streamA));
    CHECK_CUDA(cudaStreamSynchronize(streamA));
    for (size_t i = 0; i < words; ++i) {
      EXPECT_TRUE(host[i] == pattern(0x5eed0006u, static_cast<std::uint32_t>(i)),
                  "current-pool allocation: word %zu is 0x%08x", i, host[i]);
    }
    std::printf("current = explicit: round trip fnv=%016llx\n",
                static_cast<unsigned long long>(fnv1a64(host.data(), words * 4)));
  }
  CHECK_CUDA(cudaDeviceSetMemPool(device, defaultPool));
  currentPool = nullptr;
  CHECK_CUDA(cudaDeviceGetMemPool(&currentPool, device));
  std::printf("current pool restored to the default: %s\n", yesNo(currentPool == defaultPool));
  CHECK_CUDA(cudaDeviceSynchronize());
  EXPECT_ERROR("cudaMemPoolTrimTo(explicit, 0)", cudaMemPoolTrimTo(pool, 0), cudaSuccess);
  EXPECT_ERROR("cudaMemPoolDestroy(explicit)", cudaMemPoolDestroy(pool), cudaSuccess);

  // 9. Error paths.
  EXPECT_ERROR("initial cudaGetLastError", cudaGetLastError(), cudaSuccess);
  EXPECT_FAILS_CLEARED("cudaFreeAsync(0x1234)", cudaFreeAsync(reinterpret_cast<void*>(0x1234), streamA));
  EXPECT_FAILS_CLEARED("cudaMallocAsync(devPtr = nullptr)",
                       cudaMallocAsync(static_cast<void**>(nullptr), 1024, streamA));
  cudaMemPool_t invalidDevicePool = nullptr;
  EXPECT_FAILS_CLEARED("cudaDeviceGetDefaultMemPool(device 9999)",
                       cudaDeviceGetDefaultMemPool(&invalidDevicePool, 9999));

  // 10. A zero-byte request (the native run fixes the result; a pointer it returns is freed).
  {
    void* empty = nullptr;
    const cudaError_t status = cudaMallocAsync(&empty, 0, streamA);
    std::printf("cudaMallocAsync(0 bytes): %s\n", cudaGetErrorName(status));
    if (status == cudaSuccess)
      std::printf("cudaMallocAsync(0 bytes): pointer null: %s\n", yesNo(empty == nullptr));
    if (status == cudaSuccess && empty != nullptr) CHECK_CUDA(cudaFreeAsync(empty, streamA));
    std::printf("cudaMallocAsync(0 bytes): cudaGetLastError -> %s\n", cudaGetErrorName(cudaGetLastError()));
    CHECK_CUDA(cudaStreamSynchronize(streamA));
  }

  // Nothing above is sticky: the streams still allocate.
  std::printf("round trip after the errors: fnv=%016llx\n",
              static_cast<unsigned long long>(roundTrip("after errors", streamA, 4096, 0x5eed0007u)));
  CHECK_CUDA(cudaStreamDestroy(streamA));
  CHECK_CUDA(cudaStreamDestroy(streamB));
  CHECK_CUDA(cudaDeviceSynchronize());
  std::printf("stream_ordered_alloc: done\n");
  return 0;
}
