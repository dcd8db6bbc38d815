// Host-side helpers shared by the programs that check a CUDA math library against a CPU
// reference (cublas_gemm, math_libraries): a fixed LCG for inputs, copies to and from the
// device, and a comparison that prints only what a native and an AgileOS run print alike
// (the check's name and a sum to 4 significant digits).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "check.cuh"

namespace host_math {

// The same sequence on every run: inputs must be identical natively and under AgileOS.
inline double nextValue() {
  static std::uint32_t seed = 12345;
  seed = seed * 1664525u + 1013904223u;
  return static_cast<double>(seed >> 8) / static_cast<double>(1u << 24) - 0.5;
}

template <typename T>
std::vector<T> randomVector(std::size_t count) {
  std::vector<T> values(count);
  for (T& v : values) v = static_cast<T>(nextValue());
  return values;
}

// Fails the program unless every element of `got` is within `tolerance` of `want`, relative to
// the largest magnitude in `want`; then prints "<name> ok sum=<4 digits>".
template <typename T>
void compare(const char* name, const std::vector<T>& got, const std::vector<double>& want, double tolerance) {
  EXPECT_TRUE(got.size() == want.size(), "%s: %zu results, %zu expected\n", name, got.size(), want.size());
  double worst = 0, sum = 0, scale = 1e-30;
  for (double w : want) scale = std::fmax(scale, std::fabs(w));
  for (std::size_t i = 0; i < got.size(); ++i) {
    worst = std::fmax(worst, std::fabs(static_cast<double>(got[i]) - want[i]) / scale);
    sum += static_cast<double>(got[i]);
  }
  EXPECT_TRUE(worst <= tolerance, "%s: relative error %g > %g\n", name, worst, tolerance);
  std::printf("%s ok sum=%.4g\n", name, sum);
}

template <typename T>
T* toDevice(const std::vector<T>& host) {
  T* device = nullptr;
  CHECK_CUDA(cudaMalloc(&device, host.size() * sizeof(T)));
  CHECK_CUDA(cudaMemcpy(device, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  return device;
}

template <typename T>
std::vector<T> toHost(const T* device, std::size_t count) {
  std::vector<T> host(count);
  CHECK_CUDA(cudaMemcpy(host.data(), device, count * sizeof(T), cudaMemcpyDeviceToHost));
  return host;
}

}  // namespace host_math
