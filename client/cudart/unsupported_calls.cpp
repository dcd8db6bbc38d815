#include "client/cudart/unsupported_calls.h"

#include <string>

#include "client/common/log.h"
#include "client/library_shim/unsupported.h"
#include "client/session/error_state.h"
#include "cudart_api.gen.h"

namespace agileos::client {

cudaError_t reportUnsupported(const char* symbol) {
  // A row of cudart_api.tsv that fails closed logs its own reason (cudart_api.gen.h). A part of
  // an implemented call that is not offered ("cudaMemcpy3D with a cudaArray") has no row.
  if (library_shim::findUnsupported(cudart_api::failClosedEntries(), symbol) != nullptr) {
    return recordError(static_cast<cudaError_t>(cudart_api::reportUnsupported(symbol)));
  }
  if (firstTime(std::string("unsupported part:") + symbol)) {
    AGILEOS_LOG_WARN(
        "%s is not supported by AgileOS (not offered to clients); returning cudaErrorNotSupported", symbol);
  }
  return recordError(cudaErrorNotSupported);
}

}  // namespace agileos::client
