// A driver-API program (issue 16): modules from a fatbin and from PTX, cuLaunchKernel with
// kernelParams and with `extra`, streams and events, contexts, and the runtime API mixed in on
// the same allocations. Its output must equal the native run's: only results and error texts are
// printed, never addresses, handles or timings. (No SASS-only cubin here: the suite's daemon gives
// every client a protected canary, and the worker's one gate never loads code the guard cannot
// rewrite beside protected state, so that route differs from native by design.)
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tests/gpu/programs/driver_kernels_images.h"

namespace {

int gFailures = 0;

void check(bool ok, const char* what) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what);
  if (!ok) ++gFailures;
}

bool succeeded(CUresult result, const char* what) {
  if (result == CUDA_SUCCESS) return true;
  const char* name = nullptr;
  cuGetErrorName(result, &name);
  std::printf("FAIL %s: %s\n", what, name != nullptr ? name : "?");
  ++gFailures;
  return false;
}

struct Pair {
  int a;
  float b;
};

// vector_add of the module loaded from `image`, checked against the host's sums.
void vectorAddFrom(const char* kind, const void* image) {
  CUmodule module = nullptr;
  if (!succeeded(cuModuleLoadData(&module, image), kind)) return;
  CUfunction function = nullptr;
  if (!succeeded(cuModuleGetFunction(&function, module, "vector_add"), "cuModuleGetFunction")) return;
  int n = 100000;
  std::vector<float> a(n), b(n), c(n);
  for (int i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i);
    b[i] = static_cast<float>(2 * i + 1);
  }
  const size_t bytes = n * sizeof(float);
  CUdeviceptr da = 0, db = 0, dc = 0;
  succeeded(cuMemAlloc(&da, bytes), "cuMemAlloc");
  succeeded(cuMemAlloc(&db, bytes), "cuMemAlloc");
  succeeded(cuMemAlloc(&dc, bytes), "cuMemAlloc");
  succeeded(cuMemcpyHtoD(da, a.data(), bytes), "cuMemcpyHtoD");
  succeeded(cuMemcpyHtoD(db, b.data(), bytes), "cuMemcpyHtoD");
  void* params[] = {&da, &db, &dc, &n};
  succeeded(cuLaunchKernel(function, (n + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr),
            "cuLaunchKernel");
  succeeded(cuMemcpyDtoH(c.data(), dc, bytes), "cuMemcpyDtoH");
  bool exact = true;
  for (int i = 0; i < n; ++i) exact = exact && c[i] == a[i] + b[i];
  std::printf("%s %s: vector_add of %d elements %s\n", exact ? "ok  " : "FAIL", kind, n,
              exact ? "exact" : "wrong");
  if (!exact) ++gFailures;
  int threads = 0, registers = 0;
  succeeded(cuFuncGetAttribute(&threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, function),
            "cuFuncGetAttribute");
  succeeded(cuFuncGetAttribute(&registers, CU_FUNC_ATTRIBUTE_NUM_REGS, function), "cuFuncGetAttribute");
  check(threads >= 256 && registers > 0, "function attributes");
  cuMemFree(da);
  cuMemFree(db);
  cuMemFree(dc);
  succeeded(cuModuleUnload(module), "cuModuleUnload");
}

// vector_add on memory from the virtual-memory API, as NVIDIA's vectorAddMMAP sample allocates it:
// one reservation, an allocation per vector mapped into it back to back, read/write access for the
// device; then one allocation mapped twice, the kernel writing through one mapping and the host
// reading through the other.
void virtualMemoryVectorAdd(CUmodule module, CUdevice device) {
  CUfunction function = nullptr;
  if (!succeeded(cuModuleGetFunction(&function, module, "vector_add"), "cuModuleGetFunction")) return;
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  size_t granularity = 0;
  if (!succeeded(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
                 "cuMemGetAllocationGranularity")) {
    return;
  }
  int n = 1 << 20;
  const size_t bytes = n * sizeof(float);
  const size_t each = (bytes + granularity - 1) / granularity * granularity;
  CUdeviceptr base = 0;
  if (!succeeded(cuMemAddressReserve(&base, 4 * each, 0, 0, 0), "cuMemAddressReserve")) return;
  CUmemGenericAllocationHandle handles[3] = {};
  for (int i = 0; i < 3; ++i) {
    succeeded(cuMemCreate(&handles[i], each, &prop, 0), "cuMemCreate");
    succeeded(cuMemMap(base + i * each, each, 0, handles[i], 0), "cuMemMap");
  }
  succeeded(cuMemMap(base + 3 * each, each, 0, handles[2], 0), "cuMemMap of c again");
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  succeeded(cuMemSetAccess(base, 4 * each, &access, 1), "cuMemSetAccess");
  std::vector<float> a(n), b(n), c(n);
  for (int i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i % 1000);
    b[i] = static_cast<float>(3 * (i % 777));
  }
  CUdeviceptr da = base, db = base + each, dc = base + 2 * each;
  succeeded(cuMemcpyHtoD(da, a.data(), bytes), "cuMemcpyHtoD");
  succeeded(cuMemcpyHtoD(db, b.data(), bytes), "cuMemcpyHtoD");
  void* params[] = {&da, &db, &dc, &n};
  succeeded(cuLaunchKernel(function, (n + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr),
            "cuLaunchKernel");
  succeeded(cuMemcpyDtoH(c.data(), base + 3 * each, bytes), "cuMemcpyDtoH through the second mapping");
  bool exact = true;
  for (int i = 0; i < n; ++i) exact = exact && c[i] == a[i] + b[i];
  check(exact, "vector_add on mapped memory, read back through another mapping of the result");
  succeeded(cuMemUnmap(base, 4 * each), "cuMemUnmap");
  for (CUmemGenericAllocationHandle handle : handles) succeeded(cuMemRelease(handle), "cuMemRelease");
  succeeded(cuMemAddressFree(base, 4 * each), "cuMemAddressFree");
}

// The mixed-parameter kernel, launched with kernelParams and with a packed `extra` buffer.
void everyParameterKind(CUmodule module) {
  CUfunction function = nullptr;
  if (!succeeded(cuModuleGetFunction(&function, module, "mixed"), "cuModuleGetFunction(mixed)")) return;
  CUdeviceptr out = 0;
  succeeded(cuMemAlloc(&out, 32 * sizeof(double)), "cuMemAlloc");
  char c = 3;
  int i = 40;
  double d = 0.25;
  Pair p{500, 0.5f};
  void* params[] = {&c, &i, &d, &p, &out};
  succeeded(cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr),
            "cuLaunchKernel(params)");
  std::vector<double> host(32);
  succeeded(cuMemcpyDtoH(host.data(), out, 32 * sizeof(double)), "cuMemcpyDtoH");
  bool exact = true;
  for (int t = 0; t < 32; ++t) exact = exact && host[t] == 543.75 + t;
  check(exact, "kernelParams: char, int, double, struct and pointer arrive intact");

  alignas(8) unsigned char buffer[32] = {};
  c = 7;
  std::memcpy(buffer + 0, &c, sizeof c);
  std::memcpy(buffer + 4, &i, sizeof i);
  std::memcpy(buffer + 8, &d, sizeof d);
  std::memcpy(buffer + 16, &p, sizeof p);
  std::memcpy(buffer + 24, &out, sizeof out);
  size_t size = sizeof buffer;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                   CU_LAUNCH_PARAM_END};
  succeeded(cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, nullptr, nullptr, extra), "cuLaunchKernel(extra)");
  succeeded(cuMemcpyDtoH(host.data(), out, 32 * sizeof(double)), "cuMemcpyDtoH");
  exact = true;
  for (int t = 0; t < 32; ++t) exact = exact && host[t] == 547.75 + t;
  check(exact, "extra: the packed buffer arrives intact");
  cuMemFree(out);
}

// A stream and events; the runtime API works on the same stream and memory.
void streamsEventsAndTheRuntime(CUmodule module) {
  CUfunction scale = nullptr;
  if (!succeeded(cuModuleGetFunction(&scale, module, "scale"), "cuModuleGetFunction(scale)")) return;
  const int n = 1 << 20;
  std::vector<float> host(n, 1.5f);
  void* runtimeBuffer = nullptr;
  check(cudaMalloc(&runtimeBuffer, n * sizeof(float)) == cudaSuccess, "cudaMalloc");
  CUstream stream = nullptr;
  succeeded(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  CUevent start = nullptr, stop = nullptr;
  succeeded(cuEventCreate(&start, CU_EVENT_DEFAULT), "cuEventCreate");
  succeeded(cuEventCreate(&stop, CU_EVENT_DEFAULT), "cuEventCreate");
  CUdeviceptr data = reinterpret_cast<CUdeviceptr>(runtimeBuffer);
  succeeded(cuEventRecord(start, stream), "cuEventRecord");
  succeeded(cuMemcpyHtoDAsync(data, host.data(), n * sizeof(float), stream), "cuMemcpyHtoDAsync");
  float factor = 4.0f;
  int count = n;
  void* params[] = {&data, &factor, &count};
  succeeded(cuLaunchKernel(scale, 132, 1, 1, 256, 1, 1, 0, stream, params, nullptr),
            "cuLaunchKernel(stream)");
  succeeded(cuEventRecord(stop, stream), "cuEventRecord");
  succeeded(cuEventSynchronize(stop), "cuEventSynchronize");
  float ms = -1;
  succeeded(cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
  check(ms >= 0, "elapsed time between two events");
  std::vector<float> back(n);
  check(cudaMemcpyAsync(back.data(), runtimeBuffer, n * sizeof(float), cudaMemcpyDeviceToHost,
                        reinterpret_cast<cudaStream_t>(stream)) == cudaSuccess,
        "cudaMemcpyAsync on the driver's stream");
  succeeded(cuStreamSynchronize(stream), "cuStreamSynchronize");
  bool exact = true;
  for (int i = 0; i < n; ++i) exact = exact && back[i] == 6.0f;
  check(exact, "a kernel launched with the driver API on runtime memory");
  succeeded(cuMemsetD32Async(data, 0, n, stream), "cuMemsetD32Async");
  succeeded(cuStreamSynchronize(stream), "cuStreamSynchronize");
  check(cudaMemcpy(back.data(), runtimeBuffer, n * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess,
        "cudaMemcpy");
  exact = true;
  for (int i = 0; i < n; ++i) exact = exact && back[i] == 0.0f;
  check(exact, "cuMemsetD32Async cleared runtime memory");
  cuEventDestroy(start);
  cuEventDestroy(stop);
  succeeded(cuStreamDestroy(stream), "cuStreamDestroy");
  check(cudaFree(runtimeBuffer) == cudaSuccess, "cudaFree");
}

// cuModuleGetGlobal: the host writes a module variable that a kernel then reads; and the block size
// cuOccupancyMaxPotentialBlockSize suggests for that kernel.
void globalsAndOccupancy(CUmodule module) {
  CUdeviceptr variable = 0;
  size_t bytes = 0;
  if (!succeeded(cuModuleGetGlobal(&variable, &bytes, module, "offset_value"), "cuModuleGetGlobal")) return;
  std::printf("offset_value: %zu bytes\n", bytes);
  const float offset = 0.5f;
  succeeded(cuMemcpyHtoD(variable, &offset, sizeof offset), "cuMemcpyHtoD(variable)");
  CUfunction addOffset = nullptr;
  if (!succeeded(cuModuleGetFunction(&addOffset, module, "add_offset"), "cuModuleGetFunction(add_offset)"))
    return;
  int n = 4096;
  std::vector<float> host(n, 2.0f);
  CUdeviceptr data = 0;
  succeeded(cuMemAlloc(&data, n * sizeof(float)), "cuMemAlloc");
  succeeded(cuMemcpyHtoD(data, host.data(), n * sizeof(float)), "cuMemcpyHtoD");
  void* params[] = {&data, &n};
  succeeded(cuLaunchKernel(addOffset, n / 128, 1, 1, 128, 1, 1, 0, nullptr, params, nullptr),
            "cuLaunchKernel");
  succeeded(cuMemcpyDtoH(host.data(), data, n * sizeof(float)), "cuMemcpyDtoH");
  bool exact = true;
  for (float value : host) exact = exact && value == 2.5f;
  check(exact, "a kernel read the variable the host wrote");
  float back = 0;
  succeeded(cuMemcpyDtoH(&back, variable, sizeof back), "cuMemcpyDtoH(variable)");
  check(back == offset, "the variable reads back");
  cuMemFree(data);
  int minGrid = 0, blockSize = 0;
  succeeded(cuOccupancyMaxPotentialBlockSize(&minGrid, &blockSize, addOffset, nullptr, 0, 0),
            "cuOccupancyMaxPotentialBlockSize");
  std::printf("suggested block size %d, minimum grid %d\n", blockSize, minGrid);
  succeeded(cuOccupancyMaxPotentialBlockSize(&minGrid, &blockSize, addOffset, nullptr, 0, 96),
            "cuOccupancyMaxPotentialBlockSize(limit 96)");
  std::printf("with a limit of 96: block size %d, minimum grid %d\n", blockSize, minGrid);
  CUdeviceptr absent = 0;
  std::printf("a variable that does not exist: %d\n",
              static_cast<int>(cuModuleGetGlobal(&absent, &bytes, module, "no_such_variable")));
}

void errorTexts() {
  const CUresult codes[] = {CUDA_SUCCESS,
                            CUDA_ERROR_INVALID_VALUE,
                            CUDA_ERROR_OUT_OF_MEMORY,
                            CUDA_ERROR_NOT_INITIALIZED,
                            CUDA_ERROR_INVALID_IMAGE,
                            CUDA_ERROR_INVALID_CONTEXT,
                            CUDA_ERROR_NOT_FOUND,
                            CUDA_ERROR_INVALID_HANDLE,
                            CUDA_ERROR_ILLEGAL_ADDRESS,
                            CUDA_ERROR_LAUNCH_FAILED,
                            CUDA_ERROR_NOT_SUPPORTED,
                            CUDA_ERROR_UNKNOWN};
  for (CUresult code : codes) {
    const char* name = nullptr;
    const char* text = nullptr;
    cuGetErrorName(code, &name);
    cuGetErrorString(code, &text);
    std::printf("%d %s: %s\n", static_cast<int>(code), name != nullptr ? name : "?",
                text != nullptr ? text : "?");
  }
  const char* text = nullptr;
  std::printf("an unknown code: %d\n",
              static_cast<int>(cuGetErrorString(static_cast<CUresult>(99999), &text)));
}

void refusals(CUmodule module) {
  CUfunction function = nullptr;
  std::printf("a kernel that does not exist: %d\n",
              static_cast<int>(cuModuleGetFunction(&function, module, "no_such_kernel")));
  CUdeviceptr p = 0;
  std::printf("an empty allocation: %d\n", static_cast<int>(cuMemAlloc(&p, 0)));
  int value = 0;
  std::printf("device 5: %d\n",
              static_cast<int>(cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 5)));
}

}  // namespace

int main() {
  CUdevice device = 0;
  if (!succeeded(cuInit(0), "cuInit") || !succeeded(cuDeviceGet(&device, 0), "cuDeviceGet")) return 1;
  int warp = 0, major = 0;
  succeeded(cuDeviceGetAttribute(&warp, CU_DEVICE_ATTRIBUTE_WARP_SIZE, device), "cuDeviceGetAttribute");
  succeeded(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device),
            "cuDeviceGetAttribute");
  std::printf("warp size %d, compute capability %d.x\n", warp, major);
  CUcontext context = nullptr;
  succeeded(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
  succeeded(cuCtxSetCurrent(context), "cuCtxSetCurrent");

  const std::string ptx(reinterpret_cast<const char*>(kDriverKernelsPtx), sizeof kDriverKernelsPtx);
  vectorAddFrom("fatbin", kDriverKernelsFatbin);
  vectorAddFrom("ptx", ptx.c_str());
  // The JIT linker with one PTX input, as NVIDIA's ptxjit sample uses it: its output loads like
  // any image (under AgileOS the worker's loader compiles and guards it).
  CUlinkState link = nullptr;
  if (succeeded(cuLinkCreate(0, nullptr, nullptr, &link), "cuLinkCreate")) {
    void* linked = nullptr;
    size_t linkedBytes = 0;
    if (succeeded(cuLinkAddData(link, CU_JIT_INPUT_PTX, const_cast<char*>(ptx.c_str()), ptx.size() + 1,
                                "driver_kernels.ptx", 0, nullptr, nullptr),
                  "cuLinkAddData") &&
        succeeded(cuLinkComplete(link, &linked, &linkedBytes), "cuLinkComplete")) {
      check(linked != nullptr && linkedBytes > 0, "cuLinkComplete gave an image");
      vectorAddFrom("linked", linked);
    }
    succeeded(cuLinkDestroy(link), "cuLinkDestroy");
  }

  CUmodule module = nullptr;
  if (succeeded(cuModuleLoadData(&module, kDriverKernelsFatbin), "cuModuleLoadData")) {
    everyParameterKind(module);
    virtualMemoryVectorAdd(module, device);
    streamsEventsAndTheRuntime(module);
    globalsAndOccupancy(module);
    refusals(module);
    succeeded(cuModuleUnload(module), "cuModuleUnload");
  }
  errorTexts();

  CUcontext created = nullptr;
  succeeded(cuCtxCreate(&created, nullptr, 0, device), "cuCtxCreate");
  CUdeviceptr p = 0;
  succeeded(cuMemAlloc(&p, 4096), "cuMemAlloc in a created context");
  succeeded(cuMemFree(p), "cuMemFree");
  succeeded(cuCtxDestroy(created), "cuCtxDestroy");
  succeeded(cuDevicePrimaryCtxRelease(device), "cuDevicePrimaryCtxRelease");
  std::printf("%d failure(s)\n", gFailures);
  return gFailures == 0 ? 0 : 1;
}
