// cuFFT in half and bfloat16 precision through the typed API (cufftXtMakePlanMany, cufftXtExec),
// each transform checked against a CPU DFT in double precision with a tolerance for 16-bit
// arithmetic. Through AgileOS these plans are made and run in the worker's cuFFT adapter, their
// buffers checked at 2 bytes a real and 4 bytes a complex element.
// - half C2C forward, 1D n = 256, batch 2;
// - half R2C, 1D n = 512 (257 complex outputs), and the C2R inverse back;
// - bfloat16 C2C inverse, 2D 16 x 32.
// stdout carries one "<name> ok" line per transform (the errors, which may differ in their last
// digits between cuFFT builds, go to stderr). Exit status 0 only if every check passed.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cufftXt.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <vector>

#include "check.cuh"
#include "tests/gpu/programs/cufft_result_name.cuh"

namespace {

#define CHECK_CUFFT(call)                                                          \
  do {                                                                             \
    const cufftResult check_cufft_result_ = (call);                                \
    if (check_cufft_result_ != CUFFT_SUCCESS) {                                    \
      std::printf("FAIL %s -> %s\n", #call, cufftResultName(check_cufft_result_)); \
      std::fflush(stdout);                                                         \
      std::exit(1);                                                                \
    }                                                                              \
  } while (0)

constexpr double kPi = 3.14159265358979323846;

std::uint32_t gSeed = 777;
float nextValue() {
  gSeed = gSeed * 1664525u + 1013904223u;
  return static_cast<float>(static_cast<double>(gSeed >> 8) / static_cast<double>(1u << 24) - 0.5);
}

using Complex = std::complex<double>;

// The DFT of `rows` x `cols` complex values (sign -1 forward, +1 inverse, unnormalized), per batch.
std::vector<Complex> dft2(const std::vector<Complex>& in, int rows, int cols, int batch, int sign) {
  std::vector<Complex> out(in.size());
  for (int b = 0; b < batch; ++b) {
    for (int u = 0; u < rows; ++u) {
      for (int v = 0; v < cols; ++v) {
        Complex sum = 0;
        for (int x = 0; x < rows; ++x) {
          for (int y = 0; y < cols; ++y) {
            const double angle = sign * 2 * kPi * (double(u) * x / rows + double(v) * y / cols);
            sum += in[std::size_t(b) * rows * cols + std::size_t(x) * cols + y] *
                   Complex(std::cos(angle), std::sin(angle));
          }
        }
        out[std::size_t(b) * rows * cols + std::size_t(u) * cols + v] = sum;
      }
    }
  }
  return out;
}

// Relative L2 error of `got` against `want`.
double relativeError(const std::vector<Complex>& got, const std::vector<Complex>& want) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    diff += std::norm(got[i] - want[i]);
    norm += std::norm(want[i]);
  }
  return std::sqrt(diff / norm);
}

void report(const char* name, double error, double tolerance) {
  std::fprintf(stderr, "%s: relative error %.3g\n", name, error);
  EXPECT_TRUE(error <= tolerance, "%s: relative error %g > %g\n", name, error, tolerance);
  std::printf("%s ok\n", name);
}

template <typename Scalar, typename ToScalar, typename FromScalar>
void complexTransform(const char* name, cudaDataType type, int rows, int cols, int batch, int direction,
                      ToScalar toScalar, FromScalar fromScalar, double tolerance) {
  const std::size_t count = std::size_t(rows) * cols * batch;
  std::vector<Complex> input(count);
  std::vector<Scalar> packed(2 * count);
  for (std::size_t i = 0; i < count; ++i) {
    packed[2 * i] = toScalar(nextValue());
    packed[2 * i + 1] = toScalar(nextValue());
    input[i] = Complex(fromScalar(packed[2 * i]), fromScalar(packed[2 * i + 1]));
  }
  void* device = nullptr;
  CHECK_CUDA(cudaMalloc(&device, packed.size() * sizeof(Scalar)));
  CHECK_CUDA(cudaMemcpy(device, packed.data(), packed.size() * sizeof(Scalar), cudaMemcpyHostToDevice));
  cufftHandle plan = 0;
  CHECK_CUFFT(cufftCreate(&plan));
  long long n[2] = {rows, cols};
  const int rank = rows == 1 ? 1 : 2;
  long long* dims = rows == 1 ? &n[1] : n;
  std::size_t workSize = 0;
  CHECK_CUFFT(cufftXtMakePlanMany(plan, rank, dims, nullptr, 1, rows * cols, type, nullptr, 1, rows * cols,
                                  type, batch, &workSize, type));
  CHECK_CUFFT(cufftXtExec(plan, device, device, direction));
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemcpy(packed.data(), device, packed.size() * sizeof(Scalar), cudaMemcpyDeviceToHost));
  std::vector<Complex> got(count);
  for (std::size_t i = 0; i < count; ++i)
    got[i] = Complex(fromScalar(packed[2 * i]), fromScalar(packed[2 * i + 1]));
  report(name, relativeError(got, dft2(input, rows, cols, batch, direction == CUFFT_FORWARD ? -1 : 1)),
         tolerance);
  CHECK_CUFFT(cufftDestroy(plan));
  CHECK_CUDA(cudaFree(device));
}

// Half R2C of n reals, then C2R back: the spectrum against the DFT, the round trip against n x input.
void halfRealRoundTrip(int n) {
  const int bins = n / 2 + 1;
  std::vector<__half> reals(n);
  std::vector<Complex> input(n);
  for (int i = 0; i < n; ++i) {
    reals[i] = __float2half(nextValue());
    input[i] = __half2float(reals[i]);
  }
  void *dReal = nullptr, *dSpectrum = nullptr;
  CHECK_CUDA(cudaMalloc(&dReal, n * sizeof(__half)));
  CHECK_CUDA(cudaMalloc(&dSpectrum, bins * sizeof(__half2)));
  CHECK_CUDA(cudaMemcpy(dReal, reals.data(), n * sizeof(__half), cudaMemcpyHostToDevice));
  long long size[1] = {n};
  std::size_t workSize = 0;
  cufftHandle forward = 0, inverse = 0;
  CHECK_CUFFT(cufftCreate(&forward));
  CHECK_CUFFT(cufftXtMakePlanMany(forward, 1, size, nullptr, 1, n, CUDA_R_16F, nullptr, 1, bins, CUDA_C_16F,
                                  1, &workSize, CUDA_C_16F));
  CHECK_CUFFT(cufftCreate(&inverse));
  CHECK_CUFFT(cufftXtMakePlanMany(inverse, 1, size, nullptr, 1, bins, CUDA_C_16F, nullptr, 1, n, CUDA_R_16F,
                                  1, &workSize, CUDA_C_16F));
  CHECK_CUFFT(cufftXtExec(forward, dReal, dSpectrum, CUFFT_FORWARD));
  std::vector<__half2> spectrum(bins);
  CHECK_CUDA(cudaMemcpy(spectrum.data(), dSpectrum, bins * sizeof(__half2), cudaMemcpyDeviceToHost));
  std::vector<Complex> got(bins);
  for (int k = 0; k < bins; ++k) got[k] = Complex(__low2float(spectrum[k]), __high2float(spectrum[k]));
  std::vector<Complex> want = dft2(input, 1, n, 1, -1);
  want.resize(bins);
  report("half_r2c_n512", relativeError(got, want), 3e-2);
  CHECK_CUFFT(cufftXtExec(inverse, dSpectrum, dReal, CUFFT_INVERSE));
  CHECK_CUDA(cudaMemcpy(reals.data(), dReal, n * sizeof(__half), cudaMemcpyDeviceToHost));
  std::vector<Complex> back(n), scaled(n);
  for (int i = 0; i < n; ++i) {
    back[i] = __half2float(reals[i]) / n;
    scaled[i] = input[i];
  }
  report("half_c2r_n512_round_trip", relativeError(back, scaled), 3e-2);
  CHECK_CUFFT(cufftDestroy(forward));
  CHECK_CUFFT(cufftDestroy(inverse));
  CHECK_CUDA(cudaFree(dReal));
  CHECK_CUDA(cudaFree(dSpectrum));
}

}  // namespace

int main() {
  complexTransform<__half>(
      "half_c2c_n256_b2_forward", CUDA_C_16F, 1, 256, 2, CUFFT_FORWARD,
      [](float v) { return __float2half(v); }, [](__half h) { return static_cast<double>(__half2float(h)); },
      3e-2);
  halfRealRoundTrip(512);
  complexTransform<__nv_bfloat16>(
      "bf16_c2c_16x32_inverse", CUDA_C_16BF, 16, 32, 1, CUFFT_INVERSE,
      [](float v) { return __float2bfloat16(v); },
      [](__nv_bfloat16 b) { return static_cast<double>(__bfloat162float(b)); }, 8e-2);
  std::printf("cufft_half: all checks passed\n");
  return 0;
}
