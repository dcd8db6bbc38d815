// The real cuRAND, cuSPARSE, cuSOLVER and cuDNN in a client, on the fake GPU (CPU end-to-end
// test), as e2e_cublas_calls.cu does for cuBLAS: each library's runtime reaches the GPU through
// the driver shim alone, and every status on the way to real work (a generator's numbers, a
// sparse matrix-vector product, a Cholesky factorization, a convolution) must be success. The fake
// records the kernels and never runs them: the numbers are the H200 suite's to compare.
#include <cuda_runtime.h>
#include <cudnn.h>
#include <curand.h>
#include <cusolverDn.h>
#include <cusparse.h>

#include <cstdio>

namespace {

int gFailures = 0;

template <typename Status>
void check(Status status, Status success, const char* what) {
  const bool ok = status == success;
  std::printf("%s %s (status %d)\n", ok ? "PASS" : "FAIL", what, static_cast<int>(status));
  if (!ok) ++gFailures;
}

template <typename T>
T* deviceArray(std::size_t count) {
  T* p = nullptr;
  check(cudaMalloc(&p, sizeof(T) * count + 16), cudaSuccess, "cudaMalloc");
  return p;
}

void randomNumbers(float* out) {
  curandGenerator_t generator = nullptr;
  check(curandCreateGenerator(&generator, CURAND_RNG_PSEUDO_PHILOX4_32_10), CURAND_STATUS_SUCCESS,
        "curandCreateGenerator");
  check(curandSetPseudoRandomGeneratorSeed(generator, 1234), CURAND_STATUS_SUCCESS,
        "curandSetPseudoRandomGeneratorSeed");
  check(curandGenerateUniform(generator, out, 4096), CURAND_STATUS_SUCCESS, "curandGenerateUniform");
  check(curandGenerateNormal(generator, out, 4096, 0.0f, 1.0f), CURAND_STATUS_SUCCESS,
        "curandGenerateNormal");
  check(curandDestroyGenerator(generator), CURAND_STATUS_SUCCESS, "curandDestroyGenerator");
}

void sparseProduct() {
  cusparseHandle_t handle = nullptr;
  check(cusparseCreate(&handle), CUSPARSE_STATUS_SUCCESS, "cusparseCreate");
  const int rowOffsets[5] = {0, 1, 2, 3, 4}, columns[4] = {0, 1, 2, 3};
  const float values[4] = {1, 2, 3, 4};
  int* dRows = deviceArray<int>(5);
  int* dColumns = deviceArray<int>(4);
  float *dValues = deviceArray<float>(4), *x = deviceArray<float>(4), *y = deviceArray<float>(4);
  cudaMemcpy(dRows, rowOffsets, sizeof rowOffsets, cudaMemcpyHostToDevice);
  cudaMemcpy(dColumns, columns, sizeof columns, cudaMemcpyHostToDevice);
  cudaMemcpy(dValues, values, sizeof values, cudaMemcpyHostToDevice);
  cusparseSpMatDescr_t matrix = nullptr;
  cusparseDnVecDescr_t vx = nullptr, vy = nullptr;
  check(cusparseCreateCsr(&matrix, 4, 4, 4, dRows, dColumns, dValues, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                          CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F),
        CUSPARSE_STATUS_SUCCESS, "cusparseCreateCsr");
  check(cusparseCreateDnVec(&vx, 4, x, CUDA_R_32F), CUSPARSE_STATUS_SUCCESS, "cusparseCreateDnVec x");
  check(cusparseCreateDnVec(&vy, 4, y, CUDA_R_32F), CUSPARSE_STATUS_SUCCESS, "cusparseCreateDnVec y");
  const float alpha = 1, beta = 0;
  size_t workspace = 0;
  check(cusparseSpMV_bufferSize(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, matrix, vx, &beta, vy,
                                CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, &workspace),
        CUSPARSE_STATUS_SUCCESS, "cusparseSpMV_bufferSize");
  char* buffer = deviceArray<char>(workspace);
  check(cusparseSpMV(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, matrix, vx, &beta, vy, CUDA_R_32F,
                     CUSPARSE_SPMV_ALG_DEFAULT, buffer),
        CUSPARSE_STATUS_SUCCESS, "cusparseSpMV");
  cusparseDestroySpMat(matrix);
  cusparseDestroyDnVec(vx);
  cusparseDestroyDnVec(vy);
  check(cusparseDestroy(handle), CUSPARSE_STATUS_SUCCESS, "cusparseDestroy");
}

void choleskyFactorization(float* matrix) {
  cusolverDnHandle_t handle = nullptr;
  check(cusolverDnCreate(&handle), CUSOLVER_STATUS_SUCCESS, "cusolverDnCreate");
  int work = 0;
  check(cusolverDnSpotrf_bufferSize(handle, CUBLAS_FILL_MODE_LOWER, 64, matrix, 64, &work),
        CUSOLVER_STATUS_SUCCESS, "cusolverDnSpotrf_bufferSize");
  float* workspace = deviceArray<float>(static_cast<std::size_t>(work) + 1);
  int* info = deviceArray<int>(1);
  check(cusolverDnSpotrf(handle, CUBLAS_FILL_MODE_LOWER, 64, matrix, 64, workspace, work, info),
        CUSOLVER_STATUS_SUCCESS, "cusolverDnSpotrf");
  check(cusolverDnDestroy(handle), CUSOLVER_STATUS_SUCCESS, "cusolverDnDestroy");
}

void convolution() {
  cudnnHandle_t handle = nullptr;
  check(cudnnCreate(&handle), CUDNN_STATUS_SUCCESS,
        "cudnnCreate (maps page-locked host memory for the device)");
  cudnnTensorDescriptor_t input = nullptr, output = nullptr;
  cudnnFilterDescriptor_t filter = nullptr;
  cudnnConvolutionDescriptor_t descriptor = nullptr;
  cudnnCreateTensorDescriptor(&input);
  cudnnCreateTensorDescriptor(&output);
  cudnnCreateFilterDescriptor(&filter);
  cudnnCreateConvolutionDescriptor(&descriptor);
  check(cudnnSetTensor4dDescriptor(input, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 3, 16, 16),
        CUDNN_STATUS_SUCCESS, "cudnnSetTensor4dDescriptor input");
  check(cudnnSetFilter4dDescriptor(filter, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 8, 3, 3, 3),
        CUDNN_STATUS_SUCCESS, "cudnnSetFilter4dDescriptor");
  check(cudnnSetConvolution2dDescriptor(descriptor, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                        CUDNN_DATA_FLOAT),
        CUDNN_STATUS_SUCCESS, "cudnnSetConvolution2dDescriptor");
  check(cudnnSetTensor4dDescriptor(output, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 8, 16, 16),
        CUDNN_STATUS_SUCCESS, "cudnnSetTensor4dDescriptor output");
  float *x = deviceArray<float>(3 * 16 * 16), *w = deviceArray<float>(8 * 3 * 9),
        *y = deviceArray<float>(8 * 16 * 16);
  size_t workspace = 0;
  check(cudnnGetConvolutionForwardWorkspaceSize(handle, input, filter, descriptor, output,
                                                CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, &workspace),
        CUDNN_STATUS_SUCCESS, "cudnnGetConvolutionForwardWorkspaceSize");
  char* buffer = deviceArray<char>(workspace);
  const float alpha = 1, beta = 0;
  check(
      cudnnConvolutionForward(handle, &alpha, input, x, filter, w, descriptor,
                              CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, buffer, workspace, &beta, output, y),
      CUDNN_STATUS_SUCCESS, "cudnnConvolutionForward");
  cudnnDestroyTensorDescriptor(input);
  cudnnDestroyTensorDescriptor(output);
  cudnnDestroyFilterDescriptor(filter);
  cudnnDestroyConvolutionDescriptor(descriptor);
  check(cudnnDestroy(handle), CUDNN_STATUS_SUCCESS, "cudnnDestroy");
}

}  // namespace

int main() {
  float* data = deviceArray<float>(64 * 64);
  randomNumbers(data);
  sparseProduct();
  choleskyFactorization(data);
  convolution();
  check(cudaDeviceSynchronize(), cudaSuccess, "cudaDeviceSynchronize");
  if (gFailures != 0) {
    std::printf("%d failure(s)\n", gFailures);
    return 1;
  }
  std::printf("e2e_math_library_calls: every call succeeded\n");
  return 0;
}
