// FakeGpuBackend: modules from PTX text, their functions and variables, and launches.
#include <algorithm>
#include <cstring>

#include "ptx/separate_compilation.h"
#include "worker/testing/fake_gpu/fake_elf_symbols.h"
#include "worker/testing/fake_gpu/fake_gpu_backend.h"
#include "worker/testing/fake_gpu/fake_host_buffer.h"

namespace agileos::worker {
namespace {

constexpr std::size_t kModuleDataAlignment = 256;
constexpr int kFakeRegistersPerThread = 16;

std::uint64_t alignUp(std::uint64_t value, std::uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

}  // namespace

// Modules --------------------------------------------------------------------------------

// As the driver's JIT linker, which compiles its PTX input as separate code: PTX older than ISA 3.1
// is refused with ptxas's words (ptx/separate_compilation.h), so that CPU tests see what the GPU
// would refuse.
CUresult FakeGpuBackend::compilePtx(const std::string& ptx, std::string* image, std::string* log) {
  if (ptx::needsVersionRaise(ptx)) {
    if (log != nullptr) *log = "ptxas fatal   : 'Compile only(-c)' requires PTX ISA .version 3.1 or later";
    return CUDA_ERROR_INVALID_PTX;
  }
  *image = ptx;
  if (image->empty() || image->back() != '\0') image->push_back('\0');
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::jitLogs(const std::string& ptx, bool verbose, std::string* info,
                                 std::string* error) {
  const fake::PtxSymbols symbols = fake::scanPtxSymbols(std::string_view(ptx.c_str()));
  error->clear();
  if (!symbols.ok) {
    *error = "fake JIT: the PTX does not scan";
    return CUDA_ERROR_INVALID_PTX;
  }
  *info = verbose ? "fake JIT: " + std::to_string(symbols.entries.size()) + " entry function(s)" : "";
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::textImageFootprint(const std::string& ptx, std::uint64_t* bytes) {
  const fake::PtxSymbols symbols = fake::scanPtxSymbols(std::string_view(ptx.c_str()));
  if (!symbols.ok) return CUDA_ERROR_INVALID_IMAGE;
  *bytes = 0;
  for (const fake::PtxVariable& variable : symbols.variables) *bytes += variable.size;
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::moduleLoad(const void* image, CUmodule* module, std::string* log) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kModuleLoad)) return *injected;
  auto fail = [&](CUresult result, std::string why) {
    if (log != nullptr) *log = "FakeGpuBackend: " + why;
    return result;
  };
  if (image == nullptr || module == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const auto* text = static_cast<const char*>(image);
  // Byte by byte, so a short NUL-terminated text is never read past its end.
  fake::PtxSymbols symbols;
  if (text[0] == '\x7f' && text[1] == 'E' && text[2] == 'L' && text[3] == 'F') {
    if (!config_.acceptElfImages) {
      return fail(CUDA_ERROR_INVALID_IMAGE, "ELF (SASS) images cannot be emulated; load PTX");
    }
    const std::uint64_t size = fake::elfImageSize(image);
    if (size == 0) return fail(CUDA_ERROR_INVALID_IMAGE, "an ELF image whose headers cannot be read");
    symbols = fake::scanElfSymbols({static_cast<const std::uint8_t*>(image), size});
    if (!symbols.ok) return fail(CUDA_ERROR_INVALID_IMAGE, symbols.error);
  } else {
    symbols = fake::scanPtxSymbols(text);
  }
  if (!symbols.ok) {
    // Measured: text the driver does not recognise at all gives CUDA_ERROR_INVALID_IMAGE.
    return fail(symbols.versionMajor == 0 ? CUDA_ERROR_INVALID_IMAGE : CUDA_ERROR_INVALID_PTX, symbols.error);
  }
  const int deviceSm = config_.computeMajor * 10 + config_.computeMinor;
  if (symbols.targetSm > deviceSm) {  // 0 for ELF: the worker chose the entry for this device
    return fail(CUDA_ERROR_INVALID_PTX, "PTX targets sm_" + std::to_string(symbols.targetSm) +
                                            ", above the device's sm_" + std::to_string(deviceSm));
  }
  std::set<std::string> names;
  for (const fake::PtxEntry& entry : symbols.entries) {
    if (!names.insert(entry.name).second)
      return fail(CUDA_ERROR_INVALID_PTX, "duplicate symbol " + entry.name);
  }
  for (const fake::PtxVariable& variable : symbols.variables) {
    if (!names.insert(variable.name).second)
      return fail(CUDA_ERROR_INVALID_PTX, "duplicate symbol " + variable.name);
  }

  std::uint64_t variableBytes = 0;
  std::vector<std::shared_ptr<fake::HostBuffer>> storage;
  for (const fake::PtxVariable& variable : symbols.variables) {
    variableBytes += variable.size;  // each is below 2^40 (the scanner's limit): no overflow
    if (variableBytes > config_.memoryBytes)
      return fail(CUDA_ERROR_OUT_OF_MEMORY, "module variables too large");
    storage.push_back(std::make_shared<fake::HostBuffer>(variable.size));
    if (storage.back()->data() == nullptr)
      return fail(CUDA_ERROR_OUT_OF_MEMORY, "no host memory for variables");
  }

  // Nothing can fail from here on.
  const auto handle = reinterpret_cast<CUmodule>(nextObject_ += 0x10);
  Module& loaded = modules_[handle];
  loaded.ptxVersion = symbols.versionMajor * 10 + symbols.versionMinor;
  for (const fake::PtxEntry& entry : symbols.entries) {
    const auto function = reinterpret_cast<CUfunction>(nextObject_ += 0x10);
    loaded.functions.emplace(entry.name, function);
    functions_.emplace(function, Function{handle, entry.name, entry.params, {}});
  }
  for (std::size_t i = 0; i < symbols.variables.size(); ++i) {
    const fake::PtxVariable& variable = symbols.variables[i];
    const CUdeviceptr address = nextModuleData_;
    // A gap after every variable, so an overrun lands in unmapped memory.
    nextModuleData_ = alignUp(address + variable.size, kModuleDataAlignment) + kModuleDataAlignment;
    segments_.emplace(address, Segment{variable.size, std::move(storage[i]), 0, true});
    loaded.variables.emplace(variable.name, std::make_pair(address, variable.size));
  }
  *module = handle;
  return CUDA_SUCCESS;
}

void FakeGpuBackend::unloadLocked(CUmodule module) {
  auto it = modules_.find(module);
  for (const auto& [name, function] : it->second.functions) functions_.erase(function);
  for (const auto& [name, range] : it->second.variables) segments_.erase(range.first);
  modules_.erase(it);
}

CUresult FakeGpuBackend::moduleUnload(CUmodule module) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kModuleUnload)) return *injected;
  if (!modules_.contains(module))
    return misused("moduleUnload of a dead module " + hex(module), CUDA_ERROR_INVALID_HANDLE);
  unloadLocked(module);
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::moduleGetFunction(CUmodule module, const char* name, CUfunction* function) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kModuleGetFunction)) return *injected;
  auto it = modules_.find(module);
  if (it == modules_.end())
    return misused("moduleGetFunction on a dead module " + hex(module), CUDA_ERROR_INVALID_HANDLE);
  if (name == nullptr || function == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto found = it->second.functions.find(name);
  if (found == it->second.functions.end()) return CUDA_ERROR_NOT_FOUND;
  *function = found->second;
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::moduleGetGlobal(CUmodule module, const char* name, CUdeviceptr* dptr,
                                         std::size_t* bytes) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kModuleGetGlobal)) return *injected;
  auto it = modules_.find(module);
  if (it == modules_.end())
    return misused("moduleGetGlobal on a dead module " + hex(module), CUDA_ERROR_INVALID_HANDLE);
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto found = it->second.variables.find(name);
  if (found == it->second.variables.end()) return CUDA_ERROR_NOT_FOUND;
  if (dptr != nullptr) *dptr = found->second.first;
  if (bytes != nullptr) *bytes = found->second.second;
  return CUDA_SUCCESS;
}

FakeGpuBackend::Function* FakeGpuBackend::liveFunction(CUfunction function, const char* what) {
  auto it = functions_.find(function);
  if (it != functions_.end()) return &it->second;
  misuse_.push_back(std::string(what) + " on a dead function " + hex(function));
  return nullptr;
}

CUresult FakeGpuBackend::functionParamInfo(CUfunction function, std::size_t index, std::size_t* offset,
                                           std::size_t* size) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kFunctionParamInfo)) return *injected;
  const Function* live = liveFunction(function, "functionParamInfo");
  if (live == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (index >= live->params.size()) return CUDA_ERROR_INVALID_VALUE;  // past the last parameter
  if (offset != nullptr) *offset = live->params[index].offset;
  if (size != nullptr) *size = live->params[index].size;
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::functionGetAttribute(CUfunction_attribute attribute, CUfunction function,
                                              int* value) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kFunctionGetAttribute)) return *injected;
  const Function* live = liveFunction(function, "functionGetAttribute");
  if (live == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (value == nullptr || attribute < 0 || attribute >= CU_FUNC_ATTRIBUTE_MAX)
    return CUDA_ERROR_INVALID_VALUE;
  if (auto set = live->attributes.find(attribute); set != live->attributes.end()) {
    *value = set->second;
    return CUDA_SUCCESS;
  }
  switch (attribute) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *value = static_cast<int>(kMaxThreadsPerBlock);
      break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS:
      *value = kFakeRegistersPerThread;
      break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
      *value = modules_.at(live->module).ptxVersion;
      break;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
      *value = config_.computeMajor * 10 + config_.computeMinor;
      break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      *value = kDefaultMaxDynamicSharedBytes;
      break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      *value = -1;
      break;
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
      *value = localBytesOf(*live);
      break;
    default:
      *value = 0;
      break;
  }
  return CUDA_SUCCESS;
}

int FakeGpuBackend::localBytesOf(const Function& function) const {
  auto it = config_.localBytesByKernel.find(function.name);
  return it == config_.localBytesByKernel.end() ? 0 : it->second;
}

CUresult FakeGpuBackend::functionSetAttribute(CUfunction function, CUfunction_attribute attribute,
                                              int value) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kFunctionSetAttribute)) return *injected;
  Function* live = liveFunction(function, "functionSetAttribute");
  if (live == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  switch (attribute) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      if (value < 0 || value > kOptInMaxDynamicSharedBytes) return CUDA_ERROR_INVALID_VALUE;
      break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      if (value < -1 || value > 100) return CUDA_ERROR_INVALID_VALUE;
      break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
      if (value < 0) return CUDA_ERROR_INVALID_VALUE;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  live->attributes[attribute] = value;
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::functionSetCacheConfig(CUfunction function, CUfunc_cache config) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kFunctionSetCacheConfig)) return *injected;
  if (liveFunction(function, "functionSetCacheConfig") == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (config < CU_FUNC_CACHE_PREFER_NONE || config > CU_FUNC_CACHE_PREFER_EQUAL)
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::occupancyMaxActiveBlocks(int* blocks, CUfunction function, int blockSize,
                                                  std::size_t dynamicSmem, unsigned flags) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kOccupancyMaxActiveBlocks)) return *injected;
  if (liveFunction(function, "occupancyMaxActiveBlocks") == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (blocks == nullptr || (flags & ~static_cast<unsigned>(CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE)) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *blocks = blocksPerMultiprocessor(blockSize, dynamicSmem);
  return CUDA_SUCCESS;
}

int FakeGpuBackend::blocksPerMultiprocessor(int blockSize, std::size_t dynamicSmem) {
  // Measured: a block size the function cannot run gives 0 blocks, not an error.
  const bool runnable = blockSize > 0 && static_cast<unsigned>(blockSize) <= kMaxThreadsPerBlock &&
                        dynamicSmem <= static_cast<std::size_t>(kOptInMaxDynamicSharedBytes);
  if (!runnable) return 0;
  // Shared memory as an H100's: 228 KiB per multiprocessor, 1 KiB of it reserved per block.
  constexpr std::size_t kSharedPerMultiprocessor = 228 << 10, kReservedPerBlock = 1 << 10;
  const auto bySharedMemory = static_cast<int>(kSharedPerMultiprocessor / (dynamicSmem + kReservedPerBlock));
  return std::min({2048 / blockSize, 32, bySharedMemory});
}

namespace {

// The cluster a launch asks for: {1, 1, 1} when it names none.
CUlaunchAttributeValue clusterOf(const LaunchConfig& config) {
  CUlaunchAttributeValue value{};
  value.clusterDim.x = value.clusterDim.y = value.clusterDim.z = 1;
  for (const CUlaunchAttribute& attribute : config.attributes) {
    if (attribute.id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) value = attribute.value;
  }
  return value;
}

bool cooperativeAttribute(const LaunchConfig& config) {
  for (const CUlaunchAttribute& attribute : config.attributes) {
    if (attribute.id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && attribute.value.cooperative != 0) return true;
  }
  return false;
}

}  // namespace

// As the driver: a cluster holds at most 8 blocks unless the function allows non-portable sizes
// (then 16), and a launch's clusters must tile its grid (an occupancy query's grid is not read).
CUresult FakeGpuBackend::clusterAdmissible(const Function& function, const LaunchConfig& config,
                                           bool tilesGrid) const {
  const CUlaunchAttributeValue cluster = clusterOf(config);
  const auto& dim = cluster.clusterDim;
  if (dim.x == 0 || dim.y == 0 || dim.z == 0) return CUDA_ERROR_INVALID_VALUE;
  if (tilesGrid && (config.gridX % dim.x != 0 || config.gridY % dim.y != 0 || config.gridZ % dim.z != 0)) {
    return CUDA_ERROR_INVALID_CLUSTER_SIZE;
  }
  const auto nonPortable = function.attributes.find(CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED);
  const unsigned most = nonPortable != function.attributes.end() && nonPortable->second != 0 ? 16 : 8;
  // Each edge first: the product of three 32-bit edges can wrap around 2^64 (to 0).
  if (dim.x > most || dim.y > most || dim.z > most) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
  return std::uint64_t{dim.x} * dim.y * dim.z <= most ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CLUSTER_SIZE;
}

CUresult FakeGpuBackend::occupancyClusters(int* value, CUfunction function, const LaunchConfig& config,
                                           bool potentialSize) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kOccupancyClusters)) return *injected;
  const Function* live = liveFunction(function, "occupancyClusters");
  if (live == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (potentialSize) {
    *value = 8;
    return CUDA_SUCCESS;
  }
  if (CUresult result = clusterAdmissible(*live, config, false); result != CUDA_SUCCESS) return result;
  const auto& dim = clusterOf(config).clusterDim;
  const std::uint64_t threads = std::uint64_t{config.blockX} * config.blockY * config.blockZ;
  const auto resident =
      static_cast<std::uint64_t>(kMultiprocessors) *
      static_cast<std::uint64_t>(blocksPerMultiprocessor(static_cast<int>(threads), config.sharedMemBytes));
  *value = static_cast<int>(resident / (std::uint64_t{dim.x} * dim.y * dim.z));
  return CUDA_SUCCESS;
}

CUresult FakeGpuBackend::launchKernel(CUfunction function, const LaunchConfig& config, CUstream stream,
                                      void** params) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kLaunchKernel)) return *injected;
  return recordLaunch(function, config, stream, params, cooperativeAttribute(config));
}

CUresult FakeGpuBackend::launchCooperativeKernel(CUfunction function, const LaunchConfig& config,
                                                 CUstream stream, void** params) {
  std::lock_guard lock(mutex_);
  if (auto injected = enter(FakeGpuCall::kLaunchCooperativeKernel)) return *injected;
  return recordLaunch(function, config, stream, params, true);
}

CUresult FakeGpuBackend::recordLaunch(CUfunction function, const LaunchConfig& config, CUstream stream,
                                      void** params, bool cooperative) {
  const Function* live = liveFunction(function, "launchKernel");
  if (live == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (!streamUsable(stream)) return CUDA_ERROR_INVALID_HANDLE;
  const std::uint64_t threads = std::uint64_t{config.blockX} * config.blockY * config.blockZ;
  if (config.gridX == 0 || config.gridY == 0 || config.gridZ == 0 || threads == 0 ||
      config.gridX > kMaxGridDimX || config.gridY > kMaxGridDimYZ || config.gridZ > kMaxGridDimYZ ||
      config.blockZ > kMaxBlockDimZ || threads > kMaxThreadsPerBlock) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  int maxDynamicShared = kDefaultMaxDynamicSharedBytes;
  if (auto set = live->attributes.find(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
      set != live->attributes.end()) {
    maxDynamicShared = set->second;
  }
  if (config.sharedMemBytes > static_cast<unsigned>(maxDynamicShared)) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = clusterAdmissible(*live, config, true); result != CUDA_SUCCESS) return result;
  if (cooperative) {
    const std::uint64_t resident =
        std::uint64_t{kMultiprocessors} *
        static_cast<std::uint64_t>(blocksPerMultiprocessor(static_cast<int>(threads), config.sharedMemBytes));
    if (std::uint64_t{config.gridX} * config.gridY * config.gridZ > resident) {
      return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
    }
  }

  // Measured on an H200: the stack grows to the kernel's local memory, rounded up to 16 bytes.
  std::size_t& stack = limits_.at(CU_LIMIT_STACK_SIZE);
  stack = std::max<std::size_t>(stack, (static_cast<std::size_t>(localBytesOf(*live)) + 15) / 16 * 16);

  FakeLaunch launch{
      function, live->module, live->name,  config,
      stream,   {},           cooperative, {config.attributes.begin(), config.attributes.end()}};
  launch.config.attributes = {};
  std::size_t bufferSize = 0;
  for (const fake::PtxParam& param : live->params)
    bufferSize = std::max<std::size_t>(bufferSize, param.offset + param.size);
  launch.params.assign(bufferSize, '\0');
  for (std::size_t i = 0; i < live->params.size(); ++i) {
    if (params == nullptr || params[i] == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::memcpy(launch.params.data() + live->params[i].offset, params[i], live->params[i].size);
  }
  launches_.push_back(std::move(launch));
  return CUDA_SUCCESS;
}

}  // namespace agileos::worker
