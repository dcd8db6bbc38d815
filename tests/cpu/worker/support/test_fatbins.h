// The fatbins nvcc builds from inputs/worker_kernels.cu when the tests are built
// (only the compiler runs; no GPU is needed), and the symbols they contain.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace agileos::worker::testing {

enum class TestFatbin {
  kDefaultArch,          // nvcc's default: sm_75 SASS + compute_75 PTX
  kSm90,                 // -arch=sm_90: sm_90 SASS + compute_90 PTX
  kCompute100PtxOnly,    // compute_100 PTX only: newer than the fake's sm_90
  kSm90SassOnly,         // sm_90 SASS and no PTX: what the memory guard cannot rewrite
  kManagedSm90,          // inputs/managed_kernels.cu, -arch=sm_90
  kManagedSassOnly,      // inputs/managed_kernels.cu, sm_90 SASS only
  kConditionalSm90,      // inputs/conditional_kernels.cu, -arch=sm_90
  kConditionalSassOnly,  // inputs/conditional_kernels.cu, sm_90 SASS only
  // Relocatable objects (-rdc=true) with relocatable sm_90 SASS and compute_90 PTX, of
  // inputs/worker_kernels.cu, managed_kernels.cu and conditional_kernels.cu; and one of
  // worker_kernels.cu with relocatable SASS only.
  kSm90RdcObject,
  kManagedRdcObject,
  kConditionalRdcObject,
  kSm90RdcSassObject,
  kSystemAtomicsSm90,       // inputs/system_atomics_kernels.cu, -arch=sm_90
  kSystemAtomicsSassOnly,   // inputs/system_atomics_kernels.cu, sm_90 SASS only
  kSystemAtomicsRdcObject,  // inputs/system_atomics_kernels.cu, -rdc=true (SASS and PTX)
};

// The file's bytes; aborts with a message if it is missing (a build problem).
std::string readTestFatbin(TestFatbin which);

inline constexpr char kAddKernel[] = "agileos_worker_add";  // (int*, const int*, int, unsigned)
inline constexpr char kPairKernel[] =
    "agileos_worker_pair";  // (Pair{double,int}, char, short, double, float*)
inline constexpr char kEmptyKernel[] = "agileos_worker_empty";
inline constexpr char kCounterVariable[] = "agileos_counter";            // int
inline constexpr char kTableVariable[] = "agileos_table";                // float[16]
inline constexpr char kCoefficientsVariable[] = "agileos_coefficients";  // __constant__ unsigned long long[4]

inline const std::vector<std::string> kAllKernels = {kAddKernel, kPairKernel, kEmptyKernel};
inline const std::vector<std::string> kAllVariables = {kCounterVariable, kTableVariable,
                                                       kCoefficientsVariable};

// Parameter layouts as the driver reports them (alignment of each parameter).
struct ExpectedParam {
  std::uint32_t offset;
  std::uint32_t size;
};
inline const std::vector<ExpectedParam> kAddKernelParams = {{0, 8}, {8, 8}, {16, 4}, {20, 4}};
inline constexpr std::uint32_t kAddKernelParamBytes = 24;
inline const std::vector<ExpectedParam> kPairKernelParams = {{0, 16}, {16, 1}, {18, 2}, {24, 8}, {32, 8}};
inline constexpr std::uint32_t kPairKernelParamBytes = 40;

}  // namespace agileos::worker::testing
