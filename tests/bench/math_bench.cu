// agileos_math_bench: issue 16's benchmark of the CUDA math libraries in the client (cuBLAS and
// cuDNN, unmodified: the runtimes inside them reach the GPU through the driver shim), one JSON
// line per workload (bench_support.cuh's output contract and exit statuses).
//
// Usage: agileos_math_bench [--quick] [WORKLOAD...]   runs the named workloads (all if none), in order
//        agileos_math_bench --list                    prints the workload names (no CUDA call)
//
// tests/bench/run_math_bench.sh runs it natively and through AgileOS on a daemon of the default
// configuration (the libraries' kernels are SASS only, which a context with protected state
// refuses) and makes the table. Workloads:
//   sgemm_8192, dgemm_4096  one large GEMM (n^3, no transposes); a sample is `reps` GEMMs back to
//                           back and one synchronize, per GEMM; throughput in TFLOP/s
//   sgemm_batched_256       cublasSgemmStridedBatched of 512 256^3 products, the same way
//   sgemm_small_64          one 64^3 SGEMM and a synchronize per sample: the latency of a small
//                           GEMM, p50/p99 in us
//   cudnn_conv_fwd          a 3x3 convolution, N=32, C=K=64, 56x56, NCHW float, implicit GEMM;
//                           a sample is `reps` convolutions and a synchronize, per convolution
// Every workload checks its result first: the GEMMs on integer-valued inputs (so the products are
// exact in float and double) at sampled elements against a host computation, the convolution at
// sampled outputs the same way.
#include <cublas_v2.h>
#include <cudnn.h>

#include <cmath>
#include <string>
#include <vector>

#include "bench_support.cuh"

#define MATH_BENCH_CUBLAS(call) bench::checkStatus(static_cast<int>(call), CUBLAS_STATUS_SUCCESS, #call)
#define MATH_BENCH_CUDNN(call) bench::checkStatus(static_cast<int>(call), CUDNN_STATUS_SUCCESS, #call)

namespace bench {

inline void checkStatus(int status, int success, const char* call) {
  if (status == success) return;
  std::fprintf(stderr, "agileos_math_bench: status %d from %s\n", status, call);
  std::exit(kExitCudaError);
}

namespace {

cublasHandle_t gBlas = nullptr;

// A small integer in [-4, 4] for element i of matrix `which`: products and sums stay exact.
template <typename T>
T inputValue(std::uint32_t which, std::size_t i) {
  return static_cast<T>(static_cast<int>(mix32(which * 0x9e3779b9u + static_cast<std::uint32_t>(i)) % 9) - 4);
}

template <typename T>
T* deviceMatrix(std::uint32_t which, std::size_t count) {
  std::vector<T> host(count);
  for (std::size_t i = 0; i < count; ++i) host[i] = inputValue<T>(which, i);
  T* device = nullptr;
  BENCH_CUDA(cudaMalloc(&device, sizeof(T) * count));
  BENCH_CUDA(cudaMemcpy(device, host.data(), sizeof(T) * count, cudaMemcpyHostToDevice));
  return device;
}

// C = A B (column-major, n x n) at 16 sampled elements against the host.
template <typename T>
void checkGemm(const T* c, std::size_t n, std::size_t batchOffset, const char* what) {
  for (std::uint32_t s = 0; s < 16; ++s) {
    const std::size_t row = mix32(s * 7 + 1) % n, column = mix32(s * 13 + 2) % n;
    double expected = 0;
    for (std::size_t k = 0; k < n; ++k) {
      expected += static_cast<double>(inputValue<T>(1, batchOffset + k * n + row)) *
                  static_cast<double>(inputValue<T>(2, batchOffset + column * n + k));
    }
    T got{};
    BENCH_CUDA(cudaMemcpy(&got, c + batchOffset + column * n + row, sizeof(T), cudaMemcpyDeviceToHost));
    BENCH_VERIFY(static_cast<double>(got) == expected, "%s: C(%zu, %zu) = %g, expected %g", what, row, column,
                 static_cast<double>(got), expected);
  }
}

template <typename T>
cublasStatus_t gemm(int n, const T* a, const T* b, T* c) {
  const T one = 1, zero = 0;
  if constexpr (sizeof(T) == sizeof(float)) {
    return cublasSgemm(gBlas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n);
  } else {
    return cublasDgemm(gBlas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n);
  }
}

// Samples of `reps` calls of `run` and one synchronize, in us per call.
template <typename Run>
void timeRepeated(Result* result, int samples, int reps, Run run) {
  for (int warm = 0; warm < 2; ++warm) run();
  BENCH_CUDA(cudaDeviceSynchronize());
  for (int s = 0; s < samples; ++s) {
    const auto start = Clock::now();
    for (int r = 0; r < reps; ++r) run();
    BENCH_CUDA(cudaDeviceSynchronize());
    result->samples.push_back(secondsSince(start) * 1e6 / reps);
  }
}

template <typename T>
void largeGemm(const Scale& scale, const char* name, int fullN) {
  const int n = scale.pick(fullN, fullN / 2);
  const auto count = static_cast<std::size_t>(n) * n;
  T *a = deviceMatrix<T>(1, count), *b = deviceMatrix<T>(2, count), *c = nullptr;
  BENCH_CUDA(cudaMalloc(&c, sizeof(T) * count));
  MATH_BENCH_CUBLAS(gemm<T>(n, a, b, c));
  BENCH_CUDA(cudaDeviceSynchronize());
  checkGemm(c, static_cast<std::size_t>(n), 0, name);
  Result result(name, "us");
  const int reps = scale.pick(10, 3);
  timeRepeated(&result, scale.pick(10, 3), reps, [&] { MATH_BENCH_CUBLAS(gemm<T>(n, a, b, c)); });
  const double flops = 2.0 * n * static_cast<double>(n) * n;
  result.throughput = flops / (median(result.samples) * 1e-6) * 1e-12;
  result.throughputUnit = "TFLOP/s";
  result.parameters = {{"n", static_cast<double>(n)}, {"gemms_per_sample", static_cast<double>(reps)}};
  printResult(result);
  BENCH_CUDA(cudaFree(a));
  BENCH_CUDA(cudaFree(b));
  BENCH_CUDA(cudaFree(c));
}

void sgemm8192(const Scale& scale) { largeGemm<float>(scale, "sgemm_8192", 8192); }
void dgemm4096(const Scale& scale) { largeGemm<double>(scale, "dgemm_4096", 4096); }

void sgemmBatched(const Scale& scale) {
  constexpr int n = 256;
  const int batch = scale.pick(512, 64);
  const std::size_t stride = static_cast<std::size_t>(n) * n,
                    count = stride * static_cast<std::size_t>(batch);
  float *a = deviceMatrix<float>(1, count), *b = deviceMatrix<float>(2, count), *c = nullptr;
  BENCH_CUDA(cudaMalloc(&c, sizeof(float) * count));
  const float one = 1, zero = 0;
  auto run = [&] {
    MATH_BENCH_CUBLAS(cublasSgemmStridedBatched(
        gBlas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, static_cast<long long>(stride), b, n,
        static_cast<long long>(stride), &zero, c, n, static_cast<long long>(stride), batch));
  };
  run();
  BENCH_CUDA(cudaDeviceSynchronize());
  checkGemm(c, n, stride * static_cast<std::size_t>(batch - 1), "sgemm_batched_256 (last product)");
  Result result("sgemm_batched_256", "us");
  const int reps = scale.pick(10, 3);
  timeRepeated(&result, scale.pick(10, 3), reps, run);
  result.throughput = 2.0 * n * n * n * batch / (median(result.samples) * 1e-6) * 1e-12;
  result.throughputUnit = "TFLOP/s";
  result.parameters = {{"n", n}, {"batch", static_cast<double>(batch)}};
  printResult(result);
  BENCH_CUDA(cudaFree(a));
  BENCH_CUDA(cudaFree(b));
  BENCH_CUDA(cudaFree(c));
}

void sgemmSmall(const Scale& scale) {
  constexpr int n = 64;
  const std::size_t count = static_cast<std::size_t>(n) * n;
  float *a = deviceMatrix<float>(1, count), *b = deviceMatrix<float>(2, count), *c = nullptr;
  BENCH_CUDA(cudaMalloc(&c, sizeof(float) * count));
  MATH_BENCH_CUBLAS(gemm<float>(n, a, b, c));
  BENCH_CUDA(cudaDeviceSynchronize());
  checkGemm(c, n, 0, "sgemm_small_64");
  Result result("sgemm_small_64", "us");
  timeRepeated(&result, scale.pick(2000, 300), 1, [&] { MATH_BENCH_CUBLAS(gemm<float>(n, a, b, c)); });
  result.throughput = 1e6 / median(result.samples);
  result.throughputUnit = "gemms/s";
  result.parameters = {{"n", n}};
  printResult(result);
  BENCH_CUDA(cudaFree(a));
  BENCH_CUDA(cudaFree(b));
  BENCH_CUDA(cudaFree(c));
}

void cudnnConvolution(const Scale& scale) {
  const int n = scale.pick(32, 8), channels = 64, size = 56, kernel = 3;
  cudnnHandle_t handle = nullptr;
  MATH_BENCH_CUDNN(cudnnCreate(&handle));
  cudnnTensorDescriptor_t input = nullptr, output = nullptr;
  cudnnFilterDescriptor_t filter = nullptr;
  cudnnConvolutionDescriptor_t convolution = nullptr;
  MATH_BENCH_CUDNN(cudnnCreateTensorDescriptor(&input));
  MATH_BENCH_CUDNN(cudnnCreateTensorDescriptor(&output));
  MATH_BENCH_CUDNN(cudnnCreateFilterDescriptor(&filter));
  MATH_BENCH_CUDNN(cudnnCreateConvolutionDescriptor(&convolution));
  MATH_BENCH_CUDNN(
      cudnnSetTensor4dDescriptor(input, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, channels, size, size));
  MATH_BENCH_CUDNN(cudnnSetFilter4dDescriptor(filter, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, channels, channels,
                                              kernel, kernel));
  MATH_BENCH_CUDNN(cudnnSetConvolution2dDescriptor(convolution, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                                   CUDNN_DATA_FLOAT));
  MATH_BENCH_CUDNN(
      cudnnSetTensor4dDescriptor(output, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, channels, size, size));
  const std::size_t inputCount = static_cast<std::size_t>(n) * channels * size * size;
  const std::size_t filterCount = static_cast<std::size_t>(channels) * channels * kernel * kernel;
  float *x = deviceMatrix<float>(1, inputCount), *w = deviceMatrix<float>(2, filterCount), *y = nullptr;
  BENCH_CUDA(cudaMalloc(&y, sizeof(float) * inputCount));
  const auto algorithm = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  std::size_t workspaceBytes = 0;
  MATH_BENCH_CUDNN(cudnnGetConvolutionForwardWorkspaceSize(handle, input, filter, convolution, output,
                                                           algorithm, &workspaceBytes));
  void* workspace = nullptr;
  BENCH_CUDA(cudaMalloc(&workspace, workspaceBytes + 256));
  const float one = 1, zero = 0;
  auto run = [&] {
    MATH_BENCH_CUDNN(cudnnConvolutionForward(handle, &one, input, x, filter, w, convolution, algorithm,
                                             workspace, workspaceBytes, &zero, output, y));
  };
  run();
  BENCH_CUDA(cudaDeviceSynchronize());
  // y[b][k][i][j] = sum over c, p, q of x[b][c][i+p-1][j+q-1] w[k][c][p][q] (zero padding).
  for (std::uint32_t s = 0; s < 8; ++s) {
    const int b = static_cast<int>(mix32(s + 11) % static_cast<std::uint32_t>(n)),
              k = static_cast<int>(mix32(s + 23) % channels), i = static_cast<int>(mix32(s + 37) % size),
              j = static_cast<int>(mix32(s + 41) % size);
    double expected = 0;
    for (int c = 0; c < channels; ++c) {
      for (int p = 0; p < kernel; ++p) {
        for (int q = 0; q < kernel; ++q) {
          const int row = i + p - 1, column = j + q - 1;
          if (row < 0 || row >= size || column < 0 || column >= size) continue;
          const std::size_t xi = ((static_cast<std::size_t>(b) * channels + c) * size + row) * size + column;
          const std::size_t wi = ((static_cast<std::size_t>(k) * channels + c) * kernel + p) * kernel + q;
          expected += static_cast<double>(inputValue<float>(1, xi)) * inputValue<float>(2, wi);
        }
      }
    }
    float got = 0;
    const std::size_t yi = ((static_cast<std::size_t>(b) * channels + k) * size + i) * size + j;
    BENCH_CUDA(cudaMemcpy(&got, y + yi, sizeof got, cudaMemcpyDeviceToHost));
    // TF32 tensor cores may round the inputs; they are small integers, so they stay exact.
    BENCH_VERIFY(std::fabs(got - expected) <= 1e-3 * std::fabs(expected) + 1e-3,
                 "cudnn_conv_fwd: y(%d, %d, %d, %d) = %g, expected %g", b, k, i, j, static_cast<double>(got),
                 expected);
  }
  Result result("cudnn_conv_fwd", "us");
  const int reps = scale.pick(20, 5);
  timeRepeated(&result, scale.pick(10, 3), reps, run);
  const double flops = 2.0 * static_cast<double>(inputCount) * channels * kernel * kernel;
  result.throughput = flops / (median(result.samples) * 1e-6) * 1e-12;
  result.throughputUnit = "TFLOP/s";
  result.parameters = {{"batch", n}, {"channels", channels}, {"size", size}};
  printResult(result);
  cudnnDestroyTensorDescriptor(input);
  cudnnDestroyTensorDescriptor(output);
  cudnnDestroyFilterDescriptor(filter);
  cudnnDestroyConvolutionDescriptor(convolution);
  MATH_BENCH_CUDNN(cudnnDestroy(handle));
  BENCH_CUDA(cudaFree(x));
  BENCH_CUDA(cudaFree(w));
  BENCH_CUDA(cudaFree(y));
  BENCH_CUDA(cudaFree(workspace));
}

struct Workload {
  const char* name;
  void (*run)(const Scale&);
};

const Workload kWorkloads[] = {
    {"sgemm_8192", sgemm8192},
    {"dgemm_4096", dgemm4096},
    {"sgemm_batched_256", sgemmBatched},
    {"sgemm_small_64", sgemmSmall},
    {"cudnn_conv_fwd", cudnnConvolution},
};

}  // namespace
}  // namespace bench

int main(int argc, char** argv) {
  using namespace bench;
  Scale scale;
  std::vector<const Workload*> selected;
  if (const int status = parseCommandLine(argc, argv, "agileos_math_bench", kWorkloads, &scale, &selected);
      status >= 0) {
    return status;
  }
  // Context creation and cuBLAS's start-up are process start-up, not part of any workload.
  BENCH_CUDA(cudaFree(nullptr));
  MATH_BENCH_CUBLAS(cublasCreate(&gBlas));
  for (const Workload* workload : selected) {
    const auto start = Clock::now();
    workload->run(scale);
    std::fprintf(stderr, "agileos_math_bench: %s took %.2f s\n", workload->name, secondsSince(start));
  }
  MATH_BENCH_CUBLAS(cublasDestroy(gBlas));
  return 0;
}
