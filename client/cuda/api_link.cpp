// The JIT linker (cuLinkCreate, cuLinkAddData, cuLinkAddFile, cuLinkComplete, cuLinkDestroy:
// libcuda.so.1 exports; untrusted side).
//
// This side has no linker, and no code is compiled or loaded here: the worker's loader is the one
// place code is loaded, through its kernel memory guard. So a link of exactly one input is the
// identity: cuLinkComplete hands back the state's own copy of that input, which the program then
// passes to cuModuleLoadData, cuModuleLoadDataEx or cuLibraryLoadData, and those send it to the
// worker like any image (PTX is compiled there, as relocatable code, and guarded; an image of SASS
// only loads where the worker allows it). For one self-contained input that is what the driver's
// link would give: the same kernels, compiled for this GPU. An input whose relocatable code needs
// another (an extern function) fails when it is loaded instead of at cuLinkComplete.
//
// Several inputs are never concatenated or linked here: cuLinkComplete fails closed with
// CUDA_ERROR_NOT_SUPPORTED, as do the inputs only a real linker could use (an object, a library,
// LTO IR).
//
// A CUlinkState is the address of a record here, looked up among the live ones before use: a
// forged or destroyed state is CUDA_ERROR_INVALID_HANDLE and is never dereferenced.
#include <cuda.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "client/common/log.h"
#include "client/cuda/driver_call.h"
#include "client/cuda/jit_options.h"
#include "client/session/code_images.h"
#include "client/session/own_memory.h"
#include "cuda_api.gen.h"  // checks every definition against cuda.h's declaration

using namespace agileos::client;
using namespace agileos::client::cuda_shim;

namespace {

struct LinkState {
  // cuLinkCreate's outputs (logs, the wall time): the driver writes those back into the caller's
  // option array, which must live as long as the state.
  JitOutputs outputs;
  // Each input's own copy; the strings never move, so cuLinkComplete's pointer stays valid until
  // cuLinkDestroy.
  std::vector<std::unique_ptr<std::string>> inputs;
  bool firstInputIsPtx = false;
};

// Never destroyed: a program may destroy its link states from an exit handler.
auto& gMutex = *new std::mutex();
auto& gStates = *new std::map<const void*, std::unique_ptr<LinkState>>();  // by CUlinkState

// The live state behind `handle`, or null; the caller holds gMutex.
LinkState* findLocked(CUlinkState handle) {
  auto it = gStates.find(handle);
  return it == gStates.end() ? nullptr : it->second.get();
}

template <typename Enum>
int asInteger(const Enum& value) {
  int out = 0;
  static_assert(sizeof out == sizeof value);
  std::memcpy(&out, &value, sizeof out);
  return out;
}

void writeOutputs(const LinkState& state, const char* info, const char* error) {
  writeJitOutputs(state.outputs, info, error);
}

// The checks every input takes: the state, its type, the options. Types only a real linker could
// use fail closed, said once per type.
CUresult checkInput(CUlinkState handle, int type, unsigned int numOptions, CUjit_option* options,
                    void** optionValues) {
  {
    std::lock_guard lock(gMutex);
    if (findLocked(handle) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  }
  // Per-input options are compiler hints the worker's loader does not need; they are checked and
  // ignored.
  if (CUresult result = checkJitOptions(numOptions, options, optionValues); result != CUDA_SUCCESS)
    return result;
  switch (const int kind = type) {
    case CU_JIT_INPUT_PTX:
    case CU_JIT_INPUT_CUBIN:
    case CU_JIT_INPUT_FATBINARY:
      return CUDA_SUCCESS;
    case CU_JIT_INPUT_OBJECT:
    case CU_JIT_INPUT_LIBRARY:
    case CU_JIT_INPUT_NVVM:
      if (firstTime("cuLinkAddData:type:" + std::to_string(kind))) {
        AGILEOS_LOG_WARN(
            "cuLinkAddData: input type %d (an object, a library or LTO IR) needs a linker, "
            "which AgileOS does not have; returning CUDA_ERROR_NOT_SUPPORTED",
            kind);
      }
      {
        std::lock_guard lock(gMutex);
        if (const LinkState* state = findLocked(handle); state != nullptr)
          writeOutputs(*state, "", "AgileOS: objects, libraries and LTO IR cannot be linked");
      }
      return CUDA_ERROR_NOT_SUPPORTED;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

// Adds a checked input. PTX is text the loader reads to its NUL: one is added when the input
// has none.
CUresult addInput(CUlinkState handle, int type, std::string bytes) {
  if (type == CU_JIT_INPUT_PTX && bytes.find('\0') == std::string::npos) bytes.push_back('\0');
  std::lock_guard lock(gMutex);
  LinkState* state = findLocked(handle);
  if (state == nullptr) return CUDA_ERROR_INVALID_HANDLE;  // destroyed meanwhile
  if (state->inputs.empty()) state->firstInputIsPtx = type == CU_JIT_INPUT_PTX;
  state->inputs.push_back(std::make_unique<std::string>(std::move(bytes)));
  return CUDA_SUCCESS;
}

CUresult linkCreate(unsigned int numOptions, CUjit_option* options, void** optionValues,
                    CUlinkState* stateOut) {
  if (stateOut == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult result = checkJitOptions(numOptions, options, optionValues); result != CUDA_SUCCESS)
    return result;
  if (CUresult result = enterContext(); result != CUDA_SUCCESS) return result;
  auto state = std::make_unique<LinkState>();
  state->outputs = readJitOutputs(numOptions, options, optionValues);
  std::lock_guard lock(gMutex);
  *stateOut = reinterpret_cast<CUlinkState>(state.get());
  gStates.emplace(state.get(), std::move(state));
  return CUDA_SUCCESS;
}

CUresult linkAddData(CUlinkState handle, int type, void* data, size_t size, const char* /*name*/,
                     unsigned int numOptions, CUjit_option* options, void** optionValues) {
  if (CUresult result = checkInput(handle, type, numOptions, options, optionValues); result != CUDA_SUCCESS)
    return result;
  if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::string bytes;
  if (size == 0 && type == CU_JIT_INPUT_PTX) {
    // PTX sized by its NUL, read without faulting.
    if (cudaError_t error = copyCodeImage(data, &bytes); error != cudaSuccess) return toDriverResult(error);
  } else {
    if (size == 0 || size > kMaxCodeImageBytes) return CUDA_ERROR_INVALID_VALUE;
    bytes.assign(size, '\0');
    if (!readOwnMemory(data, bytes.data(), size)) return CUDA_ERROR_INVALID_VALUE;
  }
  return addInput(handle, type, std::move(bytes));
}

CUresult linkAddFile(CUlinkState handle, int type, const char* path, unsigned int numOptions,
                     CUjit_option* options, void** optionValues) {
  if (CUresult result = checkInput(handle, type, numOptions, options, optionValues); result != CUDA_SUCCESS)
    return result;
  if (path == nullptr) return CUDA_ERROR_INVALID_VALUE;
  // The program's own file, read on its side as cuModuleLoad reads one.
  std::string bytes;
  if (cudaError_t error = readCodeImageFile(path, &bytes); error != cudaSuccess) return toDriverResult(error);
  return addInput(handle, type, std::move(bytes));
}

}  // namespace

extern "C" {

CUresult cuLinkCreate(unsigned int numOptions, CUjit_option* options, void** optionValues,
                      CUlinkState* stateOut) {
  return linkCreate(numOptions, options, optionValues, stateOut);
}
CUresult cuLinkCreate_v2(unsigned int numOptions, CUjit_option* options, void** optionValues,
                         CUlinkState* stateOut) {
  return linkCreate(numOptions, options, optionValues, stateOut);
}

CUresult cuLinkAddData(CUlinkState state, CUjitInputType type, void* data, size_t size, const char* name,
                       unsigned int numOptions, CUjit_option* options, void** optionValues) {
  return linkAddData(state, asInteger(type), data, size, name, numOptions, options, optionValues);
}
CUresult cuLinkAddData_v2(CUlinkState state, CUjitInputType type, void* data, size_t size, const char* name,
                          unsigned int numOptions, CUjit_option* options, void** optionValues) {
  return linkAddData(state, asInteger(type), data, size, name, numOptions, options, optionValues);
}

CUresult cuLinkAddFile(CUlinkState state, CUjitInputType type, const char* path, unsigned int numOptions,
                       CUjit_option* options, void** optionValues) {
  return linkAddFile(state, asInteger(type), path, numOptions, options, optionValues);
}
CUresult cuLinkAddFile_v2(CUlinkState state, CUjitInputType type, const char* path, unsigned int numOptions,
                          CUjit_option* options, void** optionValues) {
  return linkAddFile(state, asInteger(type), path, numOptions, options, optionValues);
}

// One input: its own copy, owned by the state until cuLinkDestroy (see the top of this file).
// None: CUDA_ERROR_INVALID_VALUE (cuda.h names no code for an empty link; this one was not
// checked against a real driver). Several: not linked here.
CUresult cuLinkComplete(CUlinkState handle, void** cubinOut, size_t* sizeOut) {
  std::unique_lock lock(gMutex);
  LinkState* state = findLocked(handle);
  if (state == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (cubinOut == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (state->inputs.empty()) {
    writeOutputs(*state, "", "AgileOS: nothing to link (no input was added)");
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (state->inputs.size() > 1) {
    if (firstTime("cuLinkComplete:several inputs")) {
      AGILEOS_LOG_WARN(
          "cuLinkComplete: linking several images is not supported by AgileOS (only one input "
          "is passed through to the worker's loader); returning CUDA_ERROR_NOT_SUPPORTED");
    }
    writeOutputs(*state, "", "AgileOS: linking several images is not supported");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  if (state->outputs.hints != 0)
    AGILEOS_LOG_DEBUG("cuLinkComplete: %u JIT option(s) left to the worker's loader", state->outputs.hints);
  // The image never moves until cuLinkDestroy; the outputs are the caller's buffers.
  const std::string& image = *state->inputs.front();
  const JitOutputs outputs = state->outputs;
  const bool wantsLog = state->firstInputIsPtx && outputs.info.buffer != nullptr && outputs.info.capacity > 0;
  // The logs: the code is compiled (and guarded) when the program loads it, in the worker. A program
  // that asked for the info log of a PTX input (cuda-samples' ptxjit prints it) gets the one the
  // worker's JIT gives for that PTX (code_images.h: jitLogsOf), asked for without the lock (a round
  // trip and a compile); any other gets a quiet JIT's.
  lock.unlock();
  std::string info, error;
  if (wantsLog) jitLogsOf(image, outputs.verbose, &info, &error);
  writeJitOutputs(outputs, info.c_str(), error.c_str());
  *cubinOut = const_cast<char*>(image.data());
  if (sizeOut != nullptr) *sizeOut = image.size();
  return CUDA_SUCCESS;
}

CUresult cuLinkDestroy(CUlinkState handle) {
  std::unique_ptr<LinkState> state;
  {
    std::lock_guard lock(gMutex);
    auto it = gStates.find(handle);
    if (it == gStates.end()) return CUDA_ERROR_INVALID_HANDLE;
    state = std::move(it->second);
    gStates.erase(it);
  }
  return CUDA_SUCCESS;
}

}  // extern "C"
