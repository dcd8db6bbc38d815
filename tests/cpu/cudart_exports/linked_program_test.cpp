// A program linked against NVIDIA's libcudart.so.13 (so it records NEEDED libcudart.so.13 and
// binds each CUDA symbol to version libcudart.so.13) must run with the library under test in
// that library's place: the dynamic linker finds it through LD_LIBRARY_PATH under the name
// libcudart.so.13 (AGILEOS_CUDART_STAND_IN names that link), binds every symbol to it, and the
// unsupported calls fail closed. This is how an untrusted CUDA program meets the shim.
//
// The test is built without an RPATH, so only LD_LIBRARY_PATH decides which libcudart.so.13 loads.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <link.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>

#ifndef AGILEOS_CUDART_STAND_IN
#error "AGILEOS_CUDART_STAND_IN must name the libcudart.so.13 link to the library under test"
#endif

namespace {

std::string realPath(const char* path) {
  char resolved[PATH_MAX];
  return realpath(path, resolved) != nullptr ? std::string(resolved) : std::string();
}

TEST(LinkedProgramTest, LoadsTheLibraryUnderTestAsLibcudart) {
  void* loaded = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(loaded, nullptr) << "libcudart.so.13 is not loaded";
  link_map* map = nullptr;
  ASSERT_EQ(dlinfo(loaded, RTLD_DI_LINKMAP, &map), 0) << dlerror();
  EXPECT_EQ(realPath(map->l_name), realPath(AGILEOS_CUDART_STAND_IN)) << "loaded " << map->l_name;
  dlclose(loaded);
}

TEST(LinkedProgramTest, UnsupportedCallsFailClosed) {
  // NVIDIA's runtime would fail these differently here (no driver, no device), never with 801.
  cudaExternalSemaphoreSignalNodeParams params;
  std::memset(&params, 0x5a, sizeof params);
  EXPECT_EQ(cudaGraphExternalSemaphoresSignalNodeGetParams(nullptr, &params), cudaErrorNotSupported);
  EXPECT_EQ(reinterpret_cast<const unsigned char*>(&params)[0], 0x5a);
  size_t width = 0x1234;
  const cudaChannelFormatDesc floats{32, 0, 0, 0, cudaChannelFormatKindFloat};
  EXPECT_EQ(cudaDeviceGetTexture1DLinearMaxWidth(&width, &floats, 0), cudaErrorNotSupported);
  EXPECT_EQ(width, 0x1234u);
}

}  // namespace
