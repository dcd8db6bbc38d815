#include "worker/backend/cuda_gpu_backend.h"

#include <cstring>

namespace agileos::worker {

#define AGILEOS_BIND()                                                \
  do {                                                                \
    if (CUresult bound = bind(); bound != CUDA_SUCCESS) return bound; \
  } while (0)

CudaGpuBackend::~CudaGpuBackend() {
  if (context_ != nullptr) cuDevicePrimaryCtxRelease(device_);
}

CUresult CudaGpuBackend::bind() {
  thread_local CUcontext current = nullptr;
  if (current == context_) return CUDA_SUCCESS;
  CUresult result = cuCtxSetCurrent(context_);
  if (result == CUDA_SUCCESS) current = context_;
  return result;
}

CUresult CudaGpuBackend::init(int ordinal, std::string* error) {
  auto fail = [&](CUresult result, const char* what) {
    const char* name = nullptr;
    cuGetErrorName(result, &name);
    *error = std::string(what) + " failed: " + (name != nullptr ? name : "unknown error");
    return result;
  };
  CUresult result = cuInit(0);
  if (result != CUDA_SUCCESS) return fail(result, "cuInit");
  if ((result = cuDeviceGet(&device_, ordinal)) != CUDA_SUCCESS) return fail(result, "cuDeviceGet");
  if ((result = cuDevicePrimaryCtxRetain(&context_, device_)) != CUDA_SUCCESS) {
    return fail(result, "cuDevicePrimaryCtxRetain");
  }
  if ((result = bind()) != CUDA_SUCCESS) return fail(result, "cuCtxSetCurrent");

  description_.ordinal = ordinal;
  char name[256] = {};
  cuDeviceGetName(name, sizeof name - 1, device_);
  description_.name = name;
  CUuuid uuid{};
  cuDeviceGetUuid(&uuid, device_);
  description_.uuid.assign(uuid.bytes, sizeof uuid.bytes);
  std::size_t total = 0;
  cuDeviceTotalMem(&total, device_);
  description_.totalGlobalMem = total;
  cuDriverGetVersion(&description_.driverVersion);
  for (int attribute = 1; attribute < CU_DEVICE_ATTRIBUTE_MAX; ++attribute) {
    int value = 0;
    if (cuDeviceGetAttribute(&value, static_cast<CUdevice_attribute>(attribute), device_) == CUDA_SUCCESS) {
      description_.attributes.emplace_back(attribute, value);
    }
  }
  cuDeviceGetAttribute(&description_.computeMajor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device_);
  cuDeviceGetAttribute(&description_.computeMinor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device_);
  return CUDA_SUCCESS;
}

CUmemAllocationProp CudaGpuBackend::allocationProperties() const {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device_;
  return prop;
}

CUresult CudaGpuBackend::allocationGranularity(std::size_t* bytes) {
  AGILEOS_BIND();
  CUmemAllocationProp prop = allocationProperties();
  return cuMemGetAllocationGranularity(bytes, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
}

CUresult CudaGpuBackend::reserve(memmgr::DevicePtr fixed, std::size_t size, memmgr::DevicePtr* got) {
  AGILEOS_BIND();
  CUdeviceptr base = 0;
  CUresult result = cuMemAddressReserve(&base, size, 0, fixed, 0);
  *got = base;
  return result;
}

CUresult CudaGpuBackend::freeReservation(memmgr::DevicePtr base, std::size_t size) {
  AGILEOS_BIND();
  return cuMemAddressFree(base, size);
}

CUresult CudaGpuBackend::createPhysical(std::size_t size, memmgr::PhysicalHandle* handle) {
  AGILEOS_BIND();
  CUmemAllocationProp prop = allocationProperties();
  CUmemGenericAllocationHandle created = 0;
  CUresult result = cuMemCreate(&created, size, &prop, 0);
  *handle = created;
  return result;
}

CUresult CudaGpuBackend::compressibleGranularity(std::size_t* bytes) {
  AGILEOS_BIND();
  CUmemAllocationProp prop = allocationProperties();
  prop.allocFlags.compressionType = CU_MEM_ALLOCATION_COMP_GENERIC;
  return cuMemGetAllocationGranularity(bytes, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
}

// The driver may create the memory without compression (cuda-samples' compMalloc.cpp reads the
// properties back for that reason); what it granted is read back the same way.
CUresult CudaGpuBackend::createCompressiblePhysical(std::size_t size, memmgr::PhysicalHandle* handle,
                                                    bool* compressed) {
  AGILEOS_BIND();
  CUmemAllocationProp prop = allocationProperties();
  prop.allocFlags.compressionType = CU_MEM_ALLOCATION_COMP_GENERIC;
  CUmemGenericAllocationHandle created = 0;
  CUresult result = cuMemCreate(&created, size, &prop, 0);
  *handle = created;
  *compressed = false;
  if (result != CUDA_SUCCESS) return result;
  CUmemAllocationProp granted{};
  if (cuMemGetAllocationPropertiesFromHandle(&granted, created) == CUDA_SUCCESS)
    *compressed = granted.allocFlags.compressionType == CU_MEM_ALLOCATION_COMP_GENERIC;
  return CUDA_SUCCESS;
}

CUresult CudaGpuBackend::createExportablePhysical(std::size_t size, memmgr::PhysicalHandle* handle) {
  AGILEOS_BIND();
  CUmemAllocationProp prop = allocationProperties();
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  CUmemGenericAllocationHandle created = 0;
  CUresult result = cuMemCreate(&created, size, &prop, 0);
  *handle = created;
  return result;
}

CUresult CudaGpuBackend::exportToFd(memmgr::PhysicalHandle handle, int* fd) {
  AGILEOS_BIND();
  int exported = -1;
  CUresult result =
      cuMemExportToShareableHandle(&exported, handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
  if (result == CUDA_SUCCESS) *fd = exported;
  return result;
}

CUresult CudaGpuBackend::releasePhysical(memmgr::PhysicalHandle handle) {
  AGILEOS_BIND();
  return cuMemRelease(handle);
}

CUresult CudaGpuBackend::map(memmgr::DevicePtr va, std::size_t size, memmgr::PhysicalHandle handle) {
  AGILEOS_BIND();
  return cuMemMap(va, size, 0, handle, 0);
}

CUresult CudaGpuBackend::setAccess(memmgr::DevicePtr va, std::size_t size) {
  AGILEOS_BIND();
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = device_;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return cuMemSetAccess(va, size, &access, 1);
}

CUresult CudaGpuBackend::unmap(memmgr::DevicePtr va, std::size_t size) {
  AGILEOS_BIND();
  return cuMemUnmap(va, size);
}

CUresult CudaGpuBackend::fill(memmgr::DevicePtr va, std::uint8_t value, std::size_t size) {
  AGILEOS_BIND();
  CUresult result = cuMemsetD8(va, value, size);
  return result == CUDA_SUCCESS ? cuCtxSynchronize() : result;
}

CUresult CudaGpuBackend::synchronizeContext() {
  AGILEOS_BIND();
  return cuCtxSynchronize();
}

CUresult CudaGpuBackend::getLimit(CUlimit limit, std::size_t* value) {
  AGILEOS_BIND();
  return cuCtxGetLimit(value, limit);
}

CUresult CudaGpuBackend::setLimit(CUlimit limit, std::size_t value) {
  AGILEOS_BIND();
  return cuCtxSetLimit(limit, value);
}

CUresult CudaGpuBackend::getCacheConfig(CUfunc_cache* config) {
  AGILEOS_BIND();
  return cuCtxGetCacheConfig(config);
}

CUresult CudaGpuBackend::resetPersistingL2Cache() {
  AGILEOS_BIND();
  return cuCtxResetPersistingL2Cache();
}

CUresult CudaGpuBackend::setCacheConfig(CUfunc_cache config) {
  AGILEOS_BIND();
  return cuCtxSetCacheConfig(config);
}

CUresult CudaGpuBackend::memGetInfo(std::size_t* free, std::size_t* total) {
  AGILEOS_BIND();
  return cuMemGetInfo(free, total);
}

CUresult CudaGpuBackend::copyHostToDevice(CUdeviceptr dst, const void* src, std::size_t bytes,
                                          CUstream stream, bool async) {
  AGILEOS_BIND();
  return async ? cuMemcpyHtoDAsync(dst, src, bytes, stream) : cuMemcpyHtoD(dst, src, bytes);
}

CUresult CudaGpuBackend::copyDeviceToHost(void* dst, CUdeviceptr src, std::size_t bytes, CUstream stream,
                                          bool async) {
  AGILEOS_BIND();
  if (!async) return cuMemcpyDtoH(dst, src, bytes);
  // The destination is the reply buffer, which is sent as soon as this returns:
  // wait for the copy (CUDA does the same for pageable destinations).
  CUresult result = cuMemcpyDtoHAsync(dst, src, bytes, stream);
  return result == CUDA_SUCCESS ? cuStreamSynchronize(stream) : result;
}

CUresult CudaGpuBackend::copyDeviceToDevice(CUdeviceptr dst, CUdeviceptr src, std::size_t bytes,
                                            CUstream stream, bool async) {
  AGILEOS_BIND();
  return async ? cuMemcpyDtoDAsync(dst, src, bytes, stream) : cuMemcpyDtoD(dst, src, bytes);
}

CUresult CudaGpuBackend::memsetBytes(CUdeviceptr dst, std::uint8_t value, std::size_t bytes, CUstream stream,
                                     bool async) {
  AGILEOS_BIND();
  return async ? cuMemsetD8Async(dst, value, bytes, stream) : cuMemsetD8(dst, value, bytes);
}

CUresult CudaGpuBackend::enqueueCopyDeviceToHost(void* dst, CUdeviceptr src, std::size_t bytes,
                                                 CUstream stream) {
  AGILEOS_BIND();
  return cuMemcpyDtoHAsync(dst, src, bytes, stream);
}

CUresult CudaGpuBackend::hostRegister(void* p, std::size_t bytes) {
  AGILEOS_BIND();
  return cuMemHostRegister(p, bytes, CU_MEMHOSTREGISTER_PORTABLE);
}

CUresult CudaGpuBackend::hostRegisterMapped(void* p, std::size_t bytes, bool ioMemory, CUdeviceptr* device) {
  AGILEOS_BIND();
  unsigned flags = CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_PORTABLE;
  if (ioMemory) flags |= CU_MEMHOSTREGISTER_IOMEMORY;
  CUresult result = cuMemHostRegister(p, bytes, flags);
  if (result != CUDA_SUCCESS) return result;
  result = cuMemHostGetDevicePointer(device, p, 0);
  if (result != CUDA_SUCCESS) cuMemHostUnregister(p);
  return result;
}

CUresult CudaGpuBackend::hostUnregister(void* p) {
  AGILEOS_BIND();
  return cuMemHostUnregister(p);
}

CUresult CudaGpuBackend::streamCreate(unsigned flags, int priority, CUstream* stream) {
  AGILEOS_BIND();
  return cuStreamCreateWithPriority(stream, flags, priority);
}

CUresult CudaGpuBackend::streamDestroy(CUstream stream) {
  AGILEOS_BIND();
  return cuStreamDestroy(stream);
}

CUresult CudaGpuBackend::streamSynchronize(CUstream stream) {
  AGILEOS_BIND();
  return cuStreamSynchronize(stream);
}

CUresult CudaGpuBackend::streamQuery(CUstream stream) {
  AGILEOS_BIND();
  return cuStreamQuery(stream);
}

CUresult CudaGpuBackend::streamGetId(CUstream stream, unsigned long long* id) {
  AGILEOS_BIND();
  return cuStreamGetId(stream, id);
}

CUresult CudaGpuBackend::streamSetAttribute(CUstream stream, CUlaunchAttributeID id,
                                            const CUlaunchAttributeValue& value) {
  AGILEOS_BIND();
  return cuStreamSetAttribute(stream, id, &value);
}

CUresult CudaGpuBackend::streamGetAttribute(CUstream stream, CUlaunchAttributeID id,
                                            CUlaunchAttributeValue* value) {
  AGILEOS_BIND();
  return cuStreamGetAttribute(stream, id, value);
}

CUresult CudaGpuBackend::streamWaitEvent(CUstream stream, CUevent event, unsigned flags) {
  AGILEOS_BIND();
  return cuStreamWaitEvent(stream, event, flags);
}

CUresult CudaGpuBackend::streamPriorityRange(int* least, int* greatest) {
  AGILEOS_BIND();
  return cuCtxGetStreamPriorityRange(least, greatest);
}

CUresult CudaGpuBackend::eventCreate(unsigned flags, CUevent* event) {
  AGILEOS_BIND();
  return cuEventCreate(event, flags);
}

CUresult CudaGpuBackend::eventDestroy(CUevent event) {
  AGILEOS_BIND();
  return cuEventDestroy(event);
}

CUresult CudaGpuBackend::eventRecord(CUevent event, CUstream stream, unsigned flags) {
  AGILEOS_BIND();
  return cuEventRecordWithFlags(event, stream, flags);
}

CUresult CudaGpuBackend::eventSynchronize(CUevent event) {
  AGILEOS_BIND();
  return cuEventSynchronize(event);
}

CUresult CudaGpuBackend::eventQuery(CUevent event) {
  AGILEOS_BIND();
  return cuEventQuery(event);
}

CUresult CudaGpuBackend::eventElapsedTime(float* milliseconds, CUevent start, CUevent end) {
  AGILEOS_BIND();
  return cuEventElapsedTime(milliseconds, start, end);
}

CUresult CudaGpuBackend::moduleLoad(const void* image, CUmodule* module, std::string* log) {
  AGILEOS_BIND();
  char errorLog[8192] = {};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {errorLog, reinterpret_cast<void*>(static_cast<std::uintptr_t>(sizeof errorLog - 1))};
  CUresult result = cuModuleLoadDataEx(module, image, 2, options, values);
  if (result != CUDA_SUCCESS && log != nullptr) *log = errorLog;
  return result;
}

CUresult CudaGpuBackend::compilePtx(const std::string& ptx, std::string* image, std::string* log) {
  AGILEOS_BIND();
  char errorLog[8192] = {};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {errorLog, reinterpret_cast<void*>(static_cast<std::uintptr_t>(sizeof errorLog - 1))};
  CUlinkState link = nullptr;
  CUresult result = cuLinkCreate(2, options, values, &link);
  if (result != CUDA_SUCCESS) return result;
  // The text includes its NUL; the driver reads PTX as a C string.
  result = cuLinkAddData(link, CU_JIT_INPUT_PTX, const_cast<char*>(ptx.c_str()), ptx.size(),
                         "agileos_guarded.ptx", 0, nullptr, nullptr);
  void* cubin = nullptr;
  std::size_t bytes = 0;
  if (result == CUDA_SUCCESS) result = cuLinkComplete(link, &cubin, &bytes);
  if (result == CUDA_SUCCESS) {
    image->assign(static_cast<const char*>(cubin), bytes);  // owned by the link state
  } else if (log != nullptr) {
    *log = errorLog;
  }
  cuLinkDestroy(link);
  return result;
}

CUresult CudaGpuBackend::jitLogs(const std::string& ptx, bool verbose, std::string* info,
                                 std::string* error) {
  AGILEOS_BIND();
  char infoLog[16384] = {};
  char errorLog[16384] = {};
  CUjit_option options[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                            CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_LOG_VERBOSE};
  void* values[] = {infoLog, reinterpret_cast<void*>(static_cast<std::uintptr_t>(sizeof infoLog - 1)),
                    errorLog, reinterpret_cast<void*>(static_cast<std::uintptr_t>(sizeof errorLog - 1)),
                    reinterpret_cast<void*>(static_cast<std::uintptr_t>(verbose ? 1 : 0))};
  CUlinkState link = nullptr;
  CUresult result = cuLinkCreate(5, options, values, &link);
  if (result != CUDA_SUCCESS) return result;
  result = cuLinkAddData(link, CU_JIT_INPUT_PTX, const_cast<char*>(ptx.c_str()), ptx.size(), nullptr, 0,
                         nullptr, nullptr);
  void* cubin = nullptr;
  std::size_t bytes = 0;
  if (result == CUDA_SUCCESS) result = cuLinkComplete(link, &cubin, &bytes);  // the code is discarded
  *info = infoLog;
  *error = errorLog;
  cuLinkDestroy(link);
  return result;
}

CUresult CudaGpuBackend::textImageFootprint(const std::string&, std::uint64_t*) {
  return CUDA_ERROR_INVALID_IMAGE;  // the worker compiles every PTX text before it loads it
}

CUresult CudaGpuBackend::moduleUnload(CUmodule module) {
  AGILEOS_BIND();
  return cuModuleUnload(module);
}

CUresult CudaGpuBackend::moduleGetFunction(CUmodule module, const char* name, CUfunction* function) {
  AGILEOS_BIND();
  return cuModuleGetFunction(function, module, name);
}

CUresult CudaGpuBackend::moduleGetGlobal(CUmodule module, const char* name, CUdeviceptr* dptr,
                                         std::size_t* bytes) {
  AGILEOS_BIND();
  return cuModuleGetGlobal(dptr, bytes, module, name);
}

CUresult CudaGpuBackend::functionParamInfo(CUfunction function, std::size_t index, std::size_t* offset,
                                           std::size_t* size) {
  AGILEOS_BIND();
  return cuFuncGetParamInfo(function, index, offset, size);
}

CUresult CudaGpuBackend::functionGetAttribute(CUfunction_attribute attribute, CUfunction function,
                                              int* value) {
  AGILEOS_BIND();
  return cuFuncGetAttribute(value, attribute, function);
}

CUresult CudaGpuBackend::functionSetAttribute(CUfunction function, CUfunction_attribute attribute,
                                              int value) {
  AGILEOS_BIND();
  return cuFuncSetAttribute(function, attribute, value);
}

CUresult CudaGpuBackend::functionSetCacheConfig(CUfunction function, CUfunc_cache config) {
  AGILEOS_BIND();
  return cuFuncSetCacheConfig(function, config);
}

CUresult CudaGpuBackend::occupancyMaxActiveBlocks(int* blocks, CUfunction function, int blockSize,
                                                  std::size_t dynamicSmem, unsigned flags) {
  AGILEOS_BIND();
  return cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(blocks, function, blockSize, dynamicSmem,
                                                              flags);
}

namespace {

CUlaunchConfig driverConfig(const LaunchConfig& config, CUstream stream) {
  CUlaunchConfig driver{};
  driver.gridDimX = config.gridX;
  driver.gridDimY = config.gridY;
  driver.gridDimZ = config.gridZ;
  driver.blockDimX = config.blockX;
  driver.blockDimY = config.blockY;
  driver.blockDimZ = config.blockZ;
  driver.sharedMemBytes = config.sharedMemBytes;
  driver.hStream = stream;
  // The driver only reads the list.
  driver.attrs = const_cast<CUlaunchAttribute*>(config.attributes.data());
  driver.numAttrs = static_cast<unsigned>(config.attributes.size());
  return driver;
}

}  // namespace

CUresult CudaGpuBackend::occupancyClusters(int* value, CUfunction function, const LaunchConfig& config,
                                           bool potentialSize) {
  AGILEOS_BIND();
  const CUlaunchConfig driver = driverConfig(config, nullptr);
  return potentialSize ? cuOccupancyMaxPotentialClusterSize(value, function, &driver)
                       : cuOccupancyMaxActiveClusters(value, function, &driver);
}

CUresult CudaGpuBackend::launchKernel(CUfunction function, const LaunchConfig& config, CUstream stream,
                                      void** params) {
  AGILEOS_BIND();
  if (!config.attributes.empty()) {
    const CUlaunchConfig driver = driverConfig(config, stream);
    return cuLaunchKernelEx(&driver, function, params, nullptr);
  }
  return cuLaunchKernel(function, config.gridX, config.gridY, config.gridZ, config.blockX, config.blockY,
                        config.blockZ, config.sharedMemBytes, stream, params, nullptr);
}

CUresult CudaGpuBackend::launchCooperativeKernel(CUfunction function, const LaunchConfig& config,
                                                 CUstream stream, void** params) {
  AGILEOS_BIND();
  return cuLaunchCooperativeKernel(function, config.gridX, config.gridY, config.gridZ, config.blockX,
                                   config.blockY, config.blockZ, config.sharedMemBytes, stream, params);
}

#undef AGILEOS_BIND

}  // namespace agileos::worker
