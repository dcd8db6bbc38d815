// tensor_map_premises: measures, on the GPU and natively, the hardware premises under which the
// guard could admit tensor copies beside protected state (docs/security-model.md, "Tensor maps").
// One measurement per run, named by the first argument, so that a kernel fault ends only its own
// process and context:
//
//   store          a kernel stores, through the generic address of its __grid_constant__ CUtensorMap
//                  parameter (cvta.param, the address the guard's tensor copies read their map from),
//                  the 128 bytes of another map that covers a canary buffer, then loads a tile through
//                  that address: does the copy engine read the canary?
//   store_fenced   the same, with the fences that make generic-proxy writes to a tensor map visible to
//                  the tensormap proxy (fence.proxy.tensormap::generic release, then acquire on the
//                  parameter's address): what an attacker who knows the PTX ISA would write.
//   bounds         a map's box placed half past the map's dimensions, over an allocation whose bytes
//                  past those dimensions are canaries: a load must fill zeros there (not read the
//                  canaries), a store must leave them unchanged.
//
// Prints "PREMISE <name> HOLDS: <what was seen>" or "PREMISE <name> FAILS: <what was seen>" and exits
// 0 either way (a fault of the store is one way the premise holds); exit 1 only when the measurement
// itself could not be made (no tensor-map entry point, an allocation failed).
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr int kTile = 32;  // a box of 32 x 32 floats
constexpr float kData = 1.0f, kCanary = 7.0f, kStored = 5.0f;

#define REQUIRE(call)                                                                          \
  do {                                                                                         \
    const cudaError_t require_status_ = (call);                                                \
    if (require_status_ != cudaSuccess) {                                                      \
      std::printf("MEASUREMENT FAILED: %s -> %s\n", #call, cudaGetErrorName(require_status_)); \
      return 1;                                                                                \
    }                                                                                          \
  } while (0)

__device__ void loadTile(const CUtensorMap* map, float (*tile)[kTile], std::uint64_t* mbar, int x, int y) {
  const unsigned barAddr = static_cast<unsigned>(__cvta_generic_to_shared(mbar));
  const unsigned tileAddr = static_cast<unsigned>(__cvta_generic_to_shared(tile));
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(barAddr));
    asm volatile("fence.proxy.async.shared::cta;");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(barAddr),
                 "r"(static_cast<unsigned>(kTile * kTile * sizeof(float))));
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
        "[%4];" ::"r"(tileAddr),
        "l"(map), "r"(x), "r"(y), "r"(barAddr)
        : "memory");
  }
  __syncthreads();
  asm volatile(
      "{\n .reg .pred done;\n wait: mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n @!done bra "
      "wait;\n}" ::"r"(barAddr)
      : "memory");
}

// seen[0]: the generic address of `map`; seen[1]: its first 8 bytes read back through that address
// after the store; seen[2]: the forged map's first 8 bytes.
__global__ void storeThenLoad(const __grid_constant__ CUtensorMap map,
                              const __grid_constant__ CUtensorMap forged, float* out,
                              unsigned long long* seen, int fenced) {
  __shared__ alignas(128) float tile[kTile][kTile];
  __shared__ alignas(8) std::uint64_t mbar;
  if (threadIdx.x == 0) {
    const unsigned long long target = reinterpret_cast<unsigned long long>(&map);
    const unsigned long long* source = reinterpret_cast<const unsigned long long*>(&forged);
    seen[0] = target;
    seen[2] = source[0];
    for (int i = 0; i < 16; ++i)
      asm volatile("st.u64 [%0], %1;" ::"l"(target + 8 * i), "l"(source[i]) : "memory");
    if (fenced) {
      asm volatile("fence.proxy.tensormap::generic.release.gpu;" ::: "memory");
      asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" ::"l"(target) : "memory");
    }
    unsigned long long back = 0;
    asm volatile("ld.volatile.u64 %0, [%1];" : "=l"(back) : "l"(target) : "memory");
    seen[1] = back;
  }
  __syncthreads();
  loadTile(&map, tile, &mbar, 0, 0);
  for (int i = threadIdx.x; i < kTile * kTile; i += blockDim.x) out[i] = tile[i / kTile][i % kTile];
}

__global__ void loadAt(const __grid_constant__ CUtensorMap map, float* out, int x, int y) {
  __shared__ alignas(128) float tile[kTile][kTile];
  __shared__ alignas(8) std::uint64_t mbar;
  loadTile(&map, tile, &mbar, x, y);
  for (int i = threadIdx.x; i < kTile * kTile; i += blockDim.x) out[i] = tile[i / kTile][i % kTile];
}

__global__ void storeAt(const __grid_constant__ CUtensorMap map, int x, int y) {
  __shared__ alignas(128) float tile[kTile][kTile];
  for (int i = threadIdx.x; i < kTile * kTile; i += blockDim.x) tile[i / kTile][i % kTile] = kStored;
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned tileAddr = static_cast<unsigned>(__cvta_generic_to_shared(tile));
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];" ::"l"(&map),
                 "r"(x), "r"(y), "r"(tileAddr)
                 : "memory");
    asm volatile("cp.async.bulk.commit_group;");
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  }
}

PFN_cuTensorMapEncodeTiled_v12000 encodeTiled = nullptr;

bool loadEncoder() {
  cudaDriverEntryPointQueryResult found{};
  void* function = nullptr;
  if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &function, 12000, cudaEnableDefault,
                                       &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess || function == nullptr) {
    return false;
  }
  encodeTiled = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(function);
  return true;
}

// A map of `width` x `height` floats at `base`, rows `pitchFloats` apart, 32 x 32 boxes.
bool tiledMap(float* base, int width, int height, int pitchFloats, CUtensorMap* map) {
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(width), static_cast<cuuint64_t>(height)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(pitchFloats) * sizeof(float)};
  const cuuint32_t box[2] = {kTile, kTile};
  const cuuint32_t elementStrides[2] = {1, 1};
  const CUresult result =
      encodeTiled(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, base, dims, strides, box, elementStrides,
                  CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (result != CUDA_SUCCESS) std::printf("MEASUREMENT FAILED: cuTensorMapEncodeTiled -> %d\n", int(result));
  return result == CUDA_SUCCESS;
}

int countOf(const std::vector<float>& values, float value) {
  int n = 0;
  for (float v : values) n += v == value;
  return n;
}

int measureStore(const char* name, bool fenced) {
  const std::size_t bytes = kTile * kTile * sizeof(float);
  float *data = nullptr, *canary = nullptr, *out = nullptr;
  unsigned long long* seen = nullptr;
  REQUIRE(cudaMalloc(&data, bytes));
  REQUIRE(cudaMalloc(&canary, bytes));
  REQUIRE(cudaMalloc(&out, bytes));
  REQUIRE(cudaMalloc(&seen, 3 * sizeof(unsigned long long)));
  std::vector<float> host(kTile * kTile, kData);
  REQUIRE(cudaMemcpy(data, host.data(), bytes, cudaMemcpyHostToDevice));
  host.assign(kTile * kTile, kCanary);
  REQUIRE(cudaMemcpy(canary, host.data(), bytes, cudaMemcpyHostToDevice));
  REQUIRE(cudaMemset(out, 0, bytes));
  REQUIRE(cudaMemset(seen, 0, 3 * sizeof(unsigned long long)));
  CUtensorMap map{}, forged{};
  if (!tiledMap(data, kTile, kTile, kTile, &map) || !tiledMap(canary, kTile, kTile, kTile, &forged)) return 1;
  storeThenLoad<<<1, 128>>>(map, forged, out, seen, fenced ? 1 : 0);
  const cudaError_t launched = cudaGetLastError();
  const cudaError_t finished = cudaDeviceSynchronize();
  if (launched != cudaSuccess || finished != cudaSuccess) {
    std::printf("PREMISE %s HOLDS: the kernel that stores to its map parameter fails (launch %s, run %s)\n",
                name, cudaGetErrorName(launched), cudaGetErrorName(finished));
    return 0;
  }
  std::vector<float> got(kTile * kTile);
  unsigned long long observed[3] = {};
  REQUIRE(cudaMemcpy(got.data(), out, bytes, cudaMemcpyDeviceToHost));
  REQUIRE(cudaMemcpy(observed, seen, sizeof observed, cudaMemcpyDeviceToHost));
  const int fromData = countOf(got, kData), fromCanary = countOf(got, kCanary);
  const bool storeVisible = observed[1] == observed[2];
  std::printf(
      "PREMISE %s %s: the store ran without a fault; the parameter's generic address is 0x%llx; a load back "
      "through it sees %s; the tensor copy read %d of %d elements from the map's own buffer and %d from the "
      "forged map's canary\n",
      name, fromCanary == 0 && fromData == kTile * kTile ? "HOLDS" : "FAILS", observed[0],
      storeVisible ? "the stored bytes" : "the original bytes", fromData, kTile * kTile, fromCanary);
  return 0;
}

// A 32 x 32 map over the corner of a 64 x 48 allocation whose other elements are canaries; boxes at
// (16, 16) reach 16 columns and 16 rows past the map.
int measureBounds() {
  constexpr int kPitch = 64, kRows = 48;
  const std::size_t bytes = static_cast<std::size_t>(kPitch) * kRows * sizeof(float);
  std::vector<float> host(static_cast<std::size_t>(kPitch) * kRows, kCanary);
  for (int y = 0; y < kTile; ++y)
    for (int x = 0; x < kTile; ++x) host[y * kPitch + x] = kData;
  float *matrix = nullptr, *out = nullptr;
  REQUIRE(cudaMalloc(&matrix, bytes));
  REQUIRE(cudaMalloc(&out, kTile * kTile * sizeof(float)));
  REQUIRE(cudaMemcpy(matrix, host.data(), bytes, cudaMemcpyHostToDevice));
  CUtensorMap map{};
  if (!tiledMap(matrix, kTile, kTile, kPitch, &map)) return 1;
  loadAt<<<1, 128>>>(map, out, 16, 16);
  REQUIRE(cudaGetLastError());
  REQUIRE(cudaDeviceSynchronize());
  std::vector<float> tile(kTile * kTile);
  REQUIRE(cudaMemcpy(tile.data(), out, tile.size() * sizeof(float), cudaMemcpyDeviceToHost));
  int inside = 0, zeros = 0, canaries = 0;
  for (int i = 0; i < kTile; ++i)
    for (int j = 0; j < kTile; ++j) {
      const bool in = 16 + i < kTile && 16 + j < kTile;
      const float v = tile[i * kTile + j];
      if (in)
        inside += v == kData;
      else
        zeros += v == 0.0f;
      canaries += v == kCanary;
    }
  std::printf(
      "PREMISE bounds_load %s: of a box half past the map, %d of 256 inside elements read the data, "
      "%d of 768 outside elements read zero, %d read a canary\n",
      inside == 256 && zeros == 768 && canaries == 0 ? "HOLDS" : "FAILS", inside, zeros, canaries);

  storeAt<<<1, 128>>>(map, 16, 16);
  REQUIRE(cudaGetLastError());
  REQUIRE(cudaDeviceSynchronize());
  std::vector<float> after(host.size());
  REQUIRE(cudaMemcpy(after.data(), matrix, bytes, cudaMemcpyDeviceToHost));
  int stored = 0, canariesKept = 0, canaryCount = 0;
  for (int y = 0; y < kRows; ++y)
    for (int x = 0; x < kPitch; ++x) {
      const float v = after[y * kPitch + x];
      if (x < kTile && y < kTile) {
        stored += (x >= 16 && y >= 16) ? v == kStored : 0;
      } else {
        ++canaryCount;
        canariesKept += v == kCanary;
      }
    }
  std::printf(
      "PREMISE bounds_store %s: a box stored half past the map wrote %d of 256 inside elements and "
      "left %d of %d canaries outside the map unchanged\n",
      stored == 256 && canariesKept == canaryCount ? "HOLDS" : "FAILS", stored, canariesKept, canaryCount);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string which = argc > 1 ? argv[1] : "";
  if (which != "store" && which != "store_fenced" && which != "bounds") {
    std::fprintf(stderr, "usage: %s store|store_fenced|bounds\n", argv[0]);
    return 2;
  }
  if (!loadEncoder()) {
    std::printf("MEASUREMENT FAILED: cuTensorMapEncodeTiled not found\n");
    return 1;
  }
  if (which == "bounds") return measureBounds();
  return measureStore(which.c_str(), which == "store_fenced");
}
