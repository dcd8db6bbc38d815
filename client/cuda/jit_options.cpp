#include "client/cuda/jit_options.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace agileos::client::cuda_shim {
namespace {

unsigned int asUnsigned(void* value) {
  return static_cast<unsigned int>(reinterpret_cast<std::uintptr_t>(value));
}

void writeLog(const JitOutputs& outputs, const JitLogBuffer& log, const char* message) {
  if (log.buffer == nullptr || log.capacity == 0 || outputs.optionValues == nullptr) return;
  const std::size_t length = std::min<std::size_t>(std::strlen(message), log.capacity - 1);
  std::memcpy(log.buffer, message, length);
  log.buffer[length] = '\0';
  if (log.sizeIndex >= 0)
    outputs.optionValues[log.sizeIndex] = reinterpret_cast<void*>(static_cast<std::uintptr_t>(length + 1));
}

}  // namespace

int jitOptionAsInteger(const CUjit_option& option) {
  int out = 0;
  static_assert(sizeof out == sizeof option);
  std::memcpy(&out, &option, sizeof out);
  return out;
}

CUresult checkJitOptions(unsigned int numOptions, CUjit_option* options, void** optionValues) {
  if (numOptions == 0) return CUDA_SUCCESS;
  if (options == nullptr || optionValues == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned int i = 0; i < numOptions; ++i) {
    const int option = jitOptionAsInteger(options[i]);
    if (option < 0 || option >= CU_JIT_NUM_OPTIONS) return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

JitOutputs readJitOutputs(unsigned int numOptions, CUjit_option* options, void** optionValues) {
  JitOutputs outputs;
  bool any = false;
  for (unsigned int i = 0; i < numOptions; ++i) {
    const int index = static_cast<int>(i);
    switch (jitOptionAsInteger(options[i])) {
      case CU_JIT_INFO_LOG_BUFFER:
        outputs.info.buffer = static_cast<char*>(optionValues[i]);
        break;
      case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES:
        outputs.info.capacity = asUnsigned(optionValues[i]);
        outputs.info.sizeIndex = index;
        any = true;
        break;
      case CU_JIT_ERROR_LOG_BUFFER:
        outputs.error.buffer = static_cast<char*>(optionValues[i]);
        break;
      case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
        outputs.error.capacity = asUnsigned(optionValues[i]);
        outputs.error.sizeIndex = index;
        any = true;
        break;
      case CU_JIT_WALL_TIME:
        outputs.wallTimeIndex = index;
        any = true;
        break;
      case CU_JIT_LOG_VERBOSE:
        outputs.verbose = asUnsigned(optionValues[i]) != 0;
        ++outputs.hints;  // the worker's own compile is not verbose; a link's logs are (cuLinkComplete)
        break;
      default:
        ++outputs.hints;
        break;
    }
  }
  if (any) outputs.optionValues = optionValues;
  return outputs;
}

void writeJitOutputs(const JitOutputs& outputs, const char* info, const char* error) {
  writeLog(outputs, outputs.info, info);
  writeLog(outputs, outputs.error, error);
  if (outputs.optionValues != nullptr && outputs.wallTimeIndex >= 0) {
    const float none = 0.0f;
    outputs.optionValues[outputs.wallTimeIndex] = nullptr;
    std::memcpy(&outputs.optionValues[outputs.wallTimeIndex], &none, sizeof none);
  }
}

}  // namespace agileos::client::cuda_shim
