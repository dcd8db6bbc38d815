// The real cuBLAS in a client, on the fake GPU (CPU end-to-end test): cuBLAS and cuBLASLt, with
// the CUDA runtimes inside them, reach the GPU only through the driver shim, and every call they
// make on the way to a GEMM must be answered as the driver answers it (their private tables,
// cluster occupancy, limits, library loads of SASS-only images). The fake records the kernels'
// launches and never runs them, so this checks every status, not the numbers (the H200 suite's
// cublas_gemm compares those with native).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

namespace {

int gFailures = 0;

void checkStatus(cublasStatus_t status, const char* what) {
  std::printf("%s %s (cuBLAS status %d)\n", status == CUBLAS_STATUS_SUCCESS ? "PASS" : "FAIL", what,
              static_cast<int>(status));
  if (status != CUBLAS_STATUS_SUCCESS) ++gFailures;
}

void checkCuda(cudaError_t error, const char* what) {
  std::printf("%s %s (%s)\n", error == cudaSuccess ? "PASS" : "FAIL", what, cudaGetErrorName(error));
  if (error != cudaSuccess) ++gFailures;
}

}  // namespace

int main() {
  constexpr int m = 129, n = 65, k = 97;
  float *a = nullptr, *b = nullptr, *c = nullptr;
  double *da = nullptr, *db = nullptr, *dc = nullptr;
  checkCuda(cudaMalloc(&a, sizeof(float) * m * k), "cudaMalloc A");
  checkCuda(cudaMalloc(&b, sizeof(float) * k * n), "cudaMalloc B");
  checkCuda(cudaMalloc(&c, sizeof(float) * m * n), "cudaMalloc C");
  checkCuda(cudaMalloc(&da, sizeof(double) * 256 * 64), "cudaMalloc dA");
  checkCuda(cudaMalloc(&db, sizeof(double) * 64 * 128), "cudaMalloc dB");
  checkCuda(cudaMalloc(&dc, sizeof(double) * 256 * 128), "cudaMalloc dC");
  std::vector<float> host(static_cast<size_t>(m) * k, 1.0f);
  checkCuda(cudaMemcpy(a, host.data(), sizeof(float) * m * k, cudaMemcpyHostToDevice), "cudaMemcpy A");

  cublasHandle_t handle = nullptr;
  checkStatus(cublasCreate(&handle), "cublasCreate");
  const float alpha = 1.0f, beta = 0.0f;
  checkStatus(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, a, m, b, k, &beta, c, m),
              "cublasSgemm 129x65x97");
  checkStatus(cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, 64, 64, 64, &alpha, a, 64, b, 64, &beta, c, 64),
              "cublasSgemm 64x64x64, A transposed");
  const double dalpha = 1.0, dbeta = 0.0;
  checkStatus(
      cublasDgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 256, 128, 64, &dalpha, da, 256, db, 64, &dbeta, dc, 256),
      "cublasDgemm 256x128x64");
  checkStatus(cublasSgemmStridedBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, 16, 16, 16, &alpha, a, 16, 256, b,
                                        16, 256, &beta, c, 16, 256, 4),
              "cublasSgemmStridedBatched 16x16x16 x4");
  checkCuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  checkStatus(cublasDestroy(handle), "cublasDestroy");
  for (void* pointer : {static_cast<void*>(a), static_cast<void*>(b), static_cast<void*>(c),
                        static_cast<void*>(da), static_cast<void*>(db), static_cast<void*>(dc)}) {
    cudaFree(pointer);
  }
  if (gFailures != 0) {
    std::printf("%d failure(s)\n", gFailures);
    return 1;
  }
  std::printf("e2e_cublas_calls: every call succeeded\n");
  return 0;
}
