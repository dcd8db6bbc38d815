/*
 * For a protected module's PUBLIC header: the placeholders of its device functions.
 *
 * An application calls a module's device functions through placeholders that its public header
 * defines. When the worker loads the application's PTX for a client that was admitted with the
 * module, it replaces each placeholder's body with the module's trusted implementation
 * (ptx/module_link.h); for any other client the placeholder runs and returns
 * AGILEOS_MODULE_ENOSYS, so a program can tell that the module is not there.
 *
 * Rules for a module's public header (docs/module-authors-guide.md):
 *  - every device function is `extern "C" __device__ __noinline__`, named
 *    agileos_<module>_<function>, returns int or long long (0 / a count, or a negative
 *    AGILEOS_MODULE_E* code), and takes scalars and pointers only;
 *  - its body is AGILEOS_MODULE_PLACEHOLDER(int) (or long long);
 *  - the header lists every placeholder in AGILEOS_MODULE_PLACEHOLDER_TABLE: taking their
 *    addresses keeps nvcc from changing a placeholder's signature (dropping an unused return
 *    value, or folding a constant argument into it), so the PTX signature is the declared one.
 * The application needs nothing else: no flags, no relocatable device code.
 */
#ifndef AGILEOS_MODULE_PUBLIC_H
#define AGILEOS_MODULE_PUBLIC_H

#define AGILEOS_MODULE_ENOSYS (-38) /* the module is not linked into this client's code */

#ifdef __CUDACC__
/* The body of a placeholder returning `type` (int or long long). The asm is opaque to the
 * compiler, so it cannot assume anything about the result. */
#define AGILEOS_MODULE_PLACEHOLDER(type)                          \
  {                                                               \
    long long agileos_placeholder_result;                         \
    asm volatile("mov.b64 %0, -38; // agileos module placeholder" \
                 : "=l"(agileos_placeholder_result)               \
                 :                                                \
                 : "memory");                                     \
    return (type)agileos_placeholder_result;                      \
  }

/* static __device__ table of the placeholders' addresses (see above), used as a statement
 * (AGILEOS_MODULE_PLACEHOLDER_TABLE(...);); `name` is unique per module. */
#define AGILEOS_MODULE_PLACEHOLDER_TABLE(name, ...) \
  static __device__ __attribute__((used)) void* const name[] = {__VA_ARGS__}
#endif

#endif /* AGILEOS_MODULE_PUBLIC_H */
