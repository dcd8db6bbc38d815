// libagileos_cufft.so: the `unsupported` rows of client/cufft/cufft_api.tsv. Each definition
// has the prototype of cufft.h / cufftXt.h (extern "C" functions cannot be overloaded, so a
// prototype that drifts from the toolkit's is a compile error), touches none of its arguments,
// and returns what the table says after logging the table's reason once
// (cufft_unsupported.gen.h, generated from the table).
#include <cufft.h>
#include <cufftXt.h>

#include "client/library_shim/library_call_client.h"
#include "cufft_unsupported.gen.h"

// Exported by libcufft.so.12 but declared by no header of CUDA 13.0.
extern "C" {
// Its body in libcufft.so.12 is `xor eax, eax; ret`: no argument read, CUFFT_SUCCESS returned.
cufftResult cufftDebug(void);
// Undocumented. The definition reads no argument; with none declared and an int result it returns
// the same register whatever its callers pass (x86-64 SysV: arguments in registers and on the
// caller's stack, which the caller cleans up).
cufftResult cufftXtMakePlanGuru64(void);
}

namespace {

cufftResult unsupported(const char* symbol) {
  return static_cast<cufftResult>(agileos::client::cufft_shim::reportUnsupported(symbol));
}

}  // namespace

// --- callbacks: client device code would run inside the trusted library's kernels ---

AGILEOS_SHIM_EXPORT cufftResult cufftXtSetCallback(cufftHandle /*plan*/, void** /*callback_routine*/,
                                                   cufftXtCallbackType /*cbType*/, void** /*caller_info*/) {
  return unsupported("cufftXtSetCallback");
}

AGILEOS_SHIM_EXPORT cufftResult cufftXtSetJITCallback(cufftHandle /*plan*/,
                                                      const char* /*lto_callback_symbol_name*/,
                                                      const void* /*lto_callback_fatbin*/,
                                                      size_t /*lto_callback_fatbin_size*/,
                                                      cufftXtCallbackType /*type*/, void** /*caller_info*/) {
  return unsupported("cufftXtSetJITCallback");
}

AGILEOS_SHIM_EXPORT cufftResult cufftXtClearCallback(cufftHandle /*plan*/, cufftXtCallbackType /*cbType*/) {
  return unsupported("cufftXtClearCallback");
}

AGILEOS_SHIM_EXPORT cufftResult cufftXtSetCallbackSharedSize(cufftHandle /*plan*/,
                                                             cufftXtCallbackType /*cbType*/,
                                                             size_t /*sharedSize*/) {
  return unsupported("cufftXtSetCallbackSharedSize");
}

// --- multi-GPU descriptors and memory ---

AGILEOS_SHIM_EXPORT cufftResult cufftXtSetGPUs(cufftHandle /*handle*/, int /*nGPUs*/, int* /*whichGPUs*/) {
  return unsupported("cufftXtSetGPUs");
}

AGILEOS_SHIM_EXPORT cufftResult cufftXtMalloc(cufftHandle /*plan*/, cudaLibXtDesc** /*descriptor*/,
                                              cufftXtSubFormat /*format*/) {
  return unsupported("cufftXtMalloc");
}

AGILEOS_SHIM_EXPORT cufftResult cufftXtFree(cudaLibXtDesc* /*descriptor*/) {
  return unsupported("cufftXtFree");
}

AGILEOS_SHIM_EXPORT cufftResult cufftXtMemcpy(cufftHandle /*plan*/, void* /*dstPointer*/,
                                              void* /*srcPointer*/, cufftXtCopyType /*type*/) {
  return unsupported("cufftXtMemcpy");
}

AGILEOS_SHIM_EXPORT cufftResult cufftXtExecDescriptor(cufftHandle /*plan*/, cudaLibXtDesc* /*input*/,
                                                      cudaLibXtDesc* /*output*/, int /*direction*/) {
  return unsupported("cufftXtExecDescriptor");
}

AGILEOS_SHIM_EXPORT cufftResult cufftXtExecDescriptorC2C(cufftHandle /*plan*/, cudaLibXtDesc* /*input*/,
                                                         cudaLibXtDesc* /*output*/, int /*direction*/) {
  return unsupported("cufftXtExecDescriptorC2C");
}

AGILEOS_SHIM_EXPORT cufftResult cufftXtExecDescriptorR2C(cufftHandle /*plan*/, cudaLibXtDesc* /*input*/,
                                                         cudaLibXtDesc* /*output*/) {
  return unsupported("cufftXtExecDescriptorR2C");
}

AGILEOS_SHIM_EXPORT cufftResult cufftXtExecDescriptorC2R(cufftHandle /*plan*/, cudaLibXtDesc* /*input*/,
                                                         cudaLibXtDesc* /*output*/) {
  return unsupported("cufftXtExecDescriptorC2R");
}

AGILEOS_SHIM_EXPORT cufftResult cufftXtExecDescriptorZ2Z(cufftHandle /*plan*/, cudaLibXtDesc* /*input*/,
                                                         cudaLibXtDesc* /*output*/, int /*direction*/) {
  return unsupported("cufftXtExecDescriptorZ2Z");
}

AGILEOS_SHIM_EXPORT cufftResult cufftXtExecDescriptorD2Z(cufftHandle /*plan*/, cudaLibXtDesc* /*input*/,
                                                         cudaLibXtDesc* /*output*/) {
  return unsupported("cufftXtExecDescriptorD2Z");
}

AGILEOS_SHIM_EXPORT cufftResult cufftXtExecDescriptorZ2D(cufftHandle /*plan*/, cudaLibXtDesc* /*input*/,
                                                         cudaLibXtDesc* /*output*/) {
  return unsupported("cufftXtExecDescriptorZ2D");
}

AGILEOS_SHIM_EXPORT cufftResult cufftXtQueryPlan(cufftHandle /*plan*/, void* /*queryStruct*/,
                                                 cufftXtQueryType /*queryType*/) {
  return unsupported("cufftXtQueryPlan");
}

// --- typed plans, execution and work areas: not forwarded yet ---

AGILEOS_SHIM_EXPORT cufftResult cufftXtMakePlanMany(cufftHandle /*plan*/, int /*rank*/, long long int* /*n*/,
                                                    long long int* /*inembed*/, long long int /*istride*/,
                                                    long long int /*idist*/, cudaDataType /*inputtype*/,
                                                    long long int* /*onembed*/, long long int /*ostride*/,
                                                    long long int /*odist*/, cudaDataType /*outputtype*/,
                                                    long long int /*batch*/, size_t* /*workSize*/,
                                                    cudaDataType /*executiontype*/) {
  return unsupported("cufftXtMakePlanMany");
}

AGILEOS_SHIM_EXPORT cufftResult cufftXtMakePlanGuru64(void) { return unsupported("cufftXtMakePlanGuru64"); }

AGILEOS_SHIM_EXPORT cufftResult cufftXtGetSizeMany(cufftHandle /*plan*/, int /*rank*/, long long int* /*n*/,
                                                   long long int* /*inembed*/, long long int /*istride*/,
                                                   long long int /*idist*/, cudaDataType /*inputtype*/,
                                                   long long int* /*onembed*/, long long int /*ostride*/,
                                                   long long int /*odist*/, cudaDataType /*outputtype*/,
                                                   long long int /*batch*/, size_t* /*workSize*/,
                                                   cudaDataType /*executiontype*/) {
  return unsupported("cufftXtGetSizeMany");
}

AGILEOS_SHIM_EXPORT cufftResult cufftXtExec(cufftHandle /*plan*/, void* /*input*/, void* /*output*/,
                                            int /*direction*/) {
  return unsupported("cufftXtExec");
}

AGILEOS_SHIM_EXPORT cufftResult cufftXtSetWorkArea(cufftHandle /*plan*/, void** /*workArea*/) {
  return unsupported("cufftXtSetWorkArea");
}

AGILEOS_SHIM_EXPORT cufftResult cufftXtSetWorkAreaPolicy(cufftHandle /*plan*/,
                                                         cufftXtWorkAreaPolicy /*policy*/,
                                                         size_t* /*workSize*/) {
  return unsupported("cufftXtSetWorkAreaPolicy");
}

// --- undocumented ---

AGILEOS_SHIM_EXPORT cufftResult cufftDebug(void) { return unsupported("cufftDebug"); }
