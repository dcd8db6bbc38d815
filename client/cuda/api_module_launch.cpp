// Modules, functions and launches (libcuda.so.1 exports). Images go to the worker as they are
// (client/session/code_images.h) and through its kernel memory guard, the one gate every
// code-loading path takes; launches take the session's launch path (client/session/kernel_launch.h),
// the same as cudaLaunchKernel's.
//
// A CUmodule and a CUfunction are addresses of records here; every handle the program passes is
// looked up among the live ones before use. A CUfunction is also registered as a kernel handle of
// the runtime shim, so cudaLaunchKernel accepts it as CUDA 12 and later do.
#include <cuda.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <utility>

#include "client/cuda/driver_call.h"
#include "client/cuda/jit_options.h"
#include "client/cuda/module_handles.h"
#include "client/session/code_images.h"
#include "client/session/context_calls.h"
#include "client/session/enum_bits.h"
#include "client/session/function_calls.h"
#include "client/session/kernel_launch.h"
#include "client/session/launch_attributes.h"
#include "client/session/module_registry.h"
#include "cuda_api.gen.h"  // checks every definition against cuda.h's declaration

using namespace agileos::client;
using namespace agileos::client::cuda_shim;
namespace v1 = agileos::v1;

namespace {

struct FunctionRecord {
  std::shared_ptr<const KernelLayout> layout;
  std::string name;  // as the module names it (mangled)
  CUmodule module = nullptr;
};

struct ModuleRecord {
  std::uint64_t module = 0;  // the worker's token
  std::map<std::string, std::unique_ptr<FunctionRecord>> functions;
  std::map<std::string, DeviceVariable> globals;  // resolved by cuModuleGetGlobal
};

// Never destroyed: a CUDA runtime in the program unloads its modules from an exit handler that
// runs after this library's static objects would be.
auto& gMutex = *new std::shared_mutex();
auto& gModules = *new std::map<const void*, std::unique_ptr<ModuleRecord>>();  // by CUmodule
auto& gFunctions = *new std::map<const void*, const FunctionRecord*>();        // live CUfunctions

CUresult loadImageAt(CUmodule* module, const void* image) {
  if (module == nullptr || image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  std::string bytes;
  std::vector<std::string> relocatableObjects;
  if (cudaError_t error = copyCodeImage(image, &bytes, &relocatableObjects); error != cudaSuccess)
    return toDriverResult(error);
  return loadModuleImage(module, std::move(bytes), std::move(relocatableObjects));
}

// The function's layout, or CUDA_ERROR_INVALID_HANDLE for a handle that is not a live CUfunction.
CUresult functionLayout(CUfunction f, std::shared_ptr<const KernelLayout>* layout) {
  std::shared_lock lock(gMutex);
  auto it = gFunctions.find(f);
  if (it == gFunctions.end()) return CUDA_ERROR_INVALID_HANDLE;
  *layout = it->second->layout;
  return CUDA_SUCCESS;
}

// cuLaunchKernel's `extra`: CU_LAUNCH_PARAM_BUFFER_POINTER and _SIZE, ended by CU_LAUNCH_PARAM_END.
// At most a few dozen entries are read: a list that does not end is refused, not walked forever.
CUresult parseExtra(void** extra, const void** buffer, std::size_t* size) {
  constexpr int kMaxEntries = 64;
  const std::size_t* sizePointer = nullptr;
  for (int i = 0; i < kMaxEntries; i += 2) {
    void* key = extra[i];
    if (key == CU_LAUNCH_PARAM_END) {
      if (*buffer == nullptr || sizePointer == nullptr) return CUDA_ERROR_INVALID_VALUE;
      *size = *sizePointer;
      return CUDA_SUCCESS;
    }
    if (key == CU_LAUNCH_PARAM_BUFFER_POINTER) {
      *buffer = extra[i + 1];
    } else if (key == CU_LAUNCH_PARAM_BUFFER_SIZE) {
      sizePointer = static_cast<const std::size_t*>(extra[i + 1]);
    } else {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult launch(CUfunction f, LaunchShape shape, void** kernelParams, void** extra) {
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  std::shared_ptr<const KernelLayout> layout;
  if (CUresult result = functionLayout(f, &layout); result != CUDA_SUCCESS) return result;
  if (kernelParams != nullptr && extra != nullptr) return CUDA_ERROR_INVALID_VALUE;
  shape.function = f;
  if (extra != nullptr) {
    const void* buffer = nullptr;
    std::size_t size = 0;
    if (CUresult result = parseExtra(extra, &buffer, &size); result != CUDA_SUCCESS) return result;
    return toDriverResult(launchKernelWithBuffer(*layout, shape, buffer, size));
  }
  return toDriverResult(launchKernel(*layout, shape, kernelParams));
}

LaunchShape shapeOf(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                    unsigned shared, CUstream stream, DefaultStream spelling, bool cooperative) {
  return LaunchShape{dim3(gx, gy, gz), dim3(bx, by, bz), shared, reinterpret_cast<cudaStream_t>(stream),
                     spelling,         cooperative};
}

CUresult launchEx(const CUlaunchConfig* config, CUfunction f, void** kernelParams, void** extra,
                  DefaultStream spelling) {
  if (config == nullptr) return CUDA_ERROR_INVALID_VALUE;
  LaunchAttributes attributes;
  if (cudaError_t error = readLaunchAttributes(config->attrs, config->numAttrs, &attributes);
      error != cudaSuccess)
    return toDriverResult(error);
  LaunchShape shape =
      shapeOf(config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX, config->blockDimY,
              config->blockDimZ, config->sharedMemBytes, config->hStream, spelling, attributes.cooperative);
  shape.attributes = attributes.view();
  return launch(f, shape, kernelParams, extra);
}

// Runs a function query or setting of the session on a CUfunction's worker token.
template <typename Call>
CUresult onFunction(CUfunction f, Call call) {
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  std::shared_ptr<const KernelLayout> layout;
  if (CUresult result = functionLayout(f, &layout); result != CUDA_SUCCESS) return result;
  return toDriverResult(call(layout->token));
}

// Clusters: the worker asks the driver, for the launch the config describes.
CUresult occupancyOfClusters(int* value, CUfunction func, const CUlaunchConfig* config, bool potentialSize) {
  if (value == nullptr || config == nullptr) return CUDA_ERROR_INVALID_VALUE;
  LaunchAttributes attributes;
  if (cudaError_t error = readLaunchAttributes(config->attrs, config->numAttrs, &attributes);
      error != cudaSuccess)
    return toDriverResult(error);
  LaunchShape shape = shapeOf(config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
                              config->blockDimY, config->blockDimZ, config->sharedMemBytes, nullptr,
                              DefaultStream::kLegacy, attributes.cooperative);
  shape.attributes = attributes.view();
  return onFunction(
      func, [&](std::uint64_t token) { return clusterOccupancy(token, shape, potentialSize, value); });
}

}  // namespace

namespace agileos::client::cuda_shim {

bool isLiveFunction(CUfunction f) {
  std::shared_lock lock(gMutex);
  return gFunctions.count(f) != 0;
}

CUresult functionModule(CUfunction f, CUmodule* module) {
  std::shared_lock lock(gMutex);
  auto it = gFunctions.find(f);
  if (it == gFunctions.end()) return CUDA_ERROR_INVALID_HANDLE;
  *module = it->second->module;
  return CUDA_SUCCESS;
}

CUresult functionName(CUfunction f, const char** name) {
  std::shared_lock lock(gMutex);
  auto it = gFunctions.find(f);
  if (it == gFunctions.end()) return CUDA_ERROR_INVALID_HANDLE;
  *name = it->second->name.c_str();
  return CUDA_SUCCESS;
}

CUresult functionParameter(CUfunction f, std::size_t index, std::size_t* offset, std::size_t* size) {
  std::shared_ptr<const KernelLayout> layout;
  if (CUresult result = functionLayout(f, &layout); result != CUDA_SUCCESS) return result;
  if (index >= layout->params.size()) return CUDA_ERROR_INVALID_VALUE;
  if (offset != nullptr) *offset = layout->params[index].first;
  if (size != nullptr) *size = layout->params[index].second;
  return CUDA_SUCCESS;
}

CUresult moduleManagedVariable(CUmodule module, const char* name, CUdeviceptr* dptr, std::size_t* bytes) {
  std::shared_lock lock(gMutex);
  auto it = gModules.find(module);
  if (it == gModules.end()) return CUDA_ERROR_INVALID_HANDLE;
  DeviceVariable variable;
  if (codeImageManagedVariable(it->second->module, name, &variable) != cudaSuccess)
    return CUDA_ERROR_NOT_FOUND;
  if (dptr != nullptr) *dptr = variable.dptr;
  if (bytes != nullptr) *bytes = variable.size;
  return CUDA_SUCCESS;
}

CUresult loadModuleImage(CUmodule* module, std::string image, std::vector<std::string> relocatableObjects) {
  std::uint64_t token = 0;
  if (cudaError_t error = loadCodeImage(std::move(image), &token, std::move(relocatableObjects));
      error != cudaSuccess)
    return toDriverResult(error);
  auto record = std::make_unique<ModuleRecord>();
  record->module = token;
  std::unique_lock lock(gMutex);
  *module = reinterpret_cast<CUmodule>(record.get());
  gModules.emplace(record.get(), std::move(record));
  return CUDA_SUCCESS;
}

}  // namespace agileos::client::cuda_shim

extern "C" {

// JIT options are hints the worker's loader does not need (it chooses and compiles the code
// itself); they are accepted and ignored, and option outputs (logs) are left as they were.
CUresult cuModuleLoadData(CUmodule* module, const void* image) { return loadImageAt(module, image); }
// The options are checked as the driver checks them; the logs are written back empty (the worker
// compiles the image and keeps its JIT log: an info log the program prints must not be whatever
// its buffer held), the rest are hints for a compile that is the worker's.
CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int numOptions,
                            CUjit_option* options, void** optionValues) {
  if (CUresult result = checkJitOptions(numOptions, options, optionValues); result != CUDA_SUCCESS)
    return result;
  const JitOutputs outputs = readJitOutputs(numOptions, options, optionValues);
  const CUresult result = loadImageAt(module, image);
  writeJitOutputs(outputs, "",
                  result == CUDA_SUCCESS ? "" : "AgileOS: the worker refused or could not compile the image");
  return result;
}
CUresult cuModuleLoadFatBinary(CUmodule* module, const void* fatCubin) {
  return loadImageAt(module, fatCubin);
}

CUresult cuModuleLoad(CUmodule* module, const char* fname) {
  if (module == nullptr || fname == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  std::string image;
  if (cudaError_t error = readCodeImageFile(fname, &image); error != cudaSuccess)
    return toDriverResult(error);
  return loadModuleImage(module, std::move(image), {});
}

CUresult cuModuleUnload(CUmodule hmod) {
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  std::unique_ptr<ModuleRecord> record;
  {
    std::unique_lock lock(gMutex);
    auto it = gModules.find(hmod);
    if (it == gModules.end()) return CUDA_ERROR_INVALID_HANDLE;
    record = std::move(it->second);
    gModules.erase(it);
    for (const auto& [name, function] : record->functions) gFunctions.erase(function.get());
  }
  for (const auto& [name, function] : record->functions)
    ModuleRegistry::instance().removeLibraryKernel(function.get());
  for (const auto& [name, global] : record->globals)
    ModuleRegistry::instance().removeLoadedVariable(global.dptr);
  return toDriverResult(unloadCodeImage(record->module));
}

CUresult cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod, const char* name) {
  if (hfunc == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  std::unique_lock lock(gMutex);  // held across the call: the module cannot be unloaded meanwhile
  auto it = gModules.find(hmod);
  if (it == gModules.end()) return CUDA_ERROR_INVALID_HANDLE;
  ModuleRecord& record = *it->second;
  if (auto found = record.functions.find(name); found != record.functions.end()) {
    *hfunc = reinterpret_cast<CUfunction>(found->second.get());
    return CUDA_SUCCESS;
  }
  KernelLayout layout;
  // A name the module lacks is cudaErrorSymbolNotFound from the worker: CUDA_ERROR_NOT_FOUND.
  if (cudaError_t error = codeImageKernel(record.module, name, &layout); error != cudaSuccess)
    return toDriverResult(error);
  auto function = std::make_unique<FunctionRecord>();
  function->layout = std::make_shared<const KernelLayout>(std::move(layout));
  function->name = name;
  function->module = hmod;
  ModuleRegistry::instance().addLibraryKernel(function.get(), *function->layout);
  gFunctions.emplace(function.get(), function.get());
  *hfunc = reinterpret_cast<CUfunction>(function.get());
  record.functions.emplace(name, std::move(function));
  return CUDA_SUCCESS;
}

CUresult cuModuleGetGlobal_v2(CUdeviceptr* dptr, size_t* bytes, CUmodule hmod, const char* name) {
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  std::unique_lock lock(gMutex);  // held across the call: the module cannot be unloaded meanwhile
  auto it = gModules.find(hmod);
  if (it == gModules.end()) return CUDA_ERROR_INVALID_HANDLE;
  ModuleRecord& record = *it->second;
  // A __managed__ variable is its managed memory, as the driver answers.
  if (DeviceVariable managed; codeImageManagedVariable(record.module, name, &managed) == cudaSuccess) {
    if (dptr != nullptr) *dptr = managed.dptr;
    if (bytes != nullptr) *bytes = managed.size;
    return CUDA_SUCCESS;
  }
  auto found = record.globals.find(name);
  if (found == record.globals.end()) {
    DeviceVariable variable;
    // A name the module lacks (cudaErrorSymbolNotFound), or a range it may not have
    // (cudaErrorInvalidSymbol): CUDA_ERROR_NOT_FOUND.
    if (cudaError_t error = codeImageVariable(record.module, name, &variable); error != cudaSuccess)
      return toDriverResult(error);
    ModuleRegistry::instance().addLoadedVariable(variable);
    found = record.globals.emplace(name, variable).first;
  }
  if (dptr != nullptr) *dptr = found->second.dptr;
  if (bytes != nullptr) *bytes = found->second.size;
  return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                        unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                        unsigned int sharedMemBytes, CUstream hStream, void** kernelParams, void** extra) {
  return launch(f,
                shapeOf(gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,
                        hStream, DefaultStream::kLegacy, false),
                kernelParams, extra);
}

CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                             unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                             unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                             void** kernelParams, void** extra) {
  return launch(f,
                shapeOf(gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,
                        hStream, DefaultStream::kPerThread, false),
                kernelParams, extra);
}

CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                   unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                   unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                                   void** kernelParams) {
  return launch(f,
                shapeOf(gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,
                        hStream, DefaultStream::kLegacy, true),
                kernelParams, nullptr);
}

// A linked-in runtime built with --default-stream per-thread makes its cooperative launches here.
CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                        unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                        unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                                        void** kernelParams) {
  return launch(f,
                shapeOf(gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,
                        hStream, DefaultStream::kPerThread, true),
                kernelParams, nullptr);
}

CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** kernelParams, void** extra) {
  return launchEx(config, f, kernelParams, extra, DefaultStream::kLegacy);
}
CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** kernelParams,
                               void** extra) {
  return launchEx(config, f, kernelParams, extra, DefaultStream::kPerThread);
}

CUresult cuFuncGetAttribute(int* pi, CUfunction_attribute attrib, CUfunction hfunc) {
  if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
  v1::FuncAttributes in;
  if (CUresult result =
          onFunction(hfunc, [&](std::uint64_t token) { return functionAttributes(token, &in); });
      result != CUDA_SUCCESS) {
    return result;
  }
  switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *pi = in.max_threads_per_block();
      break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
      *pi = static_cast<int>(in.shared_size_bytes());
      break;
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
      *pi = static_cast<int>(in.const_size_bytes());
      break;
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
      *pi = static_cast<int>(in.local_size_bytes());
      break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS:
      *pi = in.num_regs();
      break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
      *pi = in.ptx_version();
      break;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
      *pi = in.binary_version();
      break;
    case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA:
      *pi = in.cache_mode_ca();
      break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      *pi = in.max_dynamic_shared_size_bytes();
      break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      *pi = in.preferred_shmem_carveout();
      break;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
      *pi = in.cluster_dim_must_be_set();
      break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
      *pi = in.required_cluster_width();
      break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
      *pi = in.required_cluster_height();
      break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
      *pi = in.required_cluster_depth();
      break;
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
      *pi = in.non_portable_cluster_size_allowed();
      break;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
      *pi = in.cluster_scheduling_policy_preference();
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

// CUfunction_attribute and cudaFuncAttribute number the settable attributes alike; the worker
// checks the value.
CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value) {
  return onFunction(hfunc, [&](std::uint64_t token) {
    return setFunctionAttribute(token, static_cast<int>(attrib), value);
  });
}

CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config) {
  return onFunction(
      hfunc, [&](std::uint64_t token) { return setFunctionCacheConfig(token, static_cast<int>(config)); });
}

// Fixed four-byte banks (client/session/context_calls.h): a valid setting of a live function does nothing.
CUresult cuFuncSetSharedMemConfig(CUfunction hfunc, CUsharedconfig config) {
  return onFunction(hfunc, [&](std::uint64_t) { return checkSharedMemBankSetting(enumBits(config)); });
}

// The most dynamic shared memory a block may take while `numBlocks` blocks of `blockSize`
// threads still fit on one multiprocessor (availableDynamicSharedMemory), up to the device's
// opt-in maximum per block.
CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t* dynamicSmemSize, CUfunction func, int numBlocks,
                                                 int blockSize) {
  if (dynamicSmemSize == nullptr || numBlocks <= 0 || blockSize <= 0) return CUDA_ERROR_INVALID_VALUE;
  int optIn = 0;
  if (CUresult result =
          cuDeviceGetAttribute(&optIn, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 0);
      result != CUDA_SUCCESS) {
    return result;
  }
  return onFunction(func, [&](std::uint64_t token) {
    return availableDynamicSharedMemory(token, numBlocks, blockSize,
                                        static_cast<std::uint64_t>(optIn < 0 ? 0 : optIn), dynamicSmemSize);
  });
}

CUresult cuOccupancyMaxActiveClusters(int* numClusters, CUfunction func, const CUlaunchConfig* config) {
  return occupancyOfClusters(numClusters, func, config, false);
}

CUresult cuOccupancyMaxPotentialClusterSize(int* clusterSize, CUfunction func, const CUlaunchConfig* config) {
  return occupancyOfClusters(clusterSize, func, config, true);
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* numBlocks, CUfunction func, int blockSize,
                                                              size_t dynamicSMemSize, unsigned int flags) {
  if (numBlocks == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return onFunction(func, [&](std::uint64_t token) {
    return maxActiveBlocksPerMultiprocessor(token, blockSize, dynamicSMemSize, flags, numBlocks);
  });
}

// The block size with the most resident threads per multiprocessor, found the way cuda_runtime.h's
// cudaOccupancyMaxPotentialBlockSizeVariableSMemWithFlags finds it: every multiple of the warp size
// up to the kernel's and the device's limit (and blockSizeLimit), largest first, each asked of the
// worker; the first that fills a multiprocessor ends the search.
CUresult cuOccupancyMaxPotentialBlockSizeWithFlags(int* minGridSize, int* blockSize, CUfunction func,
                                                   CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                                   size_t dynamicSMemSize, int blockSizeLimit,
                                                   unsigned int flags) {
  if (minGridSize == nullptr || blockSize == nullptr || blockSizeLimit < 0) return CUDA_ERROR_INVALID_VALUE;
  int deviceMaxThreads = 0, warpSize = 0, multiprocessors = 0, threadsPerMultiprocessor = 0,
      functionMaxThreads = 0;
  for (const auto& [attribute, value] :
       {std::pair{CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &deviceMaxThreads},
        std::pair{CU_DEVICE_ATTRIBUTE_WARP_SIZE, &warpSize},
        std::pair{CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &multiprocessors},
        std::pair{CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, &threadsPerMultiprocessor}}) {
    if (CUresult result = cuDeviceGetAttribute(value, attribute, kOnlyDevice); result != CUDA_SUCCESS)
      return result;
  }
  if (CUresult result =
          cuFuncGetAttribute(&functionMaxThreads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, func);
      result != CUDA_SUCCESS) {
    return result;
  }
  int maxBlockSize = std::min(deviceMaxThreads, functionMaxThreads);
  if (blockSizeLimit > 0) maxBlockSize = std::min(maxBlockSize, blockSizeLimit);
  if (warpSize <= 0 || maxBlockSize <= 0) return CUDA_ERROR_INVALID_VALUE;
  int bestBlockSize = 0, bestBlocks = 0, bestThreads = 0;
  for (int aligned = (maxBlockSize + warpSize - 1) / warpSize * warpSize; aligned > 0; aligned -= warpSize) {
    const int candidate = std::min(maxBlockSize, aligned);
    const size_t sharedBytes =
        blockSizeToDynamicSMemSize != nullptr ? blockSizeToDynamicSMemSize(candidate) : dynamicSMemSize;
    int blocks = 0;
    if (CUresult result = cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&blocks, func, candidate,
                                                                               sharedBytes, flags);
        result != CUDA_SUCCESS) {
      return result;
    }
    if (candidate * blocks > bestThreads) {
      bestBlockSize = candidate;
      bestBlocks = blocks;
      bestThreads = candidate * blocks;
    }
    if (bestThreads == threadsPerMultiprocessor) break;
  }
  *minGridSize = bestBlocks * multiprocessors;
  *blockSize = bestBlockSize;
  return CUDA_SUCCESS;
}

CUresult cuOccupancyMaxPotentialBlockSize(int* minGridSize, int* blockSize, CUfunction func,
                                          CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                          size_t dynamicSMemSize, int blockSizeLimit) {
  return cuOccupancyMaxPotentialBlockSizeWithFlags(minGridSize, blockSize, func, blockSizeToDynamicSMemSize,
                                                   dynamicSMemSize, blockSizeLimit, CU_OCCUPANCY_DEFAULT);
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks, CUfunction func, int blockSize,
                                                     size_t dynamicSMemSize) {
  return cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(numBlocks, func, blockSize, dynamicSMemSize,
                                                              CU_OCCUPANCY_DEFAULT);
}

}  // extern "C"
