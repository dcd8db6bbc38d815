// libagileos_nvrtc.so: the `unsupported` rows of client/nvrtc/nvrtc_api.tsv. Each definition
// has the prototype of nvrtc.h (extern "C" functions cannot be overloaded, so a prototype that
// drifts from the toolkit's is a compile error), touches none of its arguments, and returns
// what the table says after logging the table's reason once (nvrtc_unsupported.gen.h,
// generated from the table).
#include <nvrtc.h>

#include "client/library_shim/library_call_client.h"
#include "nvrtc_unsupported.gen.h"

// Exported by libnvrtc.so.13 but declared by no header of CUDA 13.0. Its disassembly reads like
// an extended nvrtcCreateProgram (program out-pointer, source, name, headers and include names,
// then a count and two arrays of extra settings) returning an nvrtcResult. The definition reads
// no argument; with none declared and an int result it returns the same register whatever its
// callers pass (x86-64 SysV: arguments in registers and on the caller's stack, which the caller
// cleans up).
extern "C" nvrtcResult __nvrtcCPEx(void);

namespace {

nvrtcResult unsupported(const char* symbol) {
  return static_cast<nvrtcResult>(agileos::client::nvrtc_shim::reportUnsupported(symbol));
}

}  // namespace

// --- other outputs ---

AGILEOS_SHIM_EXPORT nvrtcResult nvrtcGetLTOIRSize(nvrtcProgram /*prog*/, size_t* /*LTOIRSizeRet*/) {
  return unsupported("nvrtcGetLTOIRSize");
}

AGILEOS_SHIM_EXPORT nvrtcResult nvrtcGetLTOIR(nvrtcProgram /*prog*/, char* /*LTOIR*/) {
  return unsupported("nvrtcGetLTOIR");
}

AGILEOS_SHIM_EXPORT nvrtcResult nvrtcGetOptiXIRSize(nvrtcProgram /*prog*/, size_t* /*optixirSizeRet*/) {
  return unsupported("nvrtcGetOptiXIRSize");
}

AGILEOS_SHIM_EXPORT nvrtcResult nvrtcGetOptiXIR(nvrtcProgram /*prog*/, char* /*optixir*/) {
  return unsupported("nvrtcGetOptiXIR");
}

// --- precompiled headers ---

AGILEOS_SHIM_EXPORT nvrtcResult nvrtcGetPCHHeapSize(size_t* /*ret*/) {
  return unsupported("nvrtcGetPCHHeapSize");
}

AGILEOS_SHIM_EXPORT nvrtcResult nvrtcSetPCHHeapSize(size_t /*size*/) {
  return unsupported("nvrtcSetPCHHeapSize");
}

AGILEOS_SHIM_EXPORT nvrtcResult nvrtcGetPCHCreateStatus(nvrtcProgram /*prog*/) {
  return unsupported("nvrtcGetPCHCreateStatus");
}

AGILEOS_SHIM_EXPORT nvrtcResult nvrtcGetPCHHeapSizeRequired(nvrtcProgram /*prog*/, size_t* /*size*/) {
  return unsupported("nvrtcGetPCHHeapSizeRequired");
}

// --- callbacks and undocumented entry points ---

AGILEOS_SHIM_EXPORT nvrtcResult nvrtcSetFlowCallback(nvrtcProgram /*prog*/,
                                                     int (* /*callback*/)(void*, void*), void* /*payload*/) {
  return unsupported("nvrtcSetFlowCallback");
}

AGILEOS_SHIM_EXPORT nvrtcResult __nvrtcCPEx(void) { return unsupported("__nvrtcCPEx"); }
