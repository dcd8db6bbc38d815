// Registration entry points that nvcc-generated code calls from static
// constructors (cudart exports), and the few other exports with special
// semantics that fail closed by hand.
#include <cuda_runtime_api.h>

#include "client/common/log.h"
#include "client/cudart/unsupported_calls.h"
#include "client/session/error_state.h"
#include "client/session/module_registry.h"
#include "client/session/thread_contexts.h"
#include "cudart_api.gen.h"  // checks the _ptsz/_ptds and __cuda* definitions

using namespace agileos::client;

extern "C" {

void** __cudaRegisterFatBinary(void* fatCubin) { return ModuleRegistry::instance().registerFatbin(fatCubin); }

void __cudaRegisterFatBinaryEnd(void**) {
  // Nothing to do: modules are sent to the worker on first use (lazy loading).
}

void __cudaUnregisterFatBinary(void** fatCubinHandle) {
  ModuleRegistry::instance().unregister(fatCubinHandle);
}

void __cudaRegisterFunction(void** fatCubinHandle, const char* hostFun, char*, const char* deviceName, int,
                            uint3*, uint3*, dim3*, dim3*, int*) {
  ModuleRegistry::instance().registerFunction(fatCubinHandle, hostFun, deviceName);
}

void __cudaRegisterVar(void** fatCubinHandle, char* hostVar, char*, const char* deviceName, int, size_t, int,
                       int) {
  ModuleRegistry::instance().registerVariable(fatCubinHandle, hostVar, deviceName);
}

// A __managed__ variable: `hostVarPtrAddress` is the program's pointer through which every host
// access goes; it is set when the module loads (client/session/module_registry.h).
void __cudaRegisterManagedVar(void** fatCubinHandle, void** hostVarPtrAddress, char*, const char* deviceName,
                              int, size_t size, int, int) {
  ModuleRegistry::instance().registerManagedVariable(fatCubinHandle, hostVarPtrAddress, deviceName, size);
}

void __cudaRegisterHostVar(void**, const char* deviceName, char*, size_t) {
  AGILEOS_LOG_ERROR("host variable %s: not supported by AgileOS", deviceName != nullptr ? deviceName : "?");
  reportUnsupported("__cudaRegisterHostVar");
}

// Called by the program's first host access to a managed variable of the module (nvcc's
// __nv_init_managed_rt): loads the module, which sets the variables' pointers. 0 on failure, as
// the runtime answers; the program's pointer then stays null.
char __cudaInitModule(void** fatCubinHandle) {
  bindPrimaryContextIfNoneCurrent();
  return ModuleRegistry::instance().initModule(fatCubinHandle) ? 1 : 0;
}

cudaError_t cudaGetExportTable(const void** ppExportTable, const cudaUUID_t*) {
  if (ppExportTable != nullptr) *ppExportTable = nullptr;
  return reportUnsupported("cudaGetExportTable");
}

struct cudaChannelFormatDesc cudaCreateChannelDesc(int x, int y, int z, int w, enum cudaChannelFormatKind f) {
  return {x, y, z, w, f};
}

}  // extern "C"
