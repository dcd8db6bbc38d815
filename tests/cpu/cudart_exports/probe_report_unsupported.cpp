// reportUnsupported for the scratch library cudart_stub_probe only: the shim's version logs and
// records the thread's last error (client/cudart/unsupported_calls.h); the probe only has to fail
// closed the same way, so the generated stubs can be exercised before the shim exists.
#include "client/cudart/unsupported_calls.h"

namespace agileos::client {

cudaError_t reportUnsupported(const char* /*symbol*/) { return cudaErrorNotSupported; }

}  // namespace agileos::client
