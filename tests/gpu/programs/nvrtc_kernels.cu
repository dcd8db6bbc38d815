// Runtime compilation with NVRTC, loaded and launched through the runtime's library API
// (cudaLibraryLoadData / cudaLibraryGetKernel / cudaLaunchKernel on a cudaKernel_t): no driver
// API. Covers headers given to nvrtcCreateProgram, name expressions and lowered names of a
// template and a namespaced kernel, an extern "C" kernel, PTX (compute_90) and CUBIN (sm_90)
// output, and a compilation that fails. Every result is checked against the CPU and all values
// are exact, so they are compared with ==.
//
// cudaKernel_t launch: the runtime documents (\note_cudaKernel_t on cudaLaunchKernel) that a
// cudaKernel_t from cudaLibraryGetKernel is launched by casting it to void* and passing it to
// cudaLaunchKernel, which is what this program does.
#include <nvrtc.h>

#include <cstring>
#include <string>
#include <vector>

#include "check.cuh"

// Aborts the program when an NVRTC call does not return NVRTC_SUCCESS.
#define CHECK_NVRTC(call)                                                              \
  do {                                                                                 \
    const nvrtcResult check_nvrtc_status_ = (call);                                    \
    if (check_nvrtc_status_ != NVRTC_SUCCESS) {                                        \
      std::printf("FAIL %s -> %s\n", #call, nvrtcGetErrorString(check_nvrtc_status_)); \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,        \
                   nvrtcGetErrorString(check_nvrtc_status_));                          \
      std::fflush(stdout);                                                             \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

// Prints one passed check (a printf format and its values) and counts it.
#define PASS(...)             \
  do {                        \
    std::printf(__VA_ARGS__); \
    std::printf("\n");        \
    ++g_checks;               \
  } while (0)

namespace {

int g_checks = 0;

// The headers handed to nvrtcCreateProgram (nothing on disk): a __device__ inline function
// template plus the hash also used on the host (mix32 in check.cuh), and the constants.
const char kScaleHeader[] = R"(#pragma once
template <typename T>
__device__ inline T scaled(T a, T x) { return a * x; }
__device__ inline unsigned int mix(unsigned int i) {
  i ^= i >> 16;
  i *= 0x7feb352du;
  i ^= i >> 15;
  i *= 0x846ca68bu;
  i ^= i >> 16;
  return i;
}
)";

const char kConfigHeader[] = R"(#pragma once
constexpr int kOffsetStep = 7;
constexpr unsigned int kFillSalt = 0x9e3779b9u;
)";

const char* const kHeaders[] = {kScaleHeader, kConfigHeader};
const char* const kHeaderNames[] = {"scale.h", "config.h"};

const char kSource[] = R"(#include "scale.h"
#include "config.h"

template <typename T>
__global__ void axpy(T a, const T* x, T* y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    y[i] = scaled(a, x[i]) + y[i];
  }
}

extern "C" __global__ void offset_add(int* v, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    v[i] += kOffsetStep * i + 1;
  }
}

namespace ns {
__global__ void fill(unsigned int* out, int n, unsigned int seed) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    out[i] = mix(static_cast<unsigned int>(i) ^ seed) + kFillSalt;
  }
}
}  // namespace ns
)";

constexpr int kOffsetStep = 7;  // as in config.h above
constexpr std::uint32_t kFillSalt = 0x9e3779b9u;

const char* const kExprFloat = "axpy<float>";
const char* const kExprDouble = "axpy<double>";
const char* const kExprFill = "&ns::fill";
const char* const kExternC = "offset_add";

struct Compiled {
  std::vector<char> image;  // the PTX (NUL-terminated) or the CUBIN
  std::string lowered_float, lowered_double, lowered_fill;
};

// Returns the program log (without the trailing NUL) and copies it to stderr.
std::string programLog(nvrtcProgram prog, const char* label) {
  size_t size = 0;
  CHECK_NVRTC(nvrtcGetProgramLogSize(prog, &size));
  EXPECT_TRUE(size >= 1, "%s: log size %zu, expected at least the NUL", label, size);
  std::vector<char> log(size, '\x7f');
  CHECK_NVRTC(nvrtcGetProgramLog(prog, log.data()));
  EXPECT_TRUE(log[size - 1] == '\0', "%s: log is not NUL-terminated", label);
  std::string text(log.data());
  if (!text.empty()) {
    std::fprintf(stderr, "%s: program log:\n%s\n", label, text.c_str());
  }
  return text;
}

int countOccurrences(const char* haystack, const char* needle) {
  int count = 0;
  for (const char* p = std::strstr(haystack, needle); p != nullptr; p = std::strstr(p + 1, needle)) {
    ++count;
  }
  return count;
}

std::string loweredName(nvrtcProgram prog, const char* label, const char* expression) {
  const char* lowered = nullptr;
  CHECK_NVRTC(nvrtcGetLoweredName(prog, expression, &lowered));
  EXPECT_TRUE(lowered != nullptr && lowered[0] != '\0', "%s: empty lowered name for %s", label, expression);
  PASS("%s: lowered %s = %s", label, expression, lowered);
  return lowered;
}

// Compiles kSource for `arch` (a --gpu-architecture option), checks the outputs and returns
// the PTX (virtual arch) or the CUBIN (real arch) with the lowered names.
Compiled compileKernels(const char* label, const char* arch, bool real_arch) {
  Compiled out;
  nvrtcProgram prog = nullptr;
  CHECK_NVRTC(nvrtcCreateProgram(&prog, kSource, "nvrtc_kernels_src.cu", 2, kHeaders, kHeaderNames));
  EXPECT_TRUE(prog != nullptr, "%s: nvrtcCreateProgram returned a null program", label);
  CHECK_NVRTC(nvrtcAddNameExpression(prog, kExprFloat));
  CHECK_NVRTC(nvrtcAddNameExpression(prog, kExprDouble));
  CHECK_NVRTC(nvrtcAddNameExpression(prog, kExprFill));

  const char* const options[] = {arch, "-default-device", "--std=c++17"};
  const nvrtcResult compiled = nvrtcCompileProgram(prog, 3, options);
  programLog(prog, label);
  EXPECT_TRUE(compiled == NVRTC_SUCCESS, "%s: nvrtcCompileProgram returned %s", label,
              nvrtcGetErrorString(compiled));
  PASS("%s: compile %s", label, nvrtcGetErrorString(compiled));

  out.lowered_float = loweredName(prog, label, kExprFloat);
  out.lowered_double = loweredName(prog, label, kExprDouble);
  out.lowered_fill = loweredName(prog, label, kExprFill);

  // An expression that was never added has no lowered name.
  const char* unknown = nullptr;
  const nvrtcResult not_added = nvrtcGetLoweredName(prog, "axpy<int>", &unknown);
  std::printf("%s: lowered axpy<int> (not added): %s\n", label, nvrtcGetErrorString(not_added));
  EXPECT_TRUE(not_added == NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID, "%s: got %s", label,
              nvrtcGetErrorString(not_added));
  ++g_checks;

  size_t ptx_size = 0;
  CHECK_NVRTC(nvrtcGetPTXSize(prog, &ptx_size));
  EXPECT_TRUE(ptx_size > 1, "%s: PTX size %zu", label, ptx_size);
  std::vector<char> ptx(ptx_size, '\x7f');
  CHECK_NVRTC(nvrtcGetPTX(prog, ptx.data()));
  EXPECT_TRUE(ptx[ptx_size - 1] == '\0' && std::strlen(ptx.data()) + 1 == ptx_size,
              "%s: PTX is not one NUL-terminated string of the reported size %zu", label, ptx_size);
  EXPECT_TRUE(std::strstr(ptx.data(), ".target sm_90") != nullptr, "%s: PTX lacks .target sm_90", label);
  const int entries = countOccurrences(ptx.data(), ".entry ");
  EXPECT_TRUE(entries == 4, "%s: PTX has %d .entry, expected 4", label, entries);
  EXPECT_TRUE(std::strstr(ptx.data(), ".entry offset_add(") != nullptr &&
                  std::strstr(ptx.data(), (".entry " + out.lowered_float + "(").c_str()) != nullptr &&
                  std::strstr(ptx.data(), (".entry " + out.lowered_double + "(").c_str()) != nullptr &&
                  std::strstr(ptx.data(), (".entry " + out.lowered_fill + "(").c_str()) != nullptr,
              "%s: PTX lacks an expected .entry", label);
  PASS("%s: PTX NUL-terminated, .target sm_90, %d entries named as lowered", label, entries);

  size_t cubin_size = 0;
  CHECK_NVRTC(nvrtcGetCUBINSize(prog, &cubin_size));
  if (!real_arch) {
    EXPECT_TRUE(cubin_size == 0, "%s: CUBIN size %zu for a virtual arch, expected 0", label, cubin_size);
    PASS("%s: CUBIN size 0 (virtual architecture)", label);
    out.image = ptx;
  } else {
    EXPECT_TRUE(cubin_size > 64, "%s: CUBIN size %zu", label, cubin_size);
    std::vector<char> cubin(cubin_size, '\x7f');
    CHECK_NVRTC(nvrtcGetCUBIN(prog, cubin.data()));
    // An ELF64 image for EM_CUDA (190): e_ident, then e_machine at offset 18 (little-endian).
    const auto* bytes = reinterpret_cast<const unsigned char*>(cubin.data());
    EXPECT_TRUE(bytes[0] == 0x7f && bytes[1] == 'E' && bytes[2] == 'L' && bytes[3] == 'F' && bytes[4] == 2,
                "%s: CUBIN is not an ELF64 image", label);
    const unsigned machine = bytes[18] | (bytes[19] << 8);
    EXPECT_TRUE(machine == 190, "%s: CUBIN e_machine %u, expected 190 (EM_CUDA)", label, machine);
    PASS("%s: CUBIN is an ELF64 image for EM_CUDA", label);
    out.image = std::move(cubin);
  }

  CHECK_NVRTC(nvrtcDestroyProgram(&prog));
  EXPECT_TRUE(prog == nullptr, "%s: nvrtcDestroyProgram left the handle set", label);
  PASS("%s: program destroyed", label);
  return out;
}

// A syntax error: the compilation fails with NVRTC_ERROR_COMPILATION and a non-empty log
// (the log itself goes to stderr only: its wording is not part of the comparison).
void compileBroken() {
  const char* const label = "broken";
  const char source[] = "extern \"C\" __global__ void broken(int* p) { p[0] = ; }\n";
  nvrtcProgram prog = nullptr;
  CHECK_NVRTC(nvrtcCreateProgram(&prog, source, "broken.cu", 0, nullptr, nullptr));
  const char* const options[] = {"--gpu-architecture=compute_90"};
  const nvrtcResult compiled = nvrtcCompileProgram(prog, 1, options);
  std::printf("%s: compile %s\n", label, nvrtcGetErrorString(compiled));
  EXPECT_TRUE(compiled == NVRTC_ERROR_COMPILATION, "%s: nvrtcCompileProgram returned %s", label,
              nvrtcGetErrorString(compiled));
  ++g_checks;
  const std::string log = programLog(prog, label);
  EXPECT_TRUE(!log.empty(), "%s: empty log after a failed compilation", label);
  PASS("%s: log non-empty", label);
  CHECK_NVRTC(nvrtcDestroyProgram(&prog));
  EXPECT_TRUE(prog == nullptr, "%s: nvrtcDestroyProgram left the handle set", label);
  PASS("%s: program destroyed", label);
}

void launch(cudaKernel_t kernel, dim3 grid, dim3 block, void** args) {
  // Documented way to launch a cudaKernel_t with the runtime: cast it to void*.
  CHECK_CUDA(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), grid, block, args, 0, nullptr));
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaStreamSynchronize(nullptr));
}

cudaKernel_t getKernel(cudaLibrary_t library, const std::string& name) {
  cudaKernel_t kernel = nullptr;
  CHECK_CUDA(cudaLibraryGetKernel(&kernel, library, name.c_str()));
  EXPECT_TRUE(kernel != nullptr, "cudaLibraryGetKernel(%s) returned a null kernel", name.c_str());
  return kernel;
}

// Loads `compiled` with cudaLibraryLoadData, runs its four kernels and checks them on the CPU.
void runLibrary(const char* label, const Compiled& compiled, dim3 grid, dim3 block, unsigned seed) {
  cudaLibrary_t library = nullptr;
  CHECK_CUDA(cudaLibraryLoadData(&library, compiled.image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  EXPECT_TRUE(library != nullptr, "%s: cudaLibraryLoadData returned a null library", label);
  PASS("%s: cudaLibraryLoadData ok", label);

  const cudaKernel_t k_float = getKernel(library, compiled.lowered_float);
  const cudaKernel_t k_double = getKernel(library, compiled.lowered_double);
  const cudaKernel_t k_fill = getKernel(library, compiled.lowered_fill);
  const cudaKernel_t k_offset = getKernel(library, kExternC);
  PASS("%s: cudaLibraryGetKernel found the 3 lowered names and %s", label, kExternC);

  cudaKernel_t missing = nullptr;
  const std::string missing_label = std::string(label) + ": cudaLibraryGetKernel(no_such_kernel)";
  EXPECT_ERROR(missing_label.c_str(), cudaLibraryGetKernel(&missing, library, "no_such_kernel"),
               cudaErrorSymbolNotFound);
  (void)cudaGetLastError();  // not sticky; clear it so that the launches below start clean
  ++g_checks;

  const int n = 100003;  // not a multiple of any launch size: the grid-stride bounds matter

  {  // axpy<float>: 0.5 * i + 3 * i, exact in float for i < 2^22
    std::vector<float> x(n), y(n);
    for (int i = 0; i < n; ++i) {
      x[i] = static_cast<float>(i);
      y[i] = 3.0f * static_cast<float>(i);
    }
    float *dx = nullptr, *dy = nullptr;
    CHECK_CUDA(cudaMalloc(&dx, n * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&dy, n * sizeof(float)));
    CHECK_CUDA(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(dy, y.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    float a = 0.5f;
    const float* cx = dx;
    int count = n;
    void* args[] = {&a, &cx, &dy, &count};
    launch(k_float, grid, block, args);
    CHECK_CUDA(cudaMemcpy(y.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i) {
      const float expected = 3.5f * static_cast<float>(i);
      EXPECT_TRUE(y[i] == expected, "%s: axpy<float> y[%d] = %f, expected %f", label, i, y[i], expected);
    }
    PASS("%s: axpy<float> y[n-1]=%.1f fnv=%016llx", label, y[n - 1],
         static_cast<unsigned long long>(fnv1a64(y.data(), n * sizeof(float))));
    CHECK_CUDA(cudaFree(dx));
    CHECK_CUDA(cudaFree(dy));
  }

  {  // axpy<double>: -1.25 * (0.5 * i) + i = 0.375 * i, exact
    std::vector<double> x(n), y(n);
    for (int i = 0; i < n; ++i) {
      x[i] = 0.5 * i;
      y[i] = static_cast<double>(i);
    }
    double *dx = nullptr, *dy = nullptr;
    CHECK_CUDA(cudaMalloc(&dx, n * sizeof(double)));
    CHECK_CUDA(cudaMalloc(&dy, n * sizeof(double)));
    CHECK_CUDA(cudaMemcpy(dx, x.data(), n * sizeof(double), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(dy, y.data(), n * sizeof(double), cudaMemcpyHostToDevice));
    double a = -1.25;
    const double* cx = dx;
    int count = n;
    void* args[] = {&a, &cx, &dy, &count};
    launch(k_double, grid, block, args);
    CHECK_CUDA(cudaMemcpy(y.data(), dy, n * sizeof(double), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i) {
      const double expected = 0.375 * i;
      EXPECT_TRUE(y[i] == expected, "%s: axpy<double> y[%d] = %f, expected %f", label, i, y[i], expected);
    }
    PASS("%s: axpy<double> y[n-1]=%.3f fnv=%016llx", label, y[n - 1],
         static_cast<unsigned long long>(fnv1a64(y.data(), n * sizeof(double))));
    CHECK_CUDA(cudaFree(dx));
    CHECK_CUDA(cudaFree(dy));
  }

  {  // ns::fill over a buffer first set to 0xff bytes: every element must be rewritten
    std::vector<std::uint32_t> out(n, 0);
    unsigned int* dout = nullptr;
    CHECK_CUDA(cudaMalloc(&dout, n * sizeof(unsigned int)));
    CHECK_CUDA(cudaMemset(dout, 0xff, n * sizeof(unsigned int)));
    int count = n;
    unsigned int s = seed;
    void* args[] = {&dout, &count, &s};
    launch(k_fill, grid, block, args);
    CHECK_CUDA(cudaMemcpy(out.data(), dout, n * sizeof(unsigned int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i) {
      const std::uint32_t expected = mix32(static_cast<std::uint32_t>(i) ^ seed) + kFillSalt;
      EXPECT_TRUE(out[i] == expected, "%s: ns::fill out[%d] = %08x, expected %08x", label, i, out[i],
                  expected);
    }
    PASS("%s: ns::fill seed=%08x out[0]=%08x fnv=%016llx", label, seed, out[0],
         static_cast<unsigned long long>(fnv1a64(out.data(), n * sizeof(std::uint32_t))));
    CHECK_CUDA(cudaFree(dout));
  }

  {  // offset_add (extern "C"): v[i] += 7 * i + 1
    std::vector<int> v(n);
    for (int i = 0; i < n; ++i) {
      v[i] = i % 1000 - 500;
    }
    int* dv = nullptr;
    CHECK_CUDA(cudaMalloc(&dv, n * sizeof(int)));
    CHECK_CUDA(cudaMemcpy(dv, v.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    int count = n;
    void* args[] = {&dv, &count};
    launch(k_offset, grid, block, args);
    CHECK_CUDA(cudaMemcpy(v.data(), dv, n * sizeof(int), cudaMemcpyDeviceToHost));
    long long sum = 0;
    for (int i = 0; i < n; ++i) {
      const int expected = i % 1000 - 500 + kOffsetStep * i + 1;
      EXPECT_TRUE(v[i] == expected, "%s: offset_add v[%d] = %d, expected %d", label, i, v[i], expected);
      sum += v[i];
    }
    PASS("%s: offset_add v[n-1]=%d sum=%lld", label, v[n - 1], sum);
    CHECK_CUDA(cudaFree(dv));
  }

  CHECK_CUDA(cudaLibraryUnload(library));
  PASS("%s: cudaLibraryUnload ok", label);
}

}  // namespace

int main() {
  // Everything NVRTC first (it needs no GPU), then the runtime.
  int major = 0, minor = 0;
  CHECK_NVRTC(nvrtcVersion(&major, &minor));
  EXPECT_TRUE(major == 13, "nvrtcVersion %d.%d, expected 13.x", major, minor);
  PASS("nvrtc version %d.%d", major, minor);

  int num_archs = 0;
  CHECK_NVRTC(nvrtcGetNumSupportedArchs(&num_archs));
  EXPECT_TRUE(num_archs > 0, "nvrtcGetNumSupportedArchs = %d", num_archs);
  std::vector<int> archs(num_archs, -1);
  CHECK_NVRTC(nvrtcGetSupportedArchs(archs.data()));
  bool has_90 = false;
  for (int arch : archs) {
    std::fprintf(stderr, "supported arch %d\n", arch);
    has_90 = has_90 || arch == 90;
  }
  EXPECT_TRUE(has_90, "90 is not among the %d supported architectures", num_archs);
  PASS("nvrtc supports arch 90: yes");

  const Compiled ptx = compileKernels("ptx", "--gpu-architecture=compute_90", false);
  const Compiled cubin = compileKernels("cubin", "--gpu-architecture=sm_90", true);
  EXPECT_TRUE(ptx.lowered_float == cubin.lowered_float && ptx.lowered_double == cubin.lowered_double &&
                  ptx.lowered_fill == cubin.lowered_fill,
              "the lowered names differ between the two compilations");
  PASS("lowered names identical for compute_90 and sm_90");
  compileBroken();

  runLibrary("ptx", ptx, dim3(64), dim3(128), 0x12345678u);
  runLibrary("cubin", cubin, dim3(37), dim3(96), 0xcafef00du);

  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaGetLastError());
  std::printf("nvrtc_kernels: %d checks passed\n", g_checks);
  return 0;
}
