// Probe: managed memory patterns the suite does not exercise.
//   A  pointer-linked structures in managed memory: a list threaded through a pool in a shuffled
//      order and a list of separately allocated nodes, walked by a kernel; a list built by a kernel
//      and walked by the host;
//   B  a managed table of cudaMalloc'd pointers (batched-GEMM style) and a managed struct of
//      pointers to other managed allocations, passed by value;
//   C  cudaMallocManaged(cudaMemAttachHost), cudaStreamAttachMemAsync single/host/global, the host
//      writing host-attached memory while a kernel runs on another stream; attaching singly to the
//      NULL stream and a partial length (error names printed);
//   D  cudaMemAdvise / cudaMemPrefetchAsync (CUDA 13 cudaMemLocation forms) and what
//      cudaMemRangeGetAttribute(s) answers for whole and partial ranges, set and unset; the
//      error names of these calls on cudaMalloc memory;
//   E  copies naming managed memory: managed<->managed, managed<->pageable, cudaMemcpy2D between
//      managed and pitched device memory, cudaMemsetAsync + kernel + cudaMemcpyAsync ordering,
//      cudaMemset2D on managed memory;
//   F  cudaPointerGetAttributes on every kind of pointer;
//   G  a linear texture over managed memory (error name printed; used if created).
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tests/gpu/programs/check.cuh"

#define SHOW_ERROR(label, call)                                          \
  do {                                                                   \
    const cudaError_t show_error_got_ = (call);                          \
    std::printf("%s: %s\n", (label), cudaGetErrorName(show_error_got_)); \
    (void)cudaGetLastError();                                            \
  } while (0)

namespace {

struct Node {
  int value;
  int order;  // written by the walking kernel: position in the walk
  Node* next;
};

__global__ void walk(Node* head, long long* sum, int* length) {
  long long s = 0;
  int n = 0;
  for (Node* p = head; p != nullptr; p = p->next) {
    s += p->value;
    p->order = n++;
  }
  *sum = s;
  *length = n;
}

// Builds a list from pool[0..n) in reverse index order: head = pool[n-1] -> ... -> pool[0].
__global__ void build(Node* pool, int n, Node** head) {
  Node* h = nullptr;
  for (int i = 0; i < n; ++i) {
    pool[i].value = i * i - 7;
    pool[i].order = -1;
    pool[i].next = h;
    h = &pool[i];
  }
  *head = h;
}

__global__ void sumTable(float* const* table, int count, int n, float* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float s = 0;
  for (int t = 0; t < count; ++t) s += table[t][i];
  out[i] = s;
}

struct Bundle {
  int* counts;
  double* weights;
  unsigned char* flags;
  int n;
};

__global__ void useBundle(Bundle b) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= b.n) return;
  b.counts[i] += i;
  b.weights[i] *= 2.0;
  b.flags[i] = static_cast<unsigned char>(b.counts[i] & 0xff);
}

__global__ void addOne(int* p, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) p[i] += 1;
}

__global__ void fillWords(std::uint32_t* p, int n, std::uint32_t salt) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    p[i] = mix32(i) ^ salt;
}

__device__ unsigned long long nanoseconds() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Adds one to every element, then keeps the GPU busy for about `ns` nanoseconds.
__global__ void slowAddOne(int* p, int n, unsigned long long ns) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) p[i] += 1;
  if (threadIdx.x == 0) {
    const unsigned long long start = nanoseconds();
    while (nanoseconds() - start < ns) {
    }
  }
}

__global__ void fetchInts(cudaTextureObject_t tex, int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex1Dfetch<int>(tex, i) + 1;
}

__device__ int deviceSymbol[16];

// ---------------------------------------------------------------- A
void linkedLists() {
  constexpr int kNodes = 5000;
  Node* pool = nullptr;
  CHECK_CUDA(cudaMallocManaged(&pool, kNodes * sizeof(Node)));
  std::vector<int> perm(kNodes);
  for (int i = 0; i < kNodes; ++i) perm[i] = i;
  for (int i = kNodes - 1; i > 0; --i) std::swap(perm[i], perm[mix32(i) % (i + 1)]);
  long long want = 0;
  for (int i = 0; i < kNodes; ++i) {
    pool[perm[i]].value = static_cast<int>(mix32(i + 17) % 100000) - 50000;
    pool[perm[i]].order = -1;
    pool[perm[i]].next = i + 1 < kNodes ? &pool[perm[i + 1]] : nullptr;
    want += pool[perm[i]].value;
  }
  long long* sum = nullptr;
  int* length = nullptr;
  CHECK_CUDA(cudaMallocManaged(&sum, sizeof *sum));
  CHECK_CUDA(cudaMallocManaged(&length, sizeof *length));
  walk<<<1, 1>>>(&pool[perm[0]], sum, length);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  EXPECT_TRUE(*sum == want && *length == kNodes, "pool walk sum %lld length %d", *sum, *length);
  for (int i = 0; i < kNodes; ++i)
    EXPECT_TRUE(pool[perm[i]].order == i, "pool node %d order %d", i, pool[perm[i]].order);
  std::printf("A kernel walked a shuffled list in a managed pool: %d nodes, sum=%lld\n", *length, *sum);

  // Separately allocated nodes.
  constexpr int kSeparate = 64;
  std::vector<Node*> nodes(kSeparate);
  for (Node*& node : nodes) CHECK_CUDA(cudaMallocManaged(&node, sizeof(Node)));
  want = 0;
  for (int i = 0; i < kSeparate; ++i) {
    nodes[i]->value = i * 1000 + 1;
    nodes[i]->order = -1;
    nodes[i]->next = i + 1 < kSeparate ? nodes[i + 1] : nullptr;
    want += nodes[i]->value;
  }
  walk<<<1, 1>>>(nodes[0], sum, length);
  CHECK_CUDA(cudaDeviceSynchronize());
  EXPECT_TRUE(*sum == want && *length == kSeparate, "separate walk sum %lld length %d", *sum, *length);
  for (int i = 0; i < kSeparate; ++i) EXPECT_TRUE(nodes[i]->order == i, "separate node %d", i);
  std::printf("A kernel walked %d separately allocated managed nodes: sum=%lld\n", *length, *sum);
  for (Node* node : nodes) CHECK_CUDA(cudaFree(node));

  // A list built by a kernel, walked by the host.
  Node** head = nullptr;
  CHECK_CUDA(cudaMallocManaged(&head, sizeof *head));
  *head = nullptr;
  build<<<1, 1>>>(pool, 1000, head);
  CHECK_CUDA(cudaDeviceSynchronize());
  int count = 0, expectedIndex = 999;
  long long hostSum = 0;
  for (Node* p = *head; p != nullptr; p = p->next, ++count, --expectedIndex) {
    EXPECT_TRUE(p == &pool[expectedIndex], "host walk: node %d is not pool[%d]", count, expectedIndex);
    hostSum += p->value;
  }
  EXPECT_TRUE(count == 1000, "host walk length %d", count);
  std::printf("A host walked a kernel-built list: %d nodes, sum=%lld\n", count, hostSum);
  CHECK_CUDA(cudaFree(head));
  CHECK_CUDA(cudaFree(pool));
  CHECK_CUDA(cudaFree(sum));
  CHECK_CUDA(cudaFree(length));
}

// ---------------------------------------------------------------- B
void pointerTables() {
  constexpr int kTables = 6, kN = 4096;
  float** table = nullptr;
  CHECK_CUDA(cudaMallocManaged(&table, kTables * sizeof(float*)));
  std::vector<float> host(kN);
  for (int t = 0; t < kTables; ++t) {
    CHECK_CUDA(cudaMalloc(&table[t], kN * sizeof(float)));
    for (int i = 0; i < kN; ++i) host[i] = static_cast<float>((i * (t + 1)) % 97);
    CHECK_CUDA(cudaMemcpy(table[t], host.data(), kN * sizeof(float), cudaMemcpyHostToDevice));
  }
  float* out = nullptr;
  CHECK_CUDA(cudaMallocManaged(&out, kN * sizeof(float)));
  sumTable<<<(kN + 255) / 256, 256>>>(table, kTables, kN, out);
  CHECK_CUDA(cudaDeviceSynchronize());
  double total = 0;
  for (int i = 0; i < kN; ++i) {
    float want = 0;
    for (int t = 0; t < kTables; ++t) want += static_cast<float>((i * (t + 1)) % 97);
    EXPECT_TRUE(out[i] == want, "table sum %d", i);
    total += out[i];
  }
  std::printf("B managed table of %d device pointers: total=%.0f\n", kTables, total);
  for (int t = 0; t < kTables; ++t) CHECK_CUDA(cudaFree(table[t]));
  CHECK_CUDA(cudaFree(table));
  CHECK_CUDA(cudaFree(out));

  Bundle b{};
  b.n = 3000;
  CHECK_CUDA(cudaMallocManaged(&b.counts, b.n * sizeof(int)));
  CHECK_CUDA(cudaMallocManaged(&b.weights, b.n * sizeof(double)));
  CHECK_CUDA(cudaMallocManaged(&b.flags, b.n));
  for (int i = 0; i < b.n; ++i) {
    b.counts[i] = 3 * i;
    b.weights[i] = i * 0.25;
    b.flags[i] = 0;
  }
  useBundle<<<(b.n + 127) / 128, 128>>>(b);
  CHECK_CUDA(cudaDeviceSynchronize());
  for (int i = 0; i < b.n; ++i) {
    EXPECT_TRUE(b.counts[i] == 4 * i && b.weights[i] == i * 0.5 && b.flags[i] == ((4 * i) & 0xff),
                "bundle %d", i);
  }
  std::printf("B struct of managed pointers by value: counts fnv=%016llx flags fnv=%016llx\n",
              static_cast<unsigned long long>(fnv1a64(b.counts, b.n * sizeof(int))),
              static_cast<unsigned long long>(fnv1a64(b.flags, b.n)));
  CHECK_CUDA(cudaFree(b.counts));
  CHECK_CUDA(cudaFree(b.weights));
  CHECK_CUDA(cudaFree(b.flags));
}

// ---------------------------------------------------------------- C
void attachments() {
  constexpr int kN = 100000;
  int* data = nullptr;
  CHECK_CUDA(cudaMallocManaged(&data, kN * sizeof(int), cudaMemAttachHost));
  for (int i = 0; i < kN; ++i) data[i] = i;
  cudaStream_t stream, other;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamAttachMemAsync(stream, data, 0, cudaMemAttachSingle));
  addOne<<<64, 256, 0, stream>>>(data, kN);
  CHECK_CUDA(cudaStreamSynchronize(stream));
  int wrong = 0;
  for (int i = 0; i < kN; ++i) wrong += data[i] != i + 1;
  EXPECT_TRUE(wrong == 0, "attach single: %d wrong", wrong);
  std::printf("C host-attached allocation attached singly to a stream, kernel, stream sync: %d wrong\n",
              wrong);

  // Back to the host; the host writes it while a kernel runs on another stream with its own data.
  int* busy = nullptr;
  CHECK_CUDA(cudaMallocManaged(&busy, 1024 * sizeof(int)));
  for (int i = 0; i < 1024; ++i) busy[i] = 5;
  CHECK_CUDA(cudaStreamAttachMemAsync(other, busy, 0, cudaMemAttachSingle));
  CHECK_CUDA(cudaStreamAttachMemAsync(stream, data, 0, cudaMemAttachHost));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_CUDA(cudaStreamSynchronize(other));
  slowAddOne<<<1, 256, 0, other>>>(busy, 1024, 50000000ull);  // about 50 ms
  for (int i = 0; i < kN; ++i) data[i] *= 2;                  // host-attached: legal while `other` runs
  CHECK_CUDA(cudaStreamSynchronize(other));
  wrong = 0;
  for (int i = 0; i < 1024; ++i) wrong += busy[i] != 6;
  for (int i = 0; i < kN; ++i) wrong += data[i] != 2 * (i + 1);
  EXPECT_TRUE(wrong == 0, "host writes during another stream's kernel: %d wrong", wrong);
  std::printf("C host wrote host-attached memory while another stream's kernel ran: %d wrong\n", wrong);

  // Global again; a kernel on the legacy stream.
  CHECK_CUDA(cudaStreamAttachMemAsync(stream, data, 0, cudaMemAttachGlobal));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  addOne<<<64, 256>>>(data, kN);
  CHECK_CUDA(cudaDeviceSynchronize());
  wrong = 0;
  for (int i = 0; i < kN; ++i) wrong += data[i] != 2 * (i + 1) + 1;
  EXPECT_TRUE(wrong == 0, "attach global: %d wrong", wrong);
  std::printf("C attached globally, kernel on the legacy stream: %d wrong\n", wrong);

  SHOW_ERROR("C attach singly to the NULL stream",
             cudaStreamAttachMemAsync(nullptr, data, 0, cudaMemAttachSingle));
  SHOW_ERROR("C attach the whole allocation by its length",
             cudaStreamAttachMemAsync(stream, data, kN * sizeof(int), cudaMemAttachSingle));
  SHOW_ERROR("C attach part of an allocation",
             cudaStreamAttachMemAsync(stream, data, 4096, cudaMemAttachSingle));
  SHOW_ERROR("C attach with flags 0", cudaStreamAttachMemAsync(stream, data, 0, 0));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_CUDA(cudaFree(busy));
  int* unused = nullptr;
  SHOW_ERROR("C cudaMallocManaged with flags 0", cudaMallocManaged(&unused, 64, 0));
  if (unused != nullptr) CHECK_CUDA(cudaFree(unused));
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaStreamDestroy(other));
  CHECK_CUDA(cudaFree(data));
}

// ---------------------------------------------------------------- D
void printRange(const char* label, const void* p, size_t bytes) {
  int readMostly = -9, preferred = -9, lastPrefetch = -9, preferredId = -9, lastId = -9;
  int accessedBy[3] = {-9, -9, -9};
  cudaMemLocationType preferredType = static_cast<cudaMemLocationType>(-9),
                      lastType = static_cast<cudaMemLocationType>(-9);
  const cudaError_t e1 = cudaMemRangeGetAttribute(&readMostly, 4, cudaMemRangeAttributeReadMostly, p, bytes);
  const cudaError_t e2 =
      cudaMemRangeGetAttribute(&preferred, 4, cudaMemRangeAttributePreferredLocation, p, bytes);
  const cudaError_t e3 =
      cudaMemRangeGetAttribute(accessedBy, sizeof accessedBy, cudaMemRangeAttributeAccessedBy, p, bytes);
  const cudaError_t e4 =
      cudaMemRangeGetAttribute(&lastPrefetch, 4, cudaMemRangeAttributeLastPrefetchLocation, p, bytes);
  const cudaError_t e5 = cudaMemRangeGetAttribute(&preferredType, sizeof preferredType,
                                                  cudaMemRangeAttributePreferredLocationType, p, bytes);
  const cudaError_t e6 =
      cudaMemRangeGetAttribute(&preferredId, 4, cudaMemRangeAttributePreferredLocationId, p, bytes);
  const cudaError_t e7 = cudaMemRangeGetAttribute(&lastType, sizeof lastType,
                                                  cudaMemRangeAttributeLastPrefetchLocationType, p, bytes);
  const cudaError_t e8 =
      cudaMemRangeGetAttribute(&lastId, 4, cudaMemRangeAttributeLastPrefetchLocationId, p, bytes);
  (void)cudaGetLastError();
  const cudaError_t errors[8] = {e1, e2, e3, e4, e5, e6, e7, e8};
  bool allOk = true;
  for (cudaError_t e : errors) allOk = allOk && e == cudaSuccess;
  if (!allOk) {
    std::printf("D %s: errors", label);
    for (cudaError_t e : errors) std::printf(" %s", cudaGetErrorName(e));
    std::printf("\n");
  }
  // Ids are meaningful only for device and NUMA types (documented): print them only then.
  const int shownPreferredId = preferredType == cudaMemLocationTypeDevice ? preferredId : -99;
  const int shownLastId = lastType == cudaMemLocationTypeDevice ? lastId : -99;
  std::printf(
      "D %s: readMostly=%d preferred=%d accessedBy=[%d,%d,%d] lastPrefetch=%d preferredType=%d(id %d) "
      "lastPrefetchType=%d(id %d)\n",
      label, readMostly, preferred, accessedBy[0], accessedBy[1], accessedBy[2], lastPrefetch,
      static_cast<int>(preferredType), shownPreferredId, static_cast<int>(lastType), shownLastId);
}

void adviceAndPrefetch() {
  constexpr size_t kHalf = 2u << 20, kBytes = 2 * kHalf;
  constexpr int kWords = static_cast<int>(kBytes / sizeof(std::uint32_t));
  std::uint32_t* p = nullptr;
  CHECK_CUDA(cudaMallocManaged(&p, kBytes));
  const cudaMemLocation device{cudaMemLocationTypeDevice, 0};
  const cudaMemLocation host{cudaMemLocationTypeHost, 0};
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  printRange("fresh allocation", p, kBytes);

  CHECK_CUDA(cudaMemAdvise(p, kHalf, cudaMemAdviseSetReadMostly, device));
  CHECK_CUDA(cudaMemAdvise(p, kBytes, cudaMemAdviseSetPreferredLocation, device));
  CHECK_CUDA(cudaMemAdvise(p, kBytes, cudaMemAdviseSetAccessedBy, device));
  printRange("advised, whole", p, kBytes);
  printRange("advised, first half", p, kHalf);

  CHECK_CUDA(cudaMemPrefetchAsync(p, kBytes, device, 0, stream));
  fillWords<<<128, 256, 0, stream>>>(p, kWords, 0xABCDu);
  CHECK_CUDA(cudaStreamSynchronize(stream));
  printRange("prefetched to the device", p, kBytes);

  CHECK_CUDA(
      cudaMemAdvise(p + kHalf / sizeof(std::uint32_t), kHalf, cudaMemAdviseSetPreferredLocation, host));
  CHECK_CUDA(cudaMemPrefetchAsync(p, kHalf, host, 0, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  printRange("second half prefers host, first half prefetched to host; whole", p, kBytes);
  printRange("                                                  first half", p, kHalf);
  printRange("                                                 second half",
             p + kHalf / sizeof(std::uint32_t), kHalf);
  int wrong = 0;
  for (int i = 0; i < kWords; ++i) wrong += p[i] != (mix32(i) ^ 0xABCDu);
  EXPECT_TRUE(wrong == 0, "values after prefetches: %d wrong", wrong);
  std::printf("D values after advice and prefetches: %d wrong\n", wrong);

  CHECK_CUDA(cudaMemAdvise(p, kBytes, cudaMemAdviseUnsetReadMostly, device));
  CHECK_CUDA(cudaMemAdvise(p, kBytes, cudaMemAdviseUnsetPreferredLocation, device));
  CHECK_CUDA(cudaMemAdvise(p, kBytes, cudaMemAdviseUnsetAccessedBy, device));
  printRange("all advice unset", p, kBytes);

  // The plural form, three attributes at once.
  int readMostly = -9, preferred = -9, lastPrefetch = -9;
  void* data[3] = {&readMostly, &preferred, &lastPrefetch};
  size_t sizes[3] = {4, 4, 4};
  cudaMemRangeAttribute attributes[3] = {cudaMemRangeAttributeReadMostly,
                                         cudaMemRangeAttributePreferredLocation,
                                         cudaMemRangeAttributeLastPrefetchLocation};
  SHOW_ERROR("D cudaMemRangeGetAttributes", cudaMemRangeGetAttributes(data, sizes, attributes, 3, p, kHalf));
  std::printf("D   readMostly=%d preferred=%d lastPrefetch=%d\n", readMostly, preferred, lastPrefetch);

  // The same calls on plain device memory.
  void* plain = nullptr;
  CHECK_CUDA(cudaMalloc(&plain, kHalf));
  SHOW_ERROR("D cudaMemPrefetchAsync of cudaMalloc memory",
             cudaMemPrefetchAsync(plain, kHalf, device, 0, stream));
  SHOW_ERROR("D cudaMemAdvise of cudaMalloc memory",
             cudaMemAdvise(plain, kHalf, cudaMemAdviseSetReadMostly, device));
  SHOW_ERROR("D cudaMemRangeGetAttribute of cudaMalloc memory",
             cudaMemRangeGetAttribute(&readMostly, 4, cudaMemRangeAttributeReadMostly, plain, kHalf));
  SHOW_ERROR("D cudaMemRangeGetAttribute with dataSize 8",
             cudaMemRangeGetAttribute(data, 8, cudaMemRangeAttributeReadMostly, p, kHalf));
  SHOW_ERROR("D cudaMemPrefetchAsync past the allocation's end",
             cudaMemPrefetchAsync(p, kBytes + kHalf, device, 0, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_CUDA(cudaFree(plain));
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFree(p));
}

// ---------------------------------------------------------------- E
void copies() {
  constexpr int kN = 250003;
  constexpr size_t kBytes = kN * sizeof(std::uint32_t);
  std::uint32_t *m1 = nullptr, *m2 = nullptr, *device = nullptr;
  CHECK_CUDA(cudaMallocManaged(&m1, kBytes));
  CHECK_CUDA(cudaMallocManaged(&m2, kBytes));
  CHECK_CUDA(cudaMalloc(&device, kBytes));
  std::vector<std::uint32_t> pageable(kN), back(kN);
  for (int i = 0; i < kN; ++i) pageable[i] = mix32(i + 1234);

  CHECK_CUDA(cudaMemcpy(m1, pageable.data(), kBytes, cudaMemcpyDefault));  // pageable -> managed
  CHECK_CUDA(cudaMemcpy(m2, m1, kBytes, cudaMemcpyDefault));               // managed -> managed
  CHECK_CUDA(cudaMemcpy(back.data(), m2, kBytes, cudaMemcpyDefault));      // managed -> pageable
  EXPECT_TRUE(back == pageable, "managed round trip");
  CHECK_CUDA(
      cudaMemcpy(m2 + 1, m1, 1000 * sizeof(std::uint32_t), cudaMemcpyDeviceToDevice));  // explicit kind
  CHECK_CUDA(cudaDeviceSynchronize());  // a device-to-device copy need not be complete on return
  int wrong = 0;
  for (int i = 0; i < 1000; ++i) wrong += m2[i + 1] != pageable[i];
  EXPECT_TRUE(wrong == 0, "managed d2d: %d wrong", wrong);
  std::printf("E pageable->managed->managed->pageable (default) and managed d2d (explicit): %d wrong\n",
              wrong);

  // cudaMemcpy2D between managed (packed rows) and pitched device memory.
  constexpr int kRows = 100, kCols = 250;
  std::uint32_t* pitched = nullptr;
  size_t pitch = 0;
  CHECK_CUDA(
      cudaMallocPitch(reinterpret_cast<void**>(&pitched), &pitch, kCols * sizeof(std::uint32_t), kRows));
  CHECK_CUDA(cudaMemcpy2D(pitched, pitch, m1, kCols * sizeof(std::uint32_t), kCols * sizeof(std::uint32_t),
                          kRows, cudaMemcpyDefault));
  CHECK_CUDA(cudaMemset(m2, 0, kBytes));
  CHECK_CUDA(cudaMemcpy2D(m2, (kCols + 6) * sizeof(std::uint32_t), pitched, pitch,
                          kCols * sizeof(std::uint32_t), kRows, cudaMemcpyDefault));
  CHECK_CUDA(cudaDeviceSynchronize());
  wrong = 0;
  for (int r = 0; r < kRows; ++r)
    for (int c = 0; c < kCols + 6; ++c)
      wrong += m2[r * (kCols + 6) + c] != (c < kCols ? pageable[r * kCols + c] : 0u);
  EXPECT_TRUE(wrong == 0, "2D with managed: %d wrong", wrong);
  std::printf("E cudaMemcpy2D managed<->pitched device: %d wrong\n", wrong);

  // Ordering on one stream: memset managed, kernel writes part of it, async copy to pinned.
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::uint32_t* pinned = nullptr;
  CHECK_CUDA(cudaMallocHost(&pinned, kBytes));
  CHECK_CUDA(cudaMemsetAsync(m1, 0x7F, kBytes, stream));
  fillWords<<<64, 256, 0, stream>>>(m1 + 5000, 10000, 0x55u);
  CHECK_CUDA(cudaMemcpyAsync(pinned, m1, kBytes, cudaMemcpyDefault, stream));
  CHECK_CUDA(cudaMemcpyAsync(device, m1, kBytes, cudaMemcpyDefault, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_CUDA(cudaMemcpy(back.data(), device, kBytes, cudaMemcpyDeviceToHost));
  wrong = 0;
  for (int i = 0; i < kN; ++i) {
    const std::uint32_t want = (i >= 5000 && i < 15000) ? (mix32(i - 5000) ^ 0x55u) : 0x7F7F7F7Fu;
    wrong += (pinned[i] != want) + (back[i] != want);
  }
  EXPECT_TRUE(wrong == 0, "stream ordering with managed: %d wrong", wrong);
  std::printf("E memsetAsync + kernel + copies of managed memory on one stream: %d wrong\n", wrong);

  // cudaMemset2D on managed memory treated as pitched rows.
  const cudaError_t memset2D =
      cudaMemset2D(m2, 64 * sizeof(std::uint32_t), 0x01, 16 * sizeof(std::uint32_t), 10);
  std::printf("E cudaMemset2D on managed memory: %s\n", cudaGetErrorName(memset2D));
  (void)cudaGetLastError();
  if (memset2D == cudaSuccess) {
    CHECK_CUDA(cudaDeviceSynchronize());
    wrong = 0;
    for (int r = 0; r < 10; ++r)
      for (int c = 0; c < 16; ++c) wrong += m2[r * 64 + c] != 0x01010101u;
    EXPECT_TRUE(wrong == 0, "memset2D managed: %d wrong", wrong);
    std::printf("E   rows set: %d wrong\n", wrong);
  }
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFreeHost(pinned));
  CHECK_CUDA(cudaFree(pitched));
  CHECK_CUDA(cudaFree(m1));
  CHECK_CUDA(cudaFree(m2));
  CHECK_CUDA(cudaFree(device));
}

// ---------------------------------------------------------------- F
const char* typeName(cudaMemoryType type) {
  switch (type) {
    case cudaMemoryTypeUnregistered:
      return "unregistered";
    case cudaMemoryTypeHost:
      return "host";
    case cudaMemoryTypeDevice:
      return "device";
    case cudaMemoryTypeManaged:
      return "managed";
  }
  return "?";
}

// devicePointer is compared with `expectedDevice` (null: not compared), hostPointer with p where
// the kind has a host side.
void showPointer(const char* label, const void* p, const void* expectedDevice, bool hostSide) {
  cudaPointerAttributes a{};
  const cudaError_t error = cudaPointerGetAttributes(&a, p);
  (void)cudaGetLastError();
  if (error != cudaSuccess) {
    std::printf("F %-34s %s\n", label, cudaGetErrorName(error));
    return;
  }
  std::printf("F %-34s type=%-12s device=%d devicePointer:%s hostPointer:%s\n", label, typeName(a.type),
              a.type == cudaMemoryTypeUnregistered ? -1 : a.device,
              expectedDevice == nullptr ? "n/a" : (a.devicePointer == expectedDevice ? "expected" : "other"),
              !hostSide ? (a.hostPointer == nullptr ? "null" : "set") : (a.hostPointer == p ? "p" : "other"));
}

void pointerKinds() {
  char* device = nullptr;
  char* managed = nullptr;
  char* managedHost = nullptr;
  char* pinned = nullptr;
  char* mapped = nullptr;
  CHECK_CUDA(cudaMalloc(&device, 1 << 16));
  CHECK_CUDA(cudaMallocManaged(&managed, 1 << 16));
  CHECK_CUDA(cudaMallocManaged(&managedHost, 1 << 16, cudaMemAttachHost));
  CHECK_CUDA(cudaMallocHost(&pinned, 1 << 16));
  CHECK_CUDA(cudaHostAlloc(&mapped, 1 << 16, cudaHostAllocMapped));
  void* mappedDevice = nullptr;
  CHECK_CUDA(cudaHostGetDevicePointer(&mappedDevice, mapped, 0));
  void* registeredRaw = nullptr;
  EXPECT_TRUE(posix_memalign(&registeredRaw, 4096, 1 << 16) == 0, "posix_memalign");
  auto* registered = static_cast<char*>(registeredRaw);
  std::memset(registered, 0, 1 << 16);
  CHECK_CUDA(cudaHostRegister(registered, 1 << 16, cudaHostRegisterMapped));
  void* registeredDevice = nullptr;
  CHECK_CUDA(cudaHostGetDevicePointer(&registeredDevice, registered, 0));
  char* pageable = static_cast<char*>(std::malloc(1 << 16));
  char* async = nullptr;
  CHECK_CUDA(cudaMallocAsync(reinterpret_cast<void**>(&async), 1 << 16, nullptr));
  CHECK_CUDA(cudaStreamSynchronize(nullptr));
  void* symbol = nullptr;
  CHECK_CUDA(cudaGetSymbolAddress(&symbol, deviceSymbol));
  int onStack = 0;

  showPointer("cudaMalloc +100", device + 100, device + 100, false);
  showPointer("cudaMallocManaged +100", managed + 100, managed + 100, true);
  showPointer("cudaMallocManaged last byte", managed + (1 << 16) - 1, managed + (1 << 16) - 1, true);
  showPointer("cudaMallocManaged(AttachHost)", managedHost, managedHost, true);
  showPointer("cudaMallocHost +100", pinned + 100, nullptr, true);
  showPointer("cudaHostAlloc(Mapped) +100", mapped + 100, static_cast<char*>(mappedDevice) + 100, true);
  showPointer("cudaHostRegister(Mapped) +100", registered + 100, static_cast<char*>(registeredDevice) + 100,
              true);
  showPointer("malloc", pageable, nullptr, true);
  showPointer("stack variable", &onStack, nullptr, true);
  showPointer("cudaMallocAsync", async, async, false);
  showPointer("__device__ symbol (+8)", static_cast<char*>(symbol) + 8, static_cast<char*>(symbol) + 8,
              false);
  showPointer("nullptr", nullptr, nullptr, true);

  CHECK_CUDA(cudaFreeAsync(async, nullptr));
  CHECK_CUDA(cudaStreamSynchronize(nullptr));
  CHECK_CUDA(cudaHostUnregister(registered));
  std::free(registeredRaw);
  std::free(pageable);
  CHECK_CUDA(cudaFree(device));
  CHECK_CUDA(cudaFree(managed));
  CHECK_CUDA(cudaFree(managedHost));
  CHECK_CUDA(cudaFreeHost(pinned));
  CHECK_CUDA(cudaFreeHost(mapped));
}

// ---------------------------------------------------------------- G
void textureOverManaged() {
  constexpr int kN = 2048;
  int* managed = nullptr;
  CHECK_CUDA(cudaMallocManaged(&managed, kN * sizeof(int)));
  for (int i = 0; i < kN; ++i) managed[i] = static_cast<int>(mix32(i + 66) % 1000);
  cudaResourceDesc resource{};
  resource.resType = cudaResourceTypeLinear;
  resource.res.linear.devPtr = managed;
  resource.res.linear.desc = cudaCreateChannelDesc<int>();
  resource.res.linear.sizeInBytes = kN * sizeof(int);
  cudaTextureDesc texture{};
  texture.readMode = cudaReadModeElementType;
  cudaTextureObject_t tex = 0;
  const cudaError_t made = cudaCreateTextureObject(&tex, &resource, &texture, nullptr);
  std::printf("G linear texture over managed memory: %s\n", cudaGetErrorName(made));
  (void)cudaGetLastError();
  if (made == cudaSuccess) {
    int* out = nullptr;
    CHECK_CUDA(cudaMallocManaged(&out, kN * sizeof(int)));
    fetchInts<<<(kN + 255) / 256, 256>>>(tex, out, kN);
    CHECK_CUDA(cudaDeviceSynchronize());
    long long sum = 0;
    for (int i = 0; i < kN; ++i) {
      EXPECT_TRUE(out[i] == managed[i] + 1, "managed texture %d", i);
      sum += out[i];
    }
    std::printf("G   fetched sum=%lld\n", sum);
    CHECK_CUDA(cudaDestroyTextureObject(tex));
    CHECK_CUDA(cudaFree(out));
  }
  CHECK_CUDA(cudaFree(managed));
}

}  // namespace

int main() {
  int managed = 0, concurrent = -1;
  CHECK_CUDA(cudaDeviceGetAttribute(&managed, cudaDevAttrManagedMemory, 0));
  CHECK_CUDA(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, 0));
  std::fprintf(stderr, "managedMemory=%d concurrentManagedAccess=%d\n", managed, concurrent);
  EXPECT_TRUE(managed == 1, "managed memory not supported");
  linkedLists();
  pointerTables();
  attachments();
  adviceAndPrefetch();
  copies();
  pointerKinds();
  textureOverManaged();
  std::printf("probe_managed_patterns OK\n");
  return 0;
}
