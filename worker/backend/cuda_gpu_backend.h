// CudaGpuBackend: GpuBackend over the real CUDA driver API, on one device's
// primary context. The only code in the worker that calls libcuda.
#pragma once

#include "worker/backend/gpu_backend.h"

namespace agileos::worker {

class CudaGpuBackend final : public GpuBackend {
 public:
  CudaGpuBackend() = default;
  ~CudaGpuBackend() override;

  CUresult init(int device, std::string* error) override;
  const DeviceDescription& device() const override { return description_; }

  CUresult allocationGranularity(std::size_t* bytes) override;
  CUresult reserve(memmgr::DevicePtr fixed, std::size_t size, memmgr::DevicePtr* got) override;
  CUresult freeReservation(memmgr::DevicePtr base, std::size_t size) override;
  CUresult createPhysical(std::size_t size, memmgr::PhysicalHandle* handle) override;
  CUresult createCompressiblePhysical(std::size_t size, memmgr::PhysicalHandle* handle,
                                      bool* compressed) override;
  CUresult compressibleGranularity(std::size_t* bytes) override;
  CUresult createExportablePhysical(std::size_t size, memmgr::PhysicalHandle* handle) override;
  CUresult exportToFd(memmgr::PhysicalHandle handle, int* fd) override;
  CUresult releasePhysical(memmgr::PhysicalHandle handle) override;
  CUresult map(memmgr::DevicePtr va, std::size_t size, memmgr::PhysicalHandle handle) override;
  CUresult setAccess(memmgr::DevicePtr va, std::size_t size) override;
  CUresult unmap(memmgr::DevicePtr va, std::size_t size) override;
  CUresult fill(memmgr::DevicePtr va, std::uint8_t value, std::size_t size) override;

  CUresult bindContext() override { return bind(); }
  CUresult synchronizeContext() override;
  CUresult getLimit(CUlimit limit, std::size_t* value) override;
  CUresult setLimit(CUlimit limit, std::size_t value) override;
  CUresult getCacheConfig(CUfunc_cache* config) override;
  CUresult setCacheConfig(CUfunc_cache config) override;
  CUresult resetPersistingL2Cache() override;
  CUresult memGetInfo(std::size_t* free, std::size_t* total) override;

  CUresult copyHostToDevice(CUdeviceptr dst, const void* src, std::size_t bytes, CUstream stream,
                            bool async) override;
  CUresult copyDeviceToHost(void* dst, CUdeviceptr src, std::size_t bytes, CUstream stream,
                            bool async) override;
  CUresult copyDeviceToDevice(CUdeviceptr dst, CUdeviceptr src, std::size_t bytes, CUstream stream,
                              bool async) override;
  CUresult memsetBytes(CUdeviceptr dst, std::uint8_t value, std::size_t bytes, CUstream stream,
                       bool async) override;
  CUresult enqueueCopyDeviceToHost(void* dst, CUdeviceptr src, std::size_t bytes, CUstream stream) override;
  CUresult hostRegister(void* p, std::size_t bytes) override;
  CUresult hostUnregister(void* p) override;
  CUresult hostRegisterMapped(void* p, std::size_t bytes, bool ioMemory, CUdeviceptr* device) override;

  CUresult streamCreate(unsigned flags, int priority, CUstream* stream) override;
  CUresult streamDestroy(CUstream stream) override;
  CUresult streamSynchronize(CUstream stream) override;
  CUresult streamQuery(CUstream stream) override;
  CUresult streamGetId(CUstream stream, unsigned long long* id) override;
  CUresult streamSetAttribute(CUstream stream, CUlaunchAttributeID id,
                              const CUlaunchAttributeValue& value) override;
  CUresult streamGetAttribute(CUstream stream, CUlaunchAttributeID id,
                              CUlaunchAttributeValue* value) override;
  CUresult streamWaitEvent(CUstream stream, CUevent event, unsigned flags) override;
  CUresult streamPriorityRange(int* least, int* greatest) override;
  CUresult eventCreate(unsigned flags, CUevent* event) override;
  CUresult eventDestroy(CUevent event) override;
  CUresult eventRecord(CUevent event, CUstream stream, unsigned flags) override;
  CUresult eventSynchronize(CUevent event) override;
  CUresult eventQuery(CUevent event) override;
  CUresult eventElapsedTime(float* milliseconds, CUevent start, CUevent end) override;

  CUresult moduleLoad(const void* image, CUmodule* module, std::string* log) override;
  CUresult compilePtx(const std::string& ptx, std::string* image, std::string* log) override;
  CUresult jitLogs(const std::string& ptx, bool verbose, std::string* info, std::string* error) override;
  CUresult textImageFootprint(const std::string& ptx, std::uint64_t* bytes) override;
  CUresult moduleUnload(CUmodule module) override;
  CUresult moduleGetFunction(CUmodule module, const char* name, CUfunction* function) override;
  CUresult moduleGetGlobal(CUmodule module, const char* name, CUdeviceptr* dptr, std::size_t* bytes) override;
  CUresult functionParamInfo(CUfunction function, std::size_t index, std::size_t* offset,
                             std::size_t* size) override;
  CUresult functionGetAttribute(CUfunction_attribute attribute, CUfunction function, int* value) override;
  CUresult functionSetAttribute(CUfunction function, CUfunction_attribute attribute, int value) override;
  CUresult functionSetCacheConfig(CUfunction function, CUfunc_cache config) override;
  CUresult occupancyMaxActiveBlocks(int* blocks, CUfunction function, int blockSize, std::size_t dynamicSmem,
                                    unsigned flags) override;
  CUresult launchKernel(CUfunction function, const LaunchConfig& config, CUstream stream,
                        void** params) override;
  CUresult occupancyClusters(int* value, CUfunction function, const LaunchConfig& config,
                             bool potentialSize) override;
  CUresult launchCooperativeKernel(CUfunction function, const LaunchConfig& config, CUstream stream,
                                   void** params) override;
  CUresult chainCreate(std::span<const ChainedLaunch> launches, LaunchChainHandle* chain) override;
  CUresult chainSetNode(LaunchChainHandle chain, std::size_t index, const ChainedLaunch& launch) override;
  CUresult chainLaunch(LaunchChainHandle chain, CUstream stream) override;
  CUresult chainDestroy(LaunchChainHandle chain) override;
  CUresult arrayCreate(const CUDA_ARRAY3D_DESCRIPTOR& descriptor, CUarray* array) override;
  CUresult arrayDestroy(CUarray array) override;
  CUresult mipmappedArrayCreate(const CUDA_ARRAY3D_DESCRIPTOR& descriptor, unsigned levels,
                                CUmipmappedArray* array) override;
  CUresult mipmappedArrayLevel(CUmipmappedArray array, unsigned level, CUarray* levelArray) override;
  CUresult mipmappedArrayDestroy(CUmipmappedArray array) override;
  CUresult copy3D(const CUDA_MEMCPY3D& copy, CUstream stream, bool async) override;
  CUresult texObjectCreate(const CUDA_RESOURCE_DESC& resource, const CUDA_TEXTURE_DESC& texture,
                           CUtexObject* object) override;
  CUresult texObjectDestroy(CUtexObject object) override;
  CUresult surfObjectCreate(const CUDA_RESOURCE_DESC& resource, CUsurfObject* object) override;
  CUresult surfObjectDestroy(CUsurfObject object) override;
  CUresult tensorMapEncode(const TensorMapDescription& description, CUtensorMap* map) override;

 private:
  // Makes the worker's context current on the calling thread (once per thread).
  CUresult bind();
  CUmemAllocationProp allocationProperties() const;

  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  DeviceDescription description_;
};

}  // namespace agileos::worker
