// FakeGpuBackend: a GpuBackend that emulates the CUDA driver on the host. TEST-ONLY.
//
// It lets the worker (validation, handle tables, teardown, protocol) and the
// daemon's end-to-end tests run on machines without a GPU. It is a test double,
// never a fallback: nothing in a production worker may construct it.
//
// What it emulates, with the driver's answers to misuse (measured on an H200,
// driver 580, CUDA 13.0):
// - VMM: reserve() grants the requested address unless it overlaps a live
//   reservation or was configured with grantElsewhere(); physical handles are
//   host buffers (lazily committed anonymous memory); a handle may be mapped more
//   than once and released while mapped (its memory lives until the last mapping
//   goes), as in the driver. Mapping over a mapped range, outside a reservation,
//   unaligned or with a wrong size, setAccess/freeReservation over the wrong
//   range: CUDA_ERROR_INVALID_VALUE.
// - Device memory: copies and memsets read and write the emulated memory. A
//   transfer touching any byte that is not mapped with access (or not a live
//   module variable) returns CUDA_ERROR_INVALID_VALUE and changes nothing.
// - Streams and events are counted objects; there is no asynchrony (work is
//   complete when the call returns). Event timing uses a logical clock: each
//   record advances it by kEventTickMs.
// - Modules: moduleLoad accepts NUL-terminated PTX text and exposes the entries
//   and variables that fake_ptx_symbols.h finds; ELF images (SASS) are refused
//   with CUDA_ERROR_INVALID_IMAGE (the fake cannot run them), text that is not
//   PTX likewise, unreadable PTX with CUDA_ERROR_INVALID_PTX. Module variables
//   get zeroed emulated memory outside AgileOS's reserved ranges, at addresses
//   never reused. launchKernel validates the configuration as the driver does,
//   records the launch (with a copy of the packed parameter bytes) and runs nothing.
//   A cooperative launch is also refused with CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE
//   when its grid exceeds kMultiprocessors times the occupancy occupancyMaxActiveBlocks
//   reports for its block size.
// - Stream ids (streamGetId) are unique, stable and never reused; the legacy stream
//   has its own. The context's cache configuration starts as CU_FUNC_CACHE_PREFER_NONE.
//
// Misuse that the real driver answers with a crash or with undefined behaviour
// (measured: cuEventDestroy twice segfaults, cuStreamDestroy twice reports
// CUDA_ERROR_CONTEXT_IS_DESTROYED), and misuse the driver silently accepts
// (cuMemUnmap of an unmapped range succeeds), is answered here with an error code
// (CUDA_ERROR_INVALID_HANDLE for dead handles) and recorded in misuse(); tests
// of the worker assert that misuse() stays empty.
//
// Every call is counted (callCount) and every copy/memset is recorded
// (transfers), refused ones included, so a test can prove that validation
// refused a request before the driver saw it.
//
// Failure injection: failNext(call, result) makes the next call of that method
// return `result` without effect (it is still counted). Before every transfer
// the hook set with setBeforeTransferHook runs on the calling thread, outside the
// fake's lock, so a test can interleave other calls deterministically.
//
// Thread-safety: every method is safe to call concurrently (one internal mutex).
//
// Implementation: fake_gpu_backend.cpp (bookkeeping, context, observations),
// fake_gpu_memory.cpp (VMM, transfers), fake_gpu_streams.cpp, fake_gpu_modules.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "worker/backend/gpu_backend.h"
#include "worker/testing/fake_gpu/fake_ptx_symbols.h"

namespace agileos::worker {

// One value per GpuBackend / VmmBackend method.
enum class FakeGpuCall {
  kInit,
  kAllocationGranularity,
  kReserve,
  kFreeReservation,
  kCreatePhysical,
  kReleasePhysical,
  kMap,
  kSetAccess,
  kUnmap,
  kFill,
  kSynchronizeContext,
  kGetLimit,
  kSetLimit,
  kGetCacheConfig,
  kSetCacheConfig,
  kMemGetInfo,
  kCopyHostToDevice,
  kCopyDeviceToHost,
  kCopyDeviceToDevice,
  kMemsetBytes,
  kStreamCreate,
  kStreamDestroy,
  kStreamSynchronize,
  kStreamQuery,
  kStreamGetId,
  kStreamWaitEvent,
  kStreamPriorityRange,
  kEventCreate,
  kEventDestroy,
  kEventRecord,
  kEventSynchronize,
  kEventQuery,
  kEventElapsedTime,
  kModuleLoad,
  kModuleUnload,
  kModuleGetFunction,
  kModuleGetGlobal,
  kFunctionParamInfo,
  kFunctionGetAttribute,
  kFunctionSetAttribute,
  kFunctionSetCacheConfig,
  kOccupancyMaxActiveBlocks,
  kLaunchKernel,
  kLaunchCooperativeKernel,
  kEnqueueCopyDeviceToHost,
  kHostRegister,
  kHostUnregister,
  kOccupancyClusters,
  kChainCreate,
  kChainSetNode,
  kChainLaunch,
  kChainDestroy,
  kArrayCreate,
  kArrayDestroy,
  kMipmappedArrayCreate,
  kMipmappedArrayLevel,
  kMipmappedArrayDestroy,
  kCopy3D,
  kTexObjectCreate,
  kTexObjectDestroy,
  kSurfObjectCreate,
  kSurfObjectDestroy,
  kStreamSetAttribute,
  kStreamGetAttribute,
  kTensorMapEncode,
  kResetPersistingL2Cache,
  kCount,  // not a method
};

const char* toString(FakeGpuCall call);

struct FakeGpuConfig {
  std::string name = "AgileOS Fake GPU";
  int computeMajor = 9;
  int computeMinor = 0;
  std::uint64_t memoryBytes = 4ull << 30;  // physical capacity, also totalGlobalMem
  // Device ordinals init() accepts, [0, deviceCount): a worker process emulates the one it opened.
  int deviceCount = 1;
  std::size_t granularity = 2u << 20;
  // An ELF (SASS) image loads as a module without symbols (its code cannot be emulated), so
  // tests can see the worker let a SASS-only image through; otherwise it is refused
  // (CUDA_ERROR_INVALID_IMAGE).
  bool acceptElfImages = false;
  // CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES of the kernels so named (0 for the rest). As the driver
  // does, a launch grows the context's stack to the kernel's local memory (rounded up to 16
  // bytes) and keeps it there.
  std::map<std::string, int> localBytesByKernel;
  // A new stream gets the handle of the stream destroyed last, as the driver may give it, so
  // tests can show that nothing keyed by a stream handle outlives the stream.
  bool reuseDestroyedStreamHandles = false;
};

// One copy or memset a caller asked for (refused ones included).
struct FakeTransfer {
  enum class Kind { kHostToDevice, kDeviceToHost, kDeviceToDevice, kMemset };
  Kind kind = Kind::kHostToDevice;
  CUdeviceptr dst = 0;  // device destination (kHostToDevice, kDeviceToDevice, kMemset)
  CUdeviceptr src = 0;  // device source (kDeviceToHost, kDeviceToDevice)
  std::size_t bytes = 0;
  CUstream stream = nullptr;
  bool async = false;
  CUresult result = CUDA_SUCCESS;
};

// One kernel launch the driver accepted.
struct FakeLaunch {
  CUfunction function = nullptr;
  CUmodule module = nullptr;
  std::string kernel;
  LaunchConfig config;
  CUstream stream = nullptr;
  std::string params;        // the packed parameter buffer, read through the launch's pointers
  bool cooperative = false;  // launched with launchCooperativeKernel, or with the attribute
  std::vector<CUlaunchAttribute> attributes;  // config.attributes, copied (the span is cleared)
};

namespace fake {
class HostBuffer;  // worker/testing/fake_gpu/fake_host_buffer.h
}  // namespace fake

class FakeGpuBackend final : public GpuBackend {
 public:
  // Limits of the emulated device, as an H200 reports them (driver 580, CUDA 13.0).
  static constexpr int kLeastStreamPriority = 0;
  static constexpr int kGreatestStreamPriority = -5;
  static constexpr int kDefaultMaxDynamicSharedBytes = 48 << 10;
  static constexpr int kOptInMaxDynamicSharedBytes = 227 << 10;
  static constexpr unsigned kMaxThreadsPerBlock = 1024;
  static constexpr unsigned kMaxBlockDimZ = 64;
  static constexpr unsigned kMaxGridDimX = 0x7fffffffu;
  static constexpr unsigned kMaxGridDimYZ = 65535;
  static constexpr int kMultiprocessors = 132;
  static constexpr unsigned long long kLegacyStreamId = 1;     // nullptr and CU_STREAM_LEGACY
  static constexpr unsigned long long kPerThreadStreamId = 2;  // CU_STREAM_PER_THREAD (one fake thread)

  static constexpr float kEventTickMs = 0.5f;
  // Where a reservation lands when its requested address is not granted.
  static constexpr memmgr::DevicePtr kElsewhere = 0x7000'0000'0000ull;
  // Where module variables are placed (outside every AgileOS range).
  static constexpr memmgr::DevicePtr kModuleDataBase = 0x7e00'0000'0000ull;

  explicit FakeGpuBackend(FakeGpuConfig config = {});
  ~FakeGpuBackend() override;
  FakeGpuBackend(const FakeGpuBackend&) = delete;
  FakeGpuBackend& operator=(const FakeGpuBackend&) = delete;

  // GpuBackend ---------------------------------------------------------------------
  CUresult init(int device, std::string* error) override;
  const DeviceDescription& device() const override { return description_; }

  CUresult allocationGranularity(std::size_t* bytes) override;
  CUresult reserve(memmgr::DevicePtr fixed, std::size_t size, memmgr::DevicePtr* got) override;
  CUresult freeReservation(memmgr::DevicePtr base, std::size_t size) override;
  CUresult createPhysical(std::size_t size, memmgr::PhysicalHandle* handle) override;
  // Every fake handle is exportable. An export is a fresh memfd of the handle's size: the fake's
  // memory is private heap memory that a descriptor cannot alias, so an importer of the export
  // sees memory of the right size, not the handle's contents (enough for the fake's users, who
  // test the plumbing, not the sharing).
  CUresult createExportablePhysical(std::size_t size, memmgr::PhysicalHandle* handle) override {
    return createPhysical(size, handle);
  }
  // The fake grants compression unless a test says otherwise (the driver may not).
  CUresult createCompressiblePhysical(std::size_t size, memmgr::PhysicalHandle* handle,
                                      bool* compressed) override {
    *compressed = grantsCompression_;
    return createPhysical(size, handle);
  }
  void setGrantsCompression(bool grants) { grantsCompression_ = grants; }
  CUresult exportToFd(memmgr::PhysicalHandle handle, int* fd) override;
  CUresult releasePhysical(memmgr::PhysicalHandle handle) override;
  CUresult map(memmgr::DevicePtr va, std::size_t size, memmgr::PhysicalHandle handle) override;
  CUresult setAccess(memmgr::DevicePtr va, std::size_t size) override;
  CUresult unmap(memmgr::DevicePtr va, std::size_t size) override;
  CUresult fill(memmgr::DevicePtr va, std::uint8_t value, std::size_t size) override;

  CUresult bindContext() override { return CUDA_SUCCESS; }
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
  // The fake "compiles" PTX to itself (it loads PTX text only).
  CUresult compilePtx(const std::string& ptx, std::string* image, std::string* log) override;
  // "fake JIT: N entry function(s)" (verbose) or nothing: the fake has no JIT to report on.
  CUresult jitLogs(const std::string& ptx, bool verbose, std::string* info, std::string* error) override;
  // The sum of the PTX text's module variables' sizes, as this fake allocates them. Not counted
  // (a pure function).
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
  CUresult occupancyClusters(int* value, CUfunction function, const LaunchConfig& config,
                             bool potentialSize) override;
  CUresult launchKernel(CUfunction function, const LaunchConfig& config, CUstream stream,
                        void** params) override;
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

  // Configuration --------------------------------------------------------------------
  // reserve() at `fixed` will land elsewhere, as when another mapping occupies it.
  void grantElsewhere(memmgr::DevicePtr fixed);
  // The next call of `call` returns `result` with no effect (one-shot, per method).
  void failNext(FakeGpuCall call, CUresult result);
  // Runs before every copy/memset, outside the fake's lock; nullptr removes it.
  void setBeforeTransferHook(std::function<void(const FakeTransfer&)> hook);

  // Direct access to emulated device memory (a kernel's reads and writes, for
  // tests). False, with nothing done, unless every byte is accessible.
  bool readDevice(CUdeviceptr src, void* dst, std::size_t bytes) const;
  bool writeDevice(CUdeviceptr dst, const void* src, std::size_t bytes);

  // Forgets the recorded transfers and launches (they grow with every call; a
  // long-running fake worker may call this between phases).
  void clearRecords();

  // Observations -----------------------------------------------------------------------
  std::uint64_t callCount(FakeGpuCall call) const;
  std::uint64_t callCount() const;  // all methods
  std::vector<FakeTransfer> transfers() const;
  // Host ranges currently registered with hostRegister().
  std::size_t registeredHostRanges() const;
  std::vector<FakeLaunch> launches() const;
  std::vector<std::string> misuse() const;
  std::size_t liveReservations() const;
  std::size_t livePhysicalHandles() const;
  std::size_t liveMappings() const;
  std::uint64_t physicalBytes() const;  // of live (unreleased) handles
  std::size_t liveStreams() const;
  std::size_t liveEvents() const;
  std::size_t liveModules() const;
  std::size_t liveChains() const;   // launch chains created and not destroyed
  std::size_t liveArrays() const;   // arrays and mipmapped arrays created and not destroyed (not levels)
  std::size_t liveObjects() const;  // texture and surface objects created and not destroyed
  // The resource a live texture or surface object was created over.
  std::optional<CUDA_RESOURCE_DESC> objectResource(std::uint64_t object) const;
  // The module variable of a live module named `name`, or nullopt.
  std::optional<std::pair<CUdeviceptr, std::size_t>> moduleVariable(const std::string& name) const;

 private:
  struct Physical {
    std::size_t size = 0;
    std::shared_ptr<fake::HostBuffer> memory;
  };
  // A run of emulated device memory: a VMM mapping or a module variable.
  struct Segment {
    std::size_t size = 0;
    std::shared_ptr<fake::HostBuffer> memory;
    memmgr::PhysicalHandle handle = 0;  // 0 for module variables
    bool accessible = false;
  };
  struct Event {
    unsigned flags = 0;
    std::optional<std::uint64_t> recordedAt;  // logical clock tick
  };
  struct Function {
    CUmodule module = nullptr;
    std::string name;
    std::vector<fake::PtxParam> params;
    std::map<int, int> attributes;  // set by functionSetAttribute
  };
  struct Module {
    std::map<std::string, CUfunction> functions;
    std::map<std::string, std::pair<CUdeviceptr, std::size_t>> variables;
    int ptxVersion = 0;
  };

  // Counts the call; returns an injected failure or CUDA_ERROR_NOT_INITIALIZED if due.
  // Caller holds mutex_.
  std::optional<CUresult> enter(FakeGpuCall call);
  CUresult misused(std::string what, CUresult result);  // records; caller holds mutex_

  // Pieces of host memory backing [va, va+bytes), or nullopt unless every byte is
  // accessible. Caller holds mutex_.
  struct Piece {
    std::uint8_t* data;
    std::size_t bytes;
  };
  std::optional<std::vector<Piece>> resolve(CUdeviceptr va, std::size_t bytes) const;
  bool streamUsable(CUstream stream);  // live, null or a special handle; records misuse otherwise
  CUresult transfer(FakeTransfer record, const void* hostSrc, void* hostDst, std::uint8_t value);
  static bool anyOverlap(const std::map<memmgr::DevicePtr, std::size_t>& ranges, memmgr::DevicePtr base,
                         std::size_t size);
  bool segmentOverlaps(memmgr::DevicePtr base, std::size_t size) const;
  void unloadLocked(CUmodule module);
  static std::string hex(std::uint64_t value);
  static std::string hex(const void* handle);
  Function* liveFunction(CUfunction function, const char* what);  // records misuse when dead
  // Blocks per multiprocessor for a block size (the model occupancyMaxActiveBlocks reports).
  static int blocksPerMultiprocessor(int blockSize, std::size_t dynamicSmem);
  CUresult clusterAdmissible(const Function& function, const LaunchConfig& config, bool tilesGrid) const;
  int localBytesOf(const Function& function) const;  // CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES
  // Validates and records a launch; caller holds mutex_ and has counted the call.
  CUresult recordLaunch(CUfunction function, const LaunchConfig& config, CUstream stream, void** params,
                        bool cooperative);

  const FakeGpuConfig config_;
  std::vector<CUstream> destroyedStreams_;  // reuseDestroyedStreamHandles: the next handles to give
  DeviceDescription description_;

  mutable std::mutex mutex_;
  bool initialized_ = false;
  bool grantsCompression_ = true;
  std::uint64_t calls_ = 0;
  std::vector<std::uint64_t> callsByMethod_;
  std::map<FakeGpuCall, CUresult> failNext_;
  std::function<void(const FakeTransfer&)> beforeTransfer_;

  std::map<std::uintptr_t, std::size_t> registeredHost_;  // hostRegister()ed ranges
  std::set<memmgr::DevicePtr> grantElsewhere_;
  memmgr::DevicePtr nextElsewhere_ = kElsewhere;
  std::map<memmgr::DevicePtr, std::size_t> reservations_;
  std::map<memmgr::PhysicalHandle, Physical> physical_;
  memmgr::PhysicalHandle nextHandle_ = 1;
  std::uint64_t physicalBytes_ = 0;
  std::map<memmgr::DevicePtr, Segment> segments_;  // by base; never overlap

  std::uintptr_t nextObject_ = 0x1000;              // opaque handle values; never reused
  std::map<CUstream, unsigned long long> streams_;  // live streams and their ids (never reused)
  // Attributes set on streams (streamSetAttribute), by stream and id; a stream's go with it.
  std::map<std::pair<CUstream, int>, CUlaunchAttributeValue> streamAttributes_;
  unsigned long long nextStreamId_ = kPerThreadStreamId + 1;
  CUfunc_cache cacheConfig_ = CU_FUNC_CACHE_PREFER_NONE;
  std::unordered_map<CUevent, Event> events_;
  std::uint64_t clock_ = 0;
  std::unordered_map<CUmodule, Module> modules_;
  std::unordered_map<CUfunction, Function> functions_;
  memmgr::DevicePtr nextModuleData_ = kModuleDataBase;
  std::map<CUlimit, std::size_t> limits_;

  std::vector<FakeTransfer> transfers_;
  std::vector<FakeLaunch> launches_;
  std::vector<std::string> misuse_;

  // A launch chain's node: its launch, the parameters packed at the function's offsets.
  struct ChainNode {
    CUfunction function = nullptr;
    LaunchConfig config;
    std::string params;
  };
  // Packs `launch` into *node; false (misuse recorded) if its function is dead. Caller holds mutex_.
  bool chainNodeOf(const ChainedLaunch& launch, ChainNode* node);
  std::map<LaunchChainHandle, std::vector<ChainNode>> chains_;

  // Arrays (fake_gpu_arrays.cpp): each level's elements, row after row, slice after slice.
  struct Array {
    CUDA_ARRAY3D_DESCRIPTOR descriptor{};
    std::vector<std::uint8_t> bytes;
    CUmipmappedArray owner = nullptr;  // a level of this mipmapped array
  };
  struct MipmappedArray {
    std::vector<CUarray> levels;
  };
  std::map<CUarray, Array> arrays_;
  std::map<CUmipmappedArray, MipmappedArray> mipmapped_;
  std::map<std::uint64_t, CUDA_RESOURCE_DESC> objects_;  // textures and surfaces share numbering
  std::uint64_t nextObjectHandle_ = 1;
  CUarray makeArrayLocked(const CUDA_ARRAY3D_DESCRIPTOR& descriptor, CUmipmappedArray owner);
  // The bytes of one copy end at row (y, z) from byte x, or null when outside. Caller holds mutex_.
  std::uint8_t* rowOf(const CUDA_MEMCPY3D& copy, bool source, std::uint64_t y, std::uint64_t z,
                      std::vector<std::uint8_t>* scratch);
  bool resourceLive(const CUDA_RESOURCE_DESC& resource) const;
};

}  // namespace agileos::worker
