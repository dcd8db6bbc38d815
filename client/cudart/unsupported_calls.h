// The runtime shim's report of a call it does not offer (untrusted side).
#pragma once

#include <cuda_runtime_api.h>

namespace agileos::client {

// For an exported symbol AgileOS does not implement, or a part of an implemented call it does not
// offer: logs once per symbol (naming it and saying why it fails closed), records and returns the
// row's code (cudaErrorNotSupported unless cudart_api.tsv says otherwise). The table's @reporter.
cudaError_t reportUnsupported(const char* symbol);

}  // namespace agileos::client
