// Helpers of the benchmark program (agileos_bench.cu): failing loudly, timing,
// summarising samples and writing the one JSON line per workload.
//
// Output contract (tests/bench/run_bench.sh and format_table.py rely on it):
// - stdout carries exactly one JSON object per line and per workload, nothing else;
// - every diagnostic goes to stderr;
// - a failed CUDA call exits with status 1, a wrong result with status 2, a bad
//   command line with status 64, so a failure is never reported as a measurement.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace bench {

inline constexpr int kExitCudaError = 1;
inline constexpr int kExitWrongResult = 2;
inline constexpr int kExitUsage = 64;

// Exits when a CUDA call does not return cudaSuccess.
#define BENCH_CUDA(call)                                                                            \
  do {                                                                                              \
    const cudaError_t bench_cuda_status_ = (call);                                                  \
    if (bench_cuda_status_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "agileos_bench: %s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, #call, \
                   cudaGetErrorName(bench_cuda_status_), cudaGetErrorString(bench_cuda_status_));   \
      std::exit(bench::kExitCudaError);                                                             \
    }                                                                                               \
  } while (0)

// Exits when a launch was refused (checked once after the launches of a phase, not
// per launch, so the measured loops contain only the calls they are about).
#define BENCH_LAUNCHED() BENCH_CUDA(cudaGetLastError())

// Exits with kExitWrongResult when `cond` is false; the remaining arguments are a
// printf format and its values describing the wrong result.
#define BENCH_VERIFY(cond, ...)                                                         \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      std::fprintf(stderr, "agileos_bench: %s:%d: wrong result: ", __FILE__, __LINE__); \
      std::fprintf(stderr, __VA_ARGS__);                                                \
      std::fprintf(stderr, "\n");                                                       \
      std::exit(bench::kExitWrongResult);                                               \
    }                                                                                   \
  } while (0)

using Clock = std::chrono::steady_clock;

inline double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Deterministic pseudo-random 32-bit value for index i (stateless, so host and
// device compute the same expected value of any element independently).
__host__ __device__ inline std::uint32_t mix32(std::uint32_t i) {
  i ^= i >> 16;
  i *= 0x7feb352du;
  i ^= i >> 15;
  i *= 0x846ca68bu;
  i ^= i >> 16;
  return i;
}

// Sample counts: the full size, or the smaller one chosen with --quick. Both sides of
// a comparison must run with the same choice (run_bench.sh passes the same flag).
struct Scale {
  bool quick = false;
  template <typename T>
  T pick(T full, T quickValue) const {
    return quick ? quickValue : full;
  }
};

// The command line every benchmark program takes: `PROGRAM [--quick] [WORKLOAD...] | --list`.
// `workloads` is the program's table (each entry has a `name`). Fills *scale and *selected (every
// workload when none is named) and returns -1 to go on, or the exit status main returns: 0 after
// --list or --help, kExitUsage for an unknown argument.
template <typename Workload, std::size_t N>
int parseCommandLine(int argc, char** argv, const char* program, const Workload (&workloads)[N], Scale* scale,
                     std::vector<const Workload*>* selected) {
  auto usage = [&](const std::string& problem) {
    if (!problem.empty()) std::fprintf(stderr, "%s: %s\n", program, problem.c_str());
    std::fprintf(stderr, "usage: %s [--quick] [WORKLOAD...] | --list\nworkloads:", program);
    for (const Workload& workload : workloads) std::fprintf(stderr, " %s", workload.name);
    std::fprintf(stderr, "\n");
  };
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    const Workload* named = nullptr;
    for (const Workload& workload : workloads) {
      if (argument == workload.name) named = &workload;
    }
    if (argument == "--quick") {
      scale->quick = true;
    } else if (argument == "--list") {
      for (const Workload& workload : workloads) std::printf("%s\n", workload.name);
      return 0;
    } else if (argument == "-h" || argument == "--help") {
      usage("");
      return 0;
    } else if (named != nullptr) {
      selected->push_back(named);
    } else {
      usage("unknown workload or option: " + argument);
      return kExitUsage;
    }
  }
  if (selected->empty()) {
    for (const Workload& workload : workloads) selected->push_back(&workload);
  }
  return -1;
}

// One workload's measurement. `samples` are in `unit` (a time per call, per copy or
// per run); `throughput` is derived by the workload (calls/s, GB/s, GFLOP/s, ...)
// from the median sample, so that one slow outlier does not move it.
struct Result {
  Result(std::string workloadName, std::string sampleUnit)
      : workload(std::move(workloadName)), unit(std::move(sampleUnit)) {}

  std::string workload;
  std::string unit;  // "us", "ms" or "s"
  std::vector<double> samples;
  double throughput = 0.0;
  std::string throughputUnit;
  std::vector<std::pair<std::string, double>> parameters;  // sizes and counts, for the record
};

// Nearest-rank percentile (p in (0, 100]) of an ascending, non-empty vector.
inline double percentile(const std::vector<double>& sorted, double p) {
  const auto n = static_cast<double>(sorted.size());
  auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * n));
  rank = std::clamp<std::size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

inline double median(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return percentile(samples, 50.0);
}

// JSON has no NaN or infinity; a measurement that produced one is a bug, not data.
inline void printNumber(const char* key, double value) {
  if (!std::isfinite(value)) {
    std::fprintf(stderr, "agileos_bench: %s is not a finite number\n", key);
    std::exit(kExitWrongResult);
  }
  // Counts and byte sizes exactly; measurements to six significant digits.
  if (value == std::trunc(value) && std::fabs(value) < 1e15) {
    std::printf(", \"%s\": %.0f", key, value);
  } else {
    std::printf(", \"%s\": %.6g", key, value);
  }
}

// Writes the workload's JSON line to stdout and flushes it (names are plain
// identifiers chosen in this program, so they need no escaping).
inline void printResult(const Result& result) {
  if (result.samples.empty()) {
    std::fprintf(stderr, "agileos_bench: %s produced no samples\n", result.workload.c_str());
    std::exit(kExitWrongResult);
  }
  std::vector<double> sorted = result.samples;
  std::sort(sorted.begin(), sorted.end());
  double sum = 0.0;
  for (double sample : sorted) sum += sample;
  std::printf("{\"workload\": \"%s\", \"unit\": \"%s\", \"samples\": %zu", result.workload.c_str(),
              result.unit.c_str(), sorted.size());
  printNumber("p50", percentile(sorted, 50.0));
  printNumber("p99", percentile(sorted, 99.0));
  printNumber("mean", sum / static_cast<double>(sorted.size()));
  printNumber("min", sorted.front());
  printNumber("max", sorted.back());
  printNumber("throughput", result.throughput);
  std::printf(", \"throughput_unit\": \"%s\"", result.throughputUnit.c_str());
  for (const auto& [key, value] : result.parameters) printNumber(key.c_str(), value);
  std::printf("}\n");
  std::fflush(stdout);
}

// Blocks and threads for a grid-stride loop over n elements.
inline dim3 gridFor(std::size_t n, unsigned threads = 256) {
  const std::size_t blocks = std::min<std::size_t>((n + threads - 1) / threads, 132 * 32);
  return dim3(static_cast<unsigned>(std::max<std::size_t>(blocks, 1)));
}

}  // namespace bench
