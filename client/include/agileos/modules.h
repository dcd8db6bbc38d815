/* AgileOS extension of libagileos_cudart.so: control calls to the protected modules the daemon
   admitted for the calling process. Exported in the version node AGILEOS_1; a program that must
   also run on plain CUDA looks it up with dlsym(RTLD_DEFAULT, "agileosModuleControl") and finds
   none. */
#ifndef AGILEOS_MODULES_H
#define AGILEOS_MODULES_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Runs `command` of this process's instance of the protected module `module` (NUL-terminated)
   with the `requestBytes` bytes at `request` (may be NULL when requestBytes is 0). The module's
   response is copied to `response`, at most `responseCapacity` bytes (response may be NULL when
   responseCapacity is 0); its full size is stored in *responseBytes.

   Returns cudaSuccess when the module ran the command and its whole response fit.
   cudaErrorInvalidValue: a bad argument, no such module for this process, a command or request
   size the module does not accept, content the module refused, or a response larger than
   responseCapacity (the first responseCapacity bytes are copied, *responseBytes tells how many
   are needed). cudaErrorMemoryAllocation / cudaErrorUnknown: the module ran out of memory or
   failed. Other errors: the worker could not be reached.

   *status (if `status` is not NULL) is the module's own result: 0 on success, a negative
   AGILEOS_MODULE_E* code (agileos/module_abi.h) when the module's instance refused or failed the
   call, and 0 when the call never reached a module instance. responseBytes and status may be
   NULL. A refusal is not recorded as the thread's last CUDA error (cudaGetLastError). */
cudaError_t agileosModuleControl(const char* module, unsigned int command, const void* request,
                                 size_t requestBytes, void* response, size_t responseCapacity,
                                 size_t* responseBytes, int* status);

#ifdef __cplusplus
}
#endif

#endif /* AGILEOS_MODULES_H */
