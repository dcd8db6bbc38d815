// The driver shim (libcuda.so.1) on the whole AgileOS stack with the fake GPU, and its one session
// with the runtime shim: a program that mixes the two APIs sees one world (one connection, one set
// of allocations, streams and events). Host code only; kernels are covered on the GPU
// (tests/gpu/programs/driver_*). Each check prints one line; exits 1 if any check fails.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "client/cuda/export_table_ids.h"

namespace {

int gFailures = 0;

void check(bool ok, const char* what) {
  std::printf("%s %s\n", ok ? "PASS" : "FAIL", what);
  if (!ok) ++gFailures;
}

void checkResult(CUresult got, CUresult want, const char* what) {
  const char* gotName = nullptr;
  const char* wantName = nullptr;
  cuGetErrorName(got, &gotName);
  cuGetErrorName(want, &wantName);
  std::printf("%s %s (got %s, want %s)\n", got == want ? "PASS" : "FAIL", what, gotName ? gotName : "?",
              wantName ? wantName : "?");
  if (got != want) ++gFailures;
}

std::vector<unsigned char> pattern(size_t bytes, unsigned seed) {
  std::vector<unsigned char> out(bytes);
  for (size_t i = 0; i < bytes; ++i) out[i] = static_cast<unsigned char>(i * 31 + seed);
  return out;
}

void beforeInit() {
  CUdevice device = 0;
  checkResult(cuDeviceGet(&device, 0), CUDA_ERROR_NOT_INITIALIZED, "cuDeviceGet before cuInit");
  checkResult(cuInit(1), CUDA_ERROR_INVALID_VALUE, "cuInit(1)");
  const char* name = nullptr;
  checkResult(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &name), CUDA_SUCCESS, "cuGetErrorName");
  check(name != nullptr && std::strcmp(name, "CUDA_ERROR_OUT_OF_MEMORY") == 0, "the enumerator's name");
  checkResult(cuGetErrorName(static_cast<CUresult>(123456), &name), CUDA_ERROR_INVALID_VALUE,
              "cuGetErrorName of no CUresult");
}

void devicesAndContexts(CUcontext* context) {
  checkResult(cuInit(0), CUDA_SUCCESS, "cuInit(0)");
  int count = 0;
  checkResult(cuDeviceGetCount(&count), CUDA_SUCCESS, "cuDeviceGetCount");
  check(count == 1, "one device");
  CUdevice device = -1;
  checkResult(cuDeviceGet(&device, 1), CUDA_ERROR_INVALID_DEVICE, "cuDeviceGet(1)");
  checkResult(cuDeviceGet(&device, 0), CUDA_SUCCESS, "cuDeviceGet(0)");
  char name[256] = {};
  checkResult(cuDeviceGetName(name, sizeof name, device), CUDA_SUCCESS, "cuDeviceGetName");
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  check(std::strcmp(name, prop.name) == 0, "the driver and the runtime name the same device");
  int major = 0, minor = 0, smCount = 0;
  checkResult(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device),
              CUDA_SUCCESS, "cuDeviceGetAttribute(major)");
  checkResult(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device),
              CUDA_SUCCESS, "cuDeviceGetAttribute(minor)");
  check(major == prop.major && minor == prop.minor, "the same compute capability through both APIs");
  checkResult(cuDeviceGetAttribute(&smCount, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device), CUDA_SUCCESS,
              "cuDeviceGetAttribute(multiprocessors)");
  check(smCount == prop.multiProcessorCount, "the same multiprocessor count through both APIs");
  size_t total = 0;
  checkResult(cuDeviceTotalMem(&total, device), CUDA_SUCCESS, "cuDeviceTotalMem");
  check(total == prop.totalGlobalMem, "the same total memory through both APIs");

  CUcontext none = reinterpret_cast<CUcontext>(1);
  checkResult(cuCtxGetCurrent(&none), CUDA_SUCCESS, "cuCtxGetCurrent before any context");
  check(none == nullptr, "no context is current yet");
  CUcontext primary = nullptr;
  checkResult(cuDevicePrimaryCtxRetain(&primary, device), CUDA_SUCCESS, "cuDevicePrimaryCtxRetain");
  checkResult(cuCtxSetCurrent(primary), CUDA_SUCCESS, "cuCtxSetCurrent(primary)");
  CUcontext created = nullptr;
  checkResult(cuCtxCreate(&created, nullptr, 0, device), CUDA_SUCCESS, "cuCtxCreate");
  CUcontext current = nullptr;
  cuCtxGetCurrent(&current);
  check(current == created && created != primary, "a created context is current");
  CUcontext popped = nullptr;
  checkResult(cuCtxPopCurrent(&popped), CUDA_SUCCESS, "cuCtxPopCurrent");
  cuCtxGetCurrent(&current);
  check(popped == created && current == primary, "popping returns to the primary context");
  checkResult(cuCtxDestroy(created), CUDA_SUCCESS, "cuCtxDestroy");
  checkResult(cuCtxDestroy(created), CUDA_ERROR_INVALID_CONTEXT, "cuCtxDestroy twice");
  checkResult(cuCtxPushCurrent(created), CUDA_ERROR_INVALID_CONTEXT,
              "cuCtxPushCurrent of a destroyed context");
  checkResult(cuCtxDestroy(primary), CUDA_ERROR_INVALID_CONTEXT, "cuCtxDestroy of the primary context");
  *context = primary;
}

// Driver and runtime calls on the same allocations and streams.
void oneWorld() {
  const size_t bytes = 3 << 20;
  const std::vector<unsigned char> in = pattern(bytes, 7);
  std::vector<unsigned char> out(bytes, 0);

  CUdeviceptr driverBuffer = 0;
  checkResult(cuMemAlloc(&driverBuffer, bytes), CUDA_SUCCESS, "cuMemAlloc");
  void* runtimeBuffer = nullptr;
  check(cudaMalloc(&runtimeBuffer, bytes) == cudaSuccess, "cudaMalloc");
  checkResult(cuMemcpyHtoD(driverBuffer, in.data(), bytes), CUDA_SUCCESS, "cuMemcpyHtoD");
  check(cudaMemcpy(runtimeBuffer, reinterpret_cast<void*>(driverBuffer), bytes, cudaMemcpyDeviceToDevice) ==
            cudaSuccess,
        "cudaMemcpy from the driver's allocation");
  checkResult(cuMemcpyDtoH(out.data(), reinterpret_cast<CUdeviceptr>(runtimeBuffer), bytes), CUDA_SUCCESS,
              "cuMemcpyDtoH from the runtime's allocation");
  check(out == in, "the bytes went through both APIs' allocations intact");

  CUstream stream = nullptr;
  checkResult(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS, "cuStreamCreate");
  unsigned flags = 0;
  check(cudaStreamGetFlags(reinterpret_cast<cudaStream_t>(stream), &flags) == cudaSuccess &&
            flags == cudaStreamNonBlocking,
        "the runtime knows the driver's stream and its flags");
  checkResult(cuMemsetD8Async(driverBuffer, 0x5A, bytes, stream), CUDA_SUCCESS, "cuMemsetD8Async");
  CUevent event = nullptr;
  checkResult(cuEventCreate(&event, CU_EVENT_DEFAULT), CUDA_SUCCESS, "cuEventCreate");
  checkResult(cuEventRecord(event, stream), CUDA_SUCCESS, "cuEventRecord");
  check(cudaEventSynchronize(reinterpret_cast<cudaEvent_t>(event)) == cudaSuccess,
        "cudaEventSynchronize on the driver's event");
  std::fill(out.begin(), out.end(), 0);
  check(cudaMemcpyAsync(out.data(), reinterpret_cast<void*>(driverBuffer), bytes, cudaMemcpyDeviceToHost,
                        reinterpret_cast<cudaStream_t>(stream)) == cudaSuccess,
        "cudaMemcpyAsync on the driver's stream");
  checkResult(cuStreamSynchronize(stream), CUDA_SUCCESS, "cuStreamSynchronize");
  check(out == std::vector<unsigned char>(bytes, 0x5A), "the fill reached the runtime's copy");
  checkResult(cuMemsetD32(driverBuffer, 0x01020304u, 4), CUDA_ERROR_NOT_SUPPORTED,
              "cuMemsetD32 with differing bytes fails closed");
  checkResult(cuMemsetD32(driverBuffer, 0x7F7F7F7Fu, 4), CUDA_SUCCESS, "cuMemsetD32 with one byte repeated");

  size_t freeBytes = 0, totalBytes = 0, runtimeFree = 0, runtimeTotal = 0;
  checkResult(cuMemGetInfo(&freeBytes, &totalBytes), CUDA_SUCCESS, "cuMemGetInfo");
  cudaMemGetInfo(&runtimeFree, &runtimeTotal);
  check(totalBytes == runtimeTotal, "one quota seen through both APIs");

  int calls = 0;
  checkResult(cuLaunchHostFunc(
                  stream, [](void* count) { ++*static_cast<int*>(count); }, &calls),
              CUDA_SUCCESS, "cuLaunchHostFunc");
  checkResult(cuStreamAddCallback(
                  stream,
                  [](CUstream, CUresult status, void* count) {
                    *static_cast<int*>(count) += status == CUDA_SUCCESS ? 10 : 100;
                  },
                  &calls, 0),
              CUDA_SUCCESS, "cuStreamAddCallback");
  check(calls == 11, "the host function and the callback ran, the callback with CUDA_SUCCESS");
  checkResult(cuStreamAddCallback(
                  stream, [](CUstream, CUresult, void*) {}, nullptr, 1),
              CUDA_ERROR_INVALID_VALUE, "cuStreamAddCallback with flags");
  CUfunc_cache cache = CU_FUNC_CACHE_PREFER_NONE;
  checkResult(cuCtxSetCacheConfig(CU_FUNC_CACHE_PREFER_SHARED), CUDA_SUCCESS, "cuCtxSetCacheConfig");
  checkResult(cuCtxGetCacheConfig(&cache), CUDA_SUCCESS, "cuCtxGetCacheConfig");
  enum cudaFuncCache runtimeCache = cudaFuncCachePreferNone;
  cudaDeviceGetCacheConfig(&runtimeCache);
  check(cache == CU_FUNC_CACHE_PREFER_SHARED && runtimeCache == cudaFuncCachePreferShared,
        "one cache preference seen through both APIs");
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // deprecated, still exported and called
  CUsharedconfig banks = CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE;
  checkResult(cuCtxSetSharedMemConfig(CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE), CUDA_SUCCESS,
              "cuCtxSetSharedMemConfig(eight bytes): nothing to do on fixed banks");
  checkResult(cuCtxGetSharedMemConfig(&banks), CUDA_SUCCESS, "cuCtxGetSharedMemConfig");
  check(banks == CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE, "the fixed bank size, four bytes");
  checkResult(cuCtxSetSharedMemConfig(static_cast<CUsharedconfig>(7)), CUDA_ERROR_INVALID_VALUE,
              "cuCtxSetSharedMemConfig(no such setting)");
  checkResult(cuCtxGetSharedMemConfig(nullptr), CUDA_ERROR_INVALID_VALUE, "cuCtxGetSharedMemConfig(null)");
#pragma GCC diagnostic pop
  checkResult(cuEventDestroy(event), CUDA_SUCCESS, "cuEventDestroy");
  checkResult(cuStreamDestroy(stream), CUDA_SUCCESS, "cuStreamDestroy");
  check(cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(stream)) == cudaErrorInvalidResourceHandle,
        "the runtime sees the driver's stream destroyed");
  cudaGetLastError();
  check(cudaFree(reinterpret_cast<void*>(driverBuffer)) == cudaSuccess,
        "cudaFree of the driver's allocation");
  checkResult(cuMemFree(reinterpret_cast<CUdeviceptr>(runtimeBuffer)), CUDA_SUCCESS,
              "cuMemFree of the runtime's allocation");
  checkResult(cuMemFree(reinterpret_cast<CUdeviceptr>(runtimeBuffer)), CUDA_ERROR_INVALID_VALUE,
              "cuMemFree twice");
}

// A PTX module with a global variable (the fake GPU reads its symbols from the PTX text).
const char kModulePtx[] = R"(
.version 9.0
.target sm_90
.address_size 64

.visible .global .align 4 .b8 table[64];

.visible .entry touch(
	.param .u64 touch_param_0
)
{
	ret;
}
)";

// A module with a __managed__ variable, as nvcc writes one.
const char kManagedPtx[] = R"(
.version 9.0
.target sm_90
.address_size 64

.visible .global .attribute(.managed) .align 4 .b8 counter[16] = {5, 0, 0, 0, 6, 0, 0, 0, 7, 0, 0, 0, 8, 0, 0, 0};

.visible .entry bump()
{
	.reg .b64 %rd<2>;
	.reg .b32 %r<2>;
	mov.u64 %rd1, counter;
	ld.global.u32 %r1, [%rd1];
	add.s32 %r1, %r1, 1;
	st.global.u32 [%rd1], %r1;
	ret;
}
)";

// __managed__ variables of images loaded at run time get their memory at the load, as the driver
// gives it: one address for the program and the device, holding the initial bytes.
void managedVariables() {
  CUlibrary library = nullptr;
  checkResult(cuLibraryLoadData(&library, kManagedPtx, nullptr, nullptr, 0, nullptr, nullptr, 0),
              CUDA_SUCCESS, "cuLibraryLoadData of an image with a __managed__ variable");
  CUdeviceptr managed = 0;
  size_t bytes = 0;
  checkResult(cuLibraryGetManaged(&managed, &bytes, library, "counter"), CUDA_SUCCESS, "cuLibraryGetManaged");
  check(managed != 0 && bytes == 16, "the variable's address and size");
  // The host writes at that address and a copy from the device's side reads it (the fake GPU does
  // not fill the initial bytes; the GPU suite's managed_variables_static checks those).
  int* host = reinterpret_cast<int*>(managed);
  host[1] = 6;
  CUdeviceptr global = 0;
  checkResult(cuLibraryGetGlobal(&global, nullptr, library, "counter"), CUDA_SUCCESS,
              "cuLibraryGetGlobal of the managed variable");
  check(global == managed, "is the same memory");
  unsigned isManaged = 0;
  checkResult(cuPointerGetAttribute(&isManaged, CU_POINTER_ATTRIBUTE_IS_MANAGED, managed), CUDA_SUCCESS,
              "cuPointerGetAttribute(IS_MANAGED)");
  check(isManaged == 1, "managed memory");
  int copied = 0;
  checkResult(cuMemcpyDtoH(&copied, managed + 4, sizeof copied), CUDA_SUCCESS, "cuMemcpyDtoH from it");
  check(copied == 6, "a copy reads the same bytes");
  checkResult(cuLibraryGetManaged(&managed, &bytes, library, "absent"), CUDA_ERROR_NOT_FOUND,
              "cuLibraryGetManaged of a name the image lacks");
  checkResult(cuLibraryGetManaged(&managed, &bytes, reinterpret_cast<CUlibrary>(&copied), "counter"),
              CUDA_ERROR_INVALID_HANDLE, "cuLibraryGetManaged of a forged library");
  CUmodule module = nullptr;
  checkResult(cuModuleLoadData(&module, kManagedPtx), CUDA_SUCCESS, "cuModuleLoadData of the same image");
  CUdeviceptr second = 0;
  checkResult(cuModuleGetGlobal(&second, &bytes, module, "counter"), CUDA_SUCCESS, "cuModuleGetGlobal");
  check(second != 0 && second != global, "each load has its own variable");
  checkResult(cuModuleUnload(module), CUDA_SUCCESS, "cuModuleUnload");
  checkResult(cuLibraryUnload(library), CUDA_SUCCESS, "cuLibraryUnload");

  // The runtime API's forms: the same session, the same binding at the load.
  cudaLibrary_t runtimeLibrary = nullptr;
  check(cudaLibraryLoadData(&runtimeLibrary, kManagedPtx, nullptr, nullptr, 0, nullptr, nullptr, 0) ==
            cudaSuccess,
        "cudaLibraryLoadData of an image with a __managed__ variable");
  void* runtimeManaged = nullptr;
  void* runtimeGlobal = nullptr;
  size_t runtimeBytes = 0;
  check(cudaLibraryGetManaged(&runtimeManaged, &runtimeBytes, runtimeLibrary, "counter") == cudaSuccess &&
            runtimeBytes == 16,
        "cudaLibraryGetManaged");
  check(cudaLibraryGetGlobal(&runtimeGlobal, nullptr, runtimeLibrary, "counter") == cudaSuccess &&
            runtimeGlobal == runtimeManaged,
        "cudaLibraryGetGlobal of the managed variable is its managed memory");
  check(cudaLibraryGetManaged(&runtimeManaged, nullptr, runtimeLibrary, "absent") == cudaErrorSymbolNotFound,
        "cudaLibraryGetManaged of a name the image lacks");
  check(cudaLibraryGetGlobal(&runtimeGlobal, nullptr, reinterpret_cast<cudaLibrary_t>(&copied), "counter") ==
            cudaErrorInvalidResourceHandle,
        "cudaLibraryGetGlobal of a forged library");
  cudaGetLastError();
  check(cudaLibraryUnload(runtimeLibrary) == cudaSuccess, "cudaLibraryUnload");
  cudaLibrary_t plain = nullptr;
  check(cudaLibraryLoadData(&plain, kModulePtx, nullptr, nullptr, 0, nullptr, nullptr, 0) == cudaSuccess,
        "cudaLibraryLoadData of an image with a plain global");
  void* table = nullptr;
  size_t tableBytes = 0;
  check(cudaLibraryGetGlobal(&table, &tableBytes, plain, "table") == cudaSuccess && tableBytes == 64,
        "cudaLibraryGetGlobal of a __device__ variable");
  const std::vector<unsigned char> in = pattern(64, 9);
  std::vector<unsigned char> out(64, 0);
  check(cudaMemcpy(table, in.data(), 64, cudaMemcpyHostToDevice) == cudaSuccess &&
            cudaMemcpy(out.data(), table, 64, cudaMemcpyDeviceToHost) == cudaSuccess && out == in,
        "copies to and from it");
  check(cudaMemcpy(static_cast<char*>(table) + 1, in.data(), 64, cudaMemcpyHostToDevice) != cudaSuccess,
        "a copy past its end is refused");
  cudaGetLastError();
  check(cudaLibraryUnload(plain) == cudaSuccess, "cudaLibraryUnload (plain)");
}

// What a linked-in runtime calls for cudaLaunchCooperativeKernel under --default-stream per-thread
// and for cudaDeviceGetP2PAttribute.
void perThreadLaunchAndPeers() {
  CUmodule module = nullptr;
  checkResult(cuModuleLoadData(&module, kModulePtx), CUDA_SUCCESS, "cuModuleLoadData (cooperative)");
  CUfunction function = nullptr;
  checkResult(cuModuleGetFunction(&function, module, "touch"), CUDA_SUCCESS,
              "cuModuleGetFunction (cooperative)");
  CUdeviceptr device = 0;
  checkResult(cuMemAlloc(&device, 256), CUDA_SUCCESS, "cuMemAlloc (cooperative)");
  void* args[] = {&device};
  // As the runtime finds it: the per-thread form through cuGetProcAddress.
  using Cooperative = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                   unsigned, CUstream, void**);
  void* entry = nullptr;
  checkResult(cuGetProcAddress("cuLaunchCooperativeKernel", &entry, 12000,
                               CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, nullptr),
              CUDA_SUCCESS, "cuGetProcAddress(cuLaunchCooperativeKernel, per-thread)");
  check(entry != nullptr && entry == dlsym(RTLD_DEFAULT, "cuLaunchCooperativeKernel_ptsz"),
        "the per-thread form is cuLaunchCooperativeKernel_ptsz");
  if (entry == nullptr) return;
  const auto cooperativePerThread = reinterpret_cast<Cooperative>(entry);
  checkResult(cooperativePerThread(function, 1, 1, 1, 32, 1, 1, 0, nullptr, args), CUDA_SUCCESS,
              "cuLaunchCooperativeKernel_ptsz on the per-thread default stream");
  checkResult(cuCtxSynchronize(), CUDA_SUCCESS, "cuCtxSynchronize (cooperative)");
  checkResult(
      cooperativePerThread(reinterpret_cast<CUfunction>(&device), 1, 1, 1, 32, 1, 1, 0, nullptr, args),
      CUDA_ERROR_INVALID_HANDLE, "cuLaunchCooperativeKernel_ptsz of a forged function");
  int value = -1;
  checkResult(cuDeviceGetP2PAttribute(&value, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 0, 0),
              CUDA_ERROR_INVALID_DEVICE, "cuDeviceGetP2PAttribute(0, 0): one device with itself");
  checkResult(cuDeviceGetP2PAttribute(&value, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 0, 1),
              CUDA_ERROR_INVALID_DEVICE, "cuDeviceGetP2PAttribute(0, 1): no device 1");
  check(value == -1, "nothing written");
  checkResult(cuMemFree(device), CUDA_SUCCESS, "cuMemFree (cooperative)");
  checkResult(cuModuleUnload(module), CUDA_SUCCESS, "cuModuleUnload (cooperative)");
}

void moduleGlobals() {
  CUmodule module = nullptr;
  checkResult(cuModuleLoadData(&module, kModulePtx), CUDA_SUCCESS, "cuModuleLoadData(PTX)");
  CUfunction function = nullptr;
  checkResult(cuModuleGetFunction(&function, module, "touch"), CUDA_SUCCESS, "cuModuleGetFunction");
  checkResult(cuModuleGetFunction(&function, module, "absent"), CUDA_ERROR_NOT_FOUND,
              "cuModuleGetFunction of a kernel the module lacks");
  CUdeviceptr table = 0;
  size_t bytes = 0;
  checkResult(cuModuleGetGlobal(&table, &bytes, module, "table"), CUDA_SUCCESS, "cuModuleGetGlobal");
  check(table != 0 && bytes == 64, "the variable's address and size");
  CUdeviceptr again = 0;
  checkResult(cuModuleGetGlobal(&again, nullptr, module, "table"), CUDA_SUCCESS, "cuModuleGetGlobal again");
  check(again == table, "the same variable twice");
  checkResult(cuModuleGetGlobal(&again, &bytes, module, "absent"), CUDA_ERROR_NOT_FOUND,
              "cuModuleGetGlobal of a variable the module lacks");
  const std::vector<unsigned char> in = pattern(64, 3);
  std::vector<unsigned char> out(64, 0);
  checkResult(cuMemcpyHtoD(table, in.data(), 64), CUDA_SUCCESS, "cuMemcpyHtoD into the variable");
  checkResult(cuMemcpyDtoH(out.data(), table, 64), CUDA_SUCCESS, "cuMemcpyDtoH from the variable");
  check(out == in, "the variable holds what was copied in");
  const std::vector<unsigned char> wide = pattern(65, 4);
  checkResult(cuMemcpyHtoD(table, wide.data(), wide.size()), CUDA_ERROR_INVALID_VALUE,
              "a copy past the variable's end");
  // Attributes are remembered by the client after the first answer (cuBLAS asks at every GEMM):
  // a setting must show at once, and nothing is answered for a function of an unloaded module.
  int dynamicShared = -1;
  checkResult(cuFuncGetAttribute(&dynamicShared, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, function),
              CUDA_SUCCESS, "cuFuncGetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
  checkResult(cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 1024),
              CUDA_SUCCESS, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, 1024)");
  checkResult(cuFuncGetAttribute(&dynamicShared, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, function),
              CUDA_SUCCESS, "cuFuncGetAttribute after the setting");
  check(dynamicShared == 1024, "the setting shows in the next answer");
  checkResult(cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 4096),
              CUDA_SUCCESS, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, 4096)");
  checkResult(cuFuncGetAttribute(&dynamicShared, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, function),
              CUDA_SUCCESS, "cuFuncGetAttribute after the second setting");
  check(dynamicShared == 4096, "the second setting shows too");
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // deprecated, still exported and called
  // Fixed four-byte banks: a valid setting of a live function does nothing, a bad one is refused.
  checkResult(cuFuncSetSharedMemConfig(function, CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE), CUDA_SUCCESS,
              "cuFuncSetSharedMemConfig(eight bytes)");
  checkResult(cuFuncSetSharedMemConfig(function, static_cast<CUsharedconfig>(3)), CUDA_ERROR_INVALID_VALUE,
              "cuFuncSetSharedMemConfig(no such setting)");
  checkResult(
      cuFuncSetSharedMemConfig(reinterpret_cast<CUfunction>(0x5151), CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE),
      CUDA_ERROR_INVALID_HANDLE, "cuFuncSetSharedMemConfig of a forged function");
#pragma GCC diagnostic pop
  checkResult(cuModuleUnload(module), CUDA_SUCCESS, "cuModuleUnload");
  checkResult(cuFuncGetAttribute(&dynamicShared, CU_FUNC_ATTRIBUTE_NUM_REGS, function),
              CUDA_ERROR_INVALID_HANDLE, "cuFuncGetAttribute of a function of an unloaded module");
  checkResult(cuMemcpyHtoD(table, in.data(), 64), CUDA_ERROR_INVALID_VALUE,
              "a copy into the variable of an unloaded module");
  checkResult(cuModuleGetGlobal(&again, &bytes, module, "table"), CUDA_ERROR_INVALID_HANDLE,
              "cuModuleGetGlobal on an unloaded module");
}

// Pitched allocations, 2D copies with offsets, 2D fills; arrays, copies to and from them, objects.
void rectangles() {
  CUdeviceptr pitched = 0;
  size_t pitch = 0;
  checkResult(cuMemAllocPitch(&pitched, &pitch, 100, 8, 4), CUDA_SUCCESS, "cuMemAllocPitch");
  void* runtimePitched = nullptr;
  size_t runtimePitch = 0;
  cudaMallocPitch(&runtimePitched, &runtimePitch, 100, 8);
  check(pitch == runtimePitch && pitch >= 100, "the same pitch through both APIs");
  checkResult(cuMemAllocPitch(&pitched, &pitch, 100, 8, 3), CUDA_ERROR_INVALID_VALUE,
              "cuMemAllocPitch with a 3-byte element");
  const std::vector<unsigned char> in = pattern(100 * 8, 5);
  CUDA_MEMCPY2D up{};
  up.srcMemoryType = CU_MEMORYTYPE_HOST;
  up.srcHost = in.data();
  up.srcPitch = 100;
  up.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  up.dstDevice = pitched;
  up.dstPitch = pitch;
  up.WidthInBytes = 100;
  up.Height = 8;
  checkResult(cuMemcpy2D(&up), CUDA_SUCCESS, "cuMemcpy2D host to pitched device memory");
  // Rows 2..5, bytes 10..59, back to a tight host buffer.
  std::vector<unsigned char> out(50 * 4, 0);
  CUDA_MEMCPY2D down{};
  down.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  down.srcDevice = pitched;
  down.srcPitch = pitch;
  down.srcXInBytes = 10;
  down.srcY = 2;
  down.dstMemoryType = CU_MEMORYTYPE_HOST;
  down.dstHost = out.data();
  down.dstPitch = 50;
  down.WidthInBytes = 50;
  down.Height = 4;
  checkResult(cuMemcpy2D(&down), CUDA_SUCCESS, "cuMemcpy2D of a sub-rectangle back");
  bool exact = true;
  for (size_t row = 0; row < 4; ++row)
    for (size_t col = 0; col < 50; ++col)
      exact = exact && out[row * 50 + col] == in[(row + 2) * 100 + col + 10];
  check(exact, "the sub-rectangle came back");
  checkResult(cuMemsetD2D32(pitched, pitch, 0x11111111u, 25, 8), CUDA_SUCCESS, "cuMemsetD2D32");
  std::vector<unsigned char> row(pitch, 0);
  checkResult(cuMemcpyDtoH(row.data(), pitched + 3 * pitch, pitch), CUDA_SUCCESS, "cuMemcpyDtoH of one row");
  bool filled = true;
  for (size_t col = 0; col < 100; ++col) filled = filled && row[col] == 0x11;
  check(filled, "cuMemsetD2D32 filled the row's 100 bytes");
  // Into a driver-API array (100 bytes a row: 25 floats) and back, through a texture and a surface.
  CUDA_ARRAY3D_DESCRIPTOR shape{};
  shape.Width = 25;
  shape.Height = 8;
  shape.Format = CU_AD_FORMAT_FLOAT;
  shape.NumChannels = 1;
  shape.Flags = CUDA_ARRAY3D_SURFACE_LDST;
  CUarray array = nullptr;
  checkResult(cuArray3DCreate(&array, &shape), CUDA_SUCCESS, "cuArray3DCreate");
  CUDA_ARRAY3D_DESCRIPTOR shapeBack{};
  checkResult(cuArray3DGetDescriptor(&shapeBack, array), CUDA_SUCCESS, "cuArray3DGetDescriptor");
  check(shapeBack.Width == 25 && shapeBack.Height == 8 && shapeBack.Format == CU_AD_FORMAT_FLOAT &&
            shapeBack.NumChannels == 1 && shapeBack.Flags == CUDA_ARRAY3D_SURFACE_LDST,
        "cuArray3DGetDescriptor answers the array's shape");
  CUDA_MEMCPY2D toArray = up;
  toArray.dstMemoryType = CU_MEMORYTYPE_ARRAY;
  toArray.dstArray = array;
  checkResult(cuMemcpy2D(&toArray), CUDA_SUCCESS, "cuMemcpy2D into an array");
  CUDA_MEMCPY3D fromArray{};
  std::vector<unsigned char> arrayBack(100 * 8, 0);
  fromArray.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  fromArray.srcArray = array;
  fromArray.dstMemoryType = CU_MEMORYTYPE_HOST;
  fromArray.dstHost = arrayBack.data();
  fromArray.dstPitch = 100;
  fromArray.dstHeight = 8;
  fromArray.WidthInBytes = 100;
  fromArray.Height = 8;
  fromArray.Depth = 1;
  checkResult(cuMemcpy3D(&fromArray), CUDA_SUCCESS, "cuMemcpy3D out of an array");
  check(arrayBack == in, "the array round trip keeps every byte");
  CUDA_MEMCPY2D pastArray = toArray;
  pastArray.dstY = 1;
  checkResult(cuMemcpy2D(&pastArray), CUDA_ERROR_INVALID_VALUE, "cuMemcpy2D one row past the array");
  CUDA_RESOURCE_DESC resource{};
  resource.resType = CU_RESOURCE_TYPE_ARRAY;
  resource.res.array.hArray = array;
  CUDA_TEXTURE_DESC texture{};
  CUtexObject tex = 0;
  checkResult(cuTexObjectCreate(&tex, &resource, &texture, nullptr), CUDA_SUCCESS, "cuTexObjectCreate");
  CUsurfObject surface = 0;
  checkResult(cuSurfObjectCreate(&surface, &resource), CUDA_SUCCESS, "cuSurfObjectCreate");
  CUDA_RESOURCE_DESC linear{};
  linear.resType = CU_RESOURCE_TYPE_PITCH2D;
  linear.res.pitch2D.devPtr = pitched;
  linear.res.pitch2D.format = CU_AD_FORMAT_FLOAT;
  linear.res.pitch2D.numChannels = 1;
  linear.res.pitch2D.width = 25;
  linear.res.pitch2D.height = 9;
  linear.res.pitch2D.pitchInBytes = pitch;
  CUtexObject past = 0;
  checkResult(cuTexObjectCreate(&past, &linear, &texture, nullptr), CUDA_ERROR_INVALID_VALUE,
              "cuTexObjectCreate over a pitched range one row past its allocation");
  checkResult(cuTexObjectDestroy(tex + 77), CUDA_ERROR_INVALID_VALUE, "cuTexObjectDestroy(forged)");
  checkResult(cuTexObjectDestroy(tex), CUDA_SUCCESS, "cuTexObjectDestroy");
  checkResult(cuSurfObjectDestroy(surface), CUDA_SUCCESS, "cuSurfObjectDestroy");
  checkResult(cuArrayDestroy(array), CUDA_SUCCESS, "cuArrayDestroy");
  checkResult(cuArrayDestroy(array), CUDA_ERROR_INVALID_VALUE, "cuArrayDestroy twice");
  CUDA_MEMCPY2D tooWide = up;
  tooWide.WidthInBytes = pitch + 1;
  checkResult(cuMemcpy2D(&tooWide), CUDA_ERROR_INVALID_VALUE, "cuMemcpy2D wider than the pitch");
  checkResult(cuMemFree(pitched), CUDA_SUCCESS, "cuMemFree of the pitched allocation");
  cudaFree(runtimePitched);

  char busId[32] = {};
  char runtimeBusId[32] = {};
  checkResult(cuDeviceGetPCIBusId(busId, sizeof busId, 0), CUDA_SUCCESS, "cuDeviceGetPCIBusId");
  cudaDeviceGetPCIBusId(runtimeBusId, sizeof runtimeBusId, 0);
  check(std::strcmp(busId, runtimeBusId) == 0, "the same PCI bus id through both APIs");
}

// A driver-API array of 16 x 4 floats and a texture and a surface object on it.
struct ArrayObjects {
  CUarray array = nullptr;
  CUtexObject texture = 0;
  CUsurfObject surface = 0;
};
ArrayObjects makeArrayObjects(const char* when) {
  ArrayObjects made;
  CUDA_ARRAY3D_DESCRIPTOR shape{};
  shape.Width = 16;
  shape.Height = 4;
  shape.Format = CU_AD_FORMAT_FLOAT;
  shape.NumChannels = 1;
  shape.Flags = CUDA_ARRAY3D_SURFACE_LDST;
  checkResult(cuArray3DCreate(&made.array, &shape), CUDA_SUCCESS, when);
  CUDA_RESOURCE_DESC resource{};
  resource.resType = CU_RESOURCE_TYPE_ARRAY;
  resource.res.array.hArray = made.array;
  CUDA_TEXTURE_DESC texture{};
  checkResult(cuTexObjectCreate(&made.texture, &resource, &texture, nullptr), CUDA_SUCCESS, when);
  checkResult(cuSurfObjectCreate(&made.surface, &resource), CUDA_SUCCESS, when);
  return made;
}

// cuDevicePrimaryCtxReset frees what the context held, whichever API allocated it, and destroys its
// arrays and texture and surface objects: their queries answer none of them afterwards, while
// objects made after the reset are answered.
void primaryReset() {
  CUdeviceptr driverBuffer = 0;
  void* runtimeBuffer = nullptr;
  checkResult(cuMemAlloc(&driverBuffer, 4096), CUDA_SUCCESS, "cuMemAlloc before the reset");
  cudaMalloc(&runtimeBuffer, 4096);
  const ArrayObjects before = makeArrayObjects("an array and its objects before the reset");
  const cudaChannelFormatDesc channel = cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindFloat);
  cudaArray_t runtimeArray = nullptr;
  check(cudaMallocArray(&runtimeArray, &channel, 8, 8) == cudaSuccess, "cudaMallocArray before the reset");
  checkResult(cuDevicePrimaryCtxReset(0), CUDA_SUCCESS, "cuDevicePrimaryCtxReset");
  checkResult(cuMemFree(driverBuffer), CUDA_ERROR_INVALID_VALUE, "cuMemFree after the reset");
  check(cudaFree(runtimeBuffer) != cudaSuccess, "cudaFree after the reset");
  cudaGetLastError();
  CUDA_ARRAY3D_DESCRIPTOR shapeBack{};
  checkResult(cuArray3DGetDescriptor(&shapeBack, before.array), CUDA_ERROR_INVALID_HANDLE,
              "cuArray3DGetDescriptor of an array the reset destroyed");
  CUDA_RESOURCE_DESC resourceBack{};
  checkResult(cuTexObjectGetResourceDesc(&resourceBack, before.texture), CUDA_ERROR_INVALID_VALUE,
              "cuTexObjectGetResourceDesc of a texture object the reset destroyed");
  checkResult(cuSurfObjectGetResourceDesc(&resourceBack, before.surface), CUDA_ERROR_INVALID_VALUE,
              "cuSurfObjectGetResourceDesc of a surface object the reset destroyed");
  cudaChannelFormatDesc channelBack{};
  cudaExtent extent{};
  unsigned flags = 0;
  check(cudaArrayGetInfo(&channelBack, &extent, &flags, runtimeArray) != cudaSuccess,
        "cudaArrayGetInfo of a runtime array the reset destroyed");
  cudaGetLastError();
  const ArrayObjects after = makeArrayObjects("an array and its objects after the reset");
  checkResult(cuTexObjectGetResourceDesc(&resourceBack, after.texture), CUDA_SUCCESS,
              "cuTexObjectGetResourceDesc of a texture object made after the reset");
  check(resourceBack.resType == CU_RESOURCE_TYPE_ARRAY && resourceBack.res.array.hArray == after.array,
        "it answers its own array");
  checkResult(cuSurfObjectGetResourceDesc(&resourceBack, after.surface), CUDA_SUCCESS,
              "cuSurfObjectGetResourceDesc of a surface object made after the reset");
  checkResult(cuArray3DGetDescriptor(&shapeBack, after.array), CUDA_SUCCESS,
              "cuArray3DGetDescriptor of an array made after the reset");
  cuTexObjectDestroy(after.texture);
  cuSurfObjectDestroy(after.surface);
  cuArrayDestroy(after.array);
  checkResult(cuMemAlloc(&driverBuffer, 4096), CUDA_SUCCESS, "cuMemAlloc after the reset");
  checkResult(cuMemFree(driverBuffer), CUDA_SUCCESS, "cuMemFree");
}

// The private context-local storage a CUDA runtime in the program keeps its state in: a created
// context's entries go with cuCtxDestroy, the primary context's with its reset, each destructor
// run once.
int gStorageDestroyed = 0;
void storageDestroyed(CUcontext, void*, void*) { ++gStorageDestroyed; }

// A private table, asked for as a CUDA runtime asks (the ids: client/cuda/export_table_ids.h).
void* const* exportTable(const agileos::client::cuda_shim::ExportTableId& id, const char* what) {
  CUuuid uuid{};
  std::memcpy(uuid.bytes, id.data(), sizeof uuid.bytes);
  const void* table = nullptr;
  checkResult(cuGetExportTable(&table, &uuid), CUDA_SUCCESS, what);
  return static_cast<void* const*>(table);
}

void contextLocalStorage() {
  void* const* table =
      exportTable(agileos::client::cuda_shim::kContextStorageId, "cuGetExportTable(context-local storage)");
  using Put = CUresult (*)(CUcontext, void*, void*, void (*)(CUcontext, void*, void*));
  using Get = CUresult (*)(void**, CUcontext, void*);
  const auto put = reinterpret_cast<Put>(table[0]);
  const auto get = reinterpret_cast<Get>(table[2]);
  static int key = 0, value = 0;
  void* found = nullptr;
  CUcontext created = nullptr;
  checkResult(cuCtxCreate(&created, nullptr, 0, 0), CUDA_SUCCESS, "cuCtxCreate (made current)");
  checkResult(put(nullptr, &key, &value, storageDestroyed), CUDA_SUCCESS, "a value in the created context");
  checkResult(get(&found, created, &key), CUDA_SUCCESS, "read back by its handle");
  CUcontext primary = nullptr;
  cuDevicePrimaryCtxRetain(&primary, 0);
  checkResult(get(&found, primary, &key), CUDA_ERROR_INVALID_HANDLE, "not in the primary context");
  gStorageDestroyed = 0;
  checkResult(cuCtxDestroy(created), CUDA_SUCCESS, "cuCtxDestroy");
  check(gStorageDestroyed == 1, "the destroyed context's entry was destroyed once");
  checkResult(put(primary, &key, &value, storageDestroyed), CUDA_SUCCESS, "a value in the primary context");
  checkResult(cuDevicePrimaryCtxReset(0), CUDA_SUCCESS, "cuDevicePrimaryCtxReset");
  check(gStorageDestroyed == 2, "the reset dropped the primary context's entry");
  checkResult(get(&found, primary, &key), CUDA_ERROR_INVALID_HANDLE, "gone after the reset");
  cuDevicePrimaryCtxRelease(0);
}

// cuStreamGetCtx: a created stream answers the context it was made in, whichever is current now;
// the special streams answer the current context (none current: CUDA_ERROR_INVALID_CONTEXT).
void streamContexts() {
  CUcontext primary = nullptr, created = nullptr, got = nullptr, saved = nullptr;
  checkResult(cuCtxGetCurrent(&saved), CUDA_SUCCESS, "cuCtxGetCurrent (to restore)");
  cuDevicePrimaryCtxRetain(&primary, 0);
  checkResult(cuCtxSetCurrent(primary), CUDA_SUCCESS, "the primary context current");
  CUstream inPrimary = nullptr, inCreated = nullptr;
  checkResult(cuStreamCreate(&inPrimary, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS,
              "a stream in the primary context");
  checkResult(cuCtxCreate(&created, nullptr, 0, 0), CUDA_SUCCESS, "cuCtxCreate (made current)");
  checkResult(cuStreamCreate(&inCreated, CU_STREAM_DEFAULT), CUDA_SUCCESS, "a stream in the created context");
  cudaStream_t runtimeStream = nullptr;
  check(cudaStreamCreate(&runtimeStream) == cudaSuccess, "a runtime stream with the created context current");
  checkResult(cuStreamGetCtx(inPrimary, &got), CUDA_SUCCESS, "cuStreamGetCtx(primary's stream)");
  check(got == primary, "the primary context's stream answers it, with another context current");
  checkResult(cuStreamGetCtx(inCreated, &got), CUDA_SUCCESS, "cuStreamGetCtx(created context's stream)");
  check(got == created, "the created context's stream answers it");
  checkResult(cuStreamGetCtx(reinterpret_cast<CUstream>(runtimeStream), &got), CUDA_SUCCESS,
              "cuStreamGetCtx(runtime stream)");
  check(got == created, "a runtime stream answers the context current when it was made");
  checkResult(cuStreamGetCtx(nullptr, &got), CUDA_SUCCESS, "cuStreamGetCtx(NULL)");
  check(got == created, "the NULL stream answers the current context");
  checkResult(cuStreamGetCtx(CU_STREAM_PER_THREAD, &got), CUDA_SUCCESS, "cuStreamGetCtx(per-thread)");
  check(got == created, "the per-thread stream answers the current context");
  CUgreenCtx green = reinterpret_cast<CUgreenCtx>(0x1);
  checkResult(cuStreamGetCtx_v2(inPrimary, &got, &green), CUDA_SUCCESS, "cuStreamGetCtx_v2");
  check(got == primary && green == nullptr, "cuStreamGetCtx_v2: the context, and no green context");
  checkResult(cuStreamGetCtx(reinterpret_cast<CUstream>(0x5151), &got), CUDA_ERROR_INVALID_HANDLE,
              "cuStreamGetCtx of a forged stream");
  checkResult(cuStreamGetCtx(inPrimary, nullptr), CUDA_ERROR_INVALID_VALUE, "cuStreamGetCtx(null)");
  check(cudaStreamDestroy(runtimeStream) == cudaSuccess, "cudaStreamDestroy");
  checkResult(cuStreamDestroy(inCreated), CUDA_SUCCESS, "cuStreamDestroy (created context's)");
  checkResult(cuStreamGetCtx(inCreated, &got), CUDA_ERROR_INVALID_HANDLE,
              "cuStreamGetCtx of a destroyed stream");
  checkResult(cuCtxDestroy(created), CUDA_SUCCESS, "cuCtxDestroy");
  checkResult(cuCtxSetCurrent(nullptr), CUDA_SUCCESS, "no context current");
  CUcontext none = nullptr;
  checkResult(cuCtxGetCurrent(&none), CUDA_SUCCESS, "cuCtxGetCurrent");
  if (none == nullptr) {
    checkResult(cuStreamGetCtx(nullptr, &got), CUDA_ERROR_INVALID_CONTEXT,
                "cuStreamGetCtx(NULL), none current");
  }
  checkResult(cuStreamDestroy(inPrimary), CUDA_SUCCESS, "cuStreamDestroy (primary's)");
  checkResult(cuCtxSetCurrent(saved), CUDA_SUCCESS, "the saved context current again");
  cuDevicePrimaryCtxRelease(0);
}

// The tools-context table cuBLASLt asks for: a context's number (cuCtxGetId's), an object of the
// context and a value of that object, as the driver answered them; anything else fails closed.
void toolsContextTable() {
  void* const* table =
      exportTable(agileos::client::cuda_shim::kToolsContextId, "cuGetExportTable(tools context)");
  check(reinterpret_cast<std::uintptr_t>(table[0]) == 93 * sizeof(void*), "93 entries, as driver 580's");
  using Number = CUresult (*)(CUcontext, unsigned long long*);
  using Object = CUresult (*)(CUcontext, unsigned long long, const void**);
  using Value = CUresult (*)(CUcontext, const void*, unsigned long long*);
  const auto number = reinterpret_cast<Number>(table[4]);
  const auto object = reinterpret_cast<Object>(table[51]);
  const auto value = reinterpret_cast<Value>(table[39]);
  CUcontext primary = nullptr, created = nullptr;
  cuDevicePrimaryCtxRetain(&primary, 0);
  unsigned long long got = 0, id1 = 0, id2 = 0;
  checkResult(number(primary, &got), CUDA_SUCCESS, "entry 4 of the primary context");
  checkResult(cuCtxGetId(primary, &id1), CUDA_SUCCESS, "cuCtxGetId of the primary context");
  check(got == 1 && id1 == 1, "the primary context is number 1, as natively");
  checkResult(cuCtxCreate(&created, nullptr, 0, 0), CUDA_SUCCESS, "cuCtxCreate");
  checkResult(cuCtxGetId(created, &id2), CUDA_SUCCESS, "cuCtxGetId of a created context");
  check(id2 > 1, "a created context has a number of its own");
  checkResult(number(reinterpret_cast<CUcontext>(0x1234), &got), CUDA_ERROR_INVALID_CONTEXT,
              "entry 4 of a forged context");
  checkResult(number(primary, nullptr), CUDA_ERROR_INVALID_VALUE, "entry 4 without an output");
  const void* handle = nullptr;
  checkResult(object(primary, 0, &handle), CUDA_SUCCESS, "entry 51");
  checkResult(value(primary, handle, &got), CUDA_SUCCESS, "entry 39 of that object");
  check(got == 7, "7, as the driver answered");
  // The second argument is a stream (cublasSetStream's): a live one, or a default-stream spelling
  // (1: CU_STREAM_LEGACY); anything else is no stream of this process.
  checkResult(object(primary, 1, &handle), CUDA_SUCCESS, "entry 51 of the legacy stream");
  checkResult(object(primary, 0x5eed, &handle), CUDA_ERROR_INVALID_HANDLE, "entry 51 of a forged stream");
  CUstream ownStream = nullptr;
  checkResult(cuStreamCreate(&ownStream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS, "entry 51: cuStreamCreate");
  checkResult(object(primary, reinterpret_cast<unsigned long long>(ownStream), &handle), CUDA_SUCCESS,
              "entry 51 of a created stream (cuBLAS on a stream of its own)");
  checkResult(value(primary, handle, &got), CUDA_SUCCESS, "entry 39 of the created stream's object");
  checkResult(cuStreamDestroy(ownStream), CUDA_SUCCESS, "entry 51: cuStreamDestroy");
  checkResult(object(primary, reinterpret_cast<unsigned long long>(ownStream), &handle),
              CUDA_ERROR_INVALID_HANDLE, "entry 51 of a destroyed stream");
  checkResult(value(primary, &got, &got), CUDA_ERROR_NOT_SUPPORTED, "entry 39 of another object");
  using Unknown = CUresult (*)();
  checkResult(reinterpret_cast<Unknown>(table[5])(), CUDA_ERROR_NOT_SUPPORTED,
              "an unknown entry fails closed");
  cuCtxDestroy(created);
  cuCtxSetCurrent(primary);
  cuDevicePrimaryCtxRelease(0);
}

// Libraries load lazily: cuLibraryLoadData keeps the image, the first use loads it through the
// worker's gate; an image that does not load fails its first use, not the load. A CUkernel is
// the library module's CUfunction.
void librariesAndKernels() {
  CUlibrary library = nullptr;
  checkResult(cuLibraryLoadData(&library, kModulePtx, nullptr, nullptr, 0, nullptr, nullptr, 0), CUDA_SUCCESS,
              "cuLibraryLoadData(PTX)");
  CUkernel kernel = nullptr;
  checkResult(cuLibraryGetKernel(&kernel, library, "touch"), CUDA_SUCCESS, "cuLibraryGetKernel");
  CUfunction function = nullptr;
  checkResult(cuKernelGetFunction(&function, kernel), CUDA_SUCCESS, "cuKernelGetFunction");
  check(reinterpret_cast<void*>(function) == reinterpret_cast<void*>(kernel), "the kernel is its function");
  const char* name = nullptr;
  checkResult(cuKernelGetName(&name, kernel), CUDA_SUCCESS, "cuKernelGetName");
  check(name != nullptr && std::strcmp(name, "touch") == 0, "the kernel's name");
  CUlibrary owner = nullptr;
  checkResult(cuKernelGetLibrary(&owner, kernel), CUDA_SUCCESS, "cuKernelGetLibrary");
  check(owner == library, "the kernel's library");
  CUmodule module = nullptr;
  checkResult(cuLibraryGetModule(&module, library), CUDA_SUCCESS, "cuLibraryGetModule");
  CUmodule functionModule = nullptr;
  checkResult(cuFuncGetModule(&functionModule, function), CUDA_SUCCESS, "cuFuncGetModule");
  check(module == functionModule, "one module behind the library and the function");
  CUdeviceptr table = 0;
  size_t bytes = 0;
  checkResult(cuLibraryGetGlobal(&table, &bytes, library, "table"), CUDA_SUCCESS, "cuLibraryGetGlobal");
  check(bytes == 64, "the global's size");
  size_t offset = 1, size = 0;
  checkResult(cuKernelGetParamInfo(kernel, 0, &offset, &size), CUDA_SUCCESS, "cuKernelGetParamInfo(0)");
  check(offset == 0 && size == 8, "the first parameter: a pointer at offset 0");
  size_t available = 0, more = 0;
  checkResult(cuOccupancyAvailableDynamicSMemPerBlock(&available, function, 1, 128), CUDA_SUCCESS,
              "cuOccupancyAvailableDynamicSMemPerBlock(1 block)");
  checkResult(cuOccupancyAvailableDynamicSMemPerBlock(&more, function, 4, 128), CUDA_SUCCESS,
              "cuOccupancyAvailableDynamicSMemPerBlock(4 blocks)");
  int blocks = 0;
  cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, function, 128, available);
  check(available > 0 && more < available && blocks >= 1,
        "one block may take more than each of four, and fits");
  cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, function, 128, available + 1024);
  check(blocks < 1, "a kilobyte more does not fit");
  // Clusters: the worker asks the driver (the fake answers as an H200 would in shape).
  CUlaunchConfig config{};
  config.blockDimX = 128;
  config.blockDimY = config.blockDimZ = 1;
  config.gridDimX = 2;
  config.gridDimY = config.gridDimZ = 1;
  int clusters = -1, multiprocessors = 0;
  cuDeviceGetAttribute(&multiprocessors, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0);
  cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, function, 128, 0);
  checkResult(cuOccupancyMaxActiveClusters(&clusters, function, &config), CUDA_SUCCESS,
              "cuOccupancyMaxActiveClusters without a cluster dimension");
  check(clusters == blocks * multiprocessors && clusters > 0, "as many one-block clusters as blocks fit");
  CUlaunchAttribute attributes[2]{};
  attributes[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attributes[0].value.clusterDim.x = 2;
  attributes[0].value.clusterDim.y = attributes[0].value.clusterDim.z = 1;
  config.attrs = attributes;
  config.numAttrs = 1;
  checkResult(cuOccupancyMaxActiveClusters(&clusters, function, &config), CUDA_SUCCESS,
              "cuOccupancyMaxActiveClusters of two-block clusters");
  check(clusters == blocks * multiprocessors / 2, "half as many two-block clusters");
  int clusterSize = 0;
  checkResult(cuOccupancyMaxPotentialClusterSize(&clusterSize, function, &config), CUDA_SUCCESS,
              "cuOccupancyMaxPotentialClusterSize");
  check(clusterSize == 8, "eight blocks, the portable most");
  checkResult(cuOccupancyMaxActiveClusters(&clusters, reinterpret_cast<CUfunction>(0x77), &config),
              CUDA_ERROR_INVALID_HANDLE, "cuOccupancyMaxActiveClusters of a forged function");
  CUdeviceptr target = 0;
  checkResult(cuMemAlloc(&target, 4096), CUDA_SUCCESS, "cuMemAlloc for the cluster launches");
  void* params[] = {&target};
  checkResult(cuLaunchKernelEx(&config, function, params, nullptr), CUDA_SUCCESS,
              "cuLaunchKernelEx of two two-block clusters");
  attributes[1].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
  attributes[1].value.priority = -1;
  config.numAttrs = 2;
  checkResult(cuLaunchKernelEx(&config, function, params, nullptr), CUDA_SUCCESS,
              "cuLaunchKernelEx with a cluster and a priority");
  config.gridDimX = 3;
  checkResult(cuLaunchKernelEx(&config, function, params, nullptr), CUDA_ERROR_INVALID_CLUSTER_SIZE,
              "cuLaunchKernelEx whose clusters do not tile the grid (the driver's refusal)");
  config.gridDimX = 9;
  attributes[0].value.clusterDim.x = 9;
  checkResult(cuLaunchKernelEx(&config, function, params, nullptr), CUDA_ERROR_INVALID_CLUSTER_SIZE,
              "cuLaunchKernelEx of nine-block clusters (past the portable size)");
  attributes[0].value.clusterDim.x = 0;
  checkResult(cuLaunchKernelEx(&config, function, params, nullptr), CUDA_ERROR_INVALID_VALUE,
              "cuLaunchKernelEx of empty clusters (the driver's refusal)");
  attributes[0].value.clusterDim.x = 1u << 31;
  checkResult(cuLaunchKernelEx(&config, function, params, nullptr), CUDA_ERROR_INVALID_CLUSTER_SIZE,
              "cuLaunchKernelEx of a cluster edge of 2^31");
  // Edges whose product wraps around 2^64 to 0: still far too large a cluster.
  attributes[0].value.clusterDim.x = attributes[0].value.clusterDim.y = 1u << 31;
  attributes[0].value.clusterDim.z = 4;
  checkResult(cuOccupancyMaxActiveClusters(&clusters, function, &config), CUDA_ERROR_INVALID_CLUSTER_SIZE,
              "cuOccupancyMaxActiveClusters of clusters whose block count wraps to 0");
  attributes[0].value.clusterDim.y = attributes[0].value.clusterDim.z = 1;
  attributes[0].value.clusterDim.x = 1;
  attributes[1].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT;
  checkResult(cuLaunchKernelEx(&config, function, params, nullptr), CUDA_ERROR_NOT_SUPPORTED,
              "cuLaunchKernelEx with a programmatic event (an event handle: not passed on)");
  config.numAttrs = 17;
  checkResult(cuLaunchKernelEx(&config, function, params, nullptr), CUDA_ERROR_INVALID_VALUE,
              "cuLaunchKernelEx with 17 attributes");
  config.numAttrs = 1;
  const int noAttribute = 9999;  // no CUlaunchAttributeID: the program may put any bits there
  std::memcpy(&attributes[0].id, &noAttribute, sizeof noAttribute);
  checkResult(cuOccupancyMaxActiveClusters(&clusters, function, &config), CUDA_ERROR_NOT_SUPPORTED,
              "cuOccupancyMaxActiveClusters with an attribute that is none fails closed");
  checkResult(cuLaunchKernelEx(&config, function, params, nullptr), CUDA_ERROR_NOT_SUPPORTED,
              "cuLaunchKernelEx with an attribute that is none fails closed");
  // The runtime's cudaLaunchKernelExC takes the same attributes, in the runtime's spelling.
  cudaLaunchAttribute runtimeAttributes[2]{};
  runtimeAttributes[0].id = cudaLaunchAttributeClusterDimension;
  runtimeAttributes[0].val.clusterDim.x = 2;
  runtimeAttributes[0].val.clusterDim.y = runtimeAttributes[0].val.clusterDim.z = 1;
  runtimeAttributes[1].id = cudaLaunchAttributePriority;
  runtimeAttributes[1].val.priority = -1;
  cudaLaunchConfig_t runtimeConfig{};
  runtimeConfig.gridDim = dim3(4, 1, 1);
  runtimeConfig.blockDim = dim3(128, 1, 1);
  runtimeConfig.attrs = runtimeAttributes;
  runtimeConfig.numAttrs = 2;
  const void* kernelHandle = reinterpret_cast<const void*>(function);
  check(cudaLaunchKernelExC(&runtimeConfig, kernelHandle, params) == cudaSuccess,
        "cudaLaunchKernelExC of two-block clusters with a priority");
  int runtimeClusters = 0, runtimeSize = 0;
  check(cudaOccupancyMaxActiveClusters(&runtimeClusters, kernelHandle, &runtimeConfig) == cudaSuccess &&
            runtimeClusters == clusters,
        "cudaOccupancyMaxActiveClusters answers as cuOccupancyMaxActiveClusters");
  check(cudaOccupancyMaxPotentialClusterSize(&runtimeSize, kernelHandle, &runtimeConfig) == cudaSuccess &&
            runtimeSize == 8,
        "cudaOccupancyMaxPotentialClusterSize");
  runtimeConfig.gridDim = dim3(3, 1, 1);
  check(cudaLaunchKernelExC(&runtimeConfig, kernelHandle, params) == cudaErrorInvalidClusterSize,
        "cudaLaunchKernelExC whose clusters do not tile the grid (the driver's refusal)");
  cudaGetLastError();
  runtimeAttributes[1].id = cudaLaunchAttributeProgrammaticEvent;
  runtimeConfig.gridDim = dim3(4, 1, 1);
  check(cudaLaunchKernelExC(&runtimeConfig, kernelHandle, params) == cudaErrorNotSupported,
        "cudaLaunchKernelExC with a programmatic event fails closed");
  cudaGetLastError();
  check(cudaLaunchKernelExC(nullptr, kernelHandle, params) == cudaErrorInvalidValue,
        "cudaLaunchKernelExC without a config");
  cudaGetLastError();
  // The runtime's queries on the same kernel answer as the driver's.
  {
    size_t runtimeOffset = 1, runtimeSize = 0, runtimeAvailable = 0, driverAvailable = 0;
    check(cudaFuncGetParamInfo(kernelHandle, 0, &runtimeOffset, &runtimeSize) == cudaSuccess &&
              runtimeOffset == 0 && runtimeSize == 8,
          "cudaFuncGetParamInfo: a pointer at offset 0");
    check(cudaFuncGetParamInfo(kernelHandle, 1, &runtimeOffset, &runtimeSize) == cudaErrorInvalidValue,
          "cudaFuncGetParamInfo past the last parameter");
    cudaGetLastError();
    check(cudaOccupancyAvailableDynamicSMemPerBlock(&runtimeAvailable, kernelHandle, 2, 128) == cudaSuccess &&
              cuOccupancyAvailableDynamicSMemPerBlock(&driverAvailable, function, 2, 128) == CUDA_SUCCESS &&
              runtimeAvailable == driverAvailable && runtimeAvailable > 0,
          "cudaOccupancyAvailableDynamicSMemPerBlock answers as cuOccupancyAvailableDynamicSMemPerBlock");
  }
  // A kernel node's attributes (cudaGraphKernelNodeSetAttribute): the launch's reader, so a graph
  // of two-block clusters launches, the refusals are a launch's, and a copy carries them over.
  {
    cudaGraph_t graph = nullptr;
    check(cudaGraphCreate(&graph, 0) == cudaSuccess, "attributes: cudaGraphCreate");
    cudaKernelNodeParams node{};
    node.func = const_cast<void*>(kernelHandle);
    node.gridDim = dim3(4, 1, 1);
    node.blockDim = dim3(128, 1, 1);
    node.kernelParams = params;
    cudaGraphNode_t first = nullptr, second = nullptr;
    check(cudaGraphAddKernelNode(&first, graph, nullptr, 0, &node) == cudaSuccess &&
              cudaGraphAddKernelNode(&second, graph, &first, 1, &node) == cudaSuccess,
          "attributes: two kernel nodes");
    cudaKernelNodeAttrValue value{};
    value.clusterDim.x = 2;
    value.clusterDim.y = value.clusterDim.z = 1;
    check(cudaGraphKernelNodeSetAttribute(first, cudaLaunchAttributeClusterDimension, &value) == cudaSuccess,
          "cudaGraphKernelNodeSetAttribute (cluster dimension)");
    value = {};
    value.priority = -1;
    check(cudaGraphKernelNodeSetAttribute(first, cudaLaunchAttributePriority, &value) == cudaSuccess,
          "cudaGraphKernelNodeSetAttribute (priority)");
    cudaKernelNodeAttrValue got{};
    check(cudaGraphKernelNodeGetAttribute(first, cudaLaunchAttributeClusterDimension, &got) == cudaSuccess &&
              got.clusterDim.x == 2 && got.clusterDim.y == 1,
          "cudaGraphKernelNodeGetAttribute answers the cluster dimension set");
    check(cudaGraphKernelNodeGetAttribute(second, cudaLaunchAttributePriority, &got) == cudaSuccess &&
              got.priority == 0,
          "an attribute never set reads as zero");
    check(cudaGraphKernelNodeSetAttribute(first, cudaLaunchAttributeProgrammaticEvent, &value) ==
              cudaErrorNotSupported,
          "cudaGraphKernelNodeSetAttribute with a programmatic event fails closed, as a launch does");
    cudaGetLastError();
    check(cudaGraphKernelNodeCopyAttributes(second, first) == cudaSuccess &&
              cudaGraphKernelNodeGetAttribute(second, cudaLaunchAttributePriority, &got) == cudaSuccess &&
              got.priority == -1,
          "cudaGraphKernelNodeCopyAttributes");
    node.gridDim = dim3(4, 1, 1);
    check(cudaGraphKernelNodeSetParams(second, &node) == cudaSuccess &&
              cudaGraphKernelNodeGetAttribute(second, cudaLaunchAttributeClusterDimension, &got) ==
                  cudaSuccess &&
              got.clusterDim.x == 2,
          "new parameters keep the node's attributes");
    cudaGraphExec_t exec = nullptr;
    check(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess, "attributes: cudaGraphInstantiate");
    check(cudaGraphLaunch(exec, nullptr) == cudaSuccess, "a graph of two-block cluster launches");
    check(cudaStreamSynchronize(nullptr) == cudaSuccess, "attributes: synchronize");
    value = {};
    value.clusterDim.x = 3;
    value.clusterDim.y = value.clusterDim.z = 1;
    check(cudaGraphKernelNodeSetAttribute(first, cudaLaunchAttributeClusterDimension, &value) == cudaSuccess,
          "a three-block cluster on a four-block grid is accepted on the node");
    cudaGraphExec_t refused = nullptr;
    check(cudaGraphInstantiate(&refused, graph, 0) == cudaSuccess, "attributes: instantiate again");
    check(cudaGraphLaunch(refused, nullptr) == cudaErrorInvalidClusterSize,
          "and its launch gets the driver's refusal");
    cudaGetLastError();
    cudaStreamSynchronize(nullptr);
    cudaGetLastError();
    check(cudaGraphExecDestroy(refused) == cudaSuccess && cudaGraphExecDestroy(exec) == cudaSuccess &&
              cudaGraphDestroy(graph) == cudaSuccess,
          "attributes: destroy");
  }
  checkResult(cuCtxSynchronize(), CUDA_SUCCESS, "cuCtxSynchronize after the cluster launches");
  size_t cig = 1;
  checkResult(cuCtxGetLimit(&cig, CU_LIMIT_CIG_ENABLED), CUDA_SUCCESS, "cuCtxGetLimit(CU_LIMIT_CIG_ENABLED)");
  check(cig == 0, "not a CUDA-in-graphics context");
  checkResult(cuCtxSetLimit(CU_LIMIT_CIG_ENABLED, 1), CUDA_ERROR_UNSUPPORTED_LIMIT,
              "cuCtxSetLimit(CU_LIMIT_CIG_ENABLED) is refused");
  checkResult(cuMemFree(target), CUDA_SUCCESS, "cuMemFree");
  checkResult(cuLibraryUnload(library), CUDA_SUCCESS, "cuLibraryUnload");
  checkResult(cuKernelGetFunction(&function, kernel), CUDA_ERROR_INVALID_HANDLE,
              "cuKernelGetFunction after the unload");
  checkResult(cuLibraryGetKernel(&kernel, library, "touch"), CUDA_ERROR_INVALID_HANDLE,
              "cuLibraryGetKernel on an unloaded library");

  static const char kNotPtx[] = "this is not PTX";
  checkResult(cuLibraryLoadData(&library, kNotPtx, nullptr, nullptr, 0, nullptr, nullptr, 0), CUDA_SUCCESS,
              "cuLibraryLoadData of an image that cannot load (lazy: no error yet)");
  const CUresult first = cuLibraryGetKernel(&kernel, library, "touch");
  check(first != CUDA_SUCCESS, "its first use fails");
  checkResult(cuLibraryGetKernel(&kernel, library, "touch"), first, "and keeps failing the same way");
  checkResult(cuLibraryUnload(library), CUDA_SUCCESS, "cuLibraryUnload of a library that never loaded");
  CUlibraryOption option = static_cast<CUlibraryOption>(77);
  void* value = nullptr;
  checkResult(cuLibraryLoadData(&library, kModulePtx, nullptr, nullptr, 0, &option, &value, 1),
              CUDA_ERROR_INVALID_VALUE, "cuLibraryLoadData with an unknown library option");
  // As cuBLASLt loads its kernels: JIT options are hints (never read), and a library option may
  // come without a value array (then the image is copied).
  CUjit_option jitOption = CU_JIT_MAX_REGISTERS;
  option = CU_LIBRARY_BINARY_IS_PRESERVED;
  checkResult(cuLibraryLoadData(&library, kModulePtx, &jitOption, nullptr, 1, &option, nullptr, 1),
              CUDA_SUCCESS,
              "cuLibraryLoadData with a JIT option but no values, and a library option without a value");
  checkResult(cuLibraryGetKernel(&kernel, library, "touch"), CUDA_SUCCESS, "and its kernel loads");
  checkResult(cuLibraryUnload(library), CUDA_SUCCESS, "cuLibraryUnload");
  checkResult(cuLibraryLoadData(&library, kModulePtx, nullptr, nullptr, 0, nullptr, nullptr, 1),
              CUDA_ERROR_INVALID_VALUE, "cuLibraryLoadData with a library option count but no options");
  CUmoduleLoadingMode mode = CU_MODULE_EAGER_LOADING;
  checkResult(cuModuleGetLoadingMode(&mode), CUDA_SUCCESS, "cuModuleGetLoadingMode");
  check(mode == CU_MODULE_LAZY_LOADING, "lazy loading");
}

// The JIT linker for one input: cuLinkComplete hands back that input, which loads through the
// worker's gate like any image; several inputs, and inputs only a linker could use, fail closed.
// A link state is looked up before use: a forged or destroyed one is refused.
void linkerCalls() {
  char infoLog[256];
  char errorLog[256];
  std::memset(infoLog, 'x', sizeof infoLog);
  std::memset(errorLog, 'x', sizeof errorLog);
  CUjit_option options[] = {CU_JIT_INFO_LOG_BUFFER,  CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_WALL_TIME,        CU_JIT_OPTIMIZATION_LEVEL};
  void* values[] = {infoLog,
                    reinterpret_cast<void*>(std::uintptr_t{sizeof infoLog}),
                    errorLog,
                    reinterpret_cast<void*>(std::uintptr_t{sizeof errorLog}),
                    reinterpret_cast<void*>(std::uintptr_t{0x12345678}),
                    reinterpret_cast<void*>(std::uintptr_t{3})};
  CUlinkState state = nullptr;
  checkResult(cuLinkCreate(6, options, values, &state), CUDA_SUCCESS, "cuLinkCreate with log options");
  checkResult(cuLinkAddData(state, CU_JIT_INPUT_PTX, const_cast<char*>(kModulePtx), sizeof kModulePtx,
                            "touch.ptx", 0, nullptr, nullptr),
              CUDA_SUCCESS, "cuLinkAddData(PTX)");
  void* image = nullptr;
  size_t imageSize = 0;
  checkResult(cuLinkComplete(state, &image, &imageSize), CUDA_SUCCESS, "cuLinkComplete of one input");
  check(image != nullptr && imageSize == sizeof kModulePtx && std::memcmp(image, kModulePtx, imageSize) == 0,
        "the output is the input");
  check(infoLog[0] == '\0' && reinterpret_cast<std::uintptr_t>(values[1]) == 1,
        "an empty info log, its size written back");
  check(errorLog[0] == '\0' && reinterpret_cast<std::uintptr_t>(values[3]) == 1, "an empty error log");
  float wallTime = -1.0f;
  std::memcpy(&wallTime, &values[4], sizeof wallTime);
  check(wallTime == 0.0f, "CU_JIT_WALL_TIME: 0.0f");
  CUmodule module = nullptr;
  checkResult(cuModuleLoadData(&module, image), CUDA_SUCCESS, "cuModuleLoadData of the link's output");
  CUfunction function = nullptr;
  checkResult(cuModuleGetFunction(&function, module, "touch"), CUDA_SUCCESS, "its kernel");
  checkResult(cuModuleUnload(module), CUDA_SUCCESS, "cuModuleUnload");
  checkResult(
      cuLinkAddData(state, CU_JIT_INPUT_PTX, const_cast<char*>(kModulePtx), 0, nullptr, 0, nullptr, nullptr),
      CUDA_SUCCESS, "cuLinkAddData of a second input (PTX sized by its NUL)");
  checkResult(cuLinkComplete(state, &image, &imageSize), CUDA_ERROR_NOT_SUPPORTED,
              "cuLinkComplete of two inputs fails closed");
  check(errorLog[0] != '\0', "and says why in the error log");
  checkResult(cuLinkAddData(state, CU_JIT_INPUT_NVVM, const_cast<char*>(kModulePtx), sizeof kModulePtx,
                            nullptr, 0, nullptr, nullptr),
              CUDA_ERROR_NOT_SUPPORTED, "cuLinkAddData of LTO IR");
  checkResult(cuLinkAddData(state, CU_JIT_INPUT_LIBRARY, const_cast<char*>(kModulePtx), sizeof kModulePtx,
                            nullptr, 0, nullptr, nullptr),
              CUDA_ERROR_NOT_SUPPORTED, "cuLinkAddData of a library");
  checkResult(cuLinkAddData(state, static_cast<CUjitInputType>(77), const_cast<char*>(kModulePtx),
                            sizeof kModulePtx, nullptr, 0, nullptr, nullptr),
              CUDA_ERROR_INVALID_VALUE, "cuLinkAddData of an unknown type");
  checkResult(cuLinkAddData(state, CU_JIT_INPUT_PTX, nullptr, 16, nullptr, 0, nullptr, nullptr),
              CUDA_ERROR_INVALID_VALUE, "cuLinkAddData of no data");
  checkResult(cuLinkAddData(state, CU_JIT_INPUT_PTX, const_cast<char*>(kModulePtx), sizeof kModulePtx,
                            nullptr, 1, nullptr, nullptr),
              CUDA_ERROR_INVALID_VALUE, "cuLinkAddData with an option count but no options");
  checkResult(cuLinkDestroy(state), CUDA_SUCCESS, "cuLinkDestroy");
  checkResult(cuLinkDestroy(state), CUDA_ERROR_INVALID_HANDLE, "cuLinkDestroy twice");

  // A verbose link of one PTX input (cuda-samples' ptxjit): the info log is the worker's JIT's for
  // that PTX (the fake's JIT says how many entry functions it saw).
  CUjit_option verboseOptions[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                                   CU_JIT_LOG_VERBOSE};
  void* verboseValues[] = {infoLog, reinterpret_cast<void*>(std::uintptr_t{sizeof infoLog}),
                           reinterpret_cast<void*>(std::uintptr_t{1})};
  CUlinkState verbose = nullptr;
  checkResult(cuLinkCreate(3, verboseOptions, verboseValues, &verbose), CUDA_SUCCESS,
              "cuLinkCreate (verbose)");
  checkResult(cuLinkAddData(verbose, CU_JIT_INPUT_PTX, const_cast<char*>(kModulePtx), sizeof kModulePtx,
                            nullptr, 0, nullptr, nullptr),
              CUDA_SUCCESS, "cuLinkAddData(PTX) (verbose)");
  checkResult(cuLinkComplete(verbose, &image, &imageSize), CUDA_SUCCESS, "cuLinkComplete (verbose)");
  check(std::strcmp(infoLog, "fake JIT: 1 entry function(s)") == 0 &&
            reinterpret_cast<std::uintptr_t>(verboseValues[1]) == std::strlen(infoLog) + 1,
        "the worker JIT's info log for that PTX");
  checkResult(cuLinkDestroy(verbose), CUDA_SUCCESS, "cuLinkDestroy (verbose)");
  static const char kNotPtx[] = ".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry broken( {\n";
  checkResult(cuLinkCreate(3, verboseOptions, verboseValues, &verbose), CUDA_SUCCESS,
              "cuLinkCreate (verbose, text that does not parse)");
  checkResult(cuLinkAddData(verbose, CU_JIT_INPUT_PTX, const_cast<char*>(kNotPtx), sizeof kNotPtx, nullptr, 0,
                            nullptr, nullptr),
              CUDA_SUCCESS, "cuLinkAddData of it");
  checkResult(cuLinkComplete(verbose, &image, &imageSize), CUDA_SUCCESS,
              "cuLinkComplete: the text is refused where it loads");
  check(infoLog[0] == '\0', "no info log for text the worker cannot parse");
  checkResult(cuLinkDestroy(verbose), CUDA_SUCCESS, "cuLinkDestroy (does not parse)");
  checkResult(cuLinkComplete(state, &image, &imageSize), CUDA_ERROR_INVALID_HANDLE,
              "cuLinkComplete of a destroyed state");

  // cuModuleLoadDataEx writes its logs back too (empty: the compile's log stays in the worker),
  // so a program printing its info log never prints what its buffer held before.
  std::memset(infoLog, 'x', sizeof infoLog);
  std::memset(errorLog, 'x', sizeof errorLog);
  values[1] = reinterpret_cast<void*>(std::uintptr_t{sizeof infoLog});
  values[3] = reinterpret_cast<void*>(std::uintptr_t{sizeof errorLog});
  checkResult(cuModuleLoadDataEx(&module, kModulePtx, 6, options, values), CUDA_SUCCESS,
              "cuModuleLoadDataEx with log options");
  check(infoLog[0] == '\0' && reinterpret_cast<std::uintptr_t>(values[1]) == 1 && errorLog[0] == '\0',
        "cuModuleLoadDataEx: empty logs, their sizes written back");
  checkResult(cuModuleUnload(module), CUDA_SUCCESS, "cuModuleUnload");
  checkResult(cuModuleLoadDataEx(&module, kModulePtx, 2, nullptr, values), CUDA_ERROR_INVALID_VALUE,
              "cuModuleLoadDataEx with an option count but no options");

  // PTX in nvcc 4's style (ISA 1.4, sm_10), loaded as cuda-samples' matrixMulDynlinkJIT loads its
  // embedded PTX: an info log and a register limit. The worker compiles it raised to ISA 3.1
  // (ptx/separate_compilation.h; the fake GPU, like the JIT linker, refuses older text).
  static const char kLegacyPtx[] =
      "\t.version 1.4\n\t.target sm_10, map_f64_to_f32\n"
      "\t.entry legacy_fill (\n\t\t.param .u64 __cudaparm_legacy_fill_out)\n\t{\n"
      "\t.reg .u32 %r<2>;\n\t.reg .u64 %rd<2>;\n"
      "$LDWbegin_legacy_fill:\n\tcvt.u32.u16 \t%r1, %tid.x;\n"
      "\tld.param.u64 \t%rd1, [__cudaparm_legacy_fill_out];\n"
      "\tst.global.u32 \t[%rd1+0], %r1;\n\texit;\n$LDWend_legacy_fill:\n\t}\n";
  CUjit_option legacyOptions[] = {CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_INFO_LOG_BUFFER,
                                  CU_JIT_MAX_REGISTERS};
  void* legacyValues[] = {reinterpret_cast<void*>(std::uintptr_t{sizeof infoLog}), infoLog,
                          reinterpret_cast<void*>(std::uintptr_t{32})};
  checkResult(cuModuleLoadDataEx(&module, kLegacyPtx, 3, legacyOptions, legacyValues), CUDA_SUCCESS,
              "cuModuleLoadDataEx of PTX 1.4");
  CUfunction legacyFill = nullptr;
  checkResult(cuModuleGetFunction(&legacyFill, module, "legacy_fill"), CUDA_SUCCESS,
              "cuModuleGetFunction in the PTX 1.4 module");
  checkResult(cuModuleUnload(module), CUDA_SUCCESS, "cuModuleUnload of the PTX 1.4 module");

  int local = 0;
  const CUlinkState forged = reinterpret_cast<CUlinkState>(&local);
  checkResult(cuLinkAddData(forged, CU_JIT_INPUT_PTX, const_cast<char*>(kModulePtx), sizeof kModulePtx,
                            nullptr, 0, nullptr, nullptr),
              CUDA_ERROR_INVALID_HANDLE, "cuLinkAddData on a forged state");
  checkResult(cuLinkComplete(forged, &image, &imageSize), CUDA_ERROR_INVALID_HANDLE,
              "cuLinkComplete on a forged state");
  checkResult(cuLinkDestroy(forged), CUDA_ERROR_INVALID_HANDLE, "cuLinkDestroy of a forged state");
  check(local == 0, "a forged state is never written");

  checkResult(cuLinkCreate(0, nullptr, nullptr, nullptr), CUDA_ERROR_INVALID_VALUE,
              "cuLinkCreate without an output");
  checkResult(cuLinkCreate(2, nullptr, nullptr, &state), CUDA_ERROR_INVALID_VALUE,
              "cuLinkCreate with an option count but no options");
  checkResult(cuLinkCreate(0, nullptr, nullptr, &state), CUDA_SUCCESS, "cuLinkCreate without options");
  checkResult(cuLinkComplete(state, &image, &imageSize), CUDA_ERROR_INVALID_VALUE,
              "cuLinkComplete of no input");
  checkResult(
      cuLinkAddFile(state, CU_JIT_INPUT_PTX, "/nonexistent/agileos-link-input.ptx", 0, nullptr, nullptr),
      CUDA_ERROR_FILE_NOT_FOUND, "cuLinkAddFile of a missing file");
  char path[] = "/tmp/agileos-e2e-link-XXXXXX";
  const int fd = ::mkstemp(path);
  check(fd >= 0 &&
            ::write(fd, kModulePtx, std::strlen(kModulePtx)) == static_cast<ssize_t>(std::strlen(kModulePtx)),
        "a PTX file (no NUL)");
  if (fd >= 0) ::close(fd);
  checkResult(cuLinkAddFile(state, CU_JIT_INPUT_PTX, path, 0, nullptr, nullptr), CUDA_SUCCESS,
              "cuLinkAddFile(PTX)");
  ::unlink(path);
  checkResult(cuLinkComplete(state, &image, &imageSize), CUDA_SUCCESS, "cuLinkComplete of the file's input");
  check(imageSize == sizeof kModulePtx && std::memcmp(image, kModulePtx, imageSize) == 0,
        "the file's text, NUL-terminated");
  checkResult(cuModuleLoadData(&module, image), CUDA_SUCCESS, "cuModuleLoadData of the file's link");
  checkResult(cuModuleGetFunction(&function, module, "touch"), CUDA_SUCCESS, "its kernel");
  checkResult(cuModuleUnload(module), CUDA_SUCCESS, "cuModuleUnload");
  checkResult(cuLinkDestroy(state), CUDA_SUCCESS, "cuLinkDestroy");
}

// Pointer attributes, address ranges, 3D and peer copies, stream queries through the driver.
void pointersCopiesAndQueries() {
  CUdeviceptr buffer = 0;
  checkResult(cuMemAlloc(&buffer, 3 * 4 * 64), CUDA_SUCCESS, "cuMemAlloc");
  unsigned type = 0;
  checkResult(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, buffer + 100), CUDA_SUCCESS,
              "cuPointerGetAttribute(MEMORY_TYPE)");
  check(type == CU_MEMORYTYPE_DEVICE, "device memory");
  CUdeviceptr base = 0;
  size_t size = 0;
  checkResult(cuMemGetAddressRange(&base, &size, buffer + 100), CUDA_SUCCESS, "cuMemGetAddressRange");
  check(base == buffer && size == 3 * 4 * 64, "the allocation's range");
  int local = 0;
  checkResult(
      cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, reinterpret_cast<CUdeviceptr>(&local)),
      CUDA_ERROR_INVALID_VALUE, "cuPointerGetAttribute of pageable memory");
  CUpointer_attribute wanted[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
  int ordinal = 7;
  type = 9;
  void* outputs[] = {&type, &ordinal};
  checkResult(cuPointerGetAttributes(2, wanted, outputs, reinterpret_cast<CUdeviceptr>(&local)), CUDA_SUCCESS,
              "cuPointerGetAttributes of pageable memory");
  check(type == 0 && ordinal == -2, "none values for memory the session does not know");

  // A 3D copy of a 4 x 3 x 2 box between two pitched layouts, then back.
  std::vector<unsigned char> source = pattern(64 * 3 * 2, 5), back(64 * 3 * 2, 0);
  CUDA_MEMCPY3D up{};
  up.srcMemoryType = CU_MEMORYTYPE_HOST;
  up.srcHost = source.data();
  up.srcPitch = 64;
  up.srcHeight = 3;
  up.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  up.dstDevice = buffer;
  up.dstPitch = 64;
  up.dstHeight = 3;
  up.WidthInBytes = 64;
  up.Height = 3;
  up.Depth = 2;
  checkResult(cuMemcpy3D(&up), CUDA_SUCCESS, "cuMemcpy3D host to device");
  CUDA_MEMCPY3D down = up;
  down.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  down.srcDevice = buffer;
  down.dstMemoryType = CU_MEMORYTYPE_HOST;
  down.dstHost = back.data();
  checkResult(cuMemcpy3D(&down), CUDA_SUCCESS, "cuMemcpy3D device to host");
  check(back == source, "the box came back");
  up.WidthInBytes = 65;
  checkResult(cuMemcpy3D(&up), CUDA_ERROR_INVALID_VALUE, "cuMemcpy3D with rows wider than the pitch");
  up.WidthInBytes = 64;
  const int bogusType = 99;  // no CUmemorytype: the program may put any bits there
  std::memcpy(&up.dstMemoryType, &bogusType, sizeof bogusType);
  checkResult(cuMemcpy3D(&up), CUDA_ERROR_INVALID_VALUE, "cuMemcpy3D with a memory type that is none");
  CUDA_MEMCPY2D flat{};
  std::memcpy(&flat.srcMemoryType, &bogusType, sizeof bogusType);
  flat.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  flat.dstDevice = buffer;
  flat.WidthInBytes = flat.srcPitch = flat.dstPitch = 16;
  flat.Height = 1;
  checkResult(cuMemcpy2D(&flat), CUDA_ERROR_INVALID_VALUE, "cuMemcpy2D with a memory type that is none");
  up.dstMemoryType = CU_MEMORYTYPE_ARRAY;
  checkResult(cuMemcpy3D(&up), CUDA_ERROR_INVALID_VALUE, "cuMemcpy3D to a null array refused");
  up.dstArray = reinterpret_cast<CUarray>(0x5eed);
  checkResult(cuMemcpy3D(&up), CUDA_ERROR_INVALID_HANDLE,
              "cuMemcpy3D to a forged array refused by the worker");

  CUcontext primary = nullptr;
  cuDevicePrimaryCtxRetain(&primary, 0);
  checkResult(cuMemcpyPeer(buffer + 256, primary, buffer, primary, 64), CUDA_SUCCESS, "cuMemcpyPeer");
  checkResult(cuMemcpyPeer(buffer + 256, reinterpret_cast<CUcontext>(0x40), buffer, primary, 64),
              CUDA_ERROR_INVALID_CONTEXT, "cuMemcpyPeer with a forged context");
  // A 3D copy between two contexts of the client: the box above, from the device back to the host.
  CUDA_MEMCPY3D_PEER peer{};
  peer.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  peer.srcDevice = buffer;
  peer.srcContext = primary;
  peer.srcPitch = 64;
  peer.srcHeight = 3;
  peer.dstMemoryType = CU_MEMORYTYPE_HOST;
  peer.dstHost = back.data();
  peer.dstContext = primary;
  peer.dstPitch = 64;
  peer.dstHeight = 3;
  peer.WidthInBytes = 64;
  peer.Height = 3;
  peer.Depth = 2;
  std::fill(back.begin(), back.end(), 0);
  checkResult(cuMemcpy3DPeer(&peer), CUDA_SUCCESS, "cuMemcpy3DPeer");
  check(back == source, "the box came back through cuMemcpy3DPeer");
  std::fill(back.begin(), back.end(), 0);
  checkResult(cuMemcpy3DPeerAsync(&peer, nullptr), CUDA_SUCCESS, "cuMemcpy3DPeerAsync");
  checkResult(cuCtxSynchronize(), CUDA_SUCCESS, "cuCtxSynchronize after cuMemcpy3DPeerAsync");
  check(back == source, "the box came back through cuMemcpy3DPeerAsync");
  peer.dstContext = reinterpret_cast<CUcontext>(0x40);
  checkResult(cuMemcpy3DPeer(&peer), CUDA_ERROR_INVALID_CONTEXT, "cuMemcpy3DPeer with a forged context");
  peer.dstContext = nullptr;
  checkResult(cuMemcpy3DPeer(&peer), CUDA_ERROR_INVALID_CONTEXT, "cuMemcpy3DPeer without a context");
  peer.dstContext = primary;
  peer.srcDevice = 0xF0000000000ull;
  checkResult(cuMemcpy3DPeer(&peer), CUDA_ERROR_INVALID_VALUE,
              "cuMemcpy3DPeer from the I/O aperture refused");
  checkResult(cuMemcpy3DPeer(nullptr), CUDA_ERROR_INVALID_VALUE, "cuMemcpy3DPeer(null)");
  peer.srcDevice = buffer;
  const int noMemoryType = 99;  // no CUmemorytype: the program may put any bits there
  std::memcpy(&peer.srcMemoryType, &noMemoryType, sizeof noMemoryType);
  checkResult(cuMemcpy3DPeer(&peer), CUDA_ERROR_INVALID_VALUE,
              "cuMemcpy3DPeer with a memory type that is none");
  cuDevicePrimaryCtxRelease(0);

  CUstream stream = nullptr;
  checkResult(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS, "cuStreamCreate");
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  checkResult(cuStreamIsCapturing(stream, &status), CUDA_SUCCESS, "cuStreamIsCapturing");
  check(status == CU_STREAM_CAPTURE_STATUS_NONE, "not capturing");
  checkResult(cuStreamIsCapturing(reinterpret_cast<CUstream>(0x5151), &status), CUDA_ERROR_INVALID_HANDLE,
              "cuStreamIsCapturing of a forged stream");
  unsigned long long streamId = 0, runtimeId = 1;
  checkResult(cuStreamGetId(stream, &streamId), CUDA_SUCCESS, "cuStreamGetId");
  cudaStreamGetId(reinterpret_cast<cudaStream_t>(stream), &runtimeId);
  check(streamId == runtimeId, "the same stream id through both APIs");
  unsigned long long again = 0;
  checkResult(cuStreamGetId(stream, &again), CUDA_SUCCESS, "cuStreamGetId again (remembered)");
  check(again == streamId, "the remembered id is the worker's");
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  checkResult(cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS, "cuThreadExchangeStreamCaptureMode");
  cudaStreamCaptureMode runtimeMode = cudaStreamCaptureModeGlobal;
  cudaThreadExchangeStreamCaptureMode(&runtimeMode);
  check(mode == CU_STREAM_CAPTURE_MODE_GLOBAL && runtimeMode == cudaStreamCaptureModeRelaxed,
        "one capture mode per thread for both APIs");
  checkResult(cuStreamDestroy(stream), CUDA_SUCCESS, "cuStreamDestroy");
  checkResult(cuStreamGetId(stream, &again), CUDA_ERROR_INVALID_HANDLE,
              "cuStreamGetId of a destroyed stream (its id is forgotten with it)");
  checkResult(cuMemFree(buffer), CUDA_SUCCESS, "cuMemFree");
}

// The runtime's cudaGetDriverEntryPoint answers with the driver shim's functions. (Deprecated in
// CUDA 13 in favour of ByVersion, and still exported: both are checked.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
void driverEntryPoints() {
  void* entry = nullptr;
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
  check(cudaGetDriverEntryPoint("cuMemAlloc", &entry, cudaEnableDefault, &status) == cudaSuccess &&
            status == cudaDriverEntryPointSuccess,
        "cudaGetDriverEntryPoint(cuMemAlloc)");
  check(entry == reinterpret_cast<void*>(&cuMemAlloc_v2), "it is the driver shim's cuMemAlloc_v2");
  CUdeviceptr pointer = 0;
  if (entry != nullptr) {
    using MemAlloc = CUresult (*)(CUdeviceptr*, size_t);
    checkResult(reinterpret_cast<MemAlloc>(entry)(&pointer, 4096), CUDA_SUCCESS,
                "a call through the entry point");
    check(cudaFree(reinterpret_cast<void*>(pointer)) == cudaSuccess, "cudaFree of what it allocated");
  }
  check(cudaGetDriverEntryPointByVersion("cuMemcpyHtoD", &entry, 12000, cudaEnablePerThreadDefaultStream,
                                         &status) == cudaSuccess &&
            entry == ::dlsym(RTLD_DEFAULT, "cuMemcpyHtoD_v2_ptds"),
        "cudaGetDriverEntryPointByVersion with per-thread streams");
  check(cudaGetDriverEntryPoint("cuNoSuchFunction", &entry, cudaEnableDefault, &status) == cudaSuccess &&
            entry == nullptr && status == cudaDriverEntryPointSymbolNotFound,
        "an unknown name: no entry point, and why");
}
#pragma GCC diagnostic pop

void forgeries() {
  CUmodule module = nullptr;
  const char notAnImage[] =
      "\x7f"
      "ELF but not really";
  checkResult(cuModuleLoadData(&module, notAnImage), CUDA_ERROR_INVALID_IMAGE,
              "cuModuleLoadData of a bad ELF");
  CUfunction function = nullptr;
  checkResult(cuModuleGetFunction(&function, reinterpret_cast<CUmodule>(&module), "kernel"),
              CUDA_ERROR_INVALID_HANDLE, "cuModuleGetFunction on a forged module");
  void* args[] = {nullptr};
  checkResult(
      cuLaunchKernel(reinterpret_cast<CUfunction>(&function), 1, 1, 1, 1, 1, 1, 0, nullptr, args, nullptr),
      CUDA_ERROR_INVALID_HANDLE, "cuLaunchKernel of a forged function");
  checkResult(cuMemcpyHtoD(0xF0000000000ull, args, sizeof args), CUDA_ERROR_INVALID_VALUE,
              "cuMemcpyHtoD into the I/O aperture");
  CUstream stream = reinterpret_cast<CUstream>(0x4242);
  checkResult(cuStreamSynchronize(stream), CUDA_ERROR_INVALID_HANDLE,
              "cuStreamSynchronize of a forged stream");
  bool called = false;
  checkResult(cuLaunchHostFunc(
                  stream, [](void* flag) { *static_cast<bool*>(flag) = true; }, &called),
              CUDA_ERROR_INVALID_HANDLE, "cuLaunchHostFunc on a forged stream");
  check(!called, "a host function on a forged stream is never called");
  // Device-mapped host memory (over the shared-memory transport, which this test uses): a segment
  // shared with the worker, which hands back the device's address of it.
  void* host = nullptr;
  checkResult(cuMemHostAlloc(&host, 4096, CU_MEMHOSTALLOC_DEVICEMAP), CUDA_SUCCESS,
              "cuMemHostAlloc(DEVICEMAP)");
  CUdeviceptr mapped = 0, inside = 0;
  checkResult(cuMemHostGetDevicePointer(&mapped, host, 0), CUDA_SUCCESS, "cuMemHostGetDevicePointer");
  checkResult(cuMemHostGetDevicePointer(&inside, static_cast<char*>(host) + 100, 0), CUDA_SUCCESS,
              "cuMemHostGetDevicePointer inside the allocation");
  check(mapped != 0 && inside == mapped + 100, "the device's address, offset as the host's");
  check(mapped == reinterpret_cast<CUdeviceptr>(host), "placed at one address for host and device");
  checkResult(cuMemHostGetDevicePointer(&mapped, host, 1), CUDA_ERROR_INVALID_VALUE,
              "cuMemHostGetDevicePointer with flags");
  void* plain = nullptr;
  checkResult(cuMemHostAlloc(&plain, 4096, 0), CUDA_SUCCESS, "cuMemHostAlloc without DEVICEMAP");
  // Under unified addressing every page-locked allocation is the device's at its host address
  // (cuda-samples UnifiedMemoryPerf passes cudaMallocHost memory to kernels and asks
  // cudaHostGetDevicePointer of it).
  checkResult(cuMemHostGetDevicePointer(&mapped, plain, 0), CUDA_SUCCESS,
              "page-locked memory without DEVICEMAP is mapped too");
  check(mapped == reinterpret_cast<CUdeviceptr>(plain), "at its host address");
  checkResult(cuMemHostGetDevicePointer(&mapped, &mapped, 0), CUDA_ERROR_INVALID_VALUE,
              "no device address for the program's own memory");
  checkResult(cuMemFreeHost(host), CUDA_SUCCESS, "cuMemFreeHost of mapped memory");
  checkResult(cuMemFreeHost(plain), CUDA_SUCCESS, "cuMemFreeHost");
  checkResult(cuMemHostGetDevicePointer(&mapped, static_cast<char*>(host) + 100, 0), CUDA_ERROR_INVALID_VALUE,
              "no device address after the free");

  // Managed memory and registration through the driver API (a linked-in runtime's path).
  CUdeviceptr managed = 0;
  checkResult(cuMemAllocManaged(&managed, 4096, 0), CUDA_ERROR_INVALID_VALUE, "cuMemAllocManaged flags 0");
  checkResult(cuMemAllocManaged(&managed, 4096, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS, "cuMemAllocManaged");
  check(managed >= 0x300000000000ull && managed < 0x400000000000ull, "managed memory in the managed window");
  std::memset(reinterpret_cast<void*>(managed), 0x3c, 4096);
  int isManaged = 0;
  checkResult(cuPointerGetAttribute(&isManaged, CU_POINTER_ATTRIBUTE_IS_MANAGED, managed), CUDA_SUCCESS,
              "CU_POINTER_ATTRIBUTE_IS_MANAGED");
  check(isManaged == 1, "managed memory says so");
  CUmemLocation onDevice{};
  onDevice.type = CU_MEM_LOCATION_TYPE_DEVICE;
  checkResult(cuMemPrefetchAsync_v2(managed, 4096, onDevice, 0, nullptr), CUDA_SUCCESS,
              "cuMemPrefetchAsync_v2");
  CUmemLocation onHost{};
  onHost.type = CU_MEM_LOCATION_TYPE_HOST;
  checkResult(cuMemPrefetchAsync_v2(managed, 4096, onHost, 0, nullptr), CUDA_SUCCESS, "prefetch to the host");
  checkResult(cuMemAdvise_v2(managed, 4096, CU_MEM_ADVISE_SET_READ_MOSTLY, onDevice), CUDA_SUCCESS,
              "cuMemAdvise_v2");
  checkResult(cuMemPrefetchAsync_v2(managed, 4097, onDevice, 0, nullptr), CUDA_ERROR_INVALID_VALUE,
              "prefetch past the allocation refused");
  // The range queries answer the program's own hints (the runtime's test covers them page by page).
  int advisedReadMostly = -7, lastPrefetch = -7, lastPrefetchType = -7;
  checkResult(cuMemRangeGetAttribute(&advisedReadMostly, sizeof advisedReadMostly,
                                     CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, managed, 4096),
              CUDA_SUCCESS, "cuMemRangeGetAttribute(read mostly)");
  check(advisedReadMostly == 1, "read mostly, as advised");
  void* outputs[] = {&lastPrefetch, &lastPrefetchType};
  size_t sizes[] = {sizeof lastPrefetch, sizeof lastPrefetchType};
  CUmem_range_attribute wanted[] = {CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION,
                                    CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE};
  checkResult(cuMemRangeGetAttributes(outputs, sizes, wanted, 2, managed, 4096), CUDA_SUCCESS,
              "cuMemRangeGetAttributes(last prefetch location and type)");
  check(lastPrefetch == CU_DEVICE_CPU && lastPrefetchType == CU_MEM_LOCATION_TYPE_HOST,
        "last prefetched to the host");
  checkResult(
      cuMemRangeGetAttribute(&advisedReadMostly, 2, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, managed, 4096),
      CUDA_ERROR_INVALID_VALUE, "a read-mostly answer into 2 bytes refused");
  checkResult(cuMemRangeGetAttributes(outputs, sizes, wanted, 0, managed, 4096), CUDA_ERROR_INVALID_VALUE,
              "cuMemRangeGetAttributes of no attribute refused");
  checkResult(cuStreamAttachMemAsync(nullptr, managed, 0, CU_MEM_ATTACH_SINGLE), CUDA_SUCCESS,
              "cuStreamAttachMemAsync");
  checkResult(cuMemFree(managed), CUDA_SUCCESS, "cuMemFree of managed memory");
  checkResult(cuMemFree(managed), CUDA_ERROR_INVALID_VALUE, "cuMemFree of managed memory twice");
  void* pages = mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  static_cast<unsigned char*>(pages)[5000] = 0x77;
  checkResult(cuMemHostRegister(pages, 8192, CU_MEMHOSTREGISTER_IOMEMORY), CUDA_ERROR_NOT_SUPPORTED,
              "cuMemHostRegister(IOMEMORY) fails closed");
  checkResult(cuMemHostRegister(pages, 8192, CU_MEMHOSTREGISTER_DEVICEMAP), CUDA_SUCCESS,
              "cuMemHostRegister");
  checkResult(cuMemHostGetDevicePointer(&mapped, pages, 0), CUDA_SUCCESS,
              "cuMemHostGetDevicePointer of registered memory");
  checkResult(cuMemHostRegister(pages, 4096, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
              "cuMemHostRegister twice");
  checkResult(cuMemHostUnregister(pages), CUDA_SUCCESS, "cuMemHostUnregister");
  check(static_cast<unsigned char*>(pages)[5000] == 0x77, "registered memory kept its contents");
  checkResult(cuMemHostUnregister(pages), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "cuMemHostUnregister twice");
  munmap(pages, 8192);
  int readMostly = 0;
  checkResult(
      cuMemRangeGetAttribute(&readMostly, sizeof readMostly, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, mapped, 4),
      CUDA_ERROR_INVALID_VALUE, "range attributes of memory that is not managed refused");
  size_t maxWidth = 0;
  checkResult(cuDeviceGetTexture1DLinearMaxWidth(&maxWidth, CU_AD_FORMAT_FLOAT, 1, 0),
              CUDA_ERROR_NOT_SUPPORTED, "an unsupported row fails closed");
}

}  // namespace

// libcudart binds the primary context to a thread at its first call that needs one; libraries
// that check cuCtxGetCurrent (cuBLAS does, on PyTorch's autograd threads) depend on it. A driver
// call leaves the thread's stack alone, and a context already current stays current.
void runtimeBindsThePrimaryContext() {
  CUcontext primary = nullptr;
  checkResult(cuDevicePrimaryCtxRetain(&primary, 0), CUDA_SUCCESS, "cuDevicePrimaryCtxRetain");
  std::thread([primary] {
    CUcontext current = primary;
    cuCtxGetCurrent(&current);
    check(current == nullptr, "a new thread has no current context");
    CUdeviceptr buffer = 0;
    checkResult(cuMemAlloc(&buffer, 256), CUDA_SUCCESS, "cuMemAlloc with none current (the primary)");
    cuCtxGetCurrent(&current);
    check(current == nullptr, "a driver call does not bind a context");
    cudaStream_t stream = nullptr;
    check(cudaStreamCreate(&stream) == cudaSuccess, "cudaStreamCreate on the new thread");
    cuCtxGetCurrent(&current);
    check(current == primary, "after a runtime call the primary context is current");
    cudaStreamDestroy(stream);
    cuMemFree(buffer);
  }).join();
  std::thread([primary] {
    CUcontext created = nullptr;
    checkResult(cuCtxCreate(&created, nullptr, 0, 0), CUDA_SUCCESS, "cuCtxCreate");
    void* buffer = nullptr;
    check(cudaMalloc(&buffer, 256) == cudaSuccess, "cudaMalloc with a created context current");
    CUcontext current = nullptr;
    cuCtxGetCurrent(&current);
    check(current == created, "a runtime call keeps a current context current");
    check(cudaSetDevice(0) == cudaSuccess, "cudaSetDevice(0)");
    cuCtxGetCurrent(&current);
    check(current == primary, "cudaSetDevice makes the primary context current");
    cudaFree(buffer);
    checkResult(cuCtxDestroy(created), CUDA_SUCCESS, "cuCtxDestroy");
  }).join();
  checkResult(cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS, "cuDevicePrimaryCtxRelease");
}

// Virtual memory management (cuMemAddressReserve, cuMemCreate, cuMemMap, ...) on the worker's memory
// manager: the data goes through a mapping and comes back through another mapping of the same
// allocation, and what AgileOS does not offer fails closed.
void virtualMemory() {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t granularity = 0;
  checkResult(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
              CUDA_SUCCESS, "cuMemGetAllocationGranularity");
  check(granularity >= 4096 && (granularity & (granularity - 1)) == 0, "the granularity is a power of two");
  CUdeviceptr base = 0;
  checkResult(cuMemAddressReserve(&base, 4 * granularity, 0, 0, 0), CUDA_SUCCESS, "cuMemAddressReserve");
  CUmemGenericAllocationHandle handle = 0;
  checkResult(cuMemCreate(&handle, 2 * granularity, &prop, 0), CUDA_SUCCESS, "cuMemCreate");
  CUmemAllocationProp got{};
  checkResult(cuMemGetAllocationPropertiesFromHandle(&got, handle), CUDA_SUCCESS,
              "cuMemGetAllocationPropertiesFromHandle");
  check(got.type == CU_MEM_ALLOCATION_TYPE_PINNED && got.location.id == 0, "the handle's properties");
  checkResult(cuMemMap(base, 2 * granularity, 0, handle, 0), CUDA_SUCCESS, "cuMemMap");
  checkResult(cuMemMap(base + 2 * granularity, 2 * granularity, 0, handle, 0), CUDA_SUCCESS,
              "cuMemMap of the same allocation again");
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  checkResult(cuMemSetAccess(base, 4 * granularity, &access, 1), CUDA_SUCCESS, "cuMemSetAccess");
  unsigned long long flags = 0;
  checkResult(cuMemGetAccess(&flags, &prop.location, base + 100), CUDA_SUCCESS, "cuMemGetAccess");
  check(flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE, "mapped read/write");
  const std::vector<unsigned char> in = pattern(4096, 9);
  std::vector<unsigned char> out(4096);
  checkResult(cuMemcpyHtoD(base + 1024, in.data(), in.size()), CUDA_SUCCESS, "cuMemcpyHtoD into the mapping");
  checkResult(cuMemcpyDtoH(out.data(), base + 2 * granularity + 1024, out.size()), CUDA_SUCCESS,
              "cuMemcpyDtoH from the second mapping");
  check(out == in, "both mappings show one allocation's bytes");
  // Back to back in one reservation, the two mappings are one range: a copy may cross from one
  // into the next (here from the end of the first mapping into the start of the second).
  std::vector<unsigned char> across(8192);
  checkResult(cuMemcpyDtoH(across.data(), base + 2 * granularity - 4096, across.size()), CUDA_SUCCESS,
              "cuMemcpyDtoH across two mappings back to back");
  // Its second half is the allocation's first 4096 bytes, of which bytes 1024.. hold `in`'s start.
  check(std::equal(across.begin() + 4096 + 1024, across.end(), in.begin()),
        "the copy across the mappings brought the second mapping's bytes");
  void* viaRuntime = nullptr;
  check(cudaMemcpy(out.data(), reinterpret_cast<void*>(base + 1024), 16, cudaMemcpyDefault) == cudaSuccess,
        "cudaMemcpyDefault from a mapping (the runtime knows it as device memory)");
  (void)viaRuntime;
  // Refusals, each changing nothing.
  checkResult(cuMemFree(base), CUDA_ERROR_INVALID_VALUE, "cuMemFree of a mapping");
  checkResult(cuMemMap(base, granularity, granularity, handle, 0), CUDA_ERROR_INVALID_VALUE,
              "cuMemMap at an offset");
  checkResult(cuMemMap(base, 2 * granularity, 0, handle, 0), CUDA_ERROR_INVALID_VALUE,
              "cuMemMap over a mapping");
  checkResult(cuMemMap(base, granularity, 0, handle + 12345, 0), CUDA_ERROR_INVALID_VALUE,
              "cuMemMap of a made-up handle");
  checkResult(cuMemUnmap(base, granularity), CUDA_ERROR_INVALID_VALUE, "cuMemUnmap of half a mapping");
  checkResult(cuMemAddressFree(base, 4 * granularity), CUDA_ERROR_INVALID_VALUE,
              "cuMemAddressFree with mappings in it");
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READ;
  checkResult(cuMemSetAccess(base, 2 * granularity, &access, 1), CUDA_ERROR_NOT_SUPPORTED,
              "cuMemSetAccess read-only");
  CUmemAllocationProp shareable = prop;
  shareable.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CUmemGenericAllocationHandle refused = 0;
  checkResult(cuMemCreate(&refused, granularity, &shareable, 0), CUDA_ERROR_NOT_SUPPORTED,
              "cuMemCreate with a shareable handle");
  checkResult(cuMemCreate(&refused, granularity + 1, &prop, 0), CUDA_ERROR_INVALID_VALUE,
              "cuMemCreate off the granularity");
  CUmemAllocationProp unknownCompression = prop;
  unknownCompression.allocFlags.compressionType = 0x7f;
  checkResult(cuMemCreate(&refused, granularity, &unknownCompression, 0), CUDA_ERROR_INVALID_VALUE,
              "cuMemCreate with an unknown compression type");
  CUmemAllocationProp rdma = prop;
  rdma.allocFlags.gpuDirectRDMACapable = 1;
  checkResult(cuMemCreate(&refused, granularity, &rdma, 0), CUDA_ERROR_NOT_SUPPORTED,
              "cuMemCreate of GPUDirect RDMA memory");
  CUdeviceptr outside = 0;
  checkResult(cuMemAlloc(&outside, 4096), CUDA_SUCCESS, "cuMemAlloc");
  checkResult(cuMemMap(outside, granularity, 0, handle, 0), CUDA_ERROR_INVALID_VALUE,
              "cuMemMap outside a reservation");
  cuMemFree(outside);
  check(cuMemcpyDtoH(out.data(), base + 1024, 16) == CUDA_SUCCESS,
        "the mapping still works after the refusals");
  CUmemGenericAllocationHandle retained = 0;
  checkResult(cuMemRetainAllocationHandle(&retained, reinterpret_cast<void*>(base + 2 * granularity + 8)),
              CUDA_SUCCESS, "cuMemRetainAllocationHandle through the second mapping");
  check(retained == handle, "the handle it was mapped with");
  checkResult(cuMemRelease(retained), CUDA_SUCCESS, "cuMemRelease of the retained reference");
  checkResult(cuMemRetainAllocationHandle(&retained, reinterpret_cast<void*>(outside)),
              CUDA_ERROR_INVALID_VALUE, "cuMemRetainAllocationHandle of an address no mapping holds");
  // Teardown in the driver's order; the release while mapped keeps the memory until the unmap.
  checkResult(cuMemRelease(handle), CUDA_SUCCESS, "cuMemRelease while mapped");
  checkResult(cuMemcpyDtoH(out.data(), base + 1024, 16), CUDA_SUCCESS, "a released allocation stays mapped");
  checkResult(cuMemRelease(handle), CUDA_ERROR_INVALID_VALUE, "cuMemRelease twice");
  checkResult(cuMemUnmap(base, 4 * granularity), CUDA_SUCCESS, "cuMemUnmap of both mappings");
  checkResult(cuMemcpyDtoH(out.data(), base + 1024, 16), CUDA_ERROR_INVALID_VALUE, "no copy after the unmap");
  checkResult(cuMemAddressFree(base, 4 * granularity), CUDA_SUCCESS, "cuMemAddressFree");
  checkResult(cuMemAddressFree(base, 4 * granularity), CUDA_ERROR_INVALID_VALUE, "cuMemAddressFree twice");
}

// Compressible memory (cuda-samples' cudaCompressibleMemory): asked of the worker's driver, which
// grants it here (the fake does), reported by the handle's properties, and used like any mapping.
void compressibleMemory() {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  prop.allocFlags.compressionType = CU_MEM_ALLOCATION_COMP_GENERIC;
  size_t granularity = 0;
  checkResult(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
              CUDA_SUCCESS, "cuMemGetAllocationGranularity of compressible memory");
  CUdeviceptr base = 0;
  checkResult(cuMemAddressReserve(&base, granularity, 0, 0, 0), CUDA_SUCCESS, "cuMemAddressReserve");
  CUmemGenericAllocationHandle handle = 0;
  checkResult(cuMemCreate(&handle, granularity, &prop, 0), CUDA_SUCCESS, "cuMemCreate compressible");
  CUmemAllocationProp got{};
  checkResult(cuMemGetAllocationPropertiesFromHandle(&got, handle), CUDA_SUCCESS,
              "cuMemGetAllocationPropertiesFromHandle of compressible memory");
  check(got.allocFlags.compressionType == CU_MEM_ALLOCATION_COMP_GENERIC, "the handle says compressed");
  checkResult(cuMemMap(base, granularity, 0, handle, 0), CUDA_SUCCESS, "cuMemMap compressible");
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  checkResult(cuMemSetAccess(base, granularity, &access, 1), CUDA_SUCCESS, "cuMemSetAccess");
  const std::vector<unsigned char> in = pattern(4096, 3);
  std::vector<unsigned char> out(4096);
  checkResult(cuMemcpyHtoD(base, in.data(), in.size()), CUDA_SUCCESS,
              "cuMemcpyHtoD into compressible memory");
  checkResult(cuMemcpyDtoH(out.data(), base, out.size()), CUDA_SUCCESS,
              "cuMemcpyDtoH from compressible memory");
  check(out == in, "compressible memory keeps its bytes");
  checkResult(cuMemUnmap(base, granularity), CUDA_SUCCESS, "cuMemUnmap");
  checkResult(cuMemRelease(handle), CUDA_SUCCESS, "cuMemRelease");
  checkResult(cuMemAddressFree(base, granularity), CUDA_SUCCESS, "cuMemAddressFree");
}

// Graph memory nodes through the driver API (client/cuda/api_graph_memory.cpp): the same records
// as the runtime's cudaGraphAddMem*Node, an allocation's address fixed and named only while live.
void graphMemoryNodes() {
  constexpr size_t kBytes = 8192;
  CUgraph graph = nullptr;
  checkResult(cuGraphCreate(&graph, 0), CUDA_SUCCESS, "cuGraphCreate");
  CUDA_MEM_ALLOC_NODE_PARAMS params{};
  params.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  params.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  params.poolProps.location.id = 0;
  params.bytesize = kBytes;
  CUgraphNode alloc = nullptr;
  checkResult(cuGraphAddMemAllocNode(&alloc, graph, nullptr, 0, &params), CUDA_SUCCESS,
              "cuGraphAddMemAllocNode");
  const CUdeviceptr address = params.dptr;
  check(address != 0, "the allocation's address comes back at once");
  CUDA_MEM_ALLOC_NODE_PARAMS got{};
  checkResult(cuGraphMemAllocNodeGetParams(alloc, &got), CUDA_SUCCESS, "cuGraphMemAllocNodeGetParams");
  check(got.dptr == address && got.bytesize == kBytes, "the allocation node's parameters");
  params.poolProps.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CUgraphNode refused = nullptr;
  checkResult(cuGraphAddMemAllocNode(&refused, graph, nullptr, 0, &params), CUDA_ERROR_INVALID_VALUE,
              "a shareable graph allocation is refused");
  std::vector<unsigned char> host(kBytes, 0);
  checkResult(cuMemcpyHtoD(address, host.data(), kBytes), CUDA_ERROR_INVALID_VALUE,
              "a copy into the allocation before a launch is refused");
  CUgraphExec exec = nullptr;
  checkResult(cuGraphInstantiate(&exec, graph, 0), CUDA_SUCCESS, "cuGraphInstantiate");
  CUstream stream = nullptr;
  checkResult(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS, "cuStreamCreate");
  checkResult(cuGraphLaunch(exec, stream), CUDA_SUCCESS, "cuGraphLaunch");
  checkResult(cuStreamSynchronize(stream), CUDA_SUCCESS, "cuStreamSynchronize");
  checkResult(cuMemcpyHtoD(address, host.data(), kBytes), CUDA_SUCCESS,
              "the live allocation is the program's");
  cuuint64_t used = 0;
  checkResult(cuDeviceGetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &used), CUDA_SUCCESS,
              "cuDeviceGetGraphMemAttribute");
  check(used >= kBytes, "the live allocation's memory is used (rounded up to the granularity, as natively)");
  checkResult(cuGraphLaunch(exec, stream), CUDA_ERROR_INVALID_VALUE, "a relaunch while it lives");

  CUgraph freer = nullptr;
  CUgraphNode freeNode = nullptr;
  checkResult(cuGraphCreate(&freer, 0), CUDA_SUCCESS, "cuGraphCreate (free graph)");
  checkResult(cuGraphAddMemFreeNode(&freeNode, freer, nullptr, 0, address), CUDA_SUCCESS,
              "cuGraphAddMemFreeNode");
  CUdeviceptr freed = 0;
  checkResult(cuGraphMemFreeNodeGetParams(freeNode, &freed), CUDA_SUCCESS, "cuGraphMemFreeNodeGetParams");
  check(freed == address, "the free node's address");
  CUgraphExec freerExec = nullptr;
  checkResult(cuGraphInstantiate(&freerExec, freer, 0), CUDA_SUCCESS, "cuGraphInstantiate (free graph)");
  checkResult(cuGraphLaunch(freerExec, stream), CUDA_SUCCESS, "the free graph frees it");
  checkResult(cuStreamSynchronize(stream), CUDA_SUCCESS, "cuStreamSynchronize");
  checkResult(cuMemcpyHtoD(address, host.data(), kBytes), CUDA_ERROR_INVALID_VALUE, "freed: refused");
  checkResult(cuGraphLaunch(exec, stream), CUDA_SUCCESS, "relaunched once freed");
  checkResult(cuMemFree(address), CUDA_SUCCESS, "cuMemFree of the graph's allocation");
  cuuint64_t zero = 0;
  checkResult(cuDeviceSetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &zero), CUDA_SUCCESS,
              "cuDeviceSetGraphMemAttribute");
  checkResult(cuDeviceGraphMemTrim(0), CUDA_SUCCESS, "cuDeviceGraphMemTrim");
  checkResult(cuDeviceGraphMemTrim(1), CUDA_ERROR_INVALID_DEVICE, "cuDeviceGraphMemTrim(1)");
  checkResult(cuGraphExecDestroy(freerExec), CUDA_SUCCESS, "cuGraphExecDestroy (free graph)");
  checkResult(cuGraphDestroy(freer), CUDA_SUCCESS, "cuGraphDestroy (free graph)");
  checkResult(cuGraphExecDestroy(exec), CUDA_SUCCESS, "cuGraphExecDestroy");
  checkResult(cuGraphDestroy(graph), CUDA_SUCCESS, "cuGraphDestroy");
  cuuint64_t reserved = 1;
  checkResult(cuDeviceGetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &reserved),
              CUDA_SUCCESS, "cuDeviceGetGraphMemAttribute (reserved)");
  check(reserved == 0, "the trim after cuMemFree gave the memory back");
  checkResult(cuStreamDestroy(stream), CUDA_SUCCESS, "cuStreamDestroy");
}

int gHostNodeRuns = 0;
void countHostNodeRun(void* counter) { ++*static_cast<int*>(counter); }

CUDA_MEMCPY3D deviceToHost(CUdeviceptr src, void* dst, size_t bytes) {
  CUDA_MEMCPY3D copy{};
  copy.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.srcDevice = src;
  copy.dstMemoryType = CU_MEMORYTYPE_HOST;
  copy.dstHost = dst;
  copy.WidthInBytes = bytes;
  copy.Height = 1;
  copy.Depth = 1;
  return copy;  // pitches left 0: a single row reads none
}

CUDA_MEMSET_NODE_PARAMS fillBytes(CUdeviceptr dst, unsigned char value, size_t bytes) {
  CUDA_MEMSET_NODE_PARAMS fill{};
  fill.dst = dst;
  fill.value = value;
  fill.elementSize = 1;
  fill.width = bytes;
  fill.height = 1;
  return fill;
}

// Graphs built node by node through the driver API (client/cuda/api_graph_nodes.cpp), as a
// statically linked runtime builds its cudaGraphAdd*Node calls: the same records and checks as the
// runtime shim's, each node validated again when the graph runs.
void graphNodesByHand() {
  constexpr size_t kBytes = 4096;
  CUlibrary library = nullptr;
  checkResult(cuLibraryLoadData(&library, kModulePtx, nullptr, nullptr, 0, nullptr, nullptr, 0), CUDA_SUCCESS,
              "cuLibraryLoadData (graph nodes)");
  CUkernel kernel = nullptr;
  checkResult(cuLibraryGetKernel(&kernel, library, "touch"), CUDA_SUCCESS,
              "cuLibraryGetKernel (graph nodes)");
  CUdeviceptr device = 0;
  checkResult(cuMemAlloc(&device, kBytes), CUDA_SUCCESS, "cuMemAlloc (graph nodes)");
  std::vector<unsigned char> host(kBytes, 0);

  CUgraph graph = nullptr;
  checkResult(cuGraphCreate(&graph, 0), CUDA_SUCCESS, "cuGraphCreate (nodes)");
  const CUDA_MEMSET_NODE_PARAMS fill = fillBytes(device, 0x5a, kBytes);
  CUgraphNode memsetNode = nullptr, copyNode = nullptr, hostNode = nullptr, kernelNode = nullptr,
              join = nullptr;
  checkResult(cuGraphAddMemsetNode(&memsetNode, graph, nullptr, 0, &fill, nullptr), CUDA_SUCCESS,
              "cuGraphAddMemsetNode");
  const CUDA_MEMCPY3D copy = deviceToHost(device, host.data(), kBytes);
  checkResult(cuGraphAddMemcpyNode(&copyNode, graph, &memsetNode, 1, &copy, nullptr), CUDA_SUCCESS,
              "cuGraphAddMemcpyNode after it");
  CUDA_HOST_NODE_PARAMS hostParams{countHostNodeRun, &gHostNodeRuns};
  checkResult(cuGraphAddHostNode(&hostNode, graph, &copyNode, 1, &hostParams), CUDA_SUCCESS,
              "cuGraphAddHostNode after the copy");
  void* args[] = {&device};
  CUDA_KERNEL_NODE_PARAMS launch{};
  launch.kern = kernel;  // func null: the CUkernel is launched
  launch.gridDimX = 3;
  launch.gridDimY = launch.gridDimZ = 1;
  launch.blockDimX = 64;
  launch.blockDimY = launch.blockDimZ = 1;
  launch.kernelParams = args;
  checkResult(cuGraphAddKernelNode(&kernelNode, graph, nullptr, 0, &launch), CUDA_SUCCESS,
              "cuGraphAddKernelNode (a CUkernel)");
  const CUgraphNode ends[] = {hostNode, kernelNode};
  checkResult(cuGraphAddEmptyNode(&join, graph, ends, 2), CUDA_SUCCESS, "cuGraphAddEmptyNode joining both");

  size_t roots = 0, edges = 0;
  checkResult(cuGraphGetRootNodes(graph, nullptr, &roots), CUDA_SUCCESS, "cuGraphGetRootNodes");
  checkResult(cuGraphGetEdges(graph, nullptr, nullptr, nullptr, &edges), CUDA_SUCCESS, "cuGraphGetEdges");
  check(roots == 2 && edges == 4, "two roots (the memset and the kernel), four edges");
  CUgraphNode dependents[2] = {};
  size_t dependentCount = 2;
  checkResult(cuGraphNodeGetDependentNodes(memsetNode, dependents, nullptr, &dependentCount), CUDA_SUCCESS,
              "cuGraphNodeGetDependentNodes");
  check(dependentCount == 1 && dependents[0] == copyNode, "the memset's one dependent is the copy");
  CUDA_KERNEL_NODE_PARAMS readKernel{};
  checkResult(cuGraphKernelNodeGetParams(kernelNode, &readKernel), CUDA_SUCCESS,
              "cuGraphKernelNodeGetParams");
  check(readKernel.gridDimX == 3 && readKernel.blockDimX == 64 && readKernel.kernelParams != nullptr &&
            std::memcmp(readKernel.kernelParams[0], &device, sizeof device) == 0,
        "the kernel node's shape and its copy of the argument");
  CUDA_MEMCPY3D readCopy{};
  checkResult(cuGraphMemcpyNodeGetParams(copyNode, &readCopy), CUDA_SUCCESS, "cuGraphMemcpyNodeGetParams");
  check(readCopy.srcMemoryType == CU_MEMORYTYPE_DEVICE && readCopy.srcDevice == device &&
            readCopy.dstMemoryType == CU_MEMORYTYPE_HOST && readCopy.dstHost == host.data() &&
            readCopy.WidthInBytes == kBytes,
        "the copy node's parameters");
  CUgraphNodeType type{};
  checkResult(cuGraphNodeGetType(hostNode, &type), CUDA_SUCCESS, "cuGraphNodeGetType");
  check(type == CU_GRAPH_NODE_TYPE_HOST, "a host node");

  CUgraphExec exec = nullptr;
  checkResult(cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS, "cuGraphInstantiateWithFlags");
  CUstream stream = nullptr;
  checkResult(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS, "cuStreamCreate (nodes)");
  checkResult(cuGraphLaunch(exec, stream), CUDA_SUCCESS, "cuGraphLaunch (nodes)");
  checkResult(cuStreamSynchronize(stream), CUDA_SUCCESS, "cuStreamSynchronize (nodes)");
  check(
      std::all_of(host.begin(), host.end(), [](unsigned char b) { return b == 0x5a; }) && gHostNodeRuns == 1,
      "the memset, then the copy, then the host node ran");

  const CUDA_MEMSET_NODE_PARAMS refill = fillBytes(device, 0x11, kBytes);
  checkResult(cuGraphExecMemsetNodeSetParams(exec, memsetNode, &refill, nullptr), CUDA_SUCCESS,
              "cuGraphExecMemsetNodeSetParams");
  checkResult(cuGraphLaunch(exec, stream), CUDA_SUCCESS, "relaunched");
  checkResult(cuStreamSynchronize(stream), CUDA_SUCCESS, "cuStreamSynchronize");
  CUDA_MEMSET_NODE_PARAMS readFill{};
  checkResult(cuGraphMemsetNodeGetParams(memsetNode, &readFill), CUDA_SUCCESS, "cuGraphMemsetNodeGetParams");
  check(host[kBytes - 1] == 0x11 && readFill.value == 0x5a && gHostNodeRuns == 2,
        "the executable graph's memset changed, the graph's did not");
  checkResult(cuGraphNodeSetEnabled(exec, memsetNode, 0), CUDA_SUCCESS, "cuGraphNodeSetEnabled(0)");
  checkResult(cuMemsetD8(device, 0x77, kBytes), CUDA_SUCCESS, "cuMemsetD8");
  checkResult(cuGraphLaunch(exec, stream), CUDA_SUCCESS, "launched with the memset disabled");
  checkResult(cuStreamSynchronize(stream), CUDA_SUCCESS, "cuStreamSynchronize");
  check(host[0] == 0x77, "a disabled node does nothing");
  unsigned enabled = 1;
  checkResult(cuGraphNodeGetEnabled(exec, memsetNode, &enabled), CUDA_SUCCESS, "cuGraphNodeGetEnabled");
  check(enabled == 0, "reads as disabled");

  CUgraph clone = nullptr;
  checkResult(cuGraphClone(&clone, graph), CUDA_SUCCESS, "cuGraphClone");
  CUgraphNode cloneFill = nullptr;
  checkResult(cuGraphNodeFindInClone(&cloneFill, memsetNode, clone), CUDA_SUCCESS, "cuGraphNodeFindInClone");
  const CUDA_MEMSET_NODE_PARAMS third = fillBytes(device, 0x33, kBytes);
  checkResult(cuGraphMemsetNodeSetParams(cloneFill, &third), CUDA_SUCCESS, "cuGraphMemsetNodeSetParams");
  CUgraphExecUpdateResultInfo info{};
  checkResult(cuGraphExecUpdate(exec, clone, &info), CUDA_SUCCESS, "cuGraphExecUpdate from the clone");
  check(info.result == CU_GRAPH_EXEC_UPDATE_SUCCESS, "the update succeeded");
  checkResult(cuGraphNodeSetEnabled(exec, memsetNode, 1), CUDA_SUCCESS, "cuGraphNodeSetEnabled(1)");
  checkResult(cuGraphLaunch(exec, stream), CUDA_SUCCESS, "launched after the update");
  checkResult(cuStreamSynchronize(stream), CUDA_SUCCESS, "cuStreamSynchronize");
  check(host[100] == 0x33, "the clone's memset ran");
  cuuint64_t flags = 1;
  checkResult(cuGraphExecGetFlags(exec, &flags), CUDA_SUCCESS, "cuGraphExecGetFlags");
  check(flags == 0, "no flags");

  // The generic form is the typed calls.
  CUgraphNodeParams generic{};
  generic.type = CU_GRAPH_NODE_TYPE_MEMSET;
  generic.memset.dst = device;
  generic.memset.value = 0x44;
  generic.memset.elementSize = 1;
  generic.memset.width = 16;
  generic.memset.height = 1;
  CUgraphNode genericNode = nullptr;
  checkResult(cuGraphAddNode(&genericNode, clone, nullptr, nullptr, 0, &generic), CUDA_SUCCESS,
              "cuGraphAddNode (memset)");
  checkResult(cuGraphMemsetNodeGetParams(genericNode, &readFill), CUDA_SUCCESS, "its parameters");
  check(readFill.value == 0x44 && readFill.width == 16, "the generic node is a memset node");
  generic.reserved2 = 1;
  checkResult(cuGraphAddNode(&genericNode, clone, nullptr, nullptr, 0, &generic), CUDA_ERROR_INVALID_VALUE,
              "cuGraphAddNode with a reserved member set");
  generic = CUgraphNodeParams{};
  generic.type = CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL;
  checkResult(cuGraphAddNode(&genericNode, clone, nullptr, nullptr, 0, &generic), CUDA_ERROR_NOT_SUPPORTED,
              "cuGraphAddNode (external semaphore) fails closed");

  // Capture into a graph the program built: the captured memset follows the given node.
  checkResult(
      cuStreamBeginCaptureToGraph(stream, clone, &cloneFill, nullptr, 1, CU_STREAM_CAPTURE_MODE_GLOBAL),
      CUDA_SUCCESS, "cuStreamBeginCaptureToGraph");
  checkResult(cuMemsetD8Async(device, 0x66, kBytes, stream), CUDA_SUCCESS, "a captured memset");
  CUgraph captured = nullptr;
  checkResult(cuStreamEndCapture(stream, &captured), CUDA_SUCCESS, "cuStreamEndCapture");
  size_t after = 0;
  checkResult(cuGraphNodeGetDependentNodes(cloneFill, nullptr, nullptr, &after), CUDA_SUCCESS,
              "the node's dependents");
  check(captured == clone && after == 2, "the capture went into the program's graph, after its node");

  // What is refused.
  CUgraphNode refused = nullptr;
  checkResult(cuGraphAddMemcpyNode(&refused, graph, nullptr, 0, &copy, reinterpret_cast<CUcontext>(0x1234)),
              CUDA_ERROR_INVALID_CONTEXT, "a copy node for a forged context");
  CUDA_MEMCPY3D toArray = copy;
  toArray.dstMemoryType = CU_MEMORYTYPE_ARRAY;
  checkResult(cuGraphAddMemcpyNode(&refused, graph, nullptr, 0, &toArray, nullptr), CUDA_ERROR_NOT_SUPPORTED,
              "a copy node naming an array");
  CUDA_MEMCPY3D badType = copy;
  std::memset(&badType.srcMemoryType, 0x7f, sizeof badType.srcMemoryType);
  checkResult(cuGraphAddMemcpyNode(&refused, graph, nullptr, 0, &badType, nullptr), CUDA_ERROR_INVALID_VALUE,
              "a copy node with an unknown memory type");
  const CUgraphNode forged = reinterpret_cast<CUgraphNode>(&host[0]);
  checkResult(cuGraphAddEmptyNode(&refused, graph, &forged, 1), CUDA_ERROR_INVALID_VALUE,
              "a forged dependency");
  CUDA_KERNEL_NODE_PARAMS forgedKernel = launch;
  forgedKernel.kern = nullptr;
  forgedKernel.func = reinterpret_cast<CUfunction>(&host[8]);
  checkResult(cuGraphAddKernelNode(&refused, graph, nullptr, 0, &forgedKernel), CUDA_ERROR_INVALID_HANDLE,
              "a kernel node for a forged function");
  size_t count = 0;
  checkResult(cuGraphGetNodes(graph, nullptr, &count), CUDA_SUCCESS, "cuGraphGetNodes");
  check(count == 5, "nothing refused was added");
  // A node naming memory freed since: the launch is refused and nothing of the graph runs.
  CUdeviceptr scratch = 0;
  checkResult(cuMemAlloc(&scratch, kBytes), CUDA_SUCCESS, "cuMemAlloc (scratch)");
  CUgraph stale = nullptr;
  checkResult(cuGraphCreate(&stale, 0), CUDA_SUCCESS, "cuGraphCreate (stale)");
  const CUDA_MEMSET_NODE_PARAMS first = fillBytes(device, 0x01, kBytes);
  const CUDA_MEMSET_NODE_PARAMS onScratch = fillBytes(scratch, 0x02, kBytes);
  CUgraphNode firstNode = nullptr, scratchNode = nullptr;
  checkResult(cuGraphAddMemsetNode(&firstNode, stale, nullptr, 0, &first, nullptr), CUDA_SUCCESS,
              "a memset of live memory");
  checkResult(cuGraphAddMemsetNode(&scratchNode, stale, &firstNode, 1, &onScratch, nullptr), CUDA_SUCCESS,
              "then one of the scratch memory");
  CUgraphExec staleExec = nullptr;
  checkResult(cuGraphInstantiate(&staleExec, stale, 0), CUDA_SUCCESS, "cuGraphInstantiate (stale)");
  checkResult(cuMemFree(scratch), CUDA_SUCCESS, "the scratch memory is freed");
  checkResult(cuMemsetD8(device, 0x09, kBytes), CUDA_SUCCESS, "cuMemsetD8");
  checkResult(cuGraphLaunch(staleExec, stream), CUDA_ERROR_INVALID_VALUE, "the launch is refused");
  checkResult(cuMemcpyDtoH(host.data(), device, kBytes), CUDA_SUCCESS, "cuMemcpyDtoH");
  check(host[0] == 0x09, "and nothing of the graph ran");

  checkResult(cuGraphExecDestroy(staleExec), CUDA_SUCCESS, "cuGraphExecDestroy (stale)");
  checkResult(cuGraphDestroy(stale), CUDA_SUCCESS, "cuGraphDestroy (stale)");
  checkResult(cuGraphExecDestroy(exec), CUDA_SUCCESS, "cuGraphExecDestroy (nodes)");
  checkResult(cuGraphDestroyNode(join), CUDA_SUCCESS, "cuGraphDestroyNode");
  checkResult(cuGraphGetEdges(graph, nullptr, nullptr, nullptr, &edges), CUDA_SUCCESS, "cuGraphGetEdges");
  check(edges == 2, "its edges went with it");
  checkResult(cuGraphDestroy(clone), CUDA_SUCCESS, "cuGraphDestroy (clone)");
  checkResult(cuGraphDestroy(graph), CUDA_SUCCESS, "cuGraphDestroy (nodes)");
  checkResult(cuStreamDestroy(stream), CUDA_SUCCESS, "cuStreamDestroy (nodes)");
  checkResult(cuMemFree(device), CUDA_SUCCESS, "cuMemFree (graph nodes)");
  checkResult(cuLibraryUnload(library), CUDA_SUCCESS, "cuLibraryUnload (graph nodes)");
}

int gIfRuns = 0, gElseRuns = 0, gLoopRuns = 0, gSwitchRuns[3] = {};
void countInto(void* counter) { ++*static_cast<int*>(counter); }

cudaGraphNode_t addHostCounter(cudaGraph_t graph, int* counter) {
  cudaGraphNodeParams host{};
  host.type = cudaGraphNodeTypeHost;
  host.host.fn = countInto;
  host.host.userData = counter;
  cudaGraphNode_t node = nullptr;
  cudaGraphAddNode(&node, graph, nullptr, nullptr, 0, &host);
  return node;
}

void setCondition(cudaGraphConditionalHandle handle, unsigned value) {
  cudaMemcpy(reinterpret_cast<void*>(handle), &value, sizeof value, cudaMemcpyHostToDevice);
}

// A kernel that sets its graph's condition, as nvcc writes one: the worker defines the function.
const char kConditionalPtx[] = R"(
.version 9.0
.target sm_90
.address_size 64

.extern .func cudaGraphSetConditional
(
	.param .b64 cudaGraphSetConditional_param_0,
	.param .b32 cudaGraphSetConditional_param_1
)
;

.visible .entry setCondition(
	.param .u64 setCondition_param_0,
	.param .u32 setCondition_param_1
)
{
	.reg .b64 %rd<2>;
	.reg .b32 %r<2>;
	ld.param.u64 %rd1, [setCondition_param_0];
	ld.param.u32 %r1, [setCondition_param_1];
	{
	.param .b64 param0;
	st.param.b64 [param0+0], %rd1;
	.param .b32 param1;
	st.param.b32 [param1+0], %r1;
	call.uni cudaGraphSetConditional, (param0, param1);
	}
	ret;
}
)";

// Conditional nodes (client/session/graph_conditionals.h): IF/ELSE, WHILE and SWITCH chosen by the
// handle's word when the node runs, bodies built by the program; the fake GPU runs no kernels, so
// the bodies hold host nodes and memsets, and the word is set by copies.
void conditionalNodes() {
  CUmodule module = nullptr;
  checkResult(cuModuleLoadData(&module, kConditionalPtx), CUDA_SUCCESS,
              "a module whose kernel calls cudaGraphSetConditional loads");
  CUfunction setter = nullptr;
  checkResult(cuModuleGetFunction(&setter, module, "setCondition"), CUDA_SUCCESS, "its kernel resolves");

  cudaGraph_t graph = nullptr;
  cudaGraphCreate(&graph, 0);
  cudaGraphConditionalHandle ifHandle = 0, loopHandle = 0, switchHandle = 0;
  check(cudaGraphConditionalHandleCreate(&ifHandle, graph, 0, 0) == cudaSuccess && ifHandle != 0,
        "cudaGraphConditionalHandleCreate");
  check(cudaGraphConditionalHandleCreate(&loopHandle, graph, 1, cudaGraphCondAssignDefault) == cudaSuccess,
        "a handle set to its default at each launch");
  CUgraphConditionalHandle driverHandle = 0;
  checkResult(cuGraphConditionalHandleCreate(&driverHandle, reinterpret_cast<CUgraph>(graph), nullptr, 2, 0),
              CUDA_SUCCESS, "cuGraphConditionalHandleCreate");
  switchHandle = driverHandle;
  cudaGraphConditionalHandle refusedHandle = 0;
  check(cudaGraphConditionalHandleCreate(&refusedHandle, graph, 0, 2) == cudaErrorInvalidValue,
        "unknown handle flags");
  cudaGetLastError();

  // A kernel node that sets the IF condition comes first (the fake GPU does not run it).
  const cudaGraphConditionalHandle ifValue = ifHandle;
  unsigned one = 1;
  void* args[] = {const_cast<cudaGraphConditionalHandle*>(&ifValue), &one};
  CUDA_KERNEL_NODE_PARAMS launch{};
  launch.func = setter;
  launch.gridDimX = launch.gridDimY = launch.gridDimZ = 1;
  launch.blockDimX = launch.blockDimY = launch.blockDimZ = 1;
  launch.kernelParams = args;
  CUgraphNode kernel = nullptr;
  checkResult(cuGraphAddKernelNode(&kernel, reinterpret_cast<CUgraph>(graph), nullptr, 0, &launch),
              CUDA_SUCCESS, "a kernel node that sets the condition");

  cudaGraphNodeParams params{};
  params.type = cudaGraphNodeTypeConditional;
  params.conditional.handle = ifHandle;
  params.conditional.type = cudaGraphCondTypeIf;
  params.conditional.size = 2;
  cudaGraphNode_t ifNode = nullptr;
  check(cudaGraphAddNode(&ifNode, graph, &kernel, nullptr, 1, &params) == cudaSuccess &&
            params.conditional.phGraph_out != nullptr,
        "an IF/ELSE node after it, with its two body graphs");
  addHostCounter(params.conditional.phGraph_out[0], &gIfRuns);
  addHostCounter(params.conditional.phGraph_out[1], &gElseRuns);
  check(cudaGraphDestroy(params.conditional.phGraph_out[0]) == cudaErrorInvalidValue,
        "a body graph is the node's");
  cudaGetLastError();

  params = cudaGraphNodeParams{};
  params.type = cudaGraphNodeTypeConditional;
  params.conditional.handle = loopHandle;
  params.conditional.type = cudaGraphCondTypeWhile;
  params.conditional.size = 1;
  cudaGraphNode_t loopNode = nullptr;
  check(cudaGraphAddNode(&loopNode, graph, &ifNode, nullptr, 1, &params) == cudaSuccess, "a WHILE node");
  cudaGraph_t loopBody = params.conditional.phGraph_out[0];
  cudaGraphNode_t counted = addHostCounter(loopBody, &gLoopRuns);
  cudaMemsetParams stop{};
  stop.dst = reinterpret_cast<void*>(loopHandle);
  stop.elementSize = 4;
  stop.width = 1;
  stop.height = 1;
  cudaGraphNode_t stopNode = nullptr;
  check(cudaGraphAddMemsetNode(&stopNode, loopBody, &counted, 1, &stop) == cudaSuccess,
        "its body ends the loop (a memset of the word)");

  CUgraphNodeParams driverParams{};
  driverParams.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
  driverParams.conditional.handle = switchHandle;
  driverParams.conditional.type = CU_GRAPH_COND_TYPE_SWITCH;
  driverParams.conditional.size = 3;
  CUgraphNode switchNode = nullptr;
  checkResult(
      cuGraphAddNode(&switchNode, reinterpret_cast<CUgraph>(graph), nullptr, nullptr, 0, &driverParams),
      CUDA_SUCCESS, "cuGraphAddNode (SWITCH of three)");
  for (int i = 0; i < 3; ++i)
    addHostCounter(reinterpret_cast<cudaGraph_t>(driverParams.conditional.phGraph_out[i]), &gSwitchRuns[i]);

  // What is refused.
  cudaGraph_t other = nullptr;
  cudaGraphCreate(&other, 0);
  params = cudaGraphNodeParams{};
  params.type = cudaGraphNodeTypeConditional;
  params.conditional.handle = ifHandle;
  params.conditional.type = cudaGraphCondTypeIf;
  params.conditional.size = 1;
  cudaGraphNode_t refused = nullptr;
  check(cudaGraphAddNode(&refused, other, nullptr, nullptr, 0, &params) == cudaErrorInvalidValue,
        "a handle of another graph");
  params.conditional.handle = 0x12345678;
  check(cudaGraphAddNode(&refused, graph, nullptr, nullptr, 0, &params) == cudaErrorInvalidValue,
        "a forged handle");
  params.conditional.handle = ifHandle;
  params.conditional.size = 3;
  check(cudaGraphAddNode(&refused, graph, nullptr, nullptr, 0, &params) == cudaErrorInvalidValue,
        "an IF node of three bodies");
  params.conditional.size = 1;
  std::memset(&params.conditional.type, 0x5a, sizeof params.conditional.type);
  check(cudaGraphAddNode(&refused, graph, nullptr, nullptr, 0, &params) == cudaErrorInvalidValue,
        "an unknown condition type");
  cudaGraph_t clone = nullptr;
  check(cudaGraphClone(&clone, graph) == cudaErrorNotSupported,
        "a graph with conditional nodes is not cloned");
  check(cudaGraphAddChildGraphNode(&refused, other, nullptr, 0, graph) == cudaErrorInvalidValue,
        "nor made a child graph");
  cudaGetLastError();
  cudaGraphDestroy(other);

  cudaGraphExec_t exec = nullptr;
  check(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess, "cudaGraphInstantiate");
  cudaGraphExec_t second = nullptr;
  check(cudaGraphInstantiate(&second, graph, 0) == cudaErrorInvalidValue, "one executable graph at a time");
  cudaGetLastError();
  cudaStream_t stream = nullptr;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);

  setCondition(ifHandle, 1);
  setCondition(switchHandle, 2);
  check(cudaGraphLaunch(exec, stream) == cudaSuccess && cudaStreamSynchronize(stream) == cudaSuccess,
        "a launch");
  check(gIfRuns == 1 && gElseRuns == 0, "IF: the condition is 1, the first body ran");
  check(gLoopRuns == 1, "WHILE: from its default (1), once, until its body set 0");
  check(gSwitchRuns[0] == 0 && gSwitchRuns[1] == 0 && gSwitchRuns[2] == 1, "SWITCH: body 2 for 2");

  setCondition(ifHandle, 0);
  setCondition(switchHandle, 7);
  check(cudaGraphLaunch(exec, stream) == cudaSuccess && cudaStreamSynchronize(stream) == cudaSuccess,
        "a second launch");
  check(gIfRuns == 1 && gElseRuns == 1, "IF: the condition is 0, the ELSE body ran");
  check(gLoopRuns == 2, "WHILE: reset to its default by the launch, once more");
  check(gSwitchRuns[0] + gSwitchRuns[1] + gSwitchRuns[2] == 1, "SWITCH: no body for 7");

  cudaStream_t capturing = nullptr;
  cudaStreamCreateWithFlags(&capturing, cudaStreamNonBlocking);
  // A capture into the program's own graph may end without a place for the graph (the samples end
  // their captures into body graphs so); a capture that made its graph may not, and goes on.
  cudaGraph_t target = nullptr;
  cudaGraphCreate(&target, 0);
  check(cudaStreamBeginCaptureToGraph(capturing, target, nullptr, nullptr, 0, cudaStreamCaptureModeRelaxed) ==
                cudaSuccess &&
            cudaStreamEndCapture(capturing, nullptr) == cudaSuccess,
        "cudaStreamEndCapture(nullptr) of a capture into the program's graph");
  cudaGraphDestroy(target);
  cudaStreamBeginCapture(capturing, cudaStreamCaptureModeRelaxed);
  cudaStreamCaptureStatus stillCapturing = cudaStreamCaptureStatusNone;
  check(cudaStreamEndCapture(capturing, nullptr) == cudaErrorInvalidValue &&
            cudaStreamIsCapturing(capturing, &stillCapturing) == cudaSuccess &&
            stillCapturing == cudaStreamCaptureStatusActive,
        "cudaStreamEndCapture(nullptr) of a capture that made its graph: refused, the capture goes on");
  cudaGetLastError();
  check(cudaGraphLaunch(exec, capturing) != cudaSuccess, "not captured: it is evaluated as it runs");
  cudaGraph_t captured = nullptr;
  cudaStreamEndCapture(capturing, &captured);
  if (captured != nullptr) cudaGraphDestroy(captured);
  cudaGetLastError();

  // The executable graph holds its handles: it outlives its graph.
  check(cudaGraphDestroy(graph) == cudaSuccess, "cudaGraphDestroy");
  setCondition(ifHandle, 1);
  check(cudaGraphLaunch(exec, stream) == cudaSuccess && cudaStreamSynchronize(stream) == cudaSuccess,
        "a launch after the graph was destroyed");
  check(gIfRuns == 2 && gLoopRuns == 3, "ran again");
  check(cudaGraphExecDestroy(exec) == cudaSuccess, "cudaGraphExecDestroy");
  cudaStreamDestroy(capturing);
  cudaStreamDestroy(stream);
  checkResult(cuModuleUnload(module), CUDA_SUCCESS, "cuModuleUnload (conditional)");
}

int main() {
  beforeInit();
  CUcontext context = nullptr;
  devicesAndContexts(&context);
  oneWorld();
  runtimeBindsThePrimaryContext();
  virtualMemory();
  compressibleMemory();
  moduleGlobals();
  managedVariables();
  perThreadLaunchAndPeers();
  rectangles();
  driverEntryPoints();
  forgeries();
  primaryReset();
  contextLocalStorage();
  streamContexts();
  toolsContextTable();
  librariesAndKernels();
  linkerCalls();
  pointersCopiesAndQueries();
  graphMemoryNodes();
  graphNodesByHand();
  conditionalNodes();
  checkResult(cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS, "cuDevicePrimaryCtxRelease");
  std::printf("%d failure(s)\n", gFailures);
  return gFailures == 0 ? 0 : 1;
}
