// Error names and strings (libcuda.so.1 exports): the enumerators' names from cuda.h
// (driver_result_codes.inc), and the texts the real driver gives, dumped from it on a machine
// with a GPU (tools/dump_driver_error_strings.cpp writes driver_error_strings.inc).
#include <cuda.h>

#include "client/cuda/driver_result.h"
#include "cuda_api.gen.h"  // checks every definition against cuda.h's declaration

using namespace agileos::client;
using namespace agileos::client::cuda_shim;

namespace {

const char* driverResultText(CUresult result) {
  switch (result) {
#define AGILEOS_DRIVER_ERROR_STRING(name, text) \
  case name:                                    \
    return text;
#include "client/cuda/driver_error_strings.inc"
#undef AGILEOS_DRIVER_ERROR_STRING
    default:
      return nullptr;
  }
}

}  // namespace

extern "C" {

// As the driver: an unknown value is CUDA_ERROR_INVALID_VALUE and *pStr is set to null.
CUresult cuGetErrorName(CUresult error, const char** pStr) {
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pStr = driverResultName(error);
  return *pStr != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult error, const char** pStr) {
  if (pStr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pStr = driverResultText(error);
  return *pStr != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

}  // extern "C"
