/*
 * For a protected module's DEVICE code (compiled with nvcc -rdc=true -ptx, linked into user
 * kernels by the worker).
 *
 * Module code is trusted and runs unguarded: the kernel memory guard leaves its accesses alone,
 * so that it can reach the module's state in protected memory. Its INPUTS are not trusted: every
 * pointer a user kernel passes must be checked with agileos_user_range_ok before the module code
 * reads or writes through it, or the module would do for the user what the guard forbids.
 *
 * Per-client values (the address of the client's instance state, sizes) come from the plugin
 * through publish_device_constant(name, value) and are read with
 *   extern "C" __device__ unsigned long long __agileos_<module>_const_<name>(void);
 * which the worker defines when it links the code (a missing constant refuses the module).
 *
 * Naming (checked by the worker): functions for applications are agileos_<module>_*, functions
 * for other modules __agileos_<module>_*; helpers must be `static` (the worker renames them).
 * No global variables (they would live in memory the user can write).
 */
#ifndef AGILEOS_MODULE_DEVICE_H
#define AGILEOS_MODULE_DEVICE_H

#include "agileos/module_abi.h"
#include "agileos/module_public.h"

/* The protected ranges as the guard fences them (memmgr/address_layout.h): from the guard zone
 * below the I/O aperture to the end of the protected module range. */
#define AGILEOS_PROTECTED_BEGIN 0xEFF00000000ull
#define AGILEOS_PROTECTED_END 0xF8000000000ull

#ifdef __CUDACC__
/* Whether a user kernel's range [p, p + n) may be accessed for it: not null, no wrap-around and no
 * byte in the protected ranges. */
static __device__ __forceinline__ bool agileos_user_range_ok(unsigned long long p, unsigned long long n) {
  if (p == 0 || n > ~0ull - p) return false;
  return p + n <= AGILEOS_PROTECTED_BEGIN || p >= AGILEOS_PROTECTED_END;
}
#endif

#endif /* AGILEOS_MODULE_DEVICE_H */
