/* A developer's tool (x86-64 Linux), never part of a client: a libcuda.so.1 that stands in front
 * of the driver shim and prints every driver call a program makes through cuGetProcAddress (the
 * only way a CUDA runtime linked into the program, or carried by a math library, reaches the
 * driver), with its first four integer arguments, and every private table it asks for. It is how
 * the static runtime's and cuBLAS's call sequences were found (issue 16).
 *
 *   mkdir -p /tmp/trace && cp libagileos_trace_driver_calls.so /tmp/trace/libcuda.so.1
 *   AGILEOS_TRACE_DRIVER=/path/to/libagileos_cuda.so LD_LIBRARY_PATH=/tmp/trace:<shim dir> program
 *   AGILEOS_TRACE_QUIET=cuDeviceGetAttribute,cuLibraryLoadData  (names not to print)
 *
 * Caveat: the trampolines are not in libcuda's own code, and cuBLASLt notices: under the tracer
 * cublasCreate fails (CUBLAS_STATUS_INTERNAL_ERROR) where without it it succeeds. Trust the trace
 * up to the first difference from an untraced run.
 *
 * Each function the shim hands out is replaced by a trampoline that saves the argument registers,
 * prints, restores them and jumps to the shim's function, so the stack (and any arguments on it)
 * is the caller's, untouched. Floating-point argument registers are not saved: no driver function
 * takes a float by value. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kMaxTraced = 1024 };

static void* gDriver;
static const char* gNames[kMaxTraced];
static void* gTargets[kMaxTraced];
static int gTraced;

static void* driverSymbol(const char* name) {
  if (gDriver == NULL) {
    const char* path = getenv("AGILEOS_TRACE_DRIVER");
    gDriver = path != NULL ? dlopen(path, RTLD_NOW | RTLD_GLOBAL) : NULL;
    if (gDriver == NULL) {
      fprintf(stderr, "trace_driver_calls: set AGILEOS_TRACE_DRIVER to the driver shim (%s)\n", dlerror());
      exit(3);
    }
  }
  return dlsym(gDriver, name);
}

/* Called by the trampolines with the function's index and the saved registers
 * (rax, r9, r8, rcx, rdx, rsi, rdi from the top of the stack down); returns where to jump. */
void* agileos_trace_call(int index, const unsigned long* saved) {
  const char* quiet = getenv("AGILEOS_TRACE_QUIET");
  if (quiet == NULL || strstr(quiet, gNames[index]) == NULL) {
    fprintf(stderr, "[driver] %s(%#lx, %#lx, %#lx, %#lx)\n", gNames[index], saved[6], saved[5], saved[4],
            saved[3]);
  }
  return gTargets[index];
}

/* Each trampoline is `call agileos_trace_entry` and three bytes of padding (8 bytes); the entry
 * takes its own return address off the stack (so the stack is the caller's again), finds the
 * trampoline's index from it, saves the argument registers and asks agileos_trace_call where to
 * jump. */
__asm__(
    ".text\n"
    "agileos_trace_entry:\n"
    " pop %r11\n"
    " lea agileos_trace_trampolines+5(%rip), %r10\n"
    " sub %r10, %r11\n"
    " shr $3, %r11\n"
    " push %rdi\n push %rsi\n push %rdx\n push %rcx\n push %r8\n push %r9\n push %rax\n"
    " mov %r11d, %edi\n mov %rsp, %rsi\n call agileos_trace_call\n mov %rax, %r11\n"
    " pop %rax\n pop %r9\n pop %r8\n pop %rcx\n pop %rdx\n pop %rsi\n pop %rdi\n"
    " jmp *%r11\n"
    ".balign 16\n"
    "agileos_trace_trampolines:\n"
    " .rept 1024\n call agileos_trace_entry\n nop\n nop\n nop\n .endr\n");
extern char agileos_trace_trampolines[];

static void* trampoline(int index) { return agileos_trace_trampolines + 8 * index; }

int cuGetExportTable(const void** table, const unsigned char* id) {
  int (*real)(const void**, const unsigned char*) =
      (int (*)(const void**, const unsigned char*))driverSymbol("cuGetExportTable");
  const int result = real(table, id);
  fprintf(stderr, "[driver] cuGetExportTable(");
  for (int i = 0; i < 16; ++i) fprintf(stderr, "%02x", id[i]);
  fprintf(stderr, ") -> %d\n", result);
  return result;
}

int cuGetProcAddress_v2(const char* symbol, void** function, int version, uint64_t flags, int* status) {
  int (*real)(const char*, void**, int, uint64_t, int*) =
      (int (*)(const char*, void**, int, uint64_t, int*))driverSymbol("cuGetProcAddress_v2");
  const int result = real(symbol, function, version, flags, status);
  if (result != 0 || *function == NULL) return result;
  if (strcmp(symbol, "cuGetExportTable") == 0) {
    *function = (void*)cuGetExportTable;
  } else if (strcmp(symbol, "cuGetProcAddress") == 0) {
    *function = (void*)cuGetProcAddress_v2;
  } else if (gTraced < kMaxTraced) {
    gNames[gTraced] = strdup(symbol);
    gTargets[gTraced] = *function;
    *function = trampoline(gTraced++);
  }
  return result;
}

int cuGetProcAddress(const char* symbol, void** function, int version, uint64_t flags) {
  return cuGetProcAddress_v2(symbol, function, version, flags, NULL);
}

int cuInit(unsigned flags) { return ((int (*)(unsigned))driverSymbol("cuInit"))(flags); }
int cuDriverGetVersion(int* version) { return ((int (*)(int*))driverSymbol("cuDriverGetVersion"))(version); }
