// FakeGpuBackend: construction, call bookkeeping, context calls and observations.
#include "worker/testing/fake_gpu/fake_gpu_backend.h"

#include <algorithm>
#include <cstdio>

namespace agileos::worker {
namespace {

DeviceDescription describe(const FakeGpuConfig& config) {
  DeviceDescription description;
  description.ordinal = 0;
  description.name = config.name;
  description.uuid = std::string("AgileOS-FakeGPU!", 16);
  description.totalGlobalMem = config.memoryBytes;
  description.driverVersion = 13000;
  description.computeMajor = config.computeMajor;
  description.computeMinor = config.computeMinor;
  description.attributes = {
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, static_cast<int>(FakeGpuBackend::kMaxThreadsPerBlock)},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 1024},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, static_cast<int>(FakeGpuBackend::kMaxBlockDimZ)},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, static_cast<int>(FakeGpuBackend::kMaxGridDimX)},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, static_cast<int>(FakeGpuBackend::kMaxGridDimYZ)},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, static_cast<int>(FakeGpuBackend::kMaxGridDimYZ)},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, FakeGpuBackend::kDefaultMaxDynamicSharedBytes},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, FakeGpuBackend::kOptInMaxDynamicSharedBytes},
      {CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, 64 << 10},
      {CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32},
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, FakeGpuBackend::kMultiprocessors},
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 2048},
      {CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, 1},
      {CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, 0},
      {CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 0x1b},
      {CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, 0},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, config.computeMajor},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, config.computeMinor},
      {CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1},
      // Mapped, registered and managed host memory, as a Hopper on x86 Linux reports them.
      {CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 1},
      {CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 1},
      {CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED, 1},
      {CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 1},
      {CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM, 1},
      {CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 1},  // as a Hopper reports it
      {CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, 1},
      {CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1},
      {CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 2},
      {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 65536},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 228 << 10},
      {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 50 << 20},
      {CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 1980000},
      {CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, 2619000},
      {CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, 5120},
  };
  // A real device answers every attribute (the worker asks for 1 .. CU_DEVICE_ATTRIBUTE_MAX - 1,
  // and a CUDA runtime in the client reads most of them to fill cudaDeviceProp): those not set
  // above are 0, a capability the fake device lacks.
  for (int attribute = 1; attribute < CU_DEVICE_ATTRIBUTE_MAX; ++attribute) {
    const bool set = std::any_of(description.attributes.begin(), description.attributes.end(),
                                 [&](const auto& entry) { return entry.first == attribute; });
    if (!set) description.attributes.emplace_back(attribute, 0);
  }
  return description;
}

}  // namespace

const char* toString(FakeGpuCall call) {
  static constexpr const char* kNames[] = {"init",
                                           "allocationGranularity",
                                           "reserve",
                                           "freeReservation",
                                           "createPhysical",
                                           "releasePhysical",
                                           "map",
                                           "setAccess",
                                           "unmap",
                                           "fill",
                                           "synchronizeContext",
                                           "getLimit",
                                           "setLimit",
                                           "getCacheConfig",
                                           "setCacheConfig",
                                           "memGetInfo",
                                           "copyHostToDevice",
                                           "copyDeviceToHost",
                                           "copyDeviceToDevice",
                                           "memsetBytes",
                                           "streamCreate",
                                           "streamDestroy",
                                           "streamSynchronize",
                                           "streamQuery",
                                           "streamGetId",
                                           "streamWaitEvent",
                                           "streamPriorityRange",
                                           "eventCreate",
                                           "eventDestroy",
                                           "eventRecord",
                                           "eventSynchronize",
                                           "eventQuery",
                                           "eventElapsedTime",
                                           "moduleLoad",
                                           "moduleUnload",
                                           "moduleGetFunction",
                                           "moduleGetGlobal",
                                           "functionParamInfo",
                                           "functionGetAttribute",
                                           "functionSetAttribute",
                                           "functionSetCacheConfig",
                                           "occupancyMaxActiveBlocks",
                                           "launchKernel",
                                           "launchCooperativeKernel",
                                           "enqueueCopyDeviceToHost",
                                           "hostRegister",
                                           "hostUnregister",
                                           "occupancyClusters",
                                           "chainCreate",
                                           "chainSetNode",
                                           "chainLaunch",
                                           "chainDestroy",
                                           "arrayCreate",
                                           "arrayDestroy",
                                           "mipmappedArrayCreate",
                                           "mipmappedArrayLevel",
                                           "mipmappedArrayDestroy",
                                           "copy3D",
                                           "texObjectCreate",
                                           "texObjectDestroy",
                                           "surfObjectCreate",
                                           "surfObjectDestroy",
                                           "streamSetAttribute",
                                           "streamGetAttribute",
                                           "tensorMapEncode",
                                           "resetPersistingL2Cache"};
  static_assert(std::size(kNames) == static_cast<std::size_t>(FakeGpuCall::kCount));
  const auto index = static_cast<std::size_t>(call);
  return index < std::size(kNames) ? kNames[index] : "invalid";
}

std::string FakeGpuBackend::hex(std::uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

std::string FakeGpuBackend::hex(const void* handle) { return hex(reinterpret_cast<std::uintptr_t>(handle)); }

FakeGpuBackend::FakeGpuBackend(FakeGpuConfig config)
    : config_(std::move(config)),
      description_(describe(config_)),
      callsByMethod_(static_cast<std::size_t>(FakeGpuCall::kCount), 0),
      limits_{{CU_LIMIT_STACK_SIZE, 1024},
              {CU_LIMIT_PRINTF_FIFO_SIZE, 8650752},
              {CU_LIMIT_MALLOC_HEAP_SIZE, 8u << 20},
              {CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT, 2048},
              {CU_LIMIT_MAX_L2_FETCH_GRANULARITY, 64},
              {CU_LIMIT_PERSISTING_L2_CACHE_SIZE, 11796480},
              {CU_LIMIT_CIG_ENABLED, 0},
              {CU_LIMIT_CIG_SHMEM_FALLBACK_ENABLED, 0}} {}

FakeGpuBackend::~FakeGpuBackend() = default;

std::optional<CUresult> FakeGpuBackend::enter(FakeGpuCall call) {
  ++calls_;
  ++callsByMethod_[static_cast<std::size_t>(call)];
  if (call != FakeGpuCall::kInit && !initialized_) return CUDA_ERROR_NOT_INITIALIZED;
  if (auto it = failNext_.find(call); it != failNext_.end()) {
    const CUresult result = it->second;
    failNext_.erase(it);
    return result;
  }
  return std::nullopt;
}

CUresult FakeGpuBackend::misused(std::string what, CUresult result) {
  misuse_.push_back(std::move(what));
  return result;
}

// Context ---------------------------------------------------------------------------

CUresult FakeGpuBackend::init(int device, std::string* error) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kInit)) return *injected;
  if (device < 0 || device >= config_.deviceCount) {
    if (error != nullptr)
      *error = "the fake GPU backend has devices 0.." + std::to_string(config_.deviceCount - 1) + " only";
    return CUDA_ERROR_INVALID_DEVICE;
  }
  initialized_ = true;
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::synchronizeContext() {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kSynchronizeContext)) return *injected;
  return CUDA_SUCCESS;  // nothing is ever pending
}

CUresult FakeGpuBackend::getLimit(CUlimit limit, std::size_t* value) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kGetLimit)) return *injected;
  if (limit == CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH) return CUDA_ERROR_UNSUPPORTED_LIMIT;  // as on sm_90
  auto it = limits_.find(limit);
  if (it == limits_.end() || value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *value = it->second;
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::setLimit(CUlimit limit, std::size_t value) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kSetLimit)) return *injected;
  if (limit == CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH) return CUDA_ERROR_UNSUPPORTED_LIMIT;
  auto it = limits_.find(limit);
  if (it == limits_.end()) return CUDA_ERROR_INVALID_VALUE;
  // Measured on an H200: the driver keeps a stack in multiples of 16 bytes (3000 reads back 3008).
  it->second = limit == CU_LIMIT_STACK_SIZE ? (value + 15) / 16 * 16 : value;
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::getCacheConfig(CUfunc_cache* config) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kGetCacheConfig)) return *injected;
  if (config == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *config = cacheConfig_;
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::resetPersistingL2Cache() {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kResetPersistingL2Cache)) return *injected;
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::setCacheConfig(CUfunc_cache config) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kSetCacheConfig)) return *injected;
  if (config < CU_FUNC_CACHE_PREFER_NONE || config > CU_FUNC_CACHE_PREFER_EQUAL)
    return CUDA_ERROR_INVALID_VALUE;
  cacheConfig_ = config;
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::memGetInfo(std::size_t* free, std::size_t* total) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kMemGetInfo)) return *injected;
  if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *free = config_.memoryBytes - physicalBytes_;
  *total = config_.memoryBytes;
  return CUDA_SUCCESS;
}

// Configuration and observations ---------------------------------------------------------

void FakeGpuBackend::grantElsewhere(memmgr::DevicePtr fixed) {
  std::lock_guard lock(mutex_);
  grantElsewhere_.insert(fixed);
}

void FakeGpuBackend::failNext(FakeGpuCall call, CUresult result) {
  std::lock_guard lock(mutex_);
  failNext_[call] = result;
}

void FakeGpuBackend::setBeforeTransferHook(std::function<void(const FakeTransfer&)> hook) {
  std::lock_guard lock(mutex_);
  beforeTransfer_ = std::move(hook);
}

bool FakeGpuBackend::readDevice(CUdeviceptr src, void* dst, std::size_t bytes) const {
  std::lock_guard lock(mutex_);
  const auto pieces = resolve(src, bytes);
  if (!pieces) return false;
  auto* out = static_cast<std::uint8_t*>(dst);
  for (const Piece& piece : *pieces) out = std::copy_n(piece.data, piece.bytes, out);
  return true;
}

bool FakeGpuBackend::writeDevice(CUdeviceptr dst, const void* src, std::size_t bytes) {
  std::lock_guard lock(mutex_);
  const auto pieces = resolve(dst, bytes);
  if (!pieces) return false;
  const auto* in = static_cast<const std::uint8_t*>(src);
  for (const Piece& piece : *pieces) {
    std::copy_n(in, piece.bytes, piece.data);
    in += piece.bytes;
  }
  return true;
}

void FakeGpuBackend::clearRecords() {
  std::lock_guard lock(mutex_);
  transfers_.clear();
  launches_.clear();
}

std::uint64_t FakeGpuBackend::callCount(FakeGpuCall call) const {
  std::lock_guard lock(mutex_);
  const auto index = static_cast<std::size_t>(call);
  return index < callsByMethod_.size() ? callsByMethod_[index] : 0;
}

std::uint64_t FakeGpuBackend::callCount() const {
  std::lock_guard lock(mutex_);
  return calls_;
}

std::vector<FakeTransfer> FakeGpuBackend::transfers() const {
  std::lock_guard lock(mutex_);
  return transfers_;
}

std::vector<FakeLaunch> FakeGpuBackend::launches() const {
  std::lock_guard lock(mutex_);
  return launches_;
}

std::vector<std::string> FakeGpuBackend::misuse() const {
  std::lock_guard lock(mutex_);
  return misuse_;
}

std::size_t FakeGpuBackend::liveReservations() const {
  std::lock_guard lock(mutex_);
  return reservations_.size();
}

std::size_t FakeGpuBackend::livePhysicalHandles() const {
  std::lock_guard lock(mutex_);
  return physical_.size();
}

std::size_t FakeGpuBackend::liveMappings() const {
  std::lock_guard lock(mutex_);
  return static_cast<std::size_t>(std::count_if(segments_.begin(), segments_.end(),
                                                [](const auto& entry) { return entry.second.handle != 0; }));
}

std::uint64_t FakeGpuBackend::physicalBytes() const {
  std::lock_guard lock(mutex_);
  return physicalBytes_;
}

std::size_t FakeGpuBackend::liveStreams() const {
  std::lock_guard lock(mutex_);
  return streams_.size();
}

std::size_t FakeGpuBackend::liveEvents() const {
  std::lock_guard lock(mutex_);
  return events_.size();
}

std::size_t FakeGpuBackend::liveChains() const {
  std::lock_guard lock(mutex_);
  return chains_.size();
}

std::size_t FakeGpuBackend::liveModules() const {
  std::lock_guard lock(mutex_);
  return modules_.size();
}

std::optional<std::pair<CUdeviceptr, std::size_t>> FakeGpuBackend::moduleVariable(
    const std::string& name) const {
  std::lock_guard lock(mutex_);
  for (const auto& [handle, module] : modules_) {
    if (auto it = module.variables.find(name); it != module.variables.end()) return it->second;
  }
  return std::nullopt;
}

}  // namespace agileos::worker
