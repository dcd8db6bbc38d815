// A program linked against the toolkit's libcuda.so (soname libcuda.so.1) runs with the driver
// shim in its place (LD_LIBRARY_PATH names only the shim's directory; no RPATH): every function
// of the table resolves to the shim, and every call fails closed with CUDA_ERROR_NOT_SUPPORTED
// without touching its output arguments, through the new ABI a program compiles against
// (cuMemAlloc is cuMemAlloc_v2) and the old one the driver still exports.
#include <cuda.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <limits.h>
#include <stdlib.h>

#include <fstream>
#include <string>
#include <vector>

namespace {

std::string realPath(const char* path) {
  char resolved[PATH_MAX];
  return ::realpath(path, resolved) != nullptr ? std::string(resolved) : std::string();
}

// The file that defines `address`, resolved.
std::string definingFile(void* address) {
  Dl_info info{};
  if (address == nullptr || ::dladdr(address, &info) == 0 || info.dli_fname == nullptr) return {};
  return realPath(info.dli_fname);
}

std::vector<std::string> tableSymbols() {
  std::ifstream table(AGILEOS_CUDA_DRIVER_TABLE);
  std::vector<std::string> symbols;
  std::string line;
  while (std::getline(table, line)) {
    if (line.empty() || line[0] == '#' || line[0] == '@') continue;
    symbols.push_back(line.substr(0, line.find('\t')));
  }
  return symbols;
}

TEST(DriverShimLinkedProgram, TheLibcudaThisProgramLoadedIsTheShim) {
  const std::string shim = realPath(AGILEOS_CUDA_SHIM);
  ASSERT_FALSE(shim.empty()) << AGILEOS_CUDA_SHIM;
  EXPECT_EQ(definingFile(reinterpret_cast<void*>(&cuInit)), shim);
}

TEST(DriverShimLinkedProgram, EveryFunctionOfTheTableResolvesToTheShim) {
  const std::string shim = realPath(AGILEOS_CUDA_SHIM);
  const std::vector<std::string> symbols = tableSymbols();
  ASSERT_EQ(symbols.size(), 637u) << "libcuda.so.1 of CUDA 13.0 exports 637 functions";
  for (const std::string& symbol : symbols) {
    EXPECT_EQ(definingFile(::dlsym(RTLD_DEFAULT, symbol.c_str())), shim) << symbol;
  }
}

TEST(DriverShimLinkedProgram, CallsFailClosedAndLeaveTheirOutputsAlone) {
  EXPECT_EQ(cuInit(0), CUDA_ERROR_NOT_SUPPORTED);
  int version = -7;
  EXPECT_EQ(cuDriverGetVersion(&version), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(version, -7);
  CUdevice device = 42;
  EXPECT_EQ(cuDeviceGet(&device, 0), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(device, 42);
  CUdeviceptr pointer = 0x1234;
  EXPECT_EQ(cuMemAlloc(&pointer, 64), CUDA_ERROR_NOT_SUPPORTED);  // cuMemAlloc_v2
  EXPECT_EQ(pointer, 0x1234u);
  const char* text = "untouched";
  EXPECT_EQ(cuGetErrorString(CUDA_ERROR_INVALID_VALUE, &text), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_STREQ(text, "untouched");
  void* entry = reinterpret_cast<void*>(0x99);
  CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SUCCESS;
  EXPECT_EQ(cuGetProcAddress("cuInit", &entry, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &found),
            CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(entry, reinterpret_cast<void*>(0x99)) << "no entry point may be handed out";
}

TEST(DriverShimLinkedProgram, TheOldAbiOfARenamedFunctionFailsClosedToo) {
  using OldMemAlloc = CUresult (*)(unsigned int*, unsigned int);
  auto* oldMemAlloc = reinterpret_cast<OldMemAlloc>(::dlsym(RTLD_DEFAULT, "cuMemAlloc"));
  ASSERT_NE(oldMemAlloc, nullptr);
  EXPECT_NE(reinterpret_cast<void*>(oldMemAlloc), ::dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"));
  unsigned int pointer = 77;
  EXPECT_EQ(oldMemAlloc(&pointer, 64), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(pointer, 77u);
}

}  // namespace
