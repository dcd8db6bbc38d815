// Context-independent loading (cuLibrary*, cuKernel*), and the queries on a function handle
// (cuFunc* that name no launch setting) (libcuda.so.1 exports; untrusted side).
//
// A library loads lazily, as the driver's do since CUDA 12.2: cuLibraryLoadData only keeps the
// image (the program's own memory when it promises to keep it, CU_LIBRARY_BINARY_IS_PRESERVED;
// else a copy), and the first call that needs its code (a kernel, a global, the module) loads it
// through cuModuleLoadData's path, the worker's one guard gate. That is what a CUDA runtime in the
// program relies on: it registers every fatbin it carries at start-up (cuBLAS: over a hundred,
// some without code for this GPU), and an image that cannot load here fails only the program that
// uses it, as natively.
//
// A worker's client has one context, so a loaded library is one module, and a CUkernel is that
// module's CUfunction under another type: the driver lets a CUkernel be passed wherever a
// CUfunction is (cuLaunchKernel), and here the two are the same handle.
#include <cuda.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "client/common/log.h"
#include "client/cuda/driver_call.h"
#include "client/cuda/module_handles.h"
#include "client/session/code_images.h"
#include "cuda_api.gen.h"  // checks every definition against cuda.h's declaration

using namespace agileos::client;
using namespace agileos::client::cuda_shim;

namespace {

struct LibraryRecord {
  const void* preserved = nullptr;              // the program's image, which it keeps (BINARY_IS_PRESERVED)
  std::string copy;                             // else a copy, taken at cuLibraryLoadData
  std::vector<std::string> relocatableObjects;  // with the copy: a separately compiled image's
  std::string path;                             // or the file cuLibraryLoadFromFile named

  std::mutex loadMutex;
  bool loadAttempted = false;
  CUresult loadResult = CUDA_SUCCESS;
  CUmodule module = nullptr;
};

// Never destroyed: a CUDA runtime in the program unloads its libraries from an exit handler that
// runs after this library's static objects would be.
auto& gMutex = *new std::shared_mutex();
auto& gLibraries = *new std::map<const void*, std::shared_ptr<LibraryRecord>>();  // by CUlibrary
auto& gKernelLibraries = *new std::map<const void*, CUlibrary>();                 // CUkernel -> its library

CUfunction asFunction(CUkernel kernel) { return reinterpret_cast<CUfunction>(kernel); }

// JIT options are hints, never read here (so their arrays may be anything; cuModuleLoadDataEx
// checks its own and writes its logs back). Of the library options, both kinds the driver knows are accepted;
// *preserved says whether the program keeps the image. A missing value array reads as null values (cuBLASLt
// passes options without one): the image is then copied, which is always safe.
CUresult checkOptions(unsigned int numLibraryOptions, CUlibraryOption* libraryOptions, void** libraryValues,
                      bool* preserved) {
  *preserved = false;
  if (numLibraryOptions > 0 && libraryOptions == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned int i = 0; i < numLibraryOptions; ++i) {
    // Any bit pattern may come: read as an integer (loading an enum that holds no enumerator is
    // undefined behaviour).
    int option = 0;
    static_assert(sizeof option == sizeof libraryOptions[i]);
    std::memcpy(&option, &libraryOptions[i], sizeof option);
    if (option == CU_LIBRARY_BINARY_IS_PRESERVED) {
      // The value is the flag itself, cast to a pointer (as the driver reads JIT option values).
      *preserved = libraryValues != nullptr && libraryValues[i] != nullptr;
    } else if (option != CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE) {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  return CUDA_SUCCESS;
}

// The checks before a library load: its options, then the context.
CUresult beginLoad(unsigned int numLibraryOptions, CUlibraryOption* libraryOptions, void** libraryValues,
                   bool* preserved) {
  if (CUresult result = checkOptions(numLibraryOptions, libraryOptions, libraryValues, preserved);
      result != CUDA_SUCCESS) {
    return result;
  }
  return enterContext();
}

CUresult adopt(CUlibrary* library, std::shared_ptr<LibraryRecord> record) {
  std::unique_lock lock(gMutex);
  *library = reinterpret_cast<CUlibrary>(record.get());
  gLibraries.emplace(record.get(), std::move(record));
  return CUDA_SUCCESS;
}

std::shared_ptr<LibraryRecord> find(CUlibrary library) {
  std::shared_lock lock(gMutex);
  auto it = gLibraries.find(library);
  return it == gLibraries.end() ? nullptr : it->second;
}

// The library's module, loaded on first use; a library whose image does not load keeps failing
// with the load's error.
CUresult moduleOf(CUlibrary library, CUmodule* module) {
  std::shared_ptr<LibraryRecord> record = find(library);
  if (record == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  std::lock_guard lock(record->loadMutex);
  if (!record->loadAttempted) {
    record->loadAttempted = true;
    if (!record->path.empty()) {
      record->loadResult = cuModuleLoad(&record->module, record->path.c_str());
    } else if (record->preserved != nullptr) {
      record->loadResult = cuModuleLoadData(&record->module, record->preserved);
    } else {
      // The worker has the copy after this (or refused it for good).
      record->loadResult = enterContext();
      if (record->loadResult == CUDA_SUCCESS) {
        record->loadResult = loadModuleImage(&record->module, std::exchange(record->copy, std::string()),
                                             std::exchange(record->relocatableObjects, {}));
      }
    }
    if (record->loadResult != CUDA_SUCCESS) {
      const char* name = nullptr;
      cuGetErrorName(record->loadResult, &name);
      AGILEOS_LOG_WARN("a library's image did not load (%s, %s); every use of the library fails",
                       name != nullptr ? name : "unknown error",
                       record->preserved != nullptr ? "kept by the program" : "copied at load");
    }
  }
  *module = record->module;
  return record->loadResult;
}

// A failed library call says so once per call and error (the first name it failed for), so that a
// library in the program that swallows the error still leaves a trace of it.
CUresult failedOnce(const char* call, CUresult result, const char* what) {
  if (result == CUDA_SUCCESS) return result;
  if (firstTime(std::string(call) + ":" + std::to_string(static_cast<int>(result)))) {
    const char* name = nullptr;
    cuGetErrorName(result, &name);
    AGILEOS_LOG_WARN("%s failed with %s (first seen for %.200s)", call,
                     name != nullptr ? name : "an unknown error", what);
  }
  return result;
}

// CUDA_ERROR_INVALID_HANDLE unless `kernel` came from cuLibraryGetKernel of a loaded library.
CUresult requireKernel(CUkernel kernel) {
  {
    std::shared_lock lock(gMutex);
    if (gKernelLibraries.count(kernel) == 0) return CUDA_ERROR_INVALID_HANDLE;
  }
  return isLiveFunction(asFunction(kernel)) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

}  // namespace

extern "C" {

static CUresult libraryLoadData(CUlibrary* library, const void* code, CUjit_option* /*jitOptions: hints*/,
                                void** /*jitOptionsValues*/, unsigned int /*numJitOptions*/,
                                CUlibraryOption* libraryOptions, void** libraryOptionValues,
                                unsigned int numLibraryOptions) {
  if (library == nullptr || code == nullptr) return CUDA_ERROR_INVALID_VALUE;
  bool preserved = false;
  if (CUresult result = beginLoad(numLibraryOptions, libraryOptions, libraryOptionValues, &preserved);
      result != CUDA_SUCCESS) {
    return result;
  }
  auto record = std::make_shared<LibraryRecord>();
  if (preserved) {
    record->preserved = code;
  } else if (cudaError_t error = copyCodeImage(code, &record->copy, &record->relocatableObjects);
             error != cudaSuccess) {
    return toDriverResult(error);
  }
  return adopt(library, std::move(record));
}

CUresult cuLibraryLoadData(CUlibrary* library, const void* code, CUjit_option* jitOptions,
                           void** jitOptionsValues, unsigned int numJitOptions,
                           CUlibraryOption* libraryOptions, void** libraryOptionValues,
                           unsigned int numLibraryOptions) {
  return failedOnce("cuLibraryLoadData",
                    libraryLoadData(library, code, jitOptions, jitOptionsValues, numJitOptions,
                                    libraryOptions, libraryOptionValues, numLibraryOptions),
                    "an image");
}

CUresult cuLibraryLoadFromFile(CUlibrary* library, const char* fileName, CUjit_option* /*jitOptions: hints*/,
                               void** /*jitOptionsValues*/, unsigned int /*numJitOptions*/,
                               CUlibraryOption* libraryOptions, void** libraryOptionValues,
                               unsigned int numLibraryOptions) {
  if (library == nullptr || fileName == nullptr) return CUDA_ERROR_INVALID_VALUE;
  bool preserved = false;  // a file is read at first use whatever the option says
  if (CUresult result = beginLoad(numLibraryOptions, libraryOptions, libraryOptionValues, &preserved);
      result != CUDA_SUCCESS) {
    return result;
  }
  auto record = std::make_shared<LibraryRecord>();
  record->path = fileName;
  return adopt(library, std::move(record));
}

CUresult cuLibraryUnload(CUlibrary library) {
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  std::shared_ptr<LibraryRecord> record;
  {
    std::unique_lock lock(gMutex);
    auto it = gLibraries.find(library);
    if (it == gLibraries.end()) return CUDA_ERROR_INVALID_HANDLE;
    record = std::move(it->second);
    gLibraries.erase(it);
    std::erase_if(gKernelLibraries, [&](const auto& entry) { return entry.second == library; });
  }
  std::lock_guard lock(record->loadMutex);
  return record->module != nullptr ? cuModuleUnload(record->module) : CUDA_SUCCESS;
}

CUresult cuLibraryGetModule(CUmodule* pMod, CUlibrary library) {
  if (pMod == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  return moduleOf(library, pMod);
}

static CUresult libraryGetKernel(CUkernel* pKernel, CUlibrary library, const char* name) {
  if (pKernel == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUmodule module = nullptr;
  if (CUresult result = moduleOf(library, &module); result != CUDA_SUCCESS) return result;
  CUfunction function = nullptr;
  if (CUresult result = cuModuleGetFunction(&function, module, name); result != CUDA_SUCCESS) return result;
  std::unique_lock lock(gMutex);
  if (gLibraries.count(library) == 0) return CUDA_ERROR_INVALID_HANDLE;  // unloaded meanwhile
  gKernelLibraries[function] = library;
  *pKernel = reinterpret_cast<CUkernel>(function);
  return CUDA_SUCCESS;
}

CUresult cuLibraryGetKernel(CUkernel* pKernel, CUlibrary library, const char* name) {
  return failedOnce("cuLibraryGetKernel", libraryGetKernel(pKernel, library, name),
                    name != nullptr ? name : "(null)");
}

CUresult cuLibraryGetGlobal(CUdeviceptr* dptr, size_t* bytes, CUlibrary library, const char* name) {
  CUmodule module = nullptr;
  if (CUresult result = moduleOf(library, &module); result != CUDA_SUCCESS) return result;
  return cuModuleGetGlobal_v2(dptr, bytes, module, name);
}

// A __managed__ variable's memory, bound when the library was loaded (client/session/code_images.h).
CUresult cuLibraryGetManaged(CUdeviceptr* dptr, size_t* bytes, CUlibrary library, const char* name) {
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUmodule module = nullptr;
  if (CUresult result = moduleOf(library, &module); result != CUDA_SUCCESS) return result;
  return moduleManagedVariable(module, name, dptr, bytes);
}

CUresult cuKernelGetFunction(CUfunction* pFunc, CUkernel kernel) {
  if (pFunc == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  if (CUresult result = requireKernel(kernel); result != CUDA_SUCCESS) return result;
  *pFunc = asFunction(kernel);
  return CUDA_SUCCESS;
}

CUresult cuKernelGetLibrary(CUlibrary* pLib, CUkernel kernel) {
  if (pLib == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::shared_lock lock(gMutex);
  auto it = gKernelLibraries.find(kernel);
  if (it == gKernelLibraries.end()) return CUDA_ERROR_INVALID_HANDLE;
  *pLib = it->second;
  return CUDA_SUCCESS;
}

CUresult cuKernelGetName(const char** name, CUkernel kernel) {
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = requireKernel(kernel); result != CUDA_SUCCESS) return result;
  return functionName(asFunction(kernel), name);
}

CUresult cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t* paramOffset, size_t* paramSize) {
  if (paramOffset == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = requireKernel(kernel); result != CUDA_SUCCESS) return result;
  return functionParameter(asFunction(kernel), paramIndex, paramOffset, paramSize);
}

// Per-device settings on the one device.
CUresult cuKernelGetAttribute(int* pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev) {
  if (CUresult result = requireDevice(dev); result != CUDA_SUCCESS) return result;
  if (CUresult result = requireKernel(kernel); result != CUDA_SUCCESS) return result;
  return cuFuncGetAttribute(pi, attrib, asFunction(kernel));
}

CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev) {
  if (CUresult result = requireDevice(dev); result != CUDA_SUCCESS) return result;
  if (CUresult result = requireKernel(kernel); result != CUDA_SUCCESS) return result;
  return cuFuncSetAttribute(asFunction(kernel), attrib, val);
}

CUresult cuKernelSetCacheConfig(CUkernel kernel, CUfunc_cache config, CUdevice dev) {
  if (CUresult result = requireDevice(dev); result != CUDA_SUCCESS) return result;
  if (CUresult result = requireKernel(kernel); result != CUDA_SUCCESS) return result;
  return cuFuncSetCacheConfig(asFunction(kernel), config);
}

// Libraries load lazily (above); a module loads whole, its functions with it.
CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode* mode) {
  if (mode == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = requireInitialized(); result != CUDA_SUCCESS) return result;
  *mode = CU_MODULE_LAZY_LOADING;
  return CUDA_SUCCESS;
}

// --- queries on a function handle ---

CUresult cuFuncGetModule(CUmodule* hmod, CUfunction hfunc) {
  if (hmod == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return functionModule(hfunc, hmod);
}

CUresult cuFuncGetName(const char** name, CUfunction hfunc) {
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return functionName(hfunc, name);
}

CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t* paramOffset, size_t* paramSize) {
  if (paramOffset == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return functionParameter(func, paramIndex, paramOffset, paramSize);
}

// Functions are loaded with their module (eager loading).
CUresult cuFuncIsLoaded(CUfunctionLoadingState* state, CUfunction function) {
  if (state == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!isLiveFunction(function)) return CUDA_ERROR_INVALID_HANDLE;
  *state = CU_FUNCTION_LOADING_STATE_LOADED;
  return CUDA_SUCCESS;
}

CUresult cuFuncLoad(CUfunction function) {
  return isLiveFunction(function) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

}  // extern "C"
