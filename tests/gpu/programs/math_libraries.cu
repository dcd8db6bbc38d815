// cuRAND, cuSPARSE and cuSOLVER, unmodified, through AgileOS (issue 16): the GPU machine's real
// libraries run in the client; the CUDA runtime inside them reaches the GPU through the driver
// shim alone, and their kernels load through the worker's gate.
// - cuRAND: the default (XORWOW), Philox and MRG32k3a generators on a stream of the program's,
//   uniform, normal and double-precision draws, checked against their distribution's moments;
//   the device Philox stream checked bit for bit against cuRAND's host generator of the same seed;
// - cuSPARSE: CSR SpMV (the deterministic algorithm) in float and double, CSR times dense (SpMM),
//   and CSR to dense, against a CPU reference;
// - cuSOLVER: Cholesky (potrf/potrs) and LU with pivoting (getrf/getrs) solves checked by their
//   residual, and a symmetric eigensolver (syevd) checked by A v = lambda v.
// stdout carries the checks' names, sums and values rounded so that a native and an AgileOS run
// print the same bytes. Exit status 0 only if every check passed.
#include <cuda_runtime.h>
#include <curand.h>
#include <cusolverDn.h>
#include <cusparse.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "host_math.cuh"

namespace {

using host_math::compare;
using host_math::randomVector;
using host_math::toDevice;
using host_math::toHost;

#define CHECK_LIBRARY(call, success)                                               \
  do {                                                                             \
    const int check_library_status_ = static_cast<int>(call);                      \
    if (check_library_status_ != static_cast<int>(success)) {                      \
      std::printf("FAIL %s -> library status %d\n", #call, check_library_status_); \
      std::fflush(stdout);                                                         \
      std::exit(1);                                                                \
    }                                                                              \
  } while (0)
#define CHECK_CURAND(call) CHECK_LIBRARY(call, CURAND_STATUS_SUCCESS)
#define CHECK_CUSPARSE(call) CHECK_LIBRARY(call, CUSPARSE_STATUS_SUCCESS)
#define CHECK_CUSOLVER(call) CHECK_LIBRARY(call, CUSOLVER_STATUS_SUCCESS)

// ------------------------------------------------------------------ cuRAND

struct Moments {
  double mean = 0, variance = 0, low = 1e300, high = -1e300;
};

template <typename T>
Moments momentsOf(const std::vector<T>& values) {
  Moments m;
  for (T v : values) {
    m.mean += static_cast<double>(v);
    m.low = std::fmin(m.low, static_cast<double>(v));
    m.high = std::fmax(m.high, static_cast<double>(v));
  }
  m.mean /= static_cast<double>(values.size());
  for (T v : values) m.variance += (static_cast<double>(v) - m.mean) * (static_cast<double>(v) - m.mean);
  m.variance /= static_cast<double>(values.size());
  return m;
}

// Uniform draws lie in (0, 1] with mean 1/2 and variance 1/12; normal ones have the requested
// mean and standard deviation. With 2^20 draws the bounds below are many standard errors wide.
void generator(const char* name, curandRngType_t type, cudaStream_t stream) {
  const std::size_t count = std::size_t{1} << 20;
  curandGenerator_t gen = nullptr;
  CHECK_CURAND(curandCreateGenerator(&gen, type));
  CHECK_CURAND(curandSetStream(gen, stream));
  CHECK_CURAND(curandSetPseudoRandomGeneratorSeed(gen, 20261204ull));
  float* uniform = nullptr;
  CHECK_CUDA(cudaMalloc(&uniform, count * sizeof(float)));
  CHECK_CURAND(curandGenerateUniform(gen, uniform, count));
  float* normal = nullptr;
  CHECK_CUDA(cudaMalloc(&normal, count * sizeof(float)));
  CHECK_CURAND(curandGenerateNormal(gen, normal, count, 2.0f, 3.0f));
  double* uniformDouble = nullptr;
  CHECK_CUDA(cudaMalloc(&uniformDouble, count * sizeof(double)));
  CHECK_CURAND(curandGenerateUniformDouble(gen, uniformDouble, count));
  CHECK_CUDA(cudaStreamSynchronize(stream));

  const auto u = toHost(uniform, count);
  const auto n = toHost(normal, count);
  const auto d = toHost(uniformDouble, count);
  const Moments mu = momentsOf(u), mn = momentsOf(n), md = momentsOf(d);
  EXPECT_TRUE(mu.low > 0 && mu.high <= 1 && std::fabs(mu.mean - 0.5) < 0.002 &&
                  std::fabs(mu.variance - 1.0 / 12) < 0.002,
              "%s uniform: mean %g variance %g range [%g, %g]\n", name, mu.mean, mu.variance, mu.low,
              mu.high);
  EXPECT_TRUE(std::fabs(mn.mean - 2.0) < 0.02 && std::fabs(std::sqrt(mn.variance) - 3.0) < 0.02,
              "%s normal: mean %g stddev %g\n", name, mn.mean, std::sqrt(mn.variance));
  EXPECT_TRUE(md.low > 0 && md.high <= 1 && std::fabs(md.mean - 0.5) < 0.002, "%s double: mean %g\n", name,
              md.mean);
  // The same seed gives the same stream on every run, native or not.
  std::printf("curand %s ok first=%.6f,%.6f,%.6f normal0=%.5f double0=%.9f\n", name, u[0], u[1], u[2], n[0],
              d[0]);
  for (void* p : {static_cast<void*>(uniform), static_cast<void*>(normal), static_cast<void*>(uniformDouble)})
    CHECK_CUDA(cudaFree(p));
  CHECK_CURAND(curandDestroyGenerator(gen));
}

// cuRAND's host generator computes the same Philox stream on the CPU: the device's draws must be
// those bits exactly.
void philoxMatchesHostGenerator() {
  const std::size_t count = 100000;
  curandGenerator_t device = nullptr, host = nullptr;
  CHECK_CURAND(curandCreateGenerator(&device, CURAND_RNG_PSEUDO_PHILOX4_32_10));
  CHECK_CURAND(curandCreateGeneratorHost(&host, CURAND_RNG_PSEUDO_PHILOX4_32_10));
  for (curandGenerator_t gen : {device, host}) {
    CHECK_CURAND(curandSetPseudoRandomGeneratorSeed(gen, 77ull));
    CHECK_CURAND(curandSetGeneratorOffset(gen, 1000ull));
  }
  unsigned int* drawn = nullptr;
  CHECK_CUDA(cudaMalloc(&drawn, count * sizeof(unsigned int)));
  CHECK_CURAND(curandGenerate(device, drawn, count));
  std::vector<unsigned int> want(count);
  CHECK_CURAND(curandGenerate(host, want.data(), count));
  const auto got = toHost(drawn, count);
  const auto mismatch = std::mismatch(got.begin(), got.end(), want.begin());
  EXPECT_TRUE(mismatch.first == got.end(), "philox: device and host streams differ at %td\n",
              mismatch.first - got.begin());
  std::printf("curand philox device == host generator (%zu draws) first=%u\n", count, got[0]);
  CHECK_CUDA(cudaFree(drawn));
  CHECK_CURAND(curandDestroyGenerator(device));
  CHECK_CURAND(curandDestroyGenerator(host));
}

// ------------------------------------------------------------------ cuSPARSE

// A rows x cols matrix in CSR with about `density` of its entries set, from the fixed LCG.
struct Csr {
  int rows = 0, cols = 0;
  std::vector<int> offsets, columns;
  std::vector<double> values;
};

Csr randomCsr(int rows, int cols, double density) {
  Csr m;
  m.rows = rows;
  m.cols = cols;
  m.offsets.push_back(0);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      if (host_math::nextValue() + 0.5 < density) {
        m.columns.push_back(c);
        m.values.push_back(host_math::nextValue());
      }
    }
    m.offsets.push_back(static_cast<int>(m.columns.size()));
  }
  return m;
}

template <typename T>
std::vector<T> cast(const std::vector<double>& values) {
  return std::vector<T>(values.begin(), values.end());
}

template <typename T>
void spmv(cusparseHandle_t handle, const char* name, const Csr& a, double tolerance) {
  constexpr cudaDataType_t kType = sizeof(T) == 4 ? CUDA_R_32F : CUDA_R_64F;
  const auto x = randomVector<T>(a.cols);
  const auto y = randomVector<T>(a.rows);
  int* offsets = toDevice(a.offsets);
  int* columns = toDevice(a.columns);
  T* values = toDevice(cast<T>(a.values));
  T* dx = toDevice(x);
  T* dy = toDevice(y);
  cusparseSpMatDescr_t matrix = nullptr;
  cusparseDnVecDescr_t vx = nullptr, vy = nullptr;
  CHECK_CUSPARSE(cusparseCreateCsr(&matrix, a.rows, a.cols, static_cast<int64_t>(a.columns.size()), offsets,
                                   columns, values, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                   CUSPARSE_INDEX_BASE_ZERO, kType));
  CHECK_CUSPARSE(cusparseCreateDnVec(&vx, a.cols, dx, kType));
  CHECK_CUSPARSE(cusparseCreateDnVec(&vy, a.rows, dy, kType));
  const T alpha = static_cast<T>(1.25), beta = static_cast<T>(-0.5);
  std::size_t bufferSize = 0;
  CHECK_CUSPARSE(cusparseSpMV_bufferSize(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, matrix, vx, &beta,
                                         vy, kType, CUSPARSE_SPMV_CSR_ALG2, &bufferSize));
  void* buffer = nullptr;
  CHECK_CUDA(cudaMalloc(&buffer, std::max<std::size_t>(bufferSize, 1)));
  CHECK_CUSPARSE(cusparseSpMV(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, matrix, vx, &beta, vy, kType,
                              CUSPARSE_SPMV_CSR_ALG2, buffer));
  std::vector<double> want(a.rows);
  for (int r = 0; r < a.rows; ++r) {
    double sum = 0;
    for (int i = a.offsets[r]; i < a.offsets[r + 1]; ++i)
      sum += static_cast<double>(static_cast<T>(a.values[i])) * static_cast<double>(x[a.columns[i]]);
    want[r] = 1.25 * sum - 0.5 * static_cast<double>(y[r]);
  }
  compare(name, toHost(dy, a.rows), want, tolerance);
  CHECK_CUSPARSE(cusparseDestroySpMat(matrix));
  CHECK_CUSPARSE(cusparseDestroyDnVec(vx));
  CHECK_CUSPARSE(cusparseDestroyDnVec(vy));
  for (void* p : {static_cast<void*>(offsets), static_cast<void*>(columns), static_cast<void*>(values),
                  static_cast<void*>(dx), static_cast<void*>(dy), buffer})
    CHECK_CUDA(cudaFree(p));
}

// C = A * B with A sparse (CSR) and B, C dense column-major; then A itself back to dense.
void spmmAndToDense(cusparseHandle_t handle, const Csr& a) {
  const int n = 24;
  const auto b = randomVector<float>(static_cast<std::size_t>(a.cols) * n);
  int* offsets = toDevice(a.offsets);
  int* columns = toDevice(a.columns);
  float* values = toDevice(cast<float>(a.values));
  float* db = toDevice(b);
  float* dc = toDevice(std::vector<float>(static_cast<std::size_t>(a.rows) * n, 0.0f));
  cusparseSpMatDescr_t matrix = nullptr;
  cusparseDnMatDescr_t mb = nullptr, mc = nullptr;
  CHECK_CUSPARSE(cusparseCreateCsr(&matrix, a.rows, a.cols, static_cast<int64_t>(a.columns.size()), offsets,
                                   columns, values, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                   CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
  CHECK_CUSPARSE(cusparseCreateDnMat(&mb, a.cols, n, a.cols, db, CUDA_R_32F, CUSPARSE_ORDER_COL));
  CHECK_CUSPARSE(cusparseCreateDnMat(&mc, a.rows, n, a.rows, dc, CUDA_R_32F, CUSPARSE_ORDER_COL));
  const float alpha = 1.0f, beta = 0.0f;
  std::size_t bufferSize = 0;
  CHECK_CUSPARSE(cusparseSpMM_bufferSize(handle, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                         CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, matrix, mb, &beta, mc,
                                         CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, &bufferSize));
  void* buffer = nullptr;
  CHECK_CUDA(cudaMalloc(&buffer, std::max<std::size_t>(bufferSize, 1)));
  CHECK_CUSPARSE(cusparseSpMM(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE,
                              &alpha, matrix, mb, &beta, mc, CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, buffer));
  std::vector<double> want(static_cast<std::size_t>(a.rows) * n, 0.0);
  for (int j = 0; j < n; ++j)
    for (int r = 0; r < a.rows; ++r)
      for (int i = a.offsets[r]; i < a.offsets[r + 1]; ++i)
        want[std::size_t(j) * a.rows + r] += static_cast<double>(static_cast<float>(a.values[i])) *
                                             static_cast<double>(b[std::size_t(j) * a.cols + a.columns[i]]);
  compare("cusparse_spmm_csr", toHost(dc, want.size()), want, 1e-5);

  // CSR to dense (column-major), exact.
  float* dense = toDevice(std::vector<float>(static_cast<std::size_t>(a.rows) * a.cols, -1.0f));
  cusparseDnMatDescr_t md = nullptr;
  CHECK_CUSPARSE(cusparseCreateDnMat(&md, a.rows, a.cols, a.rows, dense, CUDA_R_32F, CUSPARSE_ORDER_COL));
  std::size_t convertSize = 0;
  CHECK_CUSPARSE(
      cusparseSparseToDense_bufferSize(handle, matrix, md, CUSPARSE_SPARSETODENSE_ALG_DEFAULT, &convertSize));
  void* convertBuffer = nullptr;
  CHECK_CUDA(cudaMalloc(&convertBuffer, std::max<std::size_t>(convertSize, 1)));
  CHECK_CUSPARSE(
      cusparseSparseToDense(handle, matrix, md, CUSPARSE_SPARSETODENSE_ALG_DEFAULT, convertBuffer));
  std::vector<double> wantDense(static_cast<std::size_t>(a.rows) * a.cols, 0.0);
  for (int r = 0; r < a.rows; ++r)
    for (int i = a.offsets[r]; i < a.offsets[r + 1]; ++i)
      wantDense[std::size_t(a.columns[i]) * a.rows + r] = static_cast<float>(a.values[i]);
  compare("cusparse_csr_to_dense", toHost(dense, wantDense.size()), wantDense, 0.0);

  CHECK_CUSPARSE(cusparseDestroySpMat(matrix));
  for (cusparseDnMatDescr_t d : {mb, mc, md}) CHECK_CUSPARSE(cusparseDestroyDnMat(d));
  for (void* p :
       {static_cast<void*>(offsets), static_cast<void*>(columns), static_cast<void*>(values),
        static_cast<void*>(db), static_cast<void*>(dc), buffer, static_cast<void*>(dense), convertBuffer})
    CHECK_CUDA(cudaFree(p));
}

// ------------------------------------------------------------------ cuSOLVER

// Column-major n x n.
std::vector<double> multiply(int n, const std::vector<double>& a, const std::vector<double>& x, int columns) {
  std::vector<double> out(static_cast<std::size_t>(n) * columns, 0.0);
  for (int c = 0; c < columns; ++c)
    for (int k = 0; k < n; ++k)
      for (int r = 0; r < n; ++r)
        out[std::size_t(c) * n + r] += a[std::size_t(k) * n + r] * x[std::size_t(c) * n + k];
  return out;
}

// A symmetric positive definite matrix: B^T B + n I.
std::vector<double> spdMatrix(int n) {
  const auto b = randomVector<double>(static_cast<std::size_t>(n) * n);
  std::vector<double> a(static_cast<std::size_t>(n) * n, 0.0);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) {
      double sum = 0;
      for (int k = 0; k < n; ++k) sum += b[std::size_t(i) * n + k] * b[std::size_t(j) * n + k];
      a[std::size_t(j) * n + i] = sum + (i == j ? n : 0);
    }
  return a;
}

int infoOf(const int* deviceInfo) { return toHost(deviceInfo, 1)[0]; }

void choleskySolve(cusolverDnHandle_t handle) {
  const int n = 200, columns = 3;
  const auto a = spdMatrix(n);
  const auto rhs = randomVector<double>(static_cast<std::size_t>(n) * columns);
  double* da = toDevice(a);
  double* db = toDevice(rhs);
  int* info = toDevice(std::vector<int>{-1});
  int work = 0;
  CHECK_CUSOLVER(cusolverDnDpotrf_bufferSize(handle, CUBLAS_FILL_MODE_LOWER, n, da, n, &work));
  double* workspace = toDevice(std::vector<double>(std::max(work, 1), 0.0));
  CHECK_CUSOLVER(cusolverDnDpotrf(handle, CUBLAS_FILL_MODE_LOWER, n, da, n, workspace, work, info));
  EXPECT_TRUE(infoOf(info) == 0, "potrf info %d\n", infoOf(info));
  CHECK_CUSOLVER(cusolverDnDpotrs(handle, CUBLAS_FILL_MODE_LOWER, n, columns, da, n, db, n, info));
  EXPECT_TRUE(infoOf(info) == 0, "potrs info %d\n", infoOf(info));
  const auto x = toHost(db, rhs.size());
  // A x must give back the right-hand side.
  compare("cusolver_dpotrf_potrs_200", multiply(n, a, x, columns),
          std::vector<double>(rhs.begin(), rhs.end()), 1e-12);
  for (void* p : {static_cast<void*>(da), static_cast<void*>(db), static_cast<void*>(info),
                  static_cast<void*>(workspace)})
    CHECK_CUDA(cudaFree(p));
}

void luSolve(cusolverDnHandle_t handle) {
  const int n = 150;
  const auto a = randomVector<float>(static_cast<std::size_t>(n) * n);
  const auto rhs = randomVector<float>(n);
  float* da = toDevice(a);
  float* db = toDevice(rhs);
  int* pivots = toDevice(std::vector<int>(n, 0));
  int* info = toDevice(std::vector<int>{-1});
  int work = 0;
  CHECK_CUSOLVER(cusolverDnSgetrf_bufferSize(handle, n, n, da, n, &work));
  float* workspace = toDevice(std::vector<float>(std::max(work, 1), 0.0f));
  CHECK_CUSOLVER(cusolverDnSgetrf(handle, n, n, da, n, workspace, pivots, info));
  EXPECT_TRUE(infoOf(info) == 0, "getrf info %d\n", infoOf(info));
  CHECK_CUSOLVER(cusolverDnSgetrs(handle, CUBLAS_OP_N, n, 1, da, n, pivots, db, n, info));
  EXPECT_TRUE(infoOf(info) == 0, "getrs info %d\n", infoOf(info));
  const auto x = toHost(db, n);
  compare("cusolver_sgetrf_getrs_150",
          multiply(n, std::vector<double>(a.begin(), a.end()), std::vector<double>(x.begin(), x.end()), 1),
          std::vector<double>(rhs.begin(), rhs.end()), 1e-3);
  for (void* p : {static_cast<void*>(da), static_cast<void*>(db), static_cast<void*>(pivots),
                  static_cast<void*>(info), static_cast<void*>(workspace)})
    CHECK_CUDA(cudaFree(p));
}

void symmetricEigen(cusolverDnHandle_t handle) {
  const int n = 64;
  const auto a = spdMatrix(n);
  double* da = toDevice(a);
  double* eigenvalues = toDevice(std::vector<double>(n, 0.0));
  int* info = toDevice(std::vector<int>{-1});
  int work = 0;
  CHECK_CUSOLVER(cusolverDnDsyevd_bufferSize(handle, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, n, da,
                                             n, eigenvalues, &work));
  double* workspace = toDevice(std::vector<double>(std::max(work, 1), 0.0));
  CHECK_CUSOLVER(cusolverDnDsyevd(handle, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, n, da, n,
                                  eigenvalues, workspace, work, info));
  EXPECT_TRUE(infoOf(info) == 0, "syevd info %d\n", infoOf(info));
  const auto vectors = toHost(da, a.size());
  const auto lambda = toHost(eigenvalues, n);
  // A V = V diag(lambda), column by column.
  std::vector<double> scaled(vectors);
  for (int c = 0; c < n; ++c)
    for (int r = 0; r < n; ++r) scaled[std::size_t(c) * n + r] *= lambda[c];
  compare("cusolver_dsyevd_64_residual", multiply(n, a, vectors, n), scaled, 1e-11);
  EXPECT_TRUE(std::is_sorted(lambda.begin(), lambda.end()) && lambda[0] > 0,
              "eigenvalues not ascending/positive\n");
  std::printf("cusolver_dsyevd_64 eigenvalues min=%.6g max=%.6g\n", lambda.front(), lambda.back());
  for (void* p : {static_cast<void*>(da), static_cast<void*>(eigenvalues), static_cast<void*>(info),
                  static_cast<void*>(workspace)})
    CHECK_CUDA(cudaFree(p));
}

}  // namespace

int main() {
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreate(&stream));
  generator("xorwow", CURAND_RNG_PSEUDO_DEFAULT, stream);
  generator("philox", CURAND_RNG_PSEUDO_PHILOX4_32_10, stream);
  generator("mrg32k3a", CURAND_RNG_PSEUDO_MRG32K3A, stream);
  philoxMatchesHostGenerator();

  cusparseHandle_t sparse = nullptr;
  CHECK_CUSPARSE(cusparseCreate(&sparse));
  CHECK_CUSPARSE(cusparseSetStream(sparse, stream));
  const Csr a = randomCsr(700, 500, 0.05);
  spmv<float>(sparse, "cusparse_spmv_csr_f32", a, 1e-5);
  spmv<double>(sparse, "cusparse_spmv_csr_f64", a, 1e-12);
  spmmAndToDense(sparse, a);
  CHECK_CUSPARSE(cusparseDestroy(sparse));

  cusolverDnHandle_t solver = nullptr;
  CHECK_CUSOLVER(cusolverDnCreate(&solver));
  CHECK_CUSOLVER(cusolverDnSetStream(solver, stream));
  choleskySolve(solver);
  luSolve(solver);
  symmetricEigen(solver);
  CHECK_CUSOLVER(cusolverDnDestroy(solver));
  CHECK_CUDA(cudaStreamDestroy(stream));
  std::printf("math_libraries: all checks passed\n");
  return 0;
}
