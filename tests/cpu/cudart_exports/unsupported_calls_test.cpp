// Loads a library that stands in for libcudart.so.13 (the AgileOS shim, or the scratch probe
// built from the generated stubs) and resolves entry points the way a CUDA program's dynamic
// linker does, by name and version libcudart.so.13. Unsupported entry points must fail closed:
// return cudaErrorNotSupported (801) and leave their output arguments untouched.
//
// Built once per library: AGILEOS_CUDART_UNDER_TEST is its path. When the library has the real
// error state (the shim, AGILEOS_CUDART_UNDER_TEST_HAS_ERROR_STATE=1), the failure must also
// be the thread's last error, as cudart reports it.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>

#ifndef AGILEOS_CUDART_UNDER_TEST
#error "AGILEOS_CUDART_UNDER_TEST must name the library under test"
#endif
#ifndef AGILEOS_CUDART_UNDER_TEST_HAS_ERROR_STATE
#define AGILEOS_CUDART_UNDER_TEST_HAS_ERROR_STATE 0
#endif

namespace {

constexpr char kVersionNode[] = "libcudart.so.13";

class UnsupportedCallsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { library_ = dlopen(AGILEOS_CUDART_UNDER_TEST, RTLD_NOW | RTLD_LOCAL); }

  void SetUp() override { ASSERT_NE(library_, nullptr) << "dlopen(" << AGILEOS_CUDART_UNDER_TEST << ")"; }

  // The entry point `name`@libcudart.so.13 with the function type F, or nullptr.
  template <typename F>
  static F* entryPoint(const char* name) {
    return reinterpret_cast<F*>(dlvsym(library_, name, kVersionNode));
  }

  // After a failing call, the shim's cudaGetLastError must return the failure once, then clear.
  static void expectLastErrorIsNotSupported() {
    if (!AGILEOS_CUDART_UNDER_TEST_HAS_ERROR_STATE) return;
    auto* getLastError = entryPoint<decltype(cudaGetLastError)>("cudaGetLastError");
    ASSERT_NE(getLastError, nullptr);
    EXPECT_EQ(getLastError(), cudaErrorNotSupported);
    EXPECT_EQ(getLastError(), cudaSuccess);
  }

  static inline void* library_ = nullptr;
};

TEST_F(UnsupportedCallsTest, ExternalSemaphoreNodeParamsFailClosed) {
  auto* getParams = entryPoint<decltype(cudaGraphExternalSemaphoresSignalNodeGetParams)>(
      "cudaGraphExternalSemaphoresSignalNodeGetParams");
  ASSERT_NE(getParams, nullptr) << dlerror();
  cudaExternalSemaphoreSignalNodeParams params;
  std::memset(&params, 0x5a, sizeof params);
  EXPECT_EQ(getParams(nullptr, &params), cudaErrorNotSupported);
  EXPECT_EQ(static_cast<int>(cudaErrorNotSupported), 801);
  EXPECT_EQ(reinterpret_cast<const unsigned char*>(&params)[sizeof params - 1], 0x5a) << "nothing written";
  expectLastErrorIsNotSupported();
}

TEST_F(UnsupportedCallsTest, UnforwardedDeviceQueryFailsClosed) {
  auto* maxWidth =
      entryPoint<decltype(cudaDeviceGetTexture1DLinearMaxWidth)>("cudaDeviceGetTexture1DLinearMaxWidth");
  ASSERT_NE(maxWidth, nullptr) << dlerror();
  size_t width = 0x1234;
  const cudaChannelFormatDesc floats{32, 0, 0, 0, cudaChannelFormatKindFloat};
  EXPECT_EQ(maxWidth(&width, &floats, 0), cudaErrorNotSupported);
  EXPECT_EQ(width, 0x1234u);
  expectLastErrorIsNotSupported();
}

// A per-thread-default-stream variant is its own exported function, reached by programs built
// with --default-stream per-thread, and must fail closed like its base function.
TEST_F(UnsupportedCallsTest, PerThreadStreamVariantFailsClosed) {
  auto* prefetchBatch = entryPoint<decltype(cudaMemPrefetchBatchAsync)>("cudaMemPrefetchBatchAsync_ptsz");
  ASSERT_NE(prefetchBatch, nullptr) << dlerror();
  EXPECT_EQ(prefetchBatch(nullptr, nullptr, 0, nullptr, nullptr, 0, 0, nullptr), cudaErrorNotSupported);
  expectLastErrorIsNotSupported();
}

// The version node is real: a program linked against another runtime version does not bind.
TEST_F(UnsupportedCallsTest, EntryPointsCarryOnlyTheLibcudart13Version) {
  EXPECT_NE(dlvsym(library_, "cudaGraphExternalSemaphoresSignalNodeGetParams", kVersionNode), nullptr);
  EXPECT_EQ(dlvsym(library_, "cudaGraphExternalSemaphoresSignalNodeGetParams", "libcudart.so.12"), nullptr);
}

}  // namespace
