// cudaGetErrorName and cudaGetErrorString, answering exactly what the real libcudart answers
// for every code, unknown codes included: programs print these texts, and their output is
// compared with native runs. The texts are not written here: error_api.cmake generates
// error_strings.gen.inc at build time from the build host's libcudart
// (client/cudart/tools/dump_error_strings.cpp), so they follow the toolkit they are built with.
//
// Both functions are pure lookups in constant data: no GPU, no daemon, no error state (like
// the real ones, they do not set the last error), safe from any thread, and the returned
// pointers are static strings.
//
// Compiled with AGILEOS_ERROR_API_PREFIX=<prefix>, the two functions are named
// <prefix>cudaGetErrorName / <prefix>cudaGetErrorString instead, so that a test can hold them
// and the real libcudart's side by side in one process.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <iterator>

namespace agileos::client {
namespace {

struct ErrorText {
  unsigned code;
  const char* name;
  const char* description;
};

#include "error_strings.gen.inc"

static_assert(kErrorTableRuntimeVersion / 1000 == CUDART_VERSION / 1000,
              "error_strings.gen.inc comes from a libcudart of another major version than the headers");

constexpr bool byCode(const ErrorText& entry, unsigned code) { return entry.code < code; }

constexpr bool ascendingAndUnique() {
  for (std::size_t i = 1; i < std::size(kErrorTexts); ++i) {
    if (kErrorTexts[i - 1].code >= kErrorTexts[i].code) return false;
  }
  return true;
}
static_assert(ascendingAndUnique(), "the binary search needs the table in ascending code order");

// The entry for `error`, or nullptr for a code libcudart does not know.
const ErrorText* findErrorText(cudaError_t error) {
  const auto code = static_cast<unsigned>(error);
  const ErrorText* entry = std::lower_bound(std::begin(kErrorTexts), std::end(kErrorTexts), code, byCode);
  return entry != std::end(kErrorTexts) && entry->code == code ? entry : nullptr;
}

}  // namespace
}  // namespace agileos::client

#ifdef AGILEOS_ERROR_API_PREFIX
#define AGILEOS_ERROR_API_CONCAT_(prefix, name) prefix##name
#define AGILEOS_ERROR_API_CONCAT(prefix, name) AGILEOS_ERROR_API_CONCAT_(prefix, name)
#define AGILEOS_ERROR_API_SYMBOL(name) AGILEOS_ERROR_API_CONCAT(AGILEOS_ERROR_API_PREFIX, name)
#else
#define AGILEOS_ERROR_API_SYMBOL(name) name
#endif

// Default visibility, as AGILEOS_CUDART_EXPORT gives the shim's other entry points: the shim's
// version script decides what is exported.
extern "C" __attribute__((visibility("default"))) const char* AGILEOS_ERROR_API_SYMBOL(cudaGetErrorName)(
    cudaError_t error) {
  const agileos::client::ErrorText* entry = agileos::client::findErrorText(error);
  return entry != nullptr ? entry->name : agileos::client::kUnknownErrorName;
}

extern "C" __attribute__((visibility("default"))) const char* AGILEOS_ERROR_API_SYMBOL(cudaGetErrorString)(
    cudaError_t error) {
  const agileos::client::ErrorText* entry = agileos::client::findErrorText(error);
  return entry != nullptr ? entry->description : agileos::client::kUnknownErrorString;
}
