// cuFFT through the public API (cufft.h), one line per configuration, each checked against a
// CPU reference computed in double precision:
// - sizes: powers of two, composites with odd factors (1000, 1155 = 3*5*7*11, 2310), odd
//   lengths of the last dimension for real transforms, primes (1009, 4099) against a naive
//   DFT, and the large prime 65537 by forward + inverse round trip plus a sample of bins
//   checked against the direct DFT sum (a full O(n^2) reference would take too long);
// - rank 1, 2 and 3; batched; every transform type (C2C both directions, R2C, C2R, Z2Z,
//   D2Z, Z2D); in place (in-place R2C/C2R with the padded real layout) and out of place;
// - plan creation through cufftPlan1d/2d/3d, cufftPlanMany (basic and advanced layouts:
//   interleaved strides, padded rows, padded batch distances), cufftCreate +
//   cufftMakePlan1d/2d/3d, cufftMakePlanMany, cufftMakePlanMany64, cufftXtMakePlanMany with
//   cufftXtExec (single and double precision), and caller-owned work
//   areas (cufftSetAutoAllocation(0) + cufftGetSize + cudaMalloc + cufftSetWorkArea);
// - some configurations on a stream of their own (cufftSetStream, cudaMemcpyAsync);
// - the size queries (cufftEstimate*, cufftGetSize*) and the version queries, whose values
//   may legitimately differ between runs, so only "ok" is printed for them.
// Inputs come from a fixed LCG. Each configuration prints "<name> ok sum=<sum of |out|>"
// (4 significant digits), or "FAIL <name>: ..." on stdout; exit status 0 only if all passed.
#include <cufft.h>
#include <cufftXt.h>
#include <library_types.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "check.cuh"
#include "tests/gpu/programs/cufft_result_name.cuh"

namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kTolSingle = 1e-4;        // relative L2 error, float transforms
constexpr double kTolDouble = 1e-10;       // relative L2 error, double transforms
constexpr float kInputGapValue = 1000.5f;  // input buffer elements outside the layout (never read)
constexpr int kSampledBins = 48;           // bins checked against the direct DFT in round-trip configurations

// --------------------------------------------------------------- configurations

enum class Prec { kSingle, kDouble };
enum class Kind { kC2C, kR2C, kC2R };
enum class Maker { kPlan, kPlanMany, kMakePlan, kMakePlanMany, kMakePlanMany64, kXtMakePlanMany };
enum class Check { kReference, kRoundTrip };

// One side of an advanced layout (cufftPlanMany's inembed/istride/idist or onembed/ostride/odist),
// in elements of that side's type.
struct Side {
  std::vector<int> nembed;
  int stride = 1;
  int dist = 0;
};

struct Config {
  std::string name;
  Prec prec = Prec::kSingle;
  Kind kind = Kind::kC2C;
  int direction = CUFFT_FORWARD;  // C2C/Z2Z only
  std::vector<int> n;
  int batch = 1;
  bool inplace = false;
  Maker maker = Maker::kPlan;
  bool advanced = false;  // in/out below are passed to the plan; otherwise the basic layout
  Side in, out;
  bool manualWork = false;  // cufftSetAutoAllocation(0) + cufftSetWorkArea
  bool onStream = false;
  Check check = Check::kReference;

  Config& inverse() {
    direction = CUFFT_INVERSE;
    return *this;
  }
  Config& inPlace() {
    inplace = true;
    return *this;
  }
  Config& by(Maker m) {
    maker = m;
    return *this;
  }
  Config& layout(Side i, Side o) {
    advanced = true;
    in = std::move(i);
    out = std::move(o);
    return *this;
  }
  Config& manual() {
    manualWork = true;
    return *this;
  }
  Config& stream() {
    onStream = true;
    return *this;
  }
  Config& roundTrip() {
    check = Check::kRoundTrip;
    return *this;
  }
};

Config cfg(const char* name, Prec prec, Kind kind, std::vector<int> n, int batch = 1) {
  Config c;
  c.name = name;
  c.prec = prec;
  c.kind = kind;
  c.n = std::move(n);
  c.batch = batch;
  return c;
}

cufftType typeOf(const Config& c) {
  if (c.prec == Prec::kSingle) {
    return c.kind == Kind::kC2C ? CUFFT_C2C : c.kind == Kind::kR2C ? CUFFT_R2C : CUFFT_C2R;
  }
  return c.kind == Kind::kC2C ? CUFFT_Z2Z : c.kind == Kind::kR2C ? CUFFT_D2Z : CUFFT_Z2D;
}

long long product(const std::vector<int>& dims) {
  long long p = 1;
  for (int d : dims) p *= d;
  return p;
}

std::vector<int> halfDims(const std::vector<int>& n) {
  std::vector<int> d = n;
  d.back() = d.back() / 2 + 1;
  return d;
}

// Logical dimensions of one side: the complex side of a real transform keeps n/2+1 in the last one.
std::vector<int> logicalDims(const Config& c, bool input) {
  const bool half = input ? c.kind == Kind::kC2R : c.kind == Kind::kR2C;
  return half ? halfDims(c.n) : c.n;
}

bool isComplexSide(const Config& c, bool input) {
  return input ? c.kind != Kind::kR2C : c.kind != Kind::kC2R;
}

// Where the elements of one side live, in elements of that side's type.
struct Storage {
  std::vector<int> embed;
  long long stride = 1;
  long long dist = 0;
};

Storage storageOf(const Config& c, bool input) {
  if (c.advanced) {
    const Side& s = input ? c.in : c.out;
    return {s.nembed, s.stride, s.dist};
  }
  std::vector<int> dims = logicalDims(c, input);
  // In place, the real side of R2C/C2R is padded to 2*(n/2+1) elements per row.
  if (c.inplace && !isComplexSide(c, input)) dims.back() = 2 * (c.n.back() / 2 + 1);
  const long long dist = product(dims);
  return {std::move(dims), 1, dist};
}

// The element offset of every logical element (batch-major, then row-major), as cuFFT's
// advanced layout defines it: b * dist + stride * (i[r-1] + embed[r-1] * (i[r-2] + ...)).
std::vector<long long> offsetsOf(const Storage& s, const std::vector<int>& dims, int batch) {
  const long long per = product(dims);
  std::vector<long long> offsets(static_cast<std::size_t>(per * batch));
  std::vector<int> idx(dims.size());
  for (long long e = 0; e < per; ++e) {
    long long rem = e;
    for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
      idx[d] = static_cast<int>(rem % dims[d]);
      rem /= dims[d];
    }
    long long linear = idx[0];
    for (std::size_t d = 1; d < dims.size(); ++d) linear = linear * s.embed[d] + idx[d];
    for (int b = 0; b < batch; ++b)
      offsets[static_cast<std::size_t>(b * per + e)] = b * s.dist + s.stride * linear;
  }
  return offsets;
}

// --------------------------------------------------------------- CPU reference (double)

struct Lcg {
  std::uint64_t state;
  double next() {  // uniform in [-1, 1)
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<double>(state >> 11) * (2.0 / 9007199254740992.0) - 1.0;
  }
};

// Complex data are interleaved (re, im) doubles; real data are stored as complex with im = 0.
using Data = std::vector<double>;

// Unnormalized DFT along one axis of batch arrays of the given dimensions; sign -1 forward.
void dftAxis(Data& data, const std::vector<int>& dims, int batch, std::size_t axis, int sign) {
  const int n = dims[axis];
  long long inner = 1;
  for (std::size_t d = axis + 1; d < dims.size(); ++d) inner *= dims[d];
  long long outer = batch;
  for (std::size_t d = 0; d < axis; ++d) outer *= dims[d];
  std::vector<double> wRe(n), wIm(n), lineRe(n), lineIm(n);
  for (int k = 0; k < n; ++k) {
    const double angle = 2.0 * kPi * static_cast<double>(k) / n;
    wRe[k] = std::cos(angle);
    wIm[k] = sign * std::sin(angle);
  }
  for (long long o = 0; o < outer; ++o) {
    for (long long i = 0; i < inner; ++i) {
      const long long base = o * n * inner + i;
      for (int j = 0; j < n; ++j) {
        lineRe[j] = data[2 * (base + j * inner)];
        lineIm[j] = data[2 * (base + j * inner) + 1];
      }
      for (int k = 0; k < n; ++k) {
        double accRe = 0.0, accIm = 0.0;
        int t = 0;  // (j * k) mod n
        for (int j = 0; j < n; ++j) {
          accRe += lineRe[j] * wRe[t] - lineIm[j] * wIm[t];
          accIm += lineRe[j] * wIm[t] + lineIm[j] * wRe[t];
          t += k;
          if (t >= n) t -= n;
        }
        data[2 * (base + k * inner)] = accRe;
        data[2 * (base + k * inner) + 1] = accIm;
      }
    }
  }
}

void dft(Data& data, const std::vector<int>& dims, int batch, int sign) {
  for (std::size_t axis = 0; axis < dims.size(); ++axis) dftAxis(data, dims, batch, axis, sign);
}

// The first n/2+1 elements of the last dimension (what R2C keeps).
Data sliceHalf(const Data& full, const std::vector<int>& n, int batch) {
  const int last = n.back(), half = last / 2 + 1;
  const long long rows = product(n) / last * batch;
  Data out(static_cast<std::size_t>(2 * rows * half));
  for (long long r = 0; r < rows; ++r) {
    for (int k = 0; k < half; ++k) {
      out[2 * (r * half + k)] = full[2 * (r * last + k)];
      out[2 * (r * half + k) + 1] = full[2 * (r * last + k) + 1];
    }
  }
  return out;
}

template <typename T>
double roundTo(double v) {
  return static_cast<double>(static_cast<T>(v));
}

// sqrt(sum |got - ref|^2) / sqrt(sum |ref|^2); NaN when got holds NaN.
double relativeError(const Data& got, const Data& ref) {
  double diff = 0.0, norm = 0.0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    diff += (got[i] - ref[i]) * (got[i] - ref[i]);
    norm += ref[i] * ref[i];
  }
  return std::sqrt(diff) / std::sqrt(norm);
}

double sumOfMagnitudes(const Data& data) {
  double sum = 0.0;
  for (std::size_t i = 0; i < data.size(); i += 2) sum += std::hypot(data[i], data[i + 1]);
  return sum;
}

// --------------------------------------------------------------- plans and execution

struct Plan {
  cufftHandle handle = 0;
  bool created = false;
  void* workArea = nullptr;
};

std::vector<long long> toLong(const std::vector<int>& v) {
  return std::vector<long long>(v.begin(), v.end());
}

// Creates the plan the configuration asks for. Returns "" or what failed (deterministic text).
std::string createPlan(const Config& c, Plan& plan) {
  const cufftType type = typeOf(c);
  const int rank = static_cast<int>(c.n.size());
  std::vector<int> n = c.n;
  const Storage sIn = storageOf(c, true), sOut = storageOf(c, false);
  std::vector<int> inembed = sIn.embed, onembed = sOut.embed;
  int* inembedArg = c.advanced ? inembed.data() : nullptr;
  int* onembedArg = c.advanced ? onembed.data() : nullptr;
  const int istride = static_cast<int>(sIn.stride), idist = static_cast<int>(sIn.dist);
  const int ostride = static_cast<int>(sOut.stride), odist = static_cast<int>(sOut.dist);
  auto failed = [](const char* call, cufftResult r) {
    return std::string(call) + " -> " + cufftResultName(r);
  };
  cufftResult r = CUFFT_SUCCESS;

  if (c.maker == Maker::kPlan) {
    if (rank == 1) {
      r = cufftPlan1d(&plan.handle, n[0], type, c.batch);
    } else if (rank == 2) {
      r = cufftPlan2d(&plan.handle, n[0], n[1], type);
    } else {
      r = cufftPlan3d(&plan.handle, n[0], n[1], n[2], type);
    }
    plan.created = r == CUFFT_SUCCESS;
    return r == CUFFT_SUCCESS ? "" : failed("cufftPlan1d/2d/3d", r);
  }
  if (c.maker == Maker::kPlanMany) {
    r = cufftPlanMany(&plan.handle, rank, n.data(), inembedArg, istride, idist, onembedArg, ostride, odist,
                      type, c.batch);
    plan.created = r == CUFFT_SUCCESS;
    return r == CUFFT_SUCCESS ? "" : failed("cufftPlanMany", r);
  }

  if ((r = cufftCreate(&plan.handle)) != CUFFT_SUCCESS) return failed("cufftCreate", r);
  plan.created = true;
  if (c.manualWork && (r = cufftSetAutoAllocation(plan.handle, 0)) != CUFFT_SUCCESS) {
    return failed("cufftSetAutoAllocation", r);
  }
  std::size_t workSize = 0;
  const char* call = "";
  switch (c.maker) {
    case Maker::kMakePlan:
      if (rank == 1) {
        call = "cufftMakePlan1d";
        r = cufftMakePlan1d(plan.handle, n[0], type, c.batch, &workSize);
      } else if (rank == 2) {
        call = "cufftMakePlan2d";
        r = cufftMakePlan2d(plan.handle, n[0], n[1], type, &workSize);
      } else {
        call = "cufftMakePlan3d";
        r = cufftMakePlan3d(plan.handle, n[0], n[1], n[2], type, &workSize);
      }
      break;
    case Maker::kMakePlanMany:
      call = "cufftMakePlanMany";
      r = cufftMakePlanMany(plan.handle, rank, n.data(), inembedArg, istride, idist, onembedArg, ostride,
                            odist, type, c.batch, &workSize);
      break;
    case Maker::kXtMakePlanMany: {
      // The typed entry point with the cudaDataTypes cuFFT documents as this cufftType.
      call = "cufftXtMakePlanMany";
      const bool single = c.prec == Prec::kSingle;
      const cudaDataType real = single ? CUDA_R_32F : CUDA_R_64F, complex = single ? CUDA_C_32F : CUDA_C_64F;
      const cudaDataType inputType = c.kind == Kind::kR2C ? real : complex;
      const cudaDataType outputType = c.kind == Kind::kC2R ? real : complex;
      std::vector<long long> n64 = toLong(n), inembed64 = toLong(inembed), onembed64 = toLong(onembed);
      r = cufftXtMakePlanMany(plan.handle, rank, n64.data(), c.advanced ? inembed64.data() : nullptr,
                              sIn.stride, sIn.dist, inputType, c.advanced ? onembed64.data() : nullptr,
                              sOut.stride, sOut.dist, outputType, c.batch, &workSize, complex);
      break;
    }
    default: {
      call = "cufftMakePlanMany64";
      std::vector<long long> n64 = toLong(n), inembed64 = toLong(inembed), onembed64 = toLong(onembed);
      r = cufftMakePlanMany64(plan.handle, rank, n64.data(), c.advanced ? inembed64.data() : nullptr,
                              sIn.stride, sIn.dist, c.advanced ? onembed64.data() : nullptr, sOut.stride,
                              sOut.dist, type, c.batch, &workSize);
      break;
    }
  }
  if (r != CUFFT_SUCCESS) return failed(call, r);
  std::fprintf(stderr, "%s: %s work size %zu\n", c.name.c_str(), call, workSize);
  if (c.manualWork) {
    std::size_t reported = 0;
    if ((r = cufftGetSize(plan.handle, &reported)) != CUFFT_SUCCESS) return failed("cufftGetSize", r);
    if (reported != workSize) {
      std::fprintf(stderr, "%s: cufftGetSize %zu, %s reported %zu\n", c.name.c_str(), reported, call,
                   workSize);
      return "cufftGetSize differs from the work size the plan was made with";
    }
    CHECK_CUDA(cudaMalloc(&plan.workArea, std::max<std::size_t>(reported, 256)));
    if ((r = cufftSetWorkArea(plan.handle, plan.workArea)) != CUFFT_SUCCESS)
      return failed("cufftSetWorkArea", r);
  }
  return "";
}

void destroyPlan(Plan& plan, std::string& failure) {
  if (plan.created) {
    const cufftResult r = cufftDestroy(plan.handle);
    if (r != CUFFT_SUCCESS && failure.empty()) failure = std::string("cufftDestroy -> ") + cufftResultName(r);
  }
  if (plan.workArea != nullptr) CHECK_CUDA(cudaFree(plan.workArea));
  plan = Plan{};
}

template <typename T>
cufftResult execute(cufftHandle plan, Kind kind, void* in, void* out, int direction) {
  if constexpr (std::is_same_v<T, float>) {
    switch (kind) {
      case Kind::kC2C:
        return cufftExecC2C(plan, static_cast<cufftComplex*>(in), static_cast<cufftComplex*>(out), direction);
      case Kind::kR2C:
        return cufftExecR2C(plan, static_cast<cufftReal*>(in), static_cast<cufftComplex*>(out));
      case Kind::kC2R:
        return cufftExecC2R(plan, static_cast<cufftComplex*>(in), static_cast<cufftReal*>(out));
    }
  } else {
    switch (kind) {
      case Kind::kC2C:
        return cufftExecZ2Z(plan, static_cast<cufftDoubleComplex*>(in), static_cast<cufftDoubleComplex*>(out),
                            direction);
      case Kind::kR2C:
        return cufftExecD2Z(plan, static_cast<cufftDoubleReal*>(in), static_cast<cufftDoubleComplex*>(out));
      case Kind::kC2R:
        return cufftExecZ2D(plan, static_cast<cufftDoubleComplex*>(in), static_cast<cufftDoubleReal*>(out));
    }
  }
  return CUFFT_INVALID_TYPE;
}

// Packs logical (interleaved complex) data into a raw buffer at the given element offsets.
template <typename T>
void pack(const Data& data, bool complex, const std::vector<long long>& offsets, std::vector<T>& raw) {
  for (std::size_t e = 0; e < offsets.size(); ++e) {
    if (complex) {
      raw[static_cast<std::size_t>(2 * offsets[e])] = static_cast<T>(data[2 * e]);
      raw[static_cast<std::size_t>(2 * offsets[e] + 1)] = static_cast<T>(data[2 * e + 1]);
    } else {
      raw[static_cast<std::size_t>(offsets[e])] = static_cast<T>(data[2 * e]);
    }
  }
}

template <typename T>
Data unpack(const std::vector<T>& raw, bool complex, const std::vector<long long>& offsets) {
  Data data(2 * offsets.size(), 0.0);
  for (std::size_t e = 0; e < offsets.size(); ++e) {
    if (complex) {
      data[2 * e] = raw[static_cast<std::size_t>(2 * offsets[e])];
      data[2 * e + 1] = raw[static_cast<std::size_t>(2 * offsets[e] + 1)];
    } else {
      data[2 * e] = raw[static_cast<std::size_t>(offsets[e])];
    }
  }
  return data;
}

struct Outcome {
  std::string failure;  // empty when the configuration passed
  double sum = 0.0;
};

// The logical input and the expected output (interleaved complex, double) of a configuration.
template <typename T>
void makeData(const Config& c, std::uint64_t seed, Data& input, Data& expected) {
  Lcg rng{seed};
  const long long total = product(c.n) * c.batch;
  if (c.kind == Kind::kC2C) {
    input.assign(static_cast<std::size_t>(2 * total), 0.0);
    for (double& v : input) v = roundTo<T>(rng.next());
    expected = input;
    if (c.check == Check::kReference) dft(expected, c.n, c.batch, c.direction == CUFFT_FORWARD ? -1 : 1);
    return;
  }
  Data real(static_cast<std::size_t>(2 * total), 0.0);
  for (long long i = 0; i < total; ++i) real[2 * i] = roundTo<T>(rng.next());
  Data spectrum = real;
  dft(spectrum, c.n, c.batch, -1);
  spectrum = sliceHalf(spectrum, c.n, c.batch);
  if (c.kind == Kind::kR2C) {
    input = std::move(real);
    expected = std::move(spectrum);
    return;
  }
  // C2R of the half spectrum of a real signal x gives N * x (unnormalized inverse).
  for (double& v : spectrum) v = roundTo<T>(v);
  input = std::move(spectrum);
  const double scale = static_cast<double>(product(c.n));
  expected = std::move(real);
  for (double& v : expected) v *= scale;
}

// The direct DFT (forward) of sampled bins of each 1D line, against the same bins of `got`.
double sampledBinsError(const Data& input, const Data& got, int n, int batch) {
  std::vector<double> wRe(n), wIm(n);
  for (int k = 0; k < n; ++k) {
    const double angle = 2.0 * kPi * static_cast<double>(k) / n;
    wRe[k] = std::cos(angle);
    wIm[k] = -std::sin(angle);
  }
  Data gotBins, refBins;
  for (int b = 0; b < batch; ++b) {
    const std::size_t base = static_cast<std::size_t>(b) * n;
    for (int s = 0; s < kSampledBins; ++s) {
      const int k = static_cast<int>((static_cast<long long>(s) * 1361 + 7 * s * s) % n);
      double accRe = 0.0, accIm = 0.0;
      long long t = 0;
      for (int j = 0; j < n; ++j) {
        accRe += input[2 * (base + j)] * wRe[t] - input[2 * (base + j) + 1] * wIm[t];
        accIm += input[2 * (base + j)] * wIm[t] + input[2 * (base + j) + 1] * wRe[t];
        t += k;
        if (t >= n) t -= n;
      }
      refBins.push_back(accRe);
      refBins.push_back(accIm);
      gotBins.push_back(got[2 * (base + k)]);
      gotBins.push_back(got[2 * (base + k) + 1]);
    }
  }
  return relativeError(gotBins, refBins);
}

template <typename T>
Outcome runConfig(const Config& c, std::uint64_t seed, cudaStream_t stream) {
  const double tol = std::is_same_v<T, float> ? kTolSingle : kTolDouble;
  Outcome outcome;
  Data input, expected;
  makeData<T>(c, seed, input, expected);

  const bool inComplex = isComplexSide(c, true), outComplex = isComplexSide(c, false);
  const std::vector<long long> inOffsets = offsetsOf(storageOf(c, true), logicalDims(c, true), c.batch);
  const std::vector<long long> outOffsets = offsetsOf(storageOf(c, false), logicalDims(c, false), c.batch);
  const std::size_t inScalars =
      static_cast<std::size_t>(*std::max_element(inOffsets.begin(), inOffsets.end()) + 1) *
      (inComplex ? 2 : 1);
  const std::size_t outScalars =
      static_cast<std::size_t>(*std::max_element(outOffsets.begin(), outOffsets.end()) + 1) *
      (outComplex ? 2 : 1);
  const std::size_t inBytes = (c.inplace ? std::max(inScalars, outScalars) : inScalars) * sizeof(T);
  const std::size_t outBytes = outScalars * sizeof(T);

  std::vector<T> rawIn(inBytes / sizeof(T), static_cast<T>(kInputGapValue));
  pack(input, inComplex, inOffsets, rawIn);
  void* dIn = nullptr;
  void* dOut = nullptr;
  CHECK_CUDA(cudaMalloc(&dIn, inBytes));
  if (c.inplace) {
    dOut = dIn;
  } else {
    CHECK_CUDA(cudaMalloc(&dOut, outBytes));
    CHECK_CUDA(cudaMemset(dOut, 0xFF, outBytes));  // NaN: unwritten outputs show
  }

  Plan plan;
  outcome.failure = createPlan(c, plan);
  if (outcome.failure.empty() && c.onStream) {
    const cufftResult r = cufftSetStream(plan.handle, stream);
    if (r != CUFFT_SUCCESS) outcome.failure = std::string("cufftSetStream -> ") + cufftResultName(r);
  }
  std::vector<T> rawOut(outScalars);
  auto toDevice = [&](void* dst, const void* src, std::size_t bytes) {
    if (c.onStream) {
      CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream));
    } else {
      CHECK_CUDA(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
    }
  };
  auto toHost = [&](void* dst, const void* src, std::size_t bytes) {
    if (c.onStream) {
      CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream));
      CHECK_CUDA(cudaStreamSynchronize(stream));
    } else {
      CHECK_CUDA(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
    }
  };
  auto run = [&](void* from, void* to, int direction) {
    const cufftResult r = c.maker == Maker::kXtMakePlanMany
                              ? cufftXtExec(plan.handle, from, to, direction)
                              : execute<T>(plan.handle, c.kind, from, to, direction);
    if (r != CUFFT_SUCCESS) {
      outcome.failure = std::string("exec -> ") + cufftResultName(r);
      return false;
    }
    CHECK_CUDA(c.onStream ? cudaStreamSynchronize(stream) : cudaDeviceSynchronize());
    return true;
  };

  if (outcome.failure.empty()) {
    toDevice(dIn, rawIn.data(), inBytes);
    if (run(dIn, dOut, c.direction)) {
      toHost(rawOut.data(), dOut, outBytes);
      const Data got = unpack(rawOut, outComplex, outOffsets);
      outcome.sum = sumOfMagnitudes(got);
      if (c.check == Check::kReference) {
        const double err = relativeError(got, expected);
        std::fprintf(stderr, "%s: relative L2 error %.3e\n", c.name.c_str(), err);
        if (!(err <= tol)) outcome.failure = "rel L2 err " + std::to_string(err) + " > tol";
      } else {
        // Sampled bins of the forward transform, then the inverse back into the input buffer.
        const double binErr = sampledBinsError(input, got, c.n[0], c.batch);
        std::fprintf(stderr, "%s: sampled bins relative L2 error %.3e\n", c.name.c_str(), binErr);
        if (!(binErr <= tol)) {
          outcome.failure = "sampled bins rel L2 err " + std::to_string(binErr) + " > tol";
        } else {
          CHECK_CUDA(cudaMemset(dIn, 0xFF, inBytes));
          if (run(dOut, dIn, CUFFT_INVERSE)) {
            toHost(rawIn.data(), dIn, inBytes);
            Data back = unpack(rawIn, inComplex, inOffsets);
            const double scale = 1.0 / static_cast<double>(product(c.n));
            for (double& v : back) v *= scale;
            const double err = relativeError(back, expected);
            std::fprintf(stderr, "%s: round trip relative L2 error %.3e\n", c.name.c_str(), err);
            if (!(err <= tol)) outcome.failure = "round trip rel L2 err " + std::to_string(err) + " > tol";
          }
        }
      }
    }
  }
  destroyPlan(plan, outcome.failure);
  CHECK_CUDA(cudaFree(dIn));
  if (!c.inplace) CHECK_CUDA(cudaFree(dOut));
  return outcome;
}

std::vector<Config> allConfigs() {
  const Prec S = Prec::kSingle, D = Prec::kDouble;
  const Kind C2C = Kind::kC2C, R2C = Kind::kR2C, C2R = Kind::kC2R;
  std::vector<Config> v;
  // ---- single precision, complex to complex
  v.push_back(cfg("c2c_1d_n1024_fwd_plan1d", S, C2C, {1024}));
  v.push_back(cfg("c2c_1d_n4096_b4_inv_plan1d", S, C2C, {4096}, 4).inverse());
  v.push_back(cfg("c2c_1d_n1000_b3_inplace_plan1d", S, C2C, {1000}, 3).inPlace());
  v.push_back(cfg("c2c_1d_n1155_b2_plan1d", S, C2C, {1155}, 2));  // 3*5*7*11
  v.push_back(cfg("c2c_1d_prime1009_b2_plan1d", S, C2C, {1009}, 2));
  v.push_back(cfg("c2c_1d_prime4099_inv_plan1d", S, C2C, {4099}).inverse());
  v.push_back(cfg("c2c_1d_prime65537_roundtrip_plan1d", S, C2C, {65537}).roundTrip());
  v.push_back(cfg("c2c_1d_n256_b64_planmany_basic", S, C2C, {256}, 64).by(Maker::kPlanMany));
  v.push_back(cfg("c2c_1d_n512_b2_planmany_interleaved_stride2", S, C2C, {512}, 2)
                  .by(Maker::kPlanMany)
                  .layout({{512}, 2, 1}, {{512}, 1, 512}));
  v.push_back(cfg("c2c_1d_n300_b5_planmany_padded_dist", S, C2C, {300}, 5)
                  .by(Maker::kPlanMany)
                  .layout({{300}, 1, 320}, {{300}, 1, 310}));
  v.push_back(cfg("c2c_2d_64x48_plan2d", S, C2C, {64, 48}));
  v.push_back(cfg("c2c_2d_120x90_inv_inplace_plan2d", S, C2C, {120, 90}).inverse().inPlace());
  v.push_back(cfg("c2c_2d_40x50_b3_planmany_padded_rows", S, C2C, {40, 50}, 3)
                  .by(Maker::kPlanMany)
                  .layout({{40, 64}, 1, 40 * 64}, {{44, 50}, 1, 44 * 50 + 7}));
  v.push_back(cfg("c2c_3d_16x20x24_plan3d", S, C2C, {16, 20, 24}));
  v.push_back(cfg("c2c_3d_8x12x10_b2_planmany_strided_padded", S, C2C, {8, 12, 10}, 2)
                  .by(Maker::kPlanMany)
                  .layout({{8, 13, 11}, 2, 1}, {{8, 12, 10}, 1, 960}));
  v.push_back(cfg("c2c_1d_n2048_b8_stream_plan1d", S, C2C, {2048}, 8).stream());
  v.push_back(cfg("c2c_1d_n768_b3_makeplan1d", S, C2C, {768}, 3).by(Maker::kMakePlan));
  v.push_back(cfg("c2c_2d_33x70_inv_makeplan2d", S, C2C, {33, 70}).inverse().by(Maker::kMakePlan));
  v.push_back(cfg("c2c_3d_10x12x14_makeplan3d", S, C2C, {10, 12, 14}).by(Maker::kMakePlan));
  v.push_back(cfg("c2c_1d_n5000_b2_makeplanmany64_padded", S, C2C, {5000}, 2)
                  .by(Maker::kMakePlanMany64)
                  .layout({{5000}, 1, 5003}, {{5000}, 1, 5001}));
  v.push_back(
      cfg("c2c_1d_n2310_b4_makeplan1d_manual_workarea", S, C2C, {2310}, 4).by(Maker::kMakePlan).manual());
  v.push_back(cfg("c2c_2d_24x36_b2_makeplanmany_strided", S, C2C, {24, 36}, 2)
                  .by(Maker::kMakePlanMany)
                  .layout({{24, 36}, 2, 1}, {{25, 40}, 1, 1000}));
  // ---- single precision, real to complex and complex to real
  v.push_back(cfg("r2c_1d_n1024_b3_plan1d", S, R2C, {1024}, 3));
  v.push_back(cfg("r2c_1d_n1000_b4_inplace_padded_plan1d", S, R2C, {1000}, 4).inPlace());
  v.push_back(cfg("c2r_1d_n1155_b2_plan1d", S, C2R, {1155}, 2));
  v.push_back(cfg("c2r_1d_n512_b3_inplace_padded_plan1d", S, C2R, {512}, 3).inPlace());
  v.push_back(cfg("r2c_2d_48x62_plan2d", S, R2C, {48, 62}));
  v.push_back(cfg("c2r_2d_30x40_inplace_padded_plan2d", S, C2R, {30, 40}).inPlace());
  v.push_back(cfg("r2c_3d_12x16x18_plan3d", S, R2C, {12, 16, 18}));
  v.push_back(cfg("c2r_3d_8x10x9_plan3d", S, C2R, {8, 10, 9}));
  v.push_back(cfg("r2c_1d_n200_b2_planmany_interleaved", S, R2C, {200}, 2)
                  .by(Maker::kPlanMany)
                  .layout({{200}, 2, 1}, {{101}, 1, 110}));
  v.push_back(cfg("c2r_2d_20x30_b2_planmany_padded", S, C2R, {20, 30}, 2)
                  .by(Maker::kPlanMany)
                  .layout({{22, 20}, 1, 22 * 20}, {{20, 32}, 1, 20 * 32 + 5}));
  v.push_back(cfg("r2c_1d_n4096_b2_stream_plan1d", S, R2C, {4096}, 2).stream());
  v.push_back(cfg("r2c_1d_n600_b3_planmany_inplace_explicit_padding", S, R2C, {600}, 3)
                  .inPlace()
                  .by(Maker::kPlanMany)
                  .layout({{602}, 1, 602}, {{301}, 1, 301}));
  v.push_back(cfg("c2r_1d_n2000_b2_makeplanmany64_manual_stream", S, C2R, {2000}, 2)
                  .by(Maker::kMakePlanMany64)
                  .manual()
                  .stream());
  v.push_back(cfg("r2c_2d_64x64_makeplan2d_manual_workarea", S, R2C, {64, 64}).by(Maker::kMakePlan).manual());
  // ---- typed plans (cufftXtMakePlanMany + cufftXtExec), single and double precision
  v.push_back(
      cfg("c2c_2d_40x48_b2_xtmakeplanmany_inv", S, C2C, {40, 48}, 2).inverse().by(Maker::kXtMakePlanMany));
  v.push_back(cfg("r2c_1d_n1000_b3_xtmakeplanmany_padded", S, R2C, {1000}, 3)
                  .by(Maker::kXtMakePlanMany)
                  .layout({{1000}, 1, 1004}, {{501}, 1, 505}));
  v.push_back(cfg("c2r_1d_n512_b2_xtmakeplanmany", S, C2R, {512}, 2).inverse().by(Maker::kXtMakePlanMany));
  v.push_back(cfg("z2z_1d_n1200_xtmakeplanmany_stream", D, C2C, {1200}).by(Maker::kXtMakePlanMany).stream());
  v.push_back(cfg("d2z_2d_20x30_xtmakeplanmany", D, R2C, {20, 30}).by(Maker::kXtMakePlanMany));
  v.push_back(cfg("z2d_1d_n777_b2_xtmakeplanmany_manual", D, C2R, {777}, 2)
                  .inverse()
                  .by(Maker::kXtMakePlanMany)
                  .manual());
  // ---- double precision
  v.push_back(cfg("z2z_1d_n1024_b2_plan1d", D, C2C, {1024}, 2));
  v.push_back(cfg("z2z_1d_prime1009_inv_inplace_plan1d", D, C2C, {1009}).inverse().inPlace());
  v.push_back(cfg("z2z_2d_36x50_plan2d", D, C2C, {36, 50}));
  v.push_back(cfg("z2z_3d_8x9x10_inv_plan3d", D, C2C, {8, 9, 10}).inverse());
  v.push_back(cfg("z2z_1d_n210_b3_planmany_stride3", D, C2C, {210}, 3)
                  .by(Maker::kPlanMany)
                  .layout({{210}, 3, 1}, {{210}, 3, 1}));
  v.push_back(cfg("z2z_1d_prime65537_roundtrip_plan1d", D, C2C, {65537}).roundTrip());
  v.push_back(cfg("z2z_1d_n3000_stream_makeplan1d", D, C2C, {3000}).by(Maker::kMakePlan).stream());
  v.push_back(cfg("d2z_1d_n1000_b2_plan1d", D, R2C, {1000}, 2));
  v.push_back(cfg("d2z_2d_24x30_inplace_padded_plan2d", D, R2C, {24, 30}).inPlace());
  v.push_back(cfg("d2z_3d_10x12x16_makeplan3d", D, R2C, {10, 12, 16}).by(Maker::kMakePlan));
  v.push_back(cfg("z2d_1d_n999_b2_plan1d", D, C2R, {999}, 2));
  v.push_back(cfg("z2d_2d_18x26_inplace_padded_makeplan2d", D, C2R, {18, 26}).inPlace().by(Maker::kMakePlan));
  v.push_back(cfg("z2d_2d_16x20_b2_makeplanmany64_padded", D, C2R, {16, 20}, 2)
                  .by(Maker::kMakePlanMany64)
                  .layout({{16, 12}, 1, 16 * 12 + 3}, {{16, 22}, 1, 16 * 22}));
  v.push_back(cfg("d2z_1d_n4096_b2_makeplan1d_manual_stream", D, R2C, {4096}, 2)
                  .by(Maker::kMakePlan)
                  .manual()
                  .stream());
  v.push_back(cfg("z2z_2d_32x40_b2_makeplanmany_manual_padded", D, C2C, {32, 40}, 2)
                  .by(Maker::kMakePlanMany)
                  .manual()
                  .layout({{32, 41}, 1, 32 * 41}, {{33, 40}, 1, 33 * 40 + 1}));
  return v;
}

// --------------------------------------------------------------- size and version queries

constexpr std::size_t kPlausibleWorkSize = std::size_t{1} << 30;

int apiFailures = 0;

void reportQuery(const char* what, cufftResult r, bool plausible, std::size_t value) {
  std::fprintf(stderr, "%s -> %s, value %zu\n", what, cufftResultName(r), value);
  if (r == CUFFT_SUCCESS && plausible) {
    std::printf("%s ok\n", what);
  } else {
    std::printf("FAIL %s: %s%s\n", what, cufftResultName(r),
                r == CUFFT_SUCCESS ? " (implausible value)" : "");
    ++apiFailures;
  }
}

void queries() {
  int version = 0;
  cufftResult r = cufftGetVersion(&version);
  reportQuery("cufftGetVersion", r, version >= 10000, static_cast<std::size_t>(version));
  int major = -1, minor = -1, patch = -1;
  r = cufftGetProperty(MAJOR_VERSION, &major);
  reportQuery("cufftGetProperty(MAJOR_VERSION)", r, major >= 10, static_cast<std::size_t>(major));
  r = cufftGetProperty(MINOR_VERSION, &minor);
  reportQuery("cufftGetProperty(MINOR_VERSION)", r, minor >= 0, static_cast<std::size_t>(minor));
  r = cufftGetProperty(PATCH_LEVEL, &patch);
  reportQuery("cufftGetProperty(PATCH_LEVEL)", r, patch >= 0, static_cast<std::size_t>(patch));

  int n2[2] = {40, 50}, inembed[2] = {40, 64}, onembed[2] = {44, 50};
  long long n64[2] = {40, 50}, inembed64[2] = {40, 64}, onembed64[2] = {44, 50};
  std::size_t ws = 0;
  r = cufftEstimate1d(4096, CUFFT_C2C, 4, &ws);
  reportQuery("cufftEstimate1d", r, ws < kPlausibleWorkSize, ws);
  ws = 0;
  r = cufftEstimate2d(256, 256, CUFFT_R2C, &ws);
  reportQuery("cufftEstimate2d", r, ws < kPlausibleWorkSize, ws);
  ws = 0;
  r = cufftEstimate3d(32, 32, 32, CUFFT_Z2Z, &ws);
  reportQuery("cufftEstimate3d", r, ws < kPlausibleWorkSize, ws);
  ws = 0;
  r = cufftEstimateMany(2, n2, inembed, 1, 40 * 64, onembed, 1, 44 * 50 + 7, CUFFT_C2C, 3, &ws);
  reportQuery("cufftEstimateMany", r, ws < kPlausibleWorkSize, ws);

  // cufftGetSize*: on a created handle, before the plan is made.
  auto onFreshHandle = [](const char* what, auto&& query) {
    cufftHandle handle = 0;
    std::size_t size = 0;
    cufftResult result = cufftCreate(&handle);
    if (result == CUFFT_SUCCESS) {
      result = query(handle, &size);
      const cufftResult destroyed = cufftDestroy(handle);
      if (result == CUFFT_SUCCESS) result = destroyed;
    }
    reportQuery(what, result, size < kPlausibleWorkSize, size);
  };
  onFreshHandle("cufftGetSize1d",
                [](cufftHandle h, std::size_t* s) { return cufftGetSize1d(h, 65537, CUFFT_C2C, 1, s); });
  onFreshHandle("cufftGetSize2d",
                [](cufftHandle h, std::size_t* s) { return cufftGetSize2d(h, 120, 90, CUFFT_Z2Z, s); });
  onFreshHandle("cufftGetSize3d",
                [](cufftHandle h, std::size_t* s) { return cufftGetSize3d(h, 12, 16, 18, CUFFT_R2C, s); });
  onFreshHandle("cufftGetSizeMany", [&](cufftHandle h, std::size_t* s) {
    return cufftGetSizeMany(h, 2, n2, inembed, 1, 40 * 64, onembed, 1, 44 * 50 + 7, CUFFT_C2C, 3, s);
  });
  onFreshHandle("cufftGetSizeMany64", [&](cufftHandle h, std::size_t* s) {
    return cufftGetSizeMany64(h, 2, n64, inembed64, 1, 40 * 64, onembed64, 1, 44 * 50 + 7, CUFFT_Z2Z, 3, s);
  });
}

// What cufftXtExec answers for each direction of a real transform (natively it refuses some
// pairs): printed, not judged, so that the comparison with the native run checks that AgileOS
// gives every pair the meaning cuFFT gives it.
void xtExecDirections() {
  struct Typed {
    const char* name;
    cudaDataType input, output, execution;
  };
  const Typed typed[] = {{"r2c", CUDA_R_32F, CUDA_C_32F, CUDA_C_32F},
                         {"c2r", CUDA_C_32F, CUDA_R_32F, CUDA_C_32F},
                         {"d2z", CUDA_R_64F, CUDA_C_64F, CUDA_C_64F},
                         {"z2d", CUDA_C_64F, CUDA_R_64F, CUDA_C_64F}};
  constexpr long long kN = 256;
  void* in = nullptr;
  void* out = nullptr;
  CHECK_CUDA(cudaMalloc(&in, 2 * kN * sizeof(double)));
  CHECK_CUDA(cudaMalloc(&out, 2 * kN * sizeof(double)));
  CHECK_CUDA(cudaMemset(in, 0, 2 * kN * sizeof(double)));
  for (const Typed& t : typed) {
    cufftHandle plan = 0;
    long long n[1] = {kN};
    std::size_t work = 0;
    cufftResult r = cufftCreate(&plan);
    if (r == CUFFT_SUCCESS) {
      r = cufftXtMakePlanMany(plan, 1, n, nullptr, 1, 0, t.input, nullptr, 1, 0, t.output, 1, &work,
                              t.execution);
    }
    std::printf("cufftXtMakePlanMany %s -> %s\n", t.name, cufftResultName(r));
    if (r == CUFFT_SUCCESS) {
      for (int direction : {CUFFT_FORWARD, CUFFT_INVERSE}) {
        const cufftResult e = cufftXtExec(plan, in, out, direction);
        if (e == CUFFT_SUCCESS) CHECK_CUDA(cudaDeviceSynchronize());
        std::printf("cufftXtExec %s %s -> %s\n", t.name, direction == CUFFT_FORWARD ? "forward" : "inverse",
                    cufftResultName(e));
      }
    }
    cufftDestroy(plan);
  }
  CHECK_CUDA(cudaFree(in));
  CHECK_CUDA(cudaFree(out));
}

}  // namespace

int main() {
  queries();
  xtExecDirections();

  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreate(&stream));
  const std::vector<Config> configs = allConfigs();
  int passed = 0, failed = 0;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const Config& c = configs[i];
    const std::uint64_t seed = 0x5eed0000ull + i;
    const Outcome outcome =
        c.prec == Prec::kSingle ? runConfig<float>(c, seed, stream) : runConfig<double>(c, seed, stream);
    if (outcome.failure.empty()) {
      std::printf("%s ok sum=%.3e\n", c.name.c_str(), outcome.sum);
      ++passed;
    } else {
      std::printf("FAIL %s: %s\n", c.name.c_str(), outcome.failure.c_str());
      ++failed;
    }
    std::fflush(stdout);
  }
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaGetLastError());

  if (failed == 0 && apiFailures == 0) {
    std::printf("cufft_configs: %d configurations passed\n", passed);
    return 0;
  }
  std::printf("cufft_configs: %d configurations passed, %d failed, %d query checks failed\n", passed, failed,
              apiFailures);
  return 1;
}
