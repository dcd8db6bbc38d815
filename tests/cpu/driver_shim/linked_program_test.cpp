// A program linked against the toolkit's libcuda.so (soname libcuda.so.1) runs with the driver
// shim in its place (LD_LIBRARY_PATH names only the shim's directory; no RPATH): every function
// of the table resolves to the shim. With no daemon to reach (AGILEOS_SOCKET names nothing), the
// implemented calls answer as a machine without a GPU does, the unsupported ones fail closed with
// CUDA_ERROR_NOT_SUPPORTED, and neither touches its output arguments, through the new ABI a
// program compiles against (cuMemAlloc is cuMemAlloc_v2) and the old one the driver still exports.
// tests/cpu/e2e (e2e_fake_gpu_driver) runs the implemented calls against a daemon.
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

TEST(DriverShimLinkedProgram, WithoutADaemonCallsFailAsWithoutAGpuAndLeaveTheirOutputsAlone) {
  CUdevice device = 42;
  EXPECT_EQ(cuDeviceGet(&device, 0), CUDA_ERROR_NOT_INITIALIZED);
  EXPECT_EQ(device, 42);
  EXPECT_EQ(cuInit(0), CUDA_ERROR_NO_DEVICE);
  EXPECT_EQ(cuInit(0), CUDA_ERROR_NO_DEVICE) << "the outcome of the first cuInit is kept";
  EXPECT_EQ(cuDeviceGet(&device, 0), CUDA_ERROR_NOT_INITIALIZED);
  EXPECT_EQ(device, 42);
  CUdeviceptr pointer = 0x1234;
  EXPECT_EQ(cuMemAlloc(&pointer, 64), CUDA_ERROR_NOT_INITIALIZED);  // cuMemAlloc_v2
  EXPECT_EQ(pointer, 0x1234u);
  int version = -7;
  EXPECT_EQ(cuDriverGetVersion(&version), CUDA_SUCCESS);
  EXPECT_EQ(version, CUDA_VERSION) << "with no daemon, the version the shim was built for";
  const char* text = nullptr;
  EXPECT_EQ(cuGetErrorString(CUDA_ERROR_INVALID_VALUE, &text), CUDA_SUCCESS);
  EXPECT_STREQ(text, "invalid argument") << "the real driver's text (client/cuda/driver_error_strings.inc)";
  EXPECT_EQ(cuGetErrorName(CUDA_ERROR_NO_DEVICE, &text), CUDA_SUCCESS);
  EXPECT_STREQ(text, "CUDA_ERROR_NO_DEVICE");
}

TEST(DriverShimLinkedProgram, UnsupportedCallsFailClosedAndLeaveTheirOutputsAlone) {
  CUdeviceptr pointer = 0x1234;
  EXPECT_EQ(cuMemAllocManaged(&pointer, 64, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(pointer, 0x1234u);
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
