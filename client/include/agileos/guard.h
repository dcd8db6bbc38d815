/* AgileOS extensions of libagileos_cudart.so: the kernel memory guard as it applies to the
   calling process. Exported in the version node AGILEOS_1; a program that must also run on
   plain CUDA looks them up with dlsym(RTLD_DEFAULT, "agileosGuardStatus") and finds none. */
#ifndef AGILEOS_GUARD_H
#define AGILEOS_GUARD_H

#include <cuda_runtime_api.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The guard policy of this client ("off", "trap", "poison", "sink", "remap_or", "report";
   NUL-terminated, truncated to policyBytes), how many accesses of its kernels the guard has
   counted (every policy but trap counts), and whether a protected test canary is intact
   (1), damaged (0) or absent (-1: the worker was not started with --test-guard-canary).
   Any pointer may be NULL. Works after the client is poisoned. */
cudaError_t agileosGuardStatus(int* canaryIntact, unsigned long long* hits, char* policy, size_t policyBytes);

/* Test hook of the escape suite: the address and size of a protected page the worker
   filled with the byte 0xA5. cudaErrorNotSupported unless the worker was started with
   --test-guard-canary. */
cudaError_t agileosGuardCanary(unsigned long long* address, unsigned long long* bytes);

#ifdef __cplusplus
}
#endif

#endif /* AGILEOS_GUARD_H */
