// What the driver shim's module records (api_module_launch.cpp) answer about a CUfunction, for
// the library and kernel calls (api_library.cpp) (untrusted side).
#pragma once

#include <cuda.h>

#include <cstddef>
#include <string>
#include <vector>

namespace agileos::client::cuda_shim {

// Each is CUDA_ERROR_INVALID_HANDLE for a handle that is not a live CUfunction.
bool isLiveFunction(CUfunction f);
CUresult functionModule(CUfunction f, CUmodule* module);
// The (mangled) name; the text stays valid until the function's module is unloaded.
CUresult functionName(CUfunction f, const char** name);
// Parameter `index`'s offset and size in the kernel's parameter buffer; CUDA_ERROR_INVALID_VALUE
// past the last parameter.
CUresult functionParameter(CUfunction f, std::size_t index, std::size_t* offset, std::size_t* size);

// A __managed__ variable of a live module (its managed memory, bound at the load):
// CUDA_ERROR_INVALID_HANDLE for a module that is not live, CUDA_ERROR_NOT_FOUND for a name that is
// not one of its managed variables.
CUresult moduleManagedVariable(CUmodule module, const char* name, CUdeviceptr* dptr, std::size_t* bytes);

// Loads a copied image (code_images.h) as a new module, with the relocatable objects a separately
// compiled image was linked from (empty for any other); the caller has checked the context.
CUresult loadModuleImage(CUmodule* module, std::string image, std::vector<std::string> relocatableObjects);

}  // namespace agileos::client::cuda_shim
