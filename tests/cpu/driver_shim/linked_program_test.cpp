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

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

#include "client/cuda/export_table_ids.h"

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
  size_t width = 0x1234;
  EXPECT_EQ(cuDeviceGetTexture1DLinearMaxWidth(&width, CU_AD_FORMAT_FLOAT, 1, 0), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(width, 0x1234u);
}

// The private tables a CUDA runtime in the program asks for: served with the real driver's sizes
// (580.159, probed on the H200); any other id gets no table.
CUuuid idOf(const agileos::client::cuda_shim::ExportTableId& bytes) {
  CUuuid id{};
  std::copy(bytes.begin(), bytes.end(), reinterpret_cast<unsigned char*>(id.bytes));
  return id;
}

const std::uintptr_t* exportTable(const CUuuid& id) {
  const void* table = nullptr;
  EXPECT_EQ(cuGetExportTable(&table, &id), CUDA_SUCCESS);
  return static_cast<const std::uintptr_t*>(table);
}

TEST(DriverShimLinkedProgram, ExportTablesHaveTheDriversSizes) {
  const CUuuid runtimeInterface = idOf(agileos::client::cuda_shim::kRuntimeInterfaceId);
  const CUuuid callbackHooks = idOf(agileos::client::cuda_shim::kToolsCallbackHooksId);
  const CUuuid toolsTls = idOf(agileos::client::cuda_shim::kToolsTlsId);
  const CUuuid integrity = idOf(agileos::client::cuda_shim::kRuntimeIntegrityId);
  const CUuuid contextChecks = idOf(agileos::client::cuda_shim::kContextChecksId);
  const CUuuid contextStorage = idOf(agileos::client::cuda_shim::kContextStorageId);
  const CUuuid toolsContext = idOf(agileos::client::cuda_shim::kToolsContextId);
  EXPECT_EQ(exportTable(runtimeInterface)[0], 104u);
  EXPECT_EQ(exportTable(toolsContext)[0], 744u);
  EXPECT_EQ(exportTable(callbackHooks)[0], 56u);
  EXPECT_EQ(exportTable(toolsTls)[0], 24u);
  EXPECT_EQ(exportTable(integrity)[0], 24u);
  EXPECT_EQ(exportTable(contextChecks)[0], 120u);
  const std::uintptr_t* storage = exportTable(contextStorage);  // no size entry: three functions, a null
  EXPECT_NE(storage[0], 0u);
  EXPECT_NE(storage[2], 0u);
  EXPECT_EQ(storage[3], 0u);
  // Every entry past the size is a function (unknown ones fail closed), none a null to crash on.
  for (const CUuuid* id : {&runtimeInterface, &callbackHooks, &toolsTls, &contextChecks, &toolsContext}) {
    const std::uintptr_t* table = exportTable(*id);
    for (std::size_t i = 1; i < table[0] / sizeof(void*); ++i) EXPECT_NE(table[i], 0u) << "entry " << i;
  }

  const void* entry = reinterpret_cast<void*>(0x99);
  EXPECT_EQ(cuGetExportTable(&entry, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(entry, reinterpret_cast<void*>(0x99));
  const CUuuid unknown = idOf(agileos::client::cuda_shim::kUnservedF8cff951Id);
  EXPECT_EQ(cuGetExportTable(&entry, &unknown), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(entry, nullptr) << "no table for an id the shim does not serve";

  // An unknown entry of a served table fails closed.
  using Unknown = CUresult (*)();
  EXPECT_EQ(reinterpret_cast<Unknown>(exportTable(runtimeInterface)[3])(), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(reinterpret_cast<Unknown>(exportTable(contextChecks)[14])(), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(reinterpret_cast<Unknown>(exportTable(toolsContext)[92])(), CUDA_ERROR_NOT_SUPPORTED);
}

// Context-local storage: put, get and remove under a key; null and (CUcontext)-1 both name the
// calling thread's context (here the primary one); a miss is CUDA_ERROR_INVALID_HANDLE.
void countDestruction(CUcontext, void*, void*) {}

TEST(DriverShimLinkedProgram, ContextLocalStorageKeepsValuesPerKey) {
  const CUuuid id = idOf(agileos::client::cuda_shim::kContextStorageId);
  const std::uintptr_t* table = exportTable(id);
  using Put = CUresult (*)(CUcontext, void*, void*, void (*)(CUcontext, void*, void*));
  using Remove = CUresult (*)(CUcontext, void*);
  using Get = CUresult (*)(void**, CUcontext, void*);
  const auto put = reinterpret_cast<Put>(table[0]);
  const auto remove = reinterpret_cast<Remove>(table[1]);
  const auto get = reinterpret_cast<Get>(table[2]);
  int keyA = 0, keyB = 0, valueA = 0, valueB = 0;
  void* value = nullptr;
  EXPECT_EQ(get(&value, nullptr, &keyA), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(put(nullptr, &keyA, &valueA, countDestruction), CUDA_SUCCESS);
  EXPECT_EQ(put(reinterpret_cast<CUcontext>(-1), &keyB, &valueB, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(get(&value, reinterpret_cast<CUcontext>(-1), &keyA), CUDA_SUCCESS);
  EXPECT_EQ(value, &valueA);
  EXPECT_EQ(get(&value, nullptr, &keyB), CUDA_SUCCESS);
  EXPECT_EQ(value, &valueB);
  EXPECT_EQ(get(nullptr, nullptr, &keyB), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(put(reinterpret_cast<CUcontext>(0x1234), &keyA, &valueB, nullptr), CUDA_ERROR_INVALID_CONTEXT)
      << "a context that is not live";
  EXPECT_EQ(remove(nullptr, &keyB), CUDA_SUCCESS);
  EXPECT_EQ(get(&value, nullptr, &keyB), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(remove(nullptr, &keyB), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(remove(nullptr, &keyA), CUDA_SUCCESS);
  // That a destroyed or reset context loses its entries is tested with a daemon
  // (tests/cpu/e2e/e2e_driver.cpp).
}

// cuGetProcAddress answers with this shim's functions, the ABI of the version asked for.
void* procAddress(const char* name, int version, cuuint64_t flags, CUdriverProcAddressQueryResult* status) {
  void* entry = reinterpret_cast<void*>(0x99);
  EXPECT_EQ(cuGetProcAddress(name, &entry, version, flags, status), CUDA_SUCCESS) << name << " " << version;
  return entry;
}

TEST(DriverShimLinkedProgram, GetProcAddressHandsOutTheAbiOfTheVersionAskedFor) {
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  const cuuint64_t legacy = CU_GET_PROC_ADDRESS_LEGACY_STREAM;
  const cuuint64_t perThread = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  EXPECT_EQ(procAddress("cuMemAlloc", 13000, legacy, &status), ::dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"));
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SUCCESS);
  EXPECT_EQ(procAddress("cuMemAlloc", 3000, legacy, &status), ::dlsym(RTLD_DEFAULT, "cuMemAlloc"));
  EXPECT_EQ(procAddress("cuCtxCreate", 12050, legacy, &status), ::dlsym(RTLD_DEFAULT, "cuCtxCreate_v4"));
  EXPECT_EQ(procAddress("cuCtxCreate", 12040, legacy, &status), ::dlsym(RTLD_DEFAULT, "cuCtxCreate_v3"));
  EXPECT_EQ(procAddress("cuMemcpyHtoD", 12000, perThread, &status),
            ::dlsym(RTLD_DEFAULT, "cuMemcpyHtoD_v2_ptds"));
  EXPECT_EQ(procAddress("cuMemcpyHtoD", 12000, legacy, &status), ::dlsym(RTLD_DEFAULT, "cuMemcpyHtoD_v2"));
  EXPECT_EQ(procAddress("cuLaunchKernel", 12000, perThread, &status),
            ::dlsym(RTLD_DEFAULT, "cuLaunchKernel_ptsz"));
  // No per-thread twin: the legacy function, as the driver answers.
  EXPECT_EQ(procAddress("cuInit", 12000, perThread, &status), ::dlsym(RTLD_DEFAULT, "cuInit"));
  EXPECT_EQ(procAddress("cuDeviceGetTexture1DLinearMaxWidth", 12000, legacy, &status),
            ::dlsym(RTLD_DEFAULT, "cuDeviceGetTexture1DLinearMaxWidth"))
      << "an unsupported function is handed out too: it fails closed when called";

  EXPECT_EQ(procAddress("cuNoSuchFunction", 12000, legacy, &status), nullptr);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  EXPECT_EQ(procAddress("cuGetProcAddress", 11000, legacy, &status), nullptr);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);

  // A library built for a newer CUDA than the shim's (cuBLAS 13.1 on a 13.0 driver) gets the
  // newest ABI there is, as from the driver.
  EXPECT_EQ(procAddress("cuMemAlloc", CUDA_VERSION + 10, legacy, &status),
            ::dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"));
  EXPECT_EQ(procAddress("cuProfilerStart", 12000, legacy, &status), ::dlsym(RTLD_DEFAULT, "cuProfilerStart"));

  void* entry = reinterpret_cast<void*>(0x99);
  EXPECT_EQ(cuGetProcAddress("cuInit", &entry, 12000, 4, &status), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuGetProcAddress(nullptr, &entry, 12000, legacy, &status), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(entry, reinterpret_cast<void*>(0x99));
}

// Every function of the table that some version of cudaTypedefs.h names is reachable by name.
TEST(DriverShimLinkedProgram, EveryVersionedNameResolvesToTheShim) {
  const std::string shim = realPath(AGILEOS_CUDA_SHIM);
  int found = 0;
  for (const std::string& symbol : tableSymbols()) {
    std::string base = symbol;
    for (const char* suffix : {"_ptds", "_ptsz"}) {
      if (base.size() > 5 && base.compare(base.size() - 5, 5, suffix) == 0) base.resize(base.size() - 5);
    }
    if (const auto v = base.rfind("_v");
        v != std::string::npos && base.find_first_not_of("0123456789", v + 2) == std::string::npos) {
      base.resize(v);
    }
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    void* entry = nullptr;
    ASSERT_EQ(cuGetProcAddress(base.c_str(), &entry, CUDA_VERSION,
                               CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &status),
              CUDA_SUCCESS);
    if (status != CU_GET_PROC_ADDRESS_SUCCESS) continue;  // a name no typedef gives (cuGetExportTable)
    ++found;
    EXPECT_EQ(definingFile(entry), shim) << base;
  }
  EXPECT_GT(found, 600);
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
