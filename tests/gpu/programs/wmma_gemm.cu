// Tensor-core GEMMs through the wmma API, as the cudaTensorCoreGemm family of samples writes them
// (issue 17: the kernel memory guard checks every wmma load and store from global memory over the
// fragment's whole span, so guarded modules keep their tensor cores). One warp per output tile;
// every fragment is loaded with a run-time leading dimension (a stride register) and the result
// tile is stored with one, in five element types: f16 and bf16 (m16n16k16, f32 accumulate), tf32
// (m16n16k8), f64 (m8n8k4) and s8 (m16n16k16, s32 accumulate). Matrices are padded (leading
// dimension > width) so a wrong stride shows. Each result is compared with a CPU GEMM of the same
// inputs, and its checksum printed (the GPU's rounding is the same natively and through AgileOS).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "check.cuh"

using namespace nvcuda;

namespace {

constexpr int kM = 64, kN = 48, kK = 64;  // multiples of every tile shape below
constexpr int kPad = 8;                   // leading dimension = width + kPad

// C[M x N] (row major, ldc) = A[M x K] (row major, lda) * B[K x N] (column major, ldb).
template <typename In, typename Acc, int TM, int TN, int TK, typename FragIn = In>
__global__ void gemm(const In* a, const In* b, Acc* c, unsigned lda, unsigned ldb, unsigned ldc, int k) {
  const int tileRow = blockIdx.y * TM, tileCol = blockIdx.x * TN;
  wmma::fragment<wmma::matrix_a, TM, TN, TK, FragIn, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, TM, TN, TK, FragIn, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, TM, TN, TK, Acc> acc;
  wmma::fill_fragment(acc, Acc(0));
  for (int step = 0; step < k; step += TK) {
    wmma::load_matrix_sync(fa, a + tileRow * lda + step, lda);
    wmma::load_matrix_sync(fb, b + tileCol * ldb + step, ldb);
    if constexpr (std::is_same_v<FragIn, wmma::precision::tf32>) {
      for (int i = 0; i < fa.num_elements; ++i) fa.x[i] = wmma::__float_to_tf32(fa.x[i]);
      for (int i = 0; i < fb.num_elements; ++i) fb.x[i] = wmma::__float_to_tf32(fb.x[i]);
    }
    wmma::mma_sync(acc, fa, fb, acc);
  }
  wmma::store_matrix_sync(c + tileRow * ldc + tileCol, acc, ldc, wmma::mem_row_major);
}

std::uint32_t lcg(std::uint32_t& state) {
  state = state * 1664525u + 1013904223u;
  return state >> 8;
}

template <typename T>
T fromSmallInt(int v) {
  if constexpr (std::is_same_v<T, __half>) return __float2half(static_cast<float>(v));
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16(static_cast<float>(v));
  return static_cast<T>(v);
}

// Inputs are small integers (exact in every type), so the GEMM is exact in f32, f64 and s32
// accumulators alike and the CPU reference is exact too; tf32 keeps 10 mantissa bits, which hold
// integers up to 2048 exactly.
template <typename In, typename Acc, int TM, int TN, int TK, typename FragIn = In>
bool run(const char* name, std::uint32_t seed) {
  const int lda = kK + kPad, ldb = kK + kPad, ldc = kN + kPad;
  std::vector<In> a(static_cast<size_t>(kM) * lda), b(static_cast<size_t>(kN) * ldb);
  std::vector<double> av(a.size()), bv(b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const int v = static_cast<int>(lcg(seed) % 7) - 3;
    a[i] = fromSmallInt<In>(v);
    av[i] = v;
  }
  for (size_t i = 0; i < b.size(); ++i) {
    const int v = static_cast<int>(lcg(seed) % 7) - 3;
    b[i] = fromSmallInt<In>(v);
    bv[i] = v;
  }
  In *da = nullptr, *db = nullptr;
  Acc* dc = nullptr;
  const size_t cElems = static_cast<size_t>(kM) * ldc;
  CHECK_CUDA(cudaMalloc(&da, a.size() * sizeof(In)));
  CHECK_CUDA(cudaMalloc(&db, b.size() * sizeof(In)));
  CHECK_CUDA(cudaMalloc(&dc, cElems * sizeof(Acc)));
  CHECK_CUDA(cudaMemcpy(da, a.data(), a.size() * sizeof(In), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(db, b.data(), b.size() * sizeof(In), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemset(dc, 0x7F, cElems * sizeof(Acc)));  // the padding must stay as it is
  const dim3 grid(kN / TN, kM / TM);
  gemm<In, Acc, TM, TN, TK, FragIn><<<grid, 32>>>(da, db, dc, lda, ldb, ldc, kK);
  CHECK_CUDA(cudaGetLastError());
  std::vector<Acc> c(cElems);
  CHECK_CUDA(cudaMemcpy(c.data(), dc, cElems * sizeof(Acc), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaFree(da));
  CHECK_CUDA(cudaFree(db));
  CHECK_CUDA(cudaFree(dc));

  double checksum = 0, worst = 0;
  bool paddingIntact = true;
  const std::vector<Acc> untouched = [] {
    std::vector<Acc> one(1);
    std::memset(one.data(), 0x7F, sizeof(Acc));
    return one;
  }();
  for (int i = 0; i < kM; ++i) {
    for (int j = 0; j < ldc; ++j) {
      const Acc got = c[static_cast<size_t>(i) * ldc + j];
      if (j >= kN) {
        paddingIntact &= std::memcmp(&got, untouched.data(), sizeof(Acc)) == 0;
        continue;
      }
      double want = 0;
      for (int p = 0; p < kK; ++p)
        want += av[static_cast<size_t>(i) * lda + p] * bv[static_cast<size_t>(j) * ldb + p];
      const double value = static_cast<double>(got);
      worst = std::fmax(worst, std::fabs(value - want));
      checksum += value * ((i * 31 + j) % 17);
    }
  }
  const bool ok = worst == 0 && paddingIntact;
  std::printf("%s: %dx%dx%d checksum %.1f, exact against the CPU: %s, padding intact: %s\n", name, kM, kN, kK,
              checksum, worst == 0 ? "yes" : "no", paddingIntact ? "yes" : "no");
  if (!ok) std::fprintf(stderr, "%s: largest difference %g\n", name, worst);
  return ok;
}

}  // namespace

int main() {
  bool ok = true;
  ok &= run<__half, float, 16, 16, 16>("f16 m16n16k16", 1);
  ok &= run<__nv_bfloat16, float, 16, 16, 16>("bf16 m16n16k16", 2);
  ok &= run<float, float, 16, 16, 8, wmma::precision::tf32>("tf32 m16n16k8", 3);
  ok &= run<double, double, 8, 8, 4>("f64 m8n8k4", 4);
  ok &= run<signed char, int, 16, 16, 16>("s8 m16n16k16", 5);
  if (!ok) {
    std::printf("FAIL wmma_gemm\n");
    return 1;
  }
  std::printf("wmma_gemm: done\n");
  return 0;
}
