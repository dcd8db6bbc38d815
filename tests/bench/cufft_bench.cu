// agileos_cufft_bench: issue 6's cuFFT benchmark, one JSON line per workload.
//
// Usage: agileos_cufft_bench [--quick] [WORKLOAD...]   runs the named workloads (all if none), in order
//        agileos_cufft_bench --list                    prints the workload names, one per line (no CUDA call)
//
// The same binary runs natively (libcufft.so.12 of the CUDA toolkit) and, unmodified, through
// AgileOS (the shims stand in for libcudart.so.13 and libcufft.so.12); tests/bench/run_cufft_bench.sh
// runs both and format_cufft_table.py compares them. The output contract and exit statuses are
// bench_support.cuh's (a failed cuFFT call exits with status 1 like a failed CUDA call).
//
// An exec workload (every one but plan_create) is one plan, created once, over buffers of exactly
// the plan's extent, out of place (so the input stays the same from one exec to the next):
//   1. the plan is created (host time: plan_create_ms; the first cuFFT call of the process when
//      the workload runs alone, so it includes cuFFT's own start-up) and bound to a stream;
//   2. the input is an impulse at position 1 of the first transform (zero elsewhere), whose
//      transform is exp(-2 pi i j / n_last) in the first transform and zero in every other;
//      one exec, then sampled output elements are checked against that (the output is filled
//      with NaN before, so an exec that did nothing fails);
//   3. warm-up execs, then `samples` times: one cufftExec* and cudaStreamSynchronize, timed on
//      the host (steady_clock) around both: p50/p99 in us, gpoints_per_s = points / p50; the
//      time of the cufftExec* call alone is enqueue_p50_us;
//   4. `rounds` times: 100 execs back to back, then one cudaEventSynchronize; host time from
//      before the first exec to after the synchronize: pipelined_gpoints_per_s = points * 100 /
//      the median round (pipelined_gpu_gpoints_per_s: the same from cudaEventElapsedTime);
//   5. after steps 3 and 4 (each preceded by a NaN fill of the output) the output is checked again,
//      so the last timed exec of each phase is known to have computed the transform.
// plan_create: cufftPlan1d of a 2^22-point C2C transform then cufftDestroy; a sample is one such
// pair; plan_create_ms is the median of the create alone (after 3 warm-up pairs; the first,
// cold create is first_plan_create_ms). One plan of that shape is executed and checked first.
//
// Only these runtime calls are used (what the shim implements, tests/gpu/supported_api.txt):
// cudaMalloc, cudaFree, cudaMemcpy, cudaMemset, cudaStreamCreate, cudaStreamSynchronize,
// cudaDeviceSynchronize, cudaEvent{Create,Record,Synchronize,ElapsedTime,Destroy},
// cudaGetErrorString; and from cuFFT: cufftPlan1d/2d/3d, cufftPlanMany, cufftSetStream,
// cufftExecC2C/Z2Z/R2C, cufftDestroy.
#include <cufft.h>

#include <cstring>
#include <string>
#include <vector>

#include "bench_support.cuh"
#include "tests/gpu/programs/cufft_result_name.cuh"

// Exits when a CUDA runtime call does not return cudaSuccess (cudaGetErrorName is not used: it
// is not among the calls this program is meant to exercise).
#define FFT_BENCH_CUDA(call)                                                                             \
  do {                                                                                                   \
    const cudaError_t fft_bench_status_ = (call);                                                        \
    if (fft_bench_status_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "agileos_cufft_bench: %s:%d: %s failed: error %d (%s)\n", __FILE__, __LINE__, \
                   #call, static_cast<int>(fft_bench_status_), cudaGetErrorString(fft_bench_status_));   \
      std::exit(bench::kExitCudaError);                                                                  \
    }                                                                                                    \
  } while (0)

// Exits when a cuFFT call does not return CUFFT_SUCCESS.
#define FFT_BENCH_CUFFT(call) bench::checkCufft((call), #call, __FILE__, __LINE__)

// Exits with kExitWrongResult when `cond` is false; the remaining arguments are a printf format and
// its values describing the wrong result (bench_support.cuh's BENCH_VERIFY with this program's name and
// without the source position, so that run_bench.sh's 200-character reason keeps the values).
#define FFT_BENCH_VERIFY(cond, ...)                                \
  do {                                                             \
    if (!(cond)) {                                                 \
      std::fprintf(stderr, "agileos_cufft_bench: wrong result: "); \
      std::fprintf(stderr, __VA_ARGS__);                           \
      std::fprintf(stderr, "\n");                                  \
      std::exit(bench::kExitWrongResult);                          \
    }                                                              \
  } while (0)

namespace bench {

// The error first: run_bench.sh keeps only 200 characters of the message as the failure's reason.
inline void checkCufft(cufftResult result, const char* call, const char* file, int line) {
  if (result == CUFFT_SUCCESS) return;
  const char* slash = std::strrchr(file, '/');
  std::fprintf(stderr, "agileos_cufft_bench: %s (%d) from %s at %s:%d\n", cufftResultName(result),
               static_cast<int>(result), call, slash != nullptr ? slash + 1 : file, line);
  std::exit(kExitCudaError);
}

namespace {

constexpr int kPipelinedExecs = 100;
constexpr double kTwoPi = 6.283185307179586476925286766559;

// The stream every plan runs on (created in main; never destroyed: the process ends after the
// workloads).
cudaStream_t gStream = nullptr;

enum class Transform { kC2C, kZ2Z, kR2C };

// One FFT shape: rank 1..3 sizes n[0..rank) (row-major, n[rank-1] varies fastest), `batch`
// transforms one after the other (basic layout).
struct FftShape {
  Transform transform;
  int rank;
  int n[3];
  int batch;

  long long pointsPerTransform() const {
    long long points = 1;
    for (int i = 0; i < rank; ++i) points *= n[i];
    return points;
  }
  long long points() const { return pointsPerTransform() * batch; }
  int lastInput() const { return n[rank - 1]; }
  // The last dimension of the output: n/2 + 1 for a real-to-complex transform.
  int lastOutput() const { return transform == Transform::kR2C ? lastInput() / 2 + 1 : lastInput(); }
  long long outputPerTransform() const { return pointsPerTransform() / lastInput() * lastOutput(); }
  std::size_t inputElementBytes() const {
    switch (transform) {
      case Transform::kC2C:
        return sizeof(cufftComplex);
      case Transform::kZ2Z:
        return sizeof(cufftDoubleComplex);
      case Transform::kR2C:
        return sizeof(cufftReal);
    }
    return 0;
  }
  std::size_t outputElementBytes() const {
    return transform == Transform::kZ2Z ? sizeof(cufftDoubleComplex) : sizeof(cufftComplex);
  }
  std::size_t inputBytes() const { return static_cast<std::size_t>(points()) * inputElementBytes(); }
  std::size_t outputBytes() const {
    return static_cast<std::size_t>(outputPerTransform() * batch) * outputElementBytes();
  }
  cufftType type() const {
    switch (transform) {
      case Transform::kC2C:
        return CUFFT_C2C;
      case Transform::kZ2Z:
        return CUFFT_Z2Z;
      case Transform::kR2C:
        return CUFFT_R2C;
    }
    return CUFFT_C2C;
  }
  // Largest error allowed on an output element of magnitude <= 1.
  double tolerance() const { return transform == Transform::kZ2Z ? 1e-9 : 1e-3; }
};

// Creates the plan of `shape` with the simplest call that describes it.
cufftHandle createPlan(const FftShape& shape) {
  cufftHandle plan = 0;
  if (shape.batch != 1) {
    int n[3] = {shape.n[0], shape.n[1], shape.n[2]};
    const int inputDist = static_cast<int>(shape.pointsPerTransform());
    const int outputDist = static_cast<int>(shape.outputPerTransform());
    // Null embeds: the basic (tightly packed) layout; strides and distances are then ignored.
    FFT_BENCH_CUFFT(cufftPlanMany(&plan, shape.rank, n, nullptr, 1, inputDist, nullptr, 1, outputDist,
                                  shape.type(), shape.batch));
  } else if (shape.rank == 1) {
    FFT_BENCH_CUFFT(cufftPlan1d(&plan, shape.n[0], shape.type(), 1));
  } else if (shape.rank == 2) {
    FFT_BENCH_CUFFT(cufftPlan2d(&plan, shape.n[0], shape.n[1], shape.type()));
  } else {
    FFT_BENCH_CUFFT(cufftPlan3d(&plan, shape.n[0], shape.n[1], shape.n[2], shape.type()));
  }
  return plan;
}

// One forward transform of `in` into `out` (enqueued; no synchronisation).
inline cufftResult execute(const FftShape& shape, cufftHandle plan, void* in, void* out) {
  switch (shape.transform) {
    case Transform::kC2C:
      return cufftExecC2C(plan, static_cast<cufftComplex*>(in), static_cast<cufftComplex*>(out),
                          CUFFT_FORWARD);
    case Transform::kZ2Z:
      return cufftExecZ2Z(plan, static_cast<cufftDoubleComplex*>(in), static_cast<cufftDoubleComplex*>(out),
                          CUFFT_FORWARD);
    case Transform::kR2C:
      return cufftExecR2C(plan, static_cast<cufftReal*>(in), static_cast<cufftComplex*>(out));
  }
  return CUFFT_INVALID_TYPE;
}

// The device buffers of one plan, exactly as large as the plan reads and writes.
struct FftBuffers {
  void* in = nullptr;
  void* out = nullptr;
};

FftBuffers allocateImpulse(const FftShape& shape) {
  FftBuffers buffers;
  FFT_BENCH_CUDA(cudaMalloc(&buffers.in, shape.inputBytes()));
  FFT_BENCH_CUDA(cudaMalloc(&buffers.out, shape.outputBytes()));
  // The input: zero but for 1 at position 1 of the first transform.
  FFT_BENCH_CUDA(cudaMemset(buffers.in, 0, shape.inputBytes()));
  unsigned char one[sizeof(cufftDoubleComplex)] = {};
  if (shape.transform == Transform::kZ2Z) {
    const cufftDoubleComplex value{1.0, 0.0};
    std::memcpy(one, &value, sizeof(value));
  } else if (shape.transform == Transform::kC2C) {
    const cufftComplex value{1.0f, 0.0f};
    std::memcpy(one, &value, sizeof(value));
  } else {
    const cufftReal value = 1.0f;
    std::memcpy(one, &value, sizeof(value));
  }
  const std::size_t elementBytes = shape.inputElementBytes();
  FFT_BENCH_CUDA(cudaMemcpy(static_cast<unsigned char*>(buffers.in) + elementBytes, one, elementBytes,
                            cudaMemcpyHostToDevice));
  FFT_BENCH_CUDA(cudaDeviceSynchronize());
  return buffers;
}

void freeBuffers(const FftBuffers& buffers) {
  FFT_BENCH_CUDA(cudaFree(buffers.in));
  FFT_BENCH_CUDA(cudaFree(buffers.out));
}

// Fills the output with 0xff bytes (NaN in every precision), so that an output element that
// no exec wrote fails verifyImpulse.
void poisonOutput(const FftShape& shape, const FftBuffers& buffers) {
  FFT_BENCH_CUDA(cudaMemset(buffers.out, 0xff, shape.outputBytes()));
  FFT_BENCH_CUDA(cudaDeviceSynchronize());
}

// Checks sampled output elements against the transform of the impulse at position 1 of the
// first transform: exp(-2 pi i j / n_last) in the first transform, j the element's position in
// the last dimension; zero in the other transforms. `when` names the check in a failure message.
void verifyImpulse(const char* name, const char* when, const FftShape& shape, const FftBuffers& buffers) {
  const long long perTransform = shape.outputPerTransform();
  const long long total = perTransform * shape.batch;
  const long long lastOutput = shape.lastOutput();
  std::vector<long long> indices = {0,
                                    1,
                                    2,
                                    lastOutput - 1,
                                    std::min(lastOutput, total - 1),
                                    perTransform / 2 + 3,
                                    perTransform - 1,
                                    std::min(perTransform, total - 1),
                                    total - 1};
  for (std::uint32_t k = 0; k < 8; ++k) indices.push_back(static_cast<long long>(mix32(k) % total));
  const std::size_t elementBytes = shape.outputElementBytes();
  for (const long long index : indices) {
    double re = 0.0, im = 0.0;
    if (shape.transform == Transform::kZ2Z) {
      cufftDoubleComplex value{};
      FFT_BENCH_CUDA(cudaMemcpy(&value, static_cast<unsigned char*>(buffers.out) + index * elementBytes,
                                elementBytes, cudaMemcpyDeviceToHost));
      re = value.x;
      im = value.y;
    } else {
      cufftComplex value{};
      FFT_BENCH_CUDA(cudaMemcpy(&value, static_cast<unsigned char*>(buffers.out) + index * elementBytes,
                                elementBytes, cudaMemcpyDeviceToHost));
      re = value.x;
      im = value.y;
    }
    double expectedRe = 0.0, expectedIm = 0.0;
    if (index < perTransform) {
      const long long j = index % lastOutput;
      const double angle = -kTwoPi * static_cast<double>(j) / static_cast<double>(shape.lastInput());
      expectedRe = std::cos(angle);
      expectedIm = std::sin(angle);
    }
    const double error = std::hypot(re - expectedRe, im - expectedIm);
    // Written so that a NaN (an element no exec wrote) fails.
    FFT_BENCH_VERIFY(error <= shape.tolerance(),
                     "%s: %s: output element %lld = (%.7g, %.7g), expected (%.7g, %.7g) (error %.3g > %.3g)",
                     name, when, index, re, im, expectedRe, expectedIm, error, shape.tolerance());
  }
}

// An exec workload: see the top of this file.
void execWorkload(const Scale& scale, const char* name, const FftShape& shape) {
  const int warmup = scale.pick(20, 5), samples = scale.pick(200, 50), rounds = scale.pick(21, 3);
  const auto planStart = Clock::now();
  const cufftHandle plan = createPlan(shape);
  const double planCreateMs = secondsSince(planStart) * 1e3;
  FFT_BENCH_CUFFT(cufftSetStream(plan, gStream));
  const FftBuffers buffers = allocateImpulse(shape);

  poisonOutput(shape, buffers);
  FFT_BENCH_CUFFT(execute(shape, plan, buffers.in, buffers.out));
  FFT_BENCH_CUDA(cudaStreamSynchronize(gStream));
  verifyImpulse(name, "first exec", shape, buffers);

  // Per-exec latency: one exec and its synchronisation.
  Result result{name, "us"};
  std::vector<double> enqueueUs;
  poisonOutput(shape, buffers);
  for (int i = 0; i < warmup + samples; ++i) {
    const auto start = Clock::now();
    const cufftResult status = execute(shape, plan, buffers.in, buffers.out);
    const auto enqueued = Clock::now();
    FFT_BENCH_CUDA(cudaStreamSynchronize(gStream));
    const auto end = Clock::now();
    checkCufft(status, "cufftExec* (a per-exec sample)", __FILE__, __LINE__);
    if (i < warmup) continue;
    result.samples.push_back(std::chrono::duration<double, std::micro>(end - start).count());
    enqueueUs.push_back(std::chrono::duration<double, std::micro>(enqueued - start).count());
  }
  verifyImpulse(name, "after the per-exec samples", shape, buffers);

  // Pipelined: kPipelinedExecs execs back to back, then one synchronisation.
  cudaEvent_t begin = nullptr, finish = nullptr;
  FFT_BENCH_CUDA(cudaEventCreate(&begin));
  FFT_BENCH_CUDA(cudaEventCreate(&finish));
  std::vector<double> roundSeconds, roundGpuSeconds;
  poisonOutput(shape, buffers);
  for (int round = 0; round < rounds; ++round) {
    FFT_BENCH_CUDA(cudaEventRecord(begin, gStream));
    const auto start = Clock::now();
    for (int i = 0; i < kPipelinedExecs; ++i) FFT_BENCH_CUFFT(execute(shape, plan, buffers.in, buffers.out));
    FFT_BENCH_CUDA(cudaEventRecord(finish, gStream));
    FFT_BENCH_CUDA(cudaEventSynchronize(finish));
    roundSeconds.push_back(secondsSince(start));
    float gpuMs = 0.0f;
    FFT_BENCH_CUDA(cudaEventElapsedTime(&gpuMs, begin, finish));
    roundGpuSeconds.push_back(static_cast<double>(gpuMs) * 1e-3);
  }
  verifyImpulse(name, "after the pipelined rounds", shape, buffers);
  FFT_BENCH_CUDA(cudaEventDestroy(begin));
  FFT_BENCH_CUDA(cudaEventDestroy(finish));
  FFT_BENCH_CUFFT(cufftDestroy(plan));
  freeBuffers(buffers);

  std::vector<double> sorted = result.samples;
  std::sort(sorted.begin(), sorted.end());
  const double points = static_cast<double>(shape.points());
  const double p50 = percentile(sorted, 50.0);
  const double gpointsPerS = points / (p50 * 1e-6) / 1e9;
  const double pipelinedSeconds = median(roundSeconds);
  result.throughput = gpointsPerS;
  result.throughputUnit = "GPoints/s";
  result.parameters = {
      {"p50_us", p50},
      {"p99_us", percentile(sorted, 99.0)},
      {"points", points},
      {"batch", shape.batch},
      {"plan_create_ms", planCreateMs},
      {"gpoints_per_s", gpointsPerS},
      {"pipelined_gpoints_per_s", points * kPipelinedExecs / pipelinedSeconds / 1e9},
      {"pipelined_gpu_gpoints_per_s", points * kPipelinedExecs / median(roundGpuSeconds) / 1e9},
      {"pipelined_exec_us", pipelinedSeconds / kPipelinedExecs * 1e6},
      {"pipelined_execs", kPipelinedExecs},
      {"pipelined_rounds", rounds},
      {"enqueue_p50_us", median(enqueueUs)},
      {"input_bytes", static_cast<double>(shape.inputBytes())},
      {"output_bytes", static_cast<double>(shape.outputBytes())},
  };
  printResult(result);
}

// plan_create: see the top of this file.
void planCreate(const Scale& scale) {
  const char* name = "plan_create";
  const FftShape shape{Transform::kC2C, 1, {1 << 22, 1, 1}, 1};
  const int warmup = 3, samples = scale.pick(50, 20);

  // The first (cold) create, and a check that a plan made this way computes the transform.
  const auto firstStart = Clock::now();
  const cufftHandle checked = createPlan(shape);
  const double firstCreateMs = secondsSince(firstStart) * 1e3;
  FFT_BENCH_CUFFT(cufftSetStream(checked, gStream));
  const FftBuffers buffers = allocateImpulse(shape);
  poisonOutput(shape, buffers);
  FFT_BENCH_CUFFT(execute(shape, checked, buffers.in, buffers.out));
  FFT_BENCH_CUDA(cudaStreamSynchronize(gStream));
  verifyImpulse(name, "exec of a created plan", shape, buffers);
  FFT_BENCH_CUFFT(cufftDestroy(checked));
  freeBuffers(buffers);

  Result result{name, "us"};
  std::vector<double> createUs, destroyUs;
  for (int i = 0; i < warmup + samples; ++i) {
    cufftHandle plan = 0;
    const auto start = Clock::now();
    FFT_BENCH_CUFFT(cufftPlan1d(&plan, shape.n[0], CUFFT_C2C, 1));
    const auto created = Clock::now();
    FFT_BENCH_CUFFT(cufftDestroy(plan));
    const auto end = Clock::now();
    if (i < warmup) continue;
    createUs.push_back(std::chrono::duration<double, std::micro>(created - start).count());
    destroyUs.push_back(std::chrono::duration<double, std::micro>(end - created).count());
    result.samples.push_back(std::chrono::duration<double, std::micro>(end - start).count());
  }
  std::vector<double> sorted = result.samples;
  std::sort(sorted.begin(), sorted.end());
  const double createP50 = median(createUs);
  result.throughput = 1e6 / percentile(sorted, 50.0);
  result.throughputUnit = "plans/s";
  result.parameters = {
      {"p50_us", percentile(sorted, 50.0)},
      {"p99_us", percentile(sorted, 99.0)},
      {"points", static_cast<double>(shape.points())},
      {"plan_create_ms", createP50 * 1e-3},
      {"create_p50_us", createP50},
      {"destroy_p50_us", median(destroyUs)},
      {"first_plan_create_ms", firstCreateMs},
  };
  printResult(result);
}

struct Workload {
  const char* name;
  FftShape shape;  // unused by plan_create
  void (*special)(const Scale&);
};

// The order of a full run: the 1D single-precision sizes, the other types and shapes, then plan
// creation.
const Workload kWorkloads[] = {
    {"c2c_1m", {Transform::kC2C, 1, {1 << 20, 1, 1}, 1}, nullptr},
    {"c2c_4m", {Transform::kC2C, 1, {1 << 22, 1, 1}, 1}, nullptr},
    {"c2c_16m", {Transform::kC2C, 1, {1 << 24, 1, 1}, 1}, nullptr},
    {"r2c_4m", {Transform::kR2C, 1, {1 << 22, 1, 1}, 1}, nullptr},
    {"z2z_1m", {Transform::kZ2Z, 1, {1 << 20, 1, 1}, 1}, nullptr},
    {"c2c_2d_1k", {Transform::kC2C, 2, {1024, 1024, 1}, 1}, nullptr},
    {"c2c_batched_1m", {Transform::kC2C, 1, {1024, 1, 1}, 1024}, nullptr},
    {"c2c_3d_128", {Transform::kC2C, 3, {128, 128, 128}, 1}, nullptr},
    {"plan_create", {Transform::kC2C, 1, {1 << 22, 1, 1}, 1}, planCreate},
};

}  // namespace
}  // namespace bench

int main(int argc, char** argv) {
  using namespace bench;
  Scale scale;
  std::vector<const Workload*> selected;
  if (const int status = parseCommandLine(argc, argv, "agileos_cufft_bench", kWorkloads, &scale, &selected);
      status >= 0) {
    return status;
  }

  // Context creation is process start-up, not part of any workload.
  FFT_BENCH_CUDA(cudaFree(nullptr));
  FFT_BENCH_CUDA(cudaStreamCreate(&gStream));
  std::fprintf(stderr, "agileos_cufft_bench: cuFFT %d (headers)%s\n", CUFFT_VERSION,
               scale.quick ? ", --quick" : "");

  for (const Workload* workload : selected) {
    const auto start = Clock::now();
    if (workload->special != nullptr) {
      workload->special(scale);
    } else {
      execWorkload(scale, workload->name, workload->shape);
    }
    std::fprintf(stderr, "agileos_cufft_bench: %s took %.2f s\n", workload->name, secondsSince(start));
  }
  return 0;
}
