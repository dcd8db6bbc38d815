// Helpers shared by the GPU test programs.
//
// Contract of every program in this folder (run_suite.sh relies on it):
// - stdout carries only deterministic results (values, checksums, error NAMES),
//   so a native run and an AgileOS run of the same program must print the same
//   bytes; anything that depends on timing or addresses goes to stderr.
// - the exit status is 0 only if every self-check passed; a failed check prints
//   "FAIL ..." on stdout (so it shows up in the diff) and the detail on stderr.
// - only the CUDA runtime calls listed in tests/gpu/supported_api.txt are used
//   (checked by the ctest gpu_programs_use_supported_api).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

// Aborts the program when a CUDA call does not return cudaSuccess.
#define CHECK_CUDA(call)                                                                          \
  do {                                                                                            \
    const cudaError_t check_cuda_status_ = (call);                                                \
    if (check_cuda_status_ != cudaSuccess) {                                                      \
      std::printf("FAIL %s -> %s\n", #call, cudaGetErrorName(check_cuda_status_));                \
      std::fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, #call,              \
                   cudaGetErrorName(check_cuda_status_), cudaGetErrorString(check_cuda_status_)); \
      std::fflush(stdout);                                                                        \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)

// Aborts the program when `cond` is false; the remaining arguments are a printf
// format and its values describing the failed check.
#define EXPECT_TRUE(cond, ...)                                           \
  do {                                                                   \
    if (!(cond)) {                                                       \
      std::printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);        \
      std::fprintf(stderr, "%s:%d: check failed: ", __FILE__, __LINE__); \
      std::fprintf(stderr, __VA_ARGS__);                                 \
      std::fprintf(stderr, "\n");                                        \
      std::fflush(stdout);                                               \
      std::exit(1);                                                      \
    }                                                                    \
  } while (0)

// Checks that `call` returns exactly `expected` and prints "<label>: <error name>".
// The printed line is what the native and AgileOS runs are compared on.
#define EXPECT_ERROR(label, call, expected)                                            \
  do {                                                                                 \
    const cudaError_t expect_error_got_ = (call);                                      \
    std::printf("%s: %s\n", (label), cudaGetErrorName(expect_error_got_));             \
    EXPECT_TRUE(expect_error_got_ == (expected), "%s returned %s, expected %s", #call, \
                cudaGetErrorName(expect_error_got_), cudaGetErrorName(expected));      \
  } while (0)

// FNV-1a over raw bytes: a cheap, order-sensitive checksum for printing.
inline std::uint64_t fnv1a64(const void* data, std::size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (std::size_t i = 0; i < size; ++i) {
    hash ^= bytes[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

// Deterministic pseudo-random 32-bit value for index i (a stateless hash, so any
// thread on either side can compute the expected value of any element).
__host__ __device__ inline std::uint32_t mix32(std::uint32_t i) {
  i ^= i >> 16;
  i *= 0x7feb352du;
  i ^= i >> 15;
  i *= 0x846ca68bu;
  i ^= i >> 16;
  return i;
}
