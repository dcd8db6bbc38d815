// The JIT option lists of cuLinkCreate and cuModuleLoadDataEx (untrusted side): checked as the
// driver checks them, and their outputs (the info and error logs, the wall time) written back as
// the driver writes them. The compile itself is the worker's; its other options are hints.
#pragma once

#include <cuda.h>

namespace agileos::client::cuda_shim {

// One of the caller's log buffers (CU_JIT_INFO_LOG_BUFFER or CU_JIT_ERROR_LOG_BUFFER with its
// _SIZE_BYTES option).
struct JitLogBuffer {
  char* buffer = nullptr;
  unsigned int capacity = 0;
  int sizeIndex = -1;  // the _SIZE_BYTES option's slot in optionValues, written back
};

// Where a list's outputs go. optionValues is kept only when the list asked for outputs: the driver
// writes them back into the caller's array.
struct JitOutputs {
  void** optionValues = nullptr;
  JitLogBuffer info;
  JitLogBuffer error;
  int wallTimeIndex = -1;
  bool verbose = false;    // CU_JIT_LOG_VERBOSE with a non-zero value
  unsigned int hints = 0;  // options the worker's loader does not need (it compiles the code itself)
};

// CUDA_ERROR_INVALID_VALUE for options without arrays or with one the driver does not know.
CUresult checkJitOptions(unsigned int numOptions, CUjit_option* options, void** optionValues);
// Reads a checked list.
JitOutputs readJitOutputs(unsigned int numOptions, CUjit_option* options, void** optionValues);
// Writes as much of each log as fits, NUL-terminated, puts how much of each buffer was filled
// into its size option's slot (counted with the NUL, as the driver does), and no time spent.
void writeJitOutputs(const JitOutputs& outputs, const char* info, const char* error);

// Any bit pattern may come: read as an integer (loading an enum that holds no enumerator is
// undefined behaviour).
int jitOptionAsInteger(const CUjit_option& option);

}  // namespace agileos::client::cuda_shim
