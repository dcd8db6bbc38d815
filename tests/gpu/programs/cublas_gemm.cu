// cuBLAS, unmodified, through AgileOS (issue 16): the real libcublas.so.13 and libcublasLt.so.13
// of the GPU machine's CUDA installation run in the client; the CUDA runtime inside them reaches
// the GPU through the driver shim alone, and their kernels load through the worker's gate.
// - SGEMM and DGEMM (no transpose, and A transposed), of sizes that are not multiples of a tile;
// - strided batched SGEMM;
// - cublasSaxpy and cublasSdot (level 1), cublasSgemv (level 2);
// each against a CPU reference in double precision (relative error bound), then the sum of the
// result printed to 4 significant digits (the same on a native and an AgileOS run).
// Inputs come from a fixed LCG. Exit status 0 only if every check passed.
#include <cublas_v2.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "host_math.cuh"

namespace {

#define CHECK_CUBLAS(call)                                                                         \
  do {                                                                                             \
    const cublasStatus_t check_cublas_status_ = (call);                                            \
    if (check_cublas_status_ != CUBLAS_STATUS_SUCCESS) {                                           \
      std::printf("FAIL %s -> cuBLAS status %d\n", #call, static_cast<int>(check_cublas_status_)); \
      std::fflush(stdout);                                                                         \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

using host_math::compare;
using host_math::toDevice;
using host_math::toHost;

template <typename T>
std::vector<T> randomMatrix(std::size_t count) {
  return host_math::randomVector<T>(count);
}

// Column-major C = alpha * op(A) * B + beta * C in double precision; op(A) is m x k.
template <typename T>
std::vector<double> referenceGemm(bool transposeA, int m, int n, int k, double alpha, const std::vector<T>& a,
                                  const std::vector<T>& b, double beta, const std::vector<T>& c) {
  std::vector<double> out(static_cast<std::size_t>(m) * n);
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < m; ++i) {
      double sum = 0;
      for (int p = 0; p < k; ++p) {
        const double av =
            transposeA ? a[static_cast<std::size_t>(i) * k + p] : a[static_cast<std::size_t>(p) * m + i];
        sum += av * b[static_cast<std::size_t>(j) * k + p];
      }
      out[static_cast<std::size_t>(j) * m + i] = alpha * sum + beta * c[static_cast<std::size_t>(j) * m + i];
    }
  }
  return out;
}

template <typename T>
void gemm(cublasHandle_t handle, const char* name, bool transposeA, int m, int n, int k, double tolerance) {
  const auto a = randomMatrix<T>(static_cast<std::size_t>(m) * k);
  const auto b = randomMatrix<T>(static_cast<std::size_t>(k) * n);
  const auto c = randomMatrix<T>(static_cast<std::size_t>(m) * n);
  T *da = toDevice(a), *db = toDevice(b), *dc = toDevice(c);
  const T alpha = static_cast<T>(1.5), beta = static_cast<T>(-0.5);
  const cublasOperation_t opA = transposeA ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int lda = transposeA ? k : m;
  if constexpr (sizeof(T) == 4) {
    CHECK_CUBLAS(cublasSgemm(handle, opA, CUBLAS_OP_N, m, n, k, &alpha, da, lda, db, k, &beta, dc, m));
  } else {
    CHECK_CUBLAS(cublasDgemm(handle, opA, CUBLAS_OP_N, m, n, k, &alpha, da, lda, db, k, &beta, dc, m));
  }
  compare(name, toHost(dc, c.size()), referenceGemm(transposeA, m, n, k, alpha, a, b, beta, c), tolerance);
  CHECK_CUDA(cudaFree(da));
  CHECK_CUDA(cudaFree(db));
  CHECK_CUDA(cudaFree(dc));
}

void batchedGemm(cublasHandle_t handle) {
  const int m = 33, n = 17, k = 29, batch = 8;
  const auto a = randomMatrix<float>(static_cast<std::size_t>(m) * k * batch);
  const auto b = randomMatrix<float>(static_cast<std::size_t>(k) * n * batch);
  const auto c = randomMatrix<float>(static_cast<std::size_t>(m) * n * batch);
  float *da = toDevice(a), *db = toDevice(b), *dc = toDevice(c);
  const float alpha = 1.0f, beta = 0.25f;
  CHECK_CUBLAS(cublasSgemmStridedBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, da, m,
                                         static_cast<long long>(m) * k, db, k, static_cast<long long>(k) * n,
                                         &beta, dc, m, static_cast<long long>(m) * n, batch));
  const auto got = toHost(dc, c.size());
  std::vector<double> want;
  for (int i = 0; i < batch; ++i) {
    auto slice = [](const std::vector<float>& v, std::size_t offset, std::size_t count) {
      return std::vector<float>(v.begin() + static_cast<std::ptrdiff_t>(offset),
                                v.begin() + static_cast<std::ptrdiff_t>(offset + count));
    };
    const auto part =
        referenceGemm(false, m, n, k, alpha, slice(a, std::size_t(i) * m * k, std::size_t(m) * k),
                      slice(b, std::size_t(i) * k * n, std::size_t(k) * n), beta,
                      slice(c, std::size_t(i) * m * n, std::size_t(m) * n));
    want.insert(want.end(), part.begin(), part.end());
  }
  compare("sgemm_strided_batched_33x17x29x8", got, want, 1e-4);
  CHECK_CUDA(cudaFree(da));
  CHECK_CUDA(cudaFree(db));
  CHECK_CUDA(cudaFree(dc));
}

void levelOneAndTwo(cublasHandle_t handle) {
  const int n = 1000;
  const auto x = randomMatrix<float>(n);
  const auto y = randomMatrix<float>(n);
  float *dx = toDevice(x), *dy = toDevice(y);
  const float alpha = 2.0f;
  CHECK_CUBLAS(cublasSaxpy(handle, n, &alpha, dx, 1, dy, 1));
  std::vector<double> want(n);
  for (int i = 0; i < n; ++i) want[i] = 2.0 * x[i] + y[i];
  const auto got = toHost(dy, n);
  compare("saxpy_1000", got, want, 1e-6);
  float dot = 0;
  CHECK_CUBLAS(cublasSdot(handle, n, dx, 1, dy, 1, &dot));
  double wantDot = 0;
  for (int i = 0; i < n; ++i) wantDot += static_cast<double>(x[i]) * static_cast<double>(got[i]);
  compare("sdot_1000", std::vector<float>{dot}, std::vector<double>{wantDot}, 1e-4);

  const int rows = 70, cols = 50;
  const auto a = randomMatrix<float>(static_cast<std::size_t>(rows) * cols);
  float* da = toDevice(a);
  float* dv = toDevice(std::vector<float>(x.begin(), x.begin() + cols));
  float* dr = toDevice(std::vector<float>(rows, 0.0f));
  const float one = 1.0f, zero = 0.0f;
  CHECK_CUBLAS(cublasSgemv(handle, CUBLAS_OP_N, rows, cols, &one, da, rows, dv, 1, &zero, dr, 1));
  std::vector<double> wantGemv(rows, 0.0);
  for (int j = 0; j < cols; ++j)
    for (int i = 0; i < rows; ++i) wantGemv[i] += static_cast<double>(a[std::size_t(j) * rows + i]) * x[j];
  compare("sgemv_70x50", toHost(dr, rows), wantGemv, 1e-5);
  for (float* p : {dx, dy, da, dv, dr}) CHECK_CUDA(cudaFree(p));
}

}  // namespace

int main() {
  cublasHandle_t handle = nullptr;
  CHECK_CUBLAS(cublasCreate(&handle));
  // Reproducible results: no atomics-based reductions, the default (non-tensor-op) math.
  CHECK_CUBLAS(cublasSetAtomicsMode(handle, CUBLAS_ATOMICS_NOT_ALLOWED));
  gemm<float>(handle, "sgemm_nn_129x65x97", false, 129, 65, 97, 1e-4);
  gemm<float>(handle, "sgemm_tn_64x64x64", true, 64, 64, 64, 1e-4);
  gemm<float>(handle, "sgemm_nn_512x384x256", false, 512, 384, 256, 1e-4);
  gemm<double>(handle, "dgemm_nn_100x80x60", false, 100, 80, 60, 1e-12);
  gemm<double>(handle, "dgemm_tn_256x128x64", true, 256, 128, 64, 1e-12);
  batchedGemm(handle);
  levelOneAndTwo(handle);
  CHECK_CUBLAS(cublasDestroy(handle));
  std::printf("cublas_gemm: all checks passed\n");
  return 0;
}
