// The application-level workloads of issue 3, three programs of different character:
//   app_triad    bandwidth-bound: a STREAM-style triad over 1 GiB arrays, 200 times;
//   app_stencil  launch- and latency-bound: a Jacobi stencil with many small launches
//                and a reduction read back to the host (a 4-byte cudaMemcpy) every step;
//   app_sgemm    compute-bound: a shared-memory tiled 4096^3 SGEMM, a few times.
// A sample is the end-to-end wall time of one run of the program: its allocations,
// copies, launches and frees, as a real program would do them (process and context
// start-up excluded; one small untimed run first loads the kernels). Every run's
// result is verified outside the timed region; a wrong result exits with status 2.
#pragma once

#include <cmath>
#include <cstring>
#include <vector>

#include "bench_support.cuh"

namespace bench {

// ------------------------------------------------------------------ app_triad

constexpr float kTriadScalar = 3.0f;

// Small integers, so that b + s*c is exact in float (with or without FMA).
__host__ __device__ inline float triadB(std::uint32_t i) { return static_cast<float>(mix32(i) % 1024u); }
__host__ __device__ inline float triadC(std::uint32_t i) {
  return static_cast<float>(mix32(i ^ 0x5bd1e995u) % 1024u);
}

__global__ void triadInit(float* b, float* c, std::size_t n) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    b[i] = triadB(static_cast<std::uint32_t>(i));
    c[i] = triadC(static_cast<std::uint32_t>(i));
  }
}

__global__ void triad(float* a, const float* b, const float* c, float scalar, std::size_t n) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    a[i] = b[i] + scalar * c[i];
  }
}

__global__ void triadCountWrong(const float* a, std::size_t n, unsigned long long* wrong) {
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const auto index = static_cast<std::uint32_t>(i);
    local += a[i] != triadB(index) + kTriadScalar * triadC(index) ? 1 : 0;
  }
  if (local != 0) atomicAdd(wrong, local);
}

// One run: allocate, initialise, `iterations` triads, count wrong elements, free.
inline double runTriad(std::size_t n, int iterations) {
  const auto start = Clock::now();
  float *a = nullptr, *b = nullptr, *c = nullptr;
  unsigned long long* wrong = nullptr;
  BENCH_CUDA(cudaMalloc(&a, n * sizeof(float)));
  BENCH_CUDA(cudaMalloc(&b, n * sizeof(float)));
  BENCH_CUDA(cudaMalloc(&c, n * sizeof(float)));
  BENCH_CUDA(cudaMalloc(&wrong, sizeof(*wrong)));
  BENCH_CUDA(cudaMemset(wrong, 0, sizeof(*wrong)));
  const dim3 grid = gridFor(n);
  triadInit<<<grid, 256>>>(b, c, n);
  for (int i = 0; i < iterations; ++i) triad<<<grid, 256>>>(a, b, c, kTriadScalar, n);
  triadCountWrong<<<grid, 256>>>(a, n, wrong);
  unsigned long long wrongCount = 0;
  BENCH_CUDA(cudaMemcpy(&wrongCount, wrong, sizeof(wrongCount), cudaMemcpyDeviceToHost));
  BENCH_LAUNCHED();
  BENCH_CUDA(cudaFree(a));
  BENCH_CUDA(cudaFree(b));
  BENCH_CUDA(cudaFree(c));
  BENCH_CUDA(cudaFree(wrong));
  const double seconds = secondsSince(start);
  BENCH_VERIFY(wrongCount == 0, "triad: %llu of %zu elements are wrong", wrongCount, n);
  return seconds;
}

inline void appTriad(const Scale& scale) {
  const std::size_t n = scale.pick<std::size_t>(1ull << 28, 1ull << 26);  // 1 GiB / 256 MiB per array
  const int iterations = scale.pick(200, 50), repetitions = scale.pick(3, 2);
  runTriad(1 << 20, 2);  // warm-up
  Result result{"app_triad", "s"};
  for (int rep = 0; rep < repetitions; ++rep) result.samples.push_back(runTriad(n, iterations));
  const double bytesMoved = 3.0 * static_cast<double>(n) * sizeof(float) * iterations;
  result.throughput = bytesMoved / median(result.samples) / 1e9;
  result.throughputUnit = "GB/s";
  result.parameters = {{"array_bytes", static_cast<double>(n * sizeof(float))}, {"iterations", iterations}};
  printResult(result);
}

// ------------------------------------------------------------------ app_stencil

constexpr int kStencilSide = 256;  // grid points per side, boundary included
constexpr int kSweepsPerStep = 4;  // launches per step; the last one also reduces

// The update of one interior point; host and device use this exact expression, so
// the CPU reference reproduces the device's float results.
__host__ __device__ inline float jacobiPoint(const float* in, int x, int y) {
  return 0.25f *
         (((in[(y - 1) * kStencilSide + x] + in[(y + 1) * kStencilSide + x]) + in[y * kStencilSide + x - 1]) +
          in[y * kStencilSide + x + 1]);
}

// One Jacobi sweep over the interior (the boundary is never written). With
// residualBits, also folds max |new - old| into *residualBits (non-negative floats
// order like their bit patterns). Launched with 16x16 blocks covering the grid exactly.
__global__ void jacobiSweep(const float* in, float* out, unsigned int* residualBits) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  const bool interior = x >= 1 && y >= 1 && x < kStencilSide - 1 && y < kStencilSide - 1;
  float change = 0.0f;
  if (interior) {
    const float value = jacobiPoint(in, x, y);
    out[y * kStencilSide + x] = value;
    change = fabsf(value - in[y * kStencilSide + x]);
  }
  if (residualBits == nullptr) return;  // uniform across the grid
  const unsigned int warpMax = __reduce_max_sync(0xffffffffu, __float_as_uint(change));
  if ((threadIdx.y * blockDim.x + threadIdx.x) % 32 == 0) atomicMax(residualBits, warpMax);
}

struct StencilOutcome {
  std::vector<float> grid;
  std::vector<float> residuals;  // one per step
};

inline std::vector<float> stencilInitialGrid() {
  std::vector<float> grid(kStencilSide * kStencilSide);
  for (int y = 0; y < kStencilSide; ++y) {
    for (int x = 0; x < kStencilSide; ++x) {
      const int i = y * kStencilSide + x;
      grid[i] = y == 0 ? 1.0f : static_cast<float>(mix32(static_cast<std::uint32_t>(i)) % 1000u) / 1000.0f;
    }
  }
  return grid;
}

inline StencilOutcome stencilReference(const std::vector<float>& initial, int steps) {
  std::vector<float> in = initial, out = initial;
  StencilOutcome outcome;
  for (int step = 0; step < steps; ++step) {
    float residual = 0.0f;
    for (int sweep = 0; sweep < kSweepsPerStep; ++sweep) {
      for (int y = 1; y < kStencilSide - 1; ++y) {
        for (int x = 1; x < kStencilSide - 1; ++x) {
          const float value = jacobiPoint(in.data(), x, y);
          out[y * kStencilSide + x] = value;
          if (sweep == kSweepsPerStep - 1)
            residual = std::max(residual, std::fabs(value - in[y * kStencilSide + x]));
        }
      }
      std::swap(in, out);
    }
    outcome.residuals.push_back(residual);
  }
  outcome.grid = in;
  return outcome;
}

// One run: allocate, upload the grid, `steps` steps of (reset the residual,
// kSweepsPerStep launches, read the residual back), download the grid, free.
inline double runStencil(const std::vector<float>& initial, int steps, StencilOutcome* outcome) {
  const std::size_t bytes = initial.size() * sizeof(float);
  outcome->residuals.assign(steps, 0.0f);
  outcome->grid.assign(initial.size(), 0.0f);
  const auto start = Clock::now();
  float *in = nullptr, *out = nullptr;
  unsigned int* residualBits = nullptr;
  BENCH_CUDA(cudaMalloc(&in, bytes));
  BENCH_CUDA(cudaMalloc(&out, bytes));
  BENCH_CUDA(cudaMalloc(&residualBits, sizeof(*residualBits)));
  BENCH_CUDA(cudaMemcpy(in, initial.data(), bytes, cudaMemcpyHostToDevice));
  BENCH_CUDA(cudaMemcpy(out, initial.data(), bytes, cudaMemcpyHostToDevice));  // the boundary, in both
  const dim3 block(16, 16), grid(kStencilSide / 16, kStencilSide / 16);
  for (int step = 0; step < steps; ++step) {
    BENCH_CUDA(cudaMemset(residualBits, 0, sizeof(*residualBits)));
    for (int sweep = 0; sweep < kSweepsPerStep; ++sweep) {
      jacobiSweep<<<grid, block>>>(in, out, sweep == kSweepsPerStep - 1 ? residualBits : nullptr);
      std::swap(in, out);
    }
    unsigned int bits = 0;
    BENCH_CUDA(cudaMemcpy(&bits, residualBits, sizeof(bits), cudaMemcpyDeviceToHost));
    std::memcpy(&outcome->residuals[step], &bits, sizeof(bits));
  }
  BENCH_CUDA(cudaMemcpy(outcome->grid.data(), in, bytes, cudaMemcpyDeviceToHost));
  BENCH_LAUNCHED();
  BENCH_CUDA(cudaFree(in));
  BENCH_CUDA(cudaFree(out));
  BENCH_CUDA(cudaFree(residualBits));
  return secondsSince(start);
}

inline void verifyStencil(const StencilOutcome& got, const StencilOutcome& expected) {
  constexpr float kTolerance = 1e-5f;  // same expressions on both sides; slack only for safety
  for (std::size_t step = 0; step < expected.residuals.size(); ++step) {
    BENCH_VERIFY(std::fabs(got.residuals[step] - expected.residuals[step]) <= kTolerance,
                 "stencil: residual of step %zu is %g, expected %g", step, got.residuals[step],
                 expected.residuals[step]);
  }
  for (std::size_t i = 0; i < expected.grid.size(); ++i) {
    BENCH_VERIFY(std::fabs(got.grid[i] - expected.grid[i]) <= kTolerance,
                 "stencil: point %zu is %g, expected %g", i, got.grid[i], expected.grid[i]);
  }
}

inline void appStencil(const Scale& scale) {
  const int steps = scale.pick(500, 200), repetitions = scale.pick(5, 3), warmupSteps = 2;
  const std::vector<float> initial = stencilInitialGrid();
  const StencilOutcome warmupExpected = stencilReference(initial, warmupSteps);
  const StencilOutcome expected = stencilReference(initial, steps);
  StencilOutcome got;
  runStencil(initial, warmupSteps, &got);
  verifyStencil(got, warmupExpected);
  Result result{"app_stencil", "s"};
  for (int rep = 0; rep < repetitions; ++rep) {
    result.samples.push_back(runStencil(initial, steps, &got));
    verifyStencil(got, expected);
  }
  result.throughput = steps / median(result.samples);
  result.throughputUnit = "steps/s";
  result.parameters = {{"grid_side", kStencilSide},
                       {"steps", steps},
                       {"launches_per_step", kSweepsPerStep},
                       {"final_residual", expected.residuals.back()}};
  printResult(result);
}

// ------------------------------------------------------------------ app_sgemm

constexpr int kGemmTile = 64;      // a block computes a 64x64 tile of C
constexpr int kGemmDepth = 16;     // k-slice held in shared memory per step
constexpr int kGemmPerThread = 4;  // each of the 16x16 threads computes 4x4 outputs
constexpr int kGemmThreads = 256;

// C = A * B for row-major n x n matrices, n a multiple of kGemmTile.
__global__ void __launch_bounds__(kGemmThreads) sgemmTiled(const float* a, const float* b, float* c, int n) {
  __shared__ float tileA[kGemmDepth][kGemmTile];  // transposed: tileA[k][row]
  __shared__ float tileB[kGemmDepth][kGemmTile];
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int rowBase = blockIdx.y * kGemmTile, colBase = blockIdx.x * kGemmTile;
  float acc[kGemmPerThread][kGemmPerThread] = {};
  for (int k0 = 0; k0 < n; k0 += kGemmDepth) {
    for (int i = threadIdx.x; i < kGemmTile * kGemmDepth; i += kGemmThreads) {
      const int row = i / kGemmDepth, k = i % kGemmDepth;
      tileA[k][row] = a[static_cast<std::size_t>(rowBase + row) * n + k0 + k];
    }
    for (int i = threadIdx.x; i < kGemmDepth * kGemmTile; i += kGemmThreads) {
      const int k = i / kGemmTile, col = i % kGemmTile;
      tileB[k][col] = b[static_cast<std::size_t>(k0 + k) * n + colBase + col];
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kGemmDepth; ++k) {
      float aValues[kGemmPerThread], bValues[kGemmPerThread];
#pragma unroll
      for (int i = 0; i < kGemmPerThread; ++i) aValues[i] = tileA[k][ty * kGemmPerThread + i];
#pragma unroll
      for (int j = 0; j < kGemmPerThread; ++j) bValues[j] = tileB[k][tx * kGemmPerThread + j];
#pragma unroll
      for (int i = 0; i < kGemmPerThread; ++i) {
#pragma unroll
        for (int j = 0; j < kGemmPerThread; ++j) acc[i][j] += aValues[i] * bValues[j];
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < kGemmPerThread; ++i) {
#pragma unroll
    for (int j = 0; j < kGemmPerThread; ++j) {
      c[static_cast<std::size_t>(rowBase + ty * kGemmPerThread + i) * n + colBase + tx * kGemmPerThread + j] =
          acc[i][j];
    }
  }
}

// Integer entries in [-3, 3] and [-4, 4]: every partial sum of a 4096-term dot product
// stays below 2^24 in magnitude, so C is exact in float whatever the summation order.
inline std::vector<float> gemmInput(int n, std::uint32_t seed, int range) {
  std::vector<float> m(static_cast<std::size_t>(n) * n);
  for (std::size_t i = 0; i < m.size(); ++i) {
    m[i] = static_cast<float>(
        static_cast<int>(mix32(static_cast<std::uint32_t>(i) ^ seed) % (2u * range + 1)) - range);
  }
  return m;
}

// One run: allocate, upload A and B (pageable), `iterations` GEMMs, download C, free.
inline double runSgemm(const std::vector<float>& a, const std::vector<float>& b, std::vector<float>* c, int n,
                       int iterations) {
  const std::size_t bytes = static_cast<std::size_t>(n) * n * sizeof(float);
  const auto start = Clock::now();
  float *da = nullptr, *db = nullptr, *dc = nullptr;
  BENCH_CUDA(cudaMalloc(&da, bytes));
  BENCH_CUDA(cudaMalloc(&db, bytes));
  BENCH_CUDA(cudaMalloc(&dc, bytes));
  BENCH_CUDA(cudaMemcpy(da, a.data(), bytes, cudaMemcpyHostToDevice));
  BENCH_CUDA(cudaMemcpy(db, b.data(), bytes, cudaMemcpyHostToDevice));
  const dim3 grid(n / kGemmTile, n / kGemmTile);
  for (int i = 0; i < iterations; ++i) sgemmTiled<<<grid, kGemmThreads>>>(da, db, dc, n);
  BENCH_CUDA(cudaMemcpy(c->data(), dc, bytes, cudaMemcpyDeviceToHost));
  BENCH_LAUNCHED();
  BENCH_CUDA(cudaFree(da));
  BENCH_CUDA(cudaFree(db));
  BENCH_CUDA(cudaFree(dc));
  return secondsSince(start);
}

// Every entry must be an integer in range (catches unwritten memory); one full row,
// one full column and 2048 pseudo-random entries must equal the exact dot product.
inline void verifySgemm(const std::vector<float>& a, const std::vector<float>& b, const std::vector<float>& c,
                        int n) {
  const float bound = 12.0f * static_cast<float>(n);
  for (std::size_t i = 0; i < c.size(); ++i) {
    BENCH_VERIFY(std::fabs(c[i]) <= bound && c[i] == std::nearbyint(c[i]), "sgemm: C[%zu] = %g is impossible",
                 i, c[i]);
  }
  auto check = [&](int row, int col) {
    long long expected = 0;
    for (int k = 0; k < n; ++k) {
      expected += static_cast<long long>(a[static_cast<std::size_t>(row) * n + k]) *
                  static_cast<long long>(b[static_cast<std::size_t>(k) * n + col]);
    }
    const float got = c[static_cast<std::size_t>(row) * n + col];
    BENCH_VERIFY(got == static_cast<float>(expected), "sgemm: C[%d][%d] = %g, expected %lld", row, col, got,
                 expected);
  };
  for (int i = 0; i < n; ++i) {
    check(n / 3, i);
    check(i, n - 1);
  }
  for (std::uint32_t i = 0; i < 2048; ++i) {
    check(static_cast<int>(mix32(2 * i) % n), static_cast<int>(mix32(2 * i + 1) % n));
  }
}

inline void appSgemm(const Scale& scale) {
  const int n = scale.pick(4096, 2048), iterations = scale.pick(5, 3), repetitions = scale.pick(3, 2);
  {  // warm-up at a small size
    const int small = 2 * kGemmTile;
    const std::vector<float> a = gemmInput(small, 0x1234u, 3), b = gemmInput(small, 0x5678u, 4);
    std::vector<float> c(a.size());
    runSgemm(a, b, &c, small, 1);
    verifySgemm(a, b, c, small);
  }
  const std::vector<float> a = gemmInput(n, 0x1234u, 3), b = gemmInput(n, 0x5678u, 4);
  std::vector<float> c(a.size());
  Result result{"app_sgemm", "s"};
  for (int rep = 0; rep < repetitions; ++rep) {
    std::fill(c.begin(), c.end(), std::nanf(""));
    result.samples.push_back(runSgemm(a, b, &c, n, iterations));
    verifySgemm(a, b, c, n);
  }
  result.throughput = 2.0 * n * static_cast<double>(n) * n * iterations / median(result.samples) / 1e9;
  result.throughputUnit = "GFLOP/s";
  result.parameters = {{"n", n}, {"iterations", iterations}};
  printResult(result);
}

}  // namespace bench
