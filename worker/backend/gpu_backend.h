// GpuBackend: every CUDA driver call the worker makes, behind one interface.
//
// The worker's handlers never call the driver directly. CudaGpuBackend
// forwards to libcuda on one device; FakeGpuBackend (tests) emulates memory on
// the host so that the scheduler, worker lifecycle, validation and protocol
// can be tested on machines without a GPU.
//
// Every method returns the driver's CUresult unchanged; handlers translate it
// to the runtime error the client expects (cuda_errors.h).
//
// Thread-safety: after init(), every method may be called from any thread;
// implementations make the worker's context current on the calling thread.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "memmgr/vmm_backend.h"
#include "worker/tensor_maps/tensor_map_description.h"

namespace agileos::worker {

struct DeviceDescription {
  int ordinal = 0;
  std::string name;
  std::string uuid;  // 16 raw bytes
  std::uint64_t totalGlobalMem = 0;
  int driverVersion = 0;
  int computeMajor = 0;
  int computeMinor = 0;
  std::vector<std::pair<int, int>> attributes;  // (CUdevice_attribute, value) for every readable attribute
};

struct LaunchConfig {
  unsigned gridX = 1, gridY = 1, gridZ = 1;
  unsigned blockX = 1, blockY = 1, blockZ = 1;
  unsigned sharedMemBytes = 0;
  // cuLaunchKernelEx's attributes (worker/handlers/launch_attributes.h admitted each); none for a
  // plain launch. Owned by the caller for the call.
  std::span<const CUlaunchAttribute> attributes;
};

// One kernel of a launch chain (launchChain*): a plain launch (no attributes, not cooperative)
// and the pointers to its parameters, as launchKernel takes them.
struct ChainedLaunch {
  CUfunction function = nullptr;
  LaunchConfig config;
  void** params = nullptr;
};

// An executable graph of kernel nodes, each depending on the one before it, so that launching it
// on a stream runs them in order as that many launches on the stream would. Opaque to callers.
using LaunchChainHandle = std::uintptr_t;

class GpuBackend : public memmgr::VmmBackend {
 public:
  ~GpuBackend() override = default;

  // Creates (or retains) the device's context. Must succeed before any other call.
  virtual CUresult init(int device, std::string* error) = 0;
  virtual const DeviceDescription& device() const = 0;

  // Context ------------------------------------------------------------------
  // Makes the device's context current on the calling thread, for code that reaches the GPU
  // through a library (cuFFT, ...) rather than through this interface.
  virtual CUresult bindContext() = 0;
  virtual CUresult synchronizeContext() = 0;
  virtual CUresult getLimit(CUlimit limit, std::size_t* value) = 0;
  virtual CUresult setLimit(CUlimit limit, std::size_t value) = 0;
  // cuCtxGetCacheConfig / cuCtxSetCacheConfig: the context's preferred L1/shared split.
  virtual CUresult getCacheConfig(CUfunc_cache* config) = 0;
  virtual CUresult setCacheConfig(CUfunc_cache config) = 0;
  // cuCtxResetPersistingL2Cache.
  virtual CUresult resetPersistingL2Cache() = 0;
  virtual CUresult memGetInfo(std::size_t* free, std::size_t* total) = 0;

  // Copies; `stream` may be nullptr (legacy default stream). An async copy from or
  // to pageable host memory returns once the host buffer may be reused.
  virtual CUresult copyHostToDevice(CUdeviceptr dst, const void* src, std::size_t bytes, CUstream stream,
                                    bool async) = 0;
  virtual CUresult copyDeviceToHost(void* dst, CUdeviceptr src, std::size_t bytes, CUstream stream,
                                    bool async) = 0;
  virtual CUresult copyDeviceToDevice(CUdeviceptr dst, CUdeviceptr src, std::size_t bytes, CUstream stream,
                                      bool async) = 0;
  virtual CUresult memsetBytes(CUdeviceptr dst, std::uint8_t value, std::size_t bytes, CUstream stream,
                               bool async) = 0;
  // Enqueues a device-to-host copy into REGISTERED host memory and returns without
  // waiting (cuMemcpyDtoHAsync). The caller guarantees that `dst` stays registered and
  // mapped until the stream has passed the copy.
  virtual CUresult enqueueCopyDeviceToHost(void* dst, CUdeviceptr src, std::size_t bytes,
                                           CUstream stream) = 0;

  // Host memory the GPU may DMA to and from directly (cuMemHostRegister, portable).
  // [p, p+bytes) must be page aligned and stay mapped until hostUnregister(p).
  virtual CUresult hostRegister(void* p, std::size_t bytes) = 0;
  virtual CUresult hostUnregister(void* p) = 0;
  // Registers a host mapping for GPU load/store access (cuMemHostRegister with DEVICEMAP and
  // PORTABLE, plus IOMEMORY when `ioMemory`: the range maps a device resource such as a PCIe
  // BAR) and returns its device address. Undone by hostUnregister(p).
  virtual CUresult hostRegisterMapped(void* p, std::size_t bytes, bool ioMemory, CUdeviceptr* device) = 0;

  // Streams and events ------------------------------------------------------------
  virtual CUresult streamCreate(unsigned flags, int priority, CUstream* stream) = 0;
  virtual CUresult streamDestroy(CUstream stream) = 0;
  virtual CUresult streamSynchronize(CUstream stream) = 0;
  virtual CUresult streamQuery(CUstream stream) = 0;
  // cuStreamGetId: an id unique to the stream for the context's lifetime (the
  // legacy stream, nullptr, has one too).
  virtual CUresult streamGetId(CUstream stream, unsigned long long* id) = 0;
  // cuStreamSetAttribute / cuStreamGetAttribute (the attribute ids are CUlaunchAttributeID's).
  virtual CUresult streamSetAttribute(CUstream stream, CUlaunchAttributeID id,
                                      const CUlaunchAttributeValue& value) = 0;
  virtual CUresult streamGetAttribute(CUstream stream, CUlaunchAttributeID id,
                                      CUlaunchAttributeValue* value) = 0;
  virtual CUresult streamWaitEvent(CUstream stream, CUevent event, unsigned flags) = 0;
  virtual CUresult streamPriorityRange(int* least, int* greatest) = 0;
  virtual CUresult eventCreate(unsigned flags, CUevent* event) = 0;
  virtual CUresult eventDestroy(CUevent event) = 0;
  virtual CUresult eventRecord(CUevent event, CUstream stream, unsigned flags) = 0;
  virtual CUresult eventSynchronize(CUevent event) = 0;
  virtual CUresult eventQuery(CUevent event) = 0;
  virtual CUresult eventElapsedTime(float* milliseconds, CUevent start, CUevent end) = 0;

  // Modules and launches ----------------------------------------------------------
  // `image` is a NUL-terminated PTX text or an ELF cubin. `log` receives the JIT
  // error log on failure.
  virtual CUresult moduleLoad(const void* image, CUmodule* module, std::string* log) = 0;
  // JIT-compiles NUL-terminated PTX for this device into an image moduleLoad accepts
  // (a cubin), so that the result can be cached; *log gets the JIT's errors.
  virtual CUresult compilePtx(const std::string& ptx, std::string* image, std::string* log) = 0;
  // Compiles NUL-terminated PTX for its JIT logs only (cuLinkComplete's info and error logs, verbose
  // when asked); the code is discarded.
  virtual CUresult jitLogs(const std::string& ptx, bool verbose, std::string* info, std::string* error) = 0;
  // The device memory moduleLoad(ptx) would take for a NUL-terminated PTX text. The worker sizes
  // a cubin itself (fatbin::elfDeviceFootprint) and compiles PTX before it loads it, so the real
  // driver never loads text and refuses here (CUDA_ERROR_INVALID_IMAGE); the fake loads PTX.
  virtual CUresult textImageFootprint(const std::string& ptx, std::uint64_t* bytes) = 0;
  virtual CUresult moduleUnload(CUmodule module) = 0;
  virtual CUresult moduleGetFunction(CUmodule module, const char* name, CUfunction* function) = 0;
  virtual CUresult moduleGetGlobal(CUmodule module, const char* name, CUdeviceptr* dptr,
                                   std::size_t* bytes) = 0;
  // cuFuncGetParamInfo: CUDA_ERROR_INVALID_VALUE once `index` is past the last parameter.
  virtual CUresult functionParamInfo(CUfunction function, std::size_t index, std::size_t* offset,
                                     std::size_t* size) = 0;
  virtual CUresult functionGetAttribute(CUfunction_attribute attribute, CUfunction function, int* value) = 0;
  virtual CUresult functionSetAttribute(CUfunction function, CUfunction_attribute attribute, int value) = 0;
  virtual CUresult functionSetCacheConfig(CUfunction function, CUfunc_cache config) = 0;
  virtual CUresult occupancyMaxActiveBlocks(int* blocks, CUfunction function, int blockSize,
                                            std::size_t dynamicSmem, unsigned flags) = 0;
  // cuOccupancyMaxActiveClusters (potentialSize false) or cuOccupancyMaxPotentialClusterSize.
  virtual CUresult occupancyClusters(int* value, CUfunction function, const LaunchConfig& config,
                                     bool potentialSize) = 0;
  // cuLaunchKernel, or cuLaunchKernelEx when the config carries attributes.
  virtual CUresult launchKernel(CUfunction function, const LaunchConfig& config, CUstream stream,
                                void** params) = 0;
  // cuLaunchCooperativeKernel: every block is resident at once, so the kernel may
  // synchronize its whole grid; CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE otherwise.
  virtual CUresult launchCooperativeKernel(CUfunction function, const LaunchConfig& config, CUstream stream,
                                           void** params) = 0;

  // Launch chains (worker/launch_batch.h): one graph launch runs a run of queued kernels; the
  // driver takes less host time per kernel than for separate launches (measured on the H200:
  // about 2.3 us for a one-node graph, 0.05 us per kernel of a 64-node one, 4 us per
  // cuLaunchKernel). chainCreate builds and instantiates one node per launch (the driver copies the
  // parameters); chainSetNode replaces node `index`'s kernel, shape and parameters for later
  // launches (launches already queued keep theirs); chainLaunch queues the whole chain on
  // `stream`, ordered after the chain's earlier launches; chainDestroy frees it (one in flight
  // finishes first).
  virtual CUresult chainCreate(std::span<const ChainedLaunch> launches, LaunchChainHandle* chain) = 0;
  virtual CUresult chainSetNode(LaunchChainHandle chain, std::size_t index, const ChainedLaunch& launch) = 0;
  virtual CUresult chainLaunch(LaunchChainHandle chain, CUstream stream) = 0;
  virtual CUresult chainDestroy(LaunchChainHandle chain) = 0;

  // Arrays, texture and surface objects (worker/handlers/array_texture_handlers.cpp) -----------
  // The worker validated every descriptor (sizes, the client's ranges and arrays) first.
  virtual CUresult arrayCreate(const CUDA_ARRAY3D_DESCRIPTOR& descriptor, CUarray* array) = 0;
  virtual CUresult arrayDestroy(CUarray array) = 0;
  virtual CUresult mipmappedArrayCreate(const CUDA_ARRAY3D_DESCRIPTOR& descriptor, unsigned levels,
                                        CUmipmappedArray* array) = 0;
  // The array of one level; it lives as long as the mipmapped array and is never destroyed alone.
  virtual CUresult mipmappedArrayLevel(CUmipmappedArray array, unsigned level, CUarray* levelArray) = 0;
  virtual CUresult mipmappedArrayDestroy(CUmipmappedArray array) = 0;
  // cuMemcpy3DAsync on `stream` when `async`, else cuMemcpy3D. Host memory a descriptor names must
  // stay valid until the call returns; a copy into host memory has finished when it returns.
  virtual CUresult copy3D(const CUDA_MEMCPY3D& copy, CUstream stream, bool async) = 0;
  virtual CUresult texObjectCreate(const CUDA_RESOURCE_DESC& resource, const CUDA_TEXTURE_DESC& texture,
                                   CUtexObject* object) = 0;
  virtual CUresult texObjectDestroy(CUtexObject object) = 0;
  virtual CUresult surfObjectCreate(const CUDA_RESOURCE_DESC& resource, CUsurfObject* object) = 0;
  virtual CUresult surfObjectDestroy(CUsurfObject object) = 0;
  // cuTensorMapEncodeTiled, ...Im2col or ...Im2colWide of a description the worker validated
  // (tensor_map_description.h: its range lies in one live allocation of the client).
  virtual CUresult tensorMapEncode(const TensorMapDescription& description, CUtensorMap* map) = 0;
};

}  // namespace agileos::worker
