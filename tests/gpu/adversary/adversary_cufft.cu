// adversary_cufft: hostile use of cuFFT, run through the AgileOS shims only (natively, several
// of these cases would fault or corrupt memory).
//
// Each case hands cuFFT something a well-behaved program never would: an output or input
// buffer too small for the plan, an in-place R2C buffer without the padding, freed buffers,
// pointers into the I/O aperture, the protected module range or unallocated user space,
// forged and destroyed plan handles, a caller-owned work area that is too small, forged or
// freed, and a callback. Every such call must be refused (a non-CUFFT_SUCCESS result; exactly
// CUFFT_INVALID_PLAN for bad handles), must leave the buffers it was given unchanged, and must
// not leave a fault behind (cudaDeviceSynchronize succeeds afterwards). At the end, the same
// plans must still compute correct transforms (checked against a CPU DFT).
//
// Output: "PASS <what>" / "FAIL <what>" lines, then "adversary_cufft: N passed, M failed".
// The cuFFT results are named on stderr only. Exit status 0 only if every case passed; 3 if
// the program crashed (the case is named on stdout and stderr).
#include <cufft.h>
#include <cufftXt.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "tests/gpu/programs/check.cuh"
#include "tests/gpu/programs/cufft_result_name.cuh"
#include "tests/gpu/programs/host_math.cuh"

namespace {

// The AgileOS layout (paper, Table I): I/O aperture, protected module range; and an address in
// user space that nothing allocates.
constexpr std::uint64_t kIoAperture = 0xF0000000000ull;
constexpr std::uint64_t kModuleRange = 0xF1000000000ull;
constexpr std::uint64_t kUnallocated = 0x7f0000001000ull;

constexpr double kPi = 3.14159265358979323846;
constexpr double kTolerance = 1e-4;  // relative L2 error of a float transform against the CPU DFT
constexpr unsigned char kSentinel = 0xA5;

template <typename T>
T* forged(std::uint64_t address) {
  return reinterpret_cast<T*>(static_cast<std::uintptr_t>(address));
}

// --------------------------------------------------------------- crash reporting

const char* volatile currentCase = "start-up";

void writeAll(int fd, const char* text) {
  ssize_t ignored = write(fd, text, std::strlen(text));
  (void)ignored;
}

void onFatalSignal(int) {
  // Only async-signal-safe calls here.
  const char* volatile what = currentCase;
  writeAll(STDOUT_FILENO, "FAIL crash (signal) during: ");
  writeAll(STDOUT_FILENO, what);
  writeAll(STDOUT_FILENO, "\n");
  writeAll(STDERR_FILENO, "adversary_cufft: CRASH (signal) during case: ");
  writeAll(STDERR_FILENO, what);
  writeAll(STDERR_FILENO, "\n");
  _exit(3);
}

void installCrashHandlers() {
  for (int fatal : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL}) std::signal(fatal, onFatalSignal);
}

// --------------------------------------------------------------- reporting

int passed = 0;
int failed = 0;

void report(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "PASS" : "FAIL", what.c_str());
  std::fflush(stdout);
  (ok ? passed : failed) += 1;
}

// The device is still healthy: no fault was left behind by the previous call.
bool deviceHealthy(const std::string& what) {
  const cudaError_t sync = cudaDeviceSynchronize();
  const cudaError_t last = cudaGetLastError();
  if (sync != cudaSuccess || last != cudaSuccess) {
    std::fprintf(stderr, "%s: afterwards cudaDeviceSynchronize -> %s, cudaGetLastError -> %s\n", what.c_str(),
                 cudaGetErrorName(sync), cudaGetErrorName(last));
  }
  return sync == cudaSuccess && last == cudaSuccess;
}

// A refusal case: `got` must not be CUFFT_SUCCESS (or must be exactly `exactly`, when given),
// and the device must be healthy afterwards. Returns whether it passed.
bool refusal(const std::string& what, cufftResult got, const cufftResult* exactly = nullptr) {
  std::fprintf(stderr, "%s -> %s\n", what.c_str(), cufftResultName(got));
  bool ok = exactly != nullptr ? got == *exactly : got != CUFFT_SUCCESS;
  ok = deviceHealthy(what) && ok;
  report(ok, what);
  return ok;
}

// --------------------------------------------------------------- data and checks

std::vector<cufftComplex> randomComplex(std::size_t count, std::uint32_t seed) {
  std::vector<cufftComplex> data(count);
  for (std::size_t i = 0; i < count; ++i) {
    const auto index = static_cast<std::uint32_t>(2 * i) + seed;
    data[i].x = static_cast<float>(mix32(index) / 4294967296.0 * 2.0 - 1.0);
    data[i].y = static_cast<float>(mix32(index + 1) / 4294967296.0 * 2.0 - 1.0);
  }
  return data;
}

std::vector<float> randomReal(std::size_t count, std::uint32_t seed) {
  std::vector<float> data(count);
  for (std::size_t i = 0; i < count; ++i) {
    data[i] = static_cast<float>(mix32(static_cast<std::uint32_t>(i) + seed) / 4294967296.0 * 2.0 - 1.0);
  }
  return data;
}

// Relative L2 error of `got` against the forward DFT of `in`, over `bins` of each of `batch`
// lines of length n (input line stride n, output line stride outStride).
double dftError(const std::vector<cufftComplex>& in, const std::vector<cufftComplex>& got, int n, int batch,
                int outStride, const std::vector<int>& bins) {
  std::vector<double> wRe(n), wIm(n);
  for (int k = 0; k < n; ++k) {
    wRe[k] = std::cos(2.0 * kPi * k / n);
    wIm[k] = -std::sin(2.0 * kPi * k / n);
  }
  double diff = 0.0, norm = 0.0;
  for (int b = 0; b < batch; ++b) {
    const cufftComplex* line = in.data() + static_cast<std::size_t>(b) * n;
    for (int k : bins) {
      double re = 0.0, im = 0.0;
      long long t = 0;
      for (int j = 0; j < n; ++j) {
        re += line[j].x * wRe[t] - line[j].y * wIm[t];
        im += line[j].x * wIm[t] + line[j].y * wRe[t];
        t += k;
        if (t >= n) t -= n;
      }
      const cufftComplex g = got[static_cast<std::size_t>(b) * outStride + k];
      diff += (g.x - re) * (g.x - re) + (g.y - im) * (g.y - im);
      norm += re * re + im * im;
    }
  }
  return std::sqrt(diff) / std::sqrt(norm);  // NaN if got holds NaN
}

std::vector<int> allBins(int count) {
  std::vector<int> bins(count);
  for (int k = 0; k < count; ++k) bins[k] = k;
  return bins;
}

std::vector<int> sampledBins(int n, int count) {
  std::vector<int> bins(count);
  for (int s = 0; s < count; ++s)
    bins[s] = static_cast<int>((static_cast<long long>(s) * 1361 + 7 * s * s) % n);
  return bins;
}

template <typename T>
std::vector<T> download(const void* device, std::size_t count) {
  return host_math::toHost(static_cast<const T*>(device), count);
}

bool allBytesAre(const void* device, std::size_t bytes, unsigned char value) {
  const std::vector<unsigned char> host = download<unsigned char>(device, bytes);
  for (unsigned char b : host) {
    if (b != value) return false;
  }
  return true;
}

bool sameBytes(const void* device, const void* host, std::size_t bytes) {
  const std::vector<unsigned char> back = download<unsigned char>(device, bytes);
  return std::memcmp(back.data(), host, bytes) == 0;
}

// --------------------------------------------------------------- the plans under attack

constexpr int kN = 4096;  // plan A: C2C, out of place
constexpr int kBatch = 4;
constexpr int kRealN = 1024;  // plan B: R2C, in place (padded layout)
constexpr int kRealBatch = 4;
constexpr int kRealPadded = 2 * (kRealN / 2 + 1);  // floats per row in place
constexpr int kPrimeN = 65537;                     // plan W: C2C, Bluestein, caller-owned work area

struct Buffers {
  std::vector<cufftComplex> inA;  // host copy of plan A's input
  cufftComplex* dInA = nullptr;
  cufftComplex* dOutA = nullptr;
  cufftComplex* dSmall = nullptr;  // one transform's worth: too small for plan A
  std::vector<float> inB;          // host: plan B's input rows, padded layout
  float* dPadded = nullptr;
  float* dUnpadded = nullptr;  // kRealN * kRealBatch floats: too small in place
  std::vector<cufftComplex> inW;
  cufftComplex* dInW = nullptr;
  cufftComplex* dOutW = nullptr;
};

constexpr std::size_t kBytesA = sizeof(cufftComplex) * kN * kBatch;
constexpr std::size_t kBytesSmall = sizeof(cufftComplex) * kN;
constexpr std::size_t kBytesPadded = sizeof(float) * kRealPadded * kRealBatch;
constexpr std::size_t kBytesUnpadded = sizeof(float) * kRealN * kRealBatch;
constexpr std::size_t kBytesW = sizeof(cufftComplex) * kPrimeN;

// Plan A: a correct exec, checked against the CPU DFT of every bin.
bool planAWorks(cufftHandle planA, Buffers& b, const std::string& when) {
  CHECK_CUDA(cudaMemset(b.dOutA, 0xFF, kBytesA));
  const cufftResult r = cufftExecC2C(planA, b.dInA, b.dOutA, CUFFT_FORWARD);
  CHECK_CUDA(cudaDeviceSynchronize());
  if (r != CUFFT_SUCCESS) {
    std::fprintf(stderr, "plan A %s: exec -> %s\n", when.c_str(), cufftResultName(r));
    return false;
  }
  const double err =
      dftError(b.inA, download<cufftComplex>(b.dOutA, kN * kBatch), kN, kBatch, kN, allBins(kN));
  std::fprintf(stderr, "plan A %s: relative L2 error %.3e\n", when.c_str(), err);
  return err <= kTolerance && sameBytes(b.dInA, b.inA.data(), kBytesA);
}

// Plan B: a correct in-place R2C on the padded buffer.
bool planBWorks(cufftHandle planB, Buffers& b, const std::string& when) {
  CHECK_CUDA(cudaMemcpy(b.dPadded, b.inB.data(), kBytesPadded, cudaMemcpyHostToDevice));
  const cufftResult r = cufftExecR2C(planB, b.dPadded, reinterpret_cast<cufftComplex*>(b.dPadded));
  CHECK_CUDA(cudaDeviceSynchronize());
  if (r != CUFFT_SUCCESS) {
    std::fprintf(stderr, "plan B %s: exec -> %s\n", when.c_str(), cufftResultName(r));
    return false;
  }
  std::vector<cufftComplex> rows(static_cast<std::size_t>(kRealN) * kRealBatch);
  for (int row = 0; row < kRealBatch; ++row) {
    for (int j = 0; j < kRealN; ++j) rows[row * kRealN + j] = {b.inB[row * kRealPadded + j], 0.0f};
  }
  const std::vector<cufftComplex> out =
      download<cufftComplex>(b.dPadded, kBytesPadded / sizeof(cufftComplex));
  const double err = dftError(rows, out, kRealN, kRealBatch, kRealN / 2 + 1, allBins(kRealN / 2 + 1));
  std::fprintf(stderr, "plan B %s: relative L2 error %.3e\n", when.c_str(), err);
  return err <= kTolerance;
}

// Plan W: a correct exec with a proper work area set, checked on sampled bins.
bool planWWorks(cufftHandle planW, Buffers& b, const std::string& when) {
  CHECK_CUDA(cudaMemset(b.dOutW, 0xFF, kBytesW));
  const cufftResult r = cufftExecC2C(planW, b.dInW, b.dOutW, CUFFT_FORWARD);
  CHECK_CUDA(cudaDeviceSynchronize());
  if (r != CUFFT_SUCCESS) {
    std::fprintf(stderr, "plan W %s: exec -> %s\n", when.c_str(), cufftResultName(r));
    return false;
  }
  const double err = dftError(b.inW, download<cufftComplex>(b.dOutW, kPrimeN), kPrimeN, 1, kPrimeN,
                              sampledBins(kPrimeN, 64));
  std::fprintf(stderr, "plan W %s: relative L2 error (64 sampled bins) %.3e\n", when.c_str(), err);
  return err <= kTolerance;
}

}  // namespace

int main() {
  installCrashHandlers();
  Buffers b;
  currentCase = "set-up";
  b.inA = randomComplex(static_cast<std::size_t>(kN) * kBatch, 11);
  b.inB = randomReal(static_cast<std::size_t>(kRealPadded) * kRealBatch, 23);
  b.inW = randomComplex(kPrimeN, 37);
  CHECK_CUDA(cudaMalloc(&b.dInA, kBytesA));
  CHECK_CUDA(cudaMalloc(&b.dOutA, kBytesA));
  CHECK_CUDA(cudaMalloc(&b.dSmall, kBytesSmall));
  CHECK_CUDA(cudaMalloc(&b.dPadded, kBytesPadded));
  CHECK_CUDA(cudaMalloc(&b.dUnpadded, kBytesUnpadded));
  CHECK_CUDA(cudaMalloc(&b.dInW, kBytesW));
  CHECK_CUDA(cudaMalloc(&b.dOutW, kBytesW));
  CHECK_CUDA(cudaMemcpy(b.dInA, b.inA.data(), kBytesA, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(b.dInW, b.inW.data(), kBytesW, cudaMemcpyHostToDevice));

  cufftHandle planA = 0, planB = 0, planW = 0;
  cufftResult r = cufftPlan1d(&planA, kN, CUFFT_C2C, kBatch);
  EXPECT_TRUE(r == CUFFT_SUCCESS, "cufftPlan1d(C2C %d x %d) -> %s", kN, kBatch, cufftResultName(r));
  r = cufftPlan1d(&planB, kRealN, CUFFT_R2C, kRealBatch);
  EXPECT_TRUE(r == CUFFT_SUCCESS, "cufftPlan1d(R2C %d x %d) -> %s", kRealN, kRealBatch, cufftResultName(r));
  r = cufftCreate(&planW);
  EXPECT_TRUE(r == CUFFT_SUCCESS, "cufftCreate -> %s", cufftResultName(r));
  r = cufftSetAutoAllocation(planW, 0);
  EXPECT_TRUE(r == CUFFT_SUCCESS, "cufftSetAutoAllocation(0) -> %s", cufftResultName(r));
  std::size_t madeSize = 0, workSize = 0;
  r = cufftMakePlan1d(planW, kPrimeN, CUFFT_C2C, 1, &madeSize);
  EXPECT_TRUE(r == CUFFT_SUCCESS, "cufftMakePlan1d(C2C %d) -> %s", kPrimeN, cufftResultName(r));
  r = cufftGetSize(planW, &workSize);
  EXPECT_TRUE(r == CUFFT_SUCCESS, "cufftGetSize -> %s", cufftResultName(r));
  std::fprintf(stderr, "plan W: work size %zu (cufftMakePlan1d said %zu)\n", workSize, madeSize);

  // Baseline: the plans work before any attack.
  currentCase = "baseline";
  report(planAWorks(planA, b, "baseline"), "baseline: C2C n=4096 batch 4 out of place matches the CPU DFT");
  report(planBWorks(planB, b, "baseline"),
         "baseline: in-place R2C n=1024 batch 4 (padded) matches the CPU DFT");

  // ---- buffers too small for the plan
  currentCase = "too-small output";
  CHECK_CUDA(cudaMemset(b.dSmall, kSentinel, kBytesSmall));
  refusal("exec C2C n=4096 batch 4 into a live output allocation of one transform is refused",
          cufftExecC2C(planA, b.dInA, b.dSmall, CUFFT_FORWARD));
  report(sameBytes(b.dInA, b.inA.data(), kBytesA), "too-small output: the input buffer is unchanged");
  report(allBytesAre(b.dSmall, kBytesSmall, kSentinel),
         "too-small output: the output buffer was not written");

  currentCase = "too-small input";
  CHECK_CUDA(cudaMemset(b.dOutA, kSentinel, kBytesA));
  CHECK_CUDA(cudaMemcpy(b.dSmall, b.inA.data(), kBytesSmall, cudaMemcpyHostToDevice));
  refusal("exec C2C n=4096 batch 4 from a live input allocation of one transform is refused",
          cufftExecC2C(planA, b.dSmall, b.dOutA, CUFFT_FORWARD));
  report(allBytesAre(b.dOutA, kBytesA, kSentinel), "too-small input: the output buffer was not written");

  currentCase = "in-place R2C without padding";
  const std::vector<float> unpadded = randomReal(static_cast<std::size_t>(kRealN) * kRealBatch, 51);
  CHECK_CUDA(cudaMemcpy(b.dUnpadded, unpadded.data(), kBytesUnpadded, cudaMemcpyHostToDevice));
  refusal("in-place R2C n=1024 batch 4 on n*batch floats (no padding) is refused",
          cufftExecR2C(planB, b.dUnpadded, reinterpret_cast<cufftComplex*>(b.dUnpadded)));
  report(sameBytes(b.dUnpadded, unpadded.data(), kBytesUnpadded),
         "in-place R2C without padding: buffer unchanged");

  // ---- freed buffers
  currentCase = "freed buffers";
  cufftComplex* freed = nullptr;
  CHECK_CUDA(cudaMalloc(&freed, kBytesA));
  CHECK_CUDA(cudaFree(freed));
  CHECK_CUDA(cudaMemset(b.dOutA, kSentinel, kBytesA));
  refusal("exec C2C from a freed input buffer is refused",
          cufftExecC2C(planA, freed, b.dOutA, CUFFT_FORWARD));
  report(allBytesAre(b.dOutA, kBytesA, kSentinel), "freed input: the output buffer was not written");
  refusal("exec C2C into a freed output buffer is refused",
          cufftExecC2C(planA, b.dInA, freed, CUFFT_FORWARD));
  report(sameBytes(b.dInA, b.inA.data(), kBytesA), "freed output: the input buffer is unchanged");

  // ---- addresses that are not the client's memory
  currentCase = "foreign addresses";
  const struct {
    const char* what;
    std::uint64_t address;
  } foreign[] = {
      {"the I/O aperture (0xF0000000000 + 4096)", kIoAperture + 4096},
      {"the protected module range (0xF1000000000 + 4096)", kModuleRange + 4096},
      {"unallocated user space (0x7f0000001000)", kUnallocated},
  };
  for (const auto& f : foreign) {
    currentCase = f.what;
    CHECK_CUDA(cudaMemset(b.dOutA, kSentinel, kBytesA));
    refusal(std::string("exec C2C with input in ") + f.what + " is refused",
            cufftExecC2C(planA, forged<cufftComplex>(f.address), b.dOutA, CUFFT_FORWARD));
    report(allBytesAre(b.dOutA, kBytesA, kSentinel),
           std::string("input in ") + f.what + ": output not written");
    refusal(std::string("exec C2C with output in ") + f.what + " is refused",
            cufftExecC2C(planA, b.dInA, forged<cufftComplex>(f.address), CUFFT_FORWARD));
  }
  report(sameBytes(b.dInA, b.inA.data(), kBytesA), "foreign addresses: the input buffer is unchanged");

  // ---- forged and destroyed plan handles
  currentCase = "forged plan handles";
  const cufftResult invalidPlan = CUFFT_INVALID_PLAN;
  CHECK_CUDA(cudaMemset(b.dOutA, kSentinel, kBytesA));
  refusal("exec C2C with the forged plan handle 12345 -> CUFFT_INVALID_PLAN",
          cufftExecC2C(static_cast<cufftHandle>(12345), b.dInA, b.dOutA, CUFFT_FORWARD), &invalidPlan);
  cufftHandle destroyed = 0;
  r = cufftPlan1d(&destroyed, kN, CUFFT_C2C, kBatch);
  EXPECT_TRUE(r == CUFFT_SUCCESS, "cufftPlan1d -> %s", cufftResultName(r));
  r = cufftDestroy(destroyed);
  EXPECT_TRUE(r == CUFFT_SUCCESS, "cufftDestroy -> %s", cufftResultName(r));
  refusal("exec C2C with the handle of a destroyed plan -> CUFFT_INVALID_PLAN",
          cufftExecC2C(destroyed, b.dInA, b.dOutA, CUFFT_FORWARD), &invalidPlan);
  report(allBytesAre(b.dOutA, kBytesA, kSentinel), "bad plan handles: the output buffer was not written");

  // ---- caller-owned work areas
  currentCase = "work area too small";
  report(workSize > 0, "plan W (C2C n=65537, auto-allocation off) reports a work size > 0");
  void* smallWork = nullptr;
  CHECK_CUDA(cudaMalloc(&smallWork, workSize > 1 ? workSize / 2 : 1));
  r = cufftSetWorkArea(planW, smallWork);
  std::fprintf(stderr, "cufftSetWorkArea(half of the work size) -> %s\n", cufftResultName(r));
  CHECK_CUDA(cudaMemset(b.dOutW, kSentinel, kBytesW));
  refusal("exec with a work area of half the size cufftGetSize reported is refused",
          cufftExecC2C(planW, b.dInW, b.dOutW, CUFFT_FORWARD));
  report(allBytesAre(b.dOutW, kBytesW, kSentinel), "too-small work area: the output buffer was not written");

  currentCase = "work area in the I/O aperture";
  r = cufftSetWorkArea(planW, forged<void>(kIoAperture + 4096));
  std::fprintf(stderr, "cufftSetWorkArea(I/O aperture) -> %s\n", cufftResultName(r));
  refusal("exec with a work area in the I/O aperture is refused",
          cufftExecC2C(planW, b.dInW, b.dOutW, CUFFT_FORWARD));

  currentCase = "freed work area";
  void* freedWork = nullptr;
  CHECK_CUDA(cudaMalloc(&freedWork, workSize > 0 ? workSize : 1));
  r = cufftSetWorkArea(planW, freedWork);
  std::fprintf(stderr, "cufftSetWorkArea(soon freed) -> %s\n", cufftResultName(r));
  CHECK_CUDA(cudaFree(freedWork));
  refusal("exec with a work area freed after it was set is refused",
          cufftExecC2C(planW, b.dInW, b.dOutW, CUFFT_FORWARD));
  report(allBytesAre(b.dOutW, kBytesW, kSentinel), "bad work areas: the output buffer was not written");

  currentCase = "proper work area";
  void* work = nullptr;
  CHECK_CUDA(cudaMalloc(&work, workSize > 0 ? workSize : 1));
  r = cufftSetWorkArea(planW, work);
  std::fprintf(stderr, "cufftSetWorkArea(proper) -> %s\n", cufftResultName(r));
  report(r == CUFFT_SUCCESS && planWWorks(planW, b, "after the work-area attacks"),
         "plan W works once a work area of the reported size is set");

  // ---- callbacks
  currentCase = "callbacks";
  void* callbacks[1] = {forged<void>(kModuleRange + 64)};
  refusal("cufftXtSetCallback(CUFFT_CB_LD_COMPLEX) is refused",
          cufftXtSetCallback(planA, callbacks, CUFFT_CB_LD_COMPLEX, nullptr));

  // ---- nothing else changed: the same plans still compute correct transforms
  currentCase = "after the attacks";
  report(planAWorks(planA, b, "after the attacks"),
         "after the attacks: C2C n=4096 batch 4 on the same plan still matches the CPU DFT");
  report(planBWorks(planB, b, "after the attacks"),
         "after the attacks: in-place R2C on the same plan (padded buffer) still matches the CPU DFT");
  report(planWWorks(planW, b, "after the attacks"),
         "after the attacks: C2C n=65537 with the caller's work area still matches the CPU DFT");

  currentCase = "tear-down";
  const cufftResult destroyA = cufftDestroy(planA), destroyB = cufftDestroy(planB),
                    destroyW = cufftDestroy(planW);
  std::fprintf(stderr, "cufftDestroy -> %s, %s, %s\n", cufftResultName(destroyA), cufftResultName(destroyB),
               cufftResultName(destroyW));
  report(destroyA == CUFFT_SUCCESS && destroyB == CUFFT_SUCCESS && destroyW == CUFFT_SUCCESS,
         "every plan is destroyed");
  for (void* p : {static_cast<void*>(b.dInA), static_cast<void*>(b.dOutA), static_cast<void*>(b.dSmall),
                  static_cast<void*>(b.dPadded), static_cast<void*>(b.dUnpadded), static_cast<void*>(b.dInW),
                  static_cast<void*>(b.dOutW), smallWork, work}) {
    CHECK_CUDA(cudaFree(p));
  }
  report(deviceHealthy("tear-down"), "the device is healthy at the end");

  std::printf("adversary_cufft: %d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
