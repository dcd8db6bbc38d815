// The compilation agileos-nvrtc-compiler runs, inside its jail (jail.h), on a request the
// adapter's source policy has already accepted.
#pragma once

#include "worker/adapters/nvrtc/nvrtc_wire.h"

namespace agileos::adapters::nvrtc {

// Runs NVRTC on `request`. When the options name a real architecture, also fills
// substitutePtx: NVRTC's own PTX, else that of a second compilation for the matching virtual
// architecture (the PTX the guard compiles when the client loads the CUBIN).
CompileResult compileRequest(const CompileRequest& request);

}  // namespace agileos::adapters::nvrtc
