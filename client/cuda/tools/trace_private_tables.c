/* A developer's tool (x86-64 Linux), never part of a client: preloaded into a program, it patches
 * the driver's private tables named in AGILEOS_TRACE_TABLES so that each call of one of their
 * entries is printed with its arguments, its result and the 16 bytes behind each pointer-like
 * argument before and after the call. It is how a library's use of a table is read off a native
 * run without reading the driver's code (issue 16: cuBLASLt and the tools-context table).
 *
 *   AGILEOS_TRACE_DRIVER=/usr/lib/x86_64-linux-gnu/libcuda.so.1 \
 *   AGILEOS_TRACE_TABLES=21318c60971432488ca641ff7324c8f2,f8cff95121468b4eb9e2fb469e7c0dd9 \
 *   LD_PRELOAD=libagileos_trace_private_tables.so program
 *
 * Why patch rather than stand in front of the driver (trace_driver_calls.c): under the stand-in
 * cublasCreate fails, natively too (cause not established: the stand-in exports only the functions
 * it intercepts); patched in place, the table and every function the program reaches are the
 * driver's own, only the traced entries jump through here.
 *
 * Limits: only the six integer argument registers are passed on (an entry with more arguments, or
 * floating-point ones, is traced wrongly) and a table has at most kMaxSlots entries. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

enum { kMaxTables = 4, kMaxSlots = 128 };
typedef uint64_t (*TableEntry)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);

static char gNames[kMaxTables][9];
static TableEntry gReal[kMaxTables][kMaxSlots];

static int readBytes(uint64_t address, unsigned char* out, size_t size) {
  if (address < 0x10000) return 0;
  struct iovec local = {out, size}, remote = {(void*)address, size};
  return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)size;
}

static void printBytes(const char* label, const unsigned char* bytes) {
  fprintf(stderr, " %s ", label);
  for (int i = 0; i < 16; ++i) fprintf(stderr, "%s%02x", i == 8 ? " " : "", bytes[i]);
}

/* Called by the trampolines with the global slot index (table * kMaxSlots + slot) and the saved
 * argument registers (rdi, rsi, rdx, rcx, r8, r9); returns the entry's result. */
uint64_t agileos_table_call(int index, const uint64_t* args) {
  const int table = index / kMaxSlots, slot = index % kMaxSlots;
  unsigned char before[6][16], after[6][16];
  int valid[6];
  for (int i = 0; i < 6; ++i) valid[i] = readBytes(args[i], before[i], 16);
  const uint64_t result = gReal[table][slot](args[0], args[1], args[2], args[3], args[4], args[5]);
  fprintf(stderr, "[table %s][%d](%#lx, %#lx, %#lx, %#lx, %#lx, %#lx) -> %#lx\n", gNames[table], slot,
          args[0], args[1], args[2], args[3], args[4], args[5], result);
  for (int i = 0; i < 6; ++i) {
    if (!valid[i] || !readBytes(args[i], after[i], 16)) continue;
    fprintf(stderr, "    arg%d", i);
    printBytes("before", before[i]);
    if (memcmp(before[i], after[i], 16) != 0) printBytes("after", after[i]);
    fprintf(stderr, "\n");
  }
  return result;
}

/* Each trampoline is `call agileos_table_entry` and three bytes of padding (8 bytes); the entry
 * takes its own return address off the stack, finds the trampoline's index from it, saves the
 * argument registers, aligns the stack and calls agileos_table_call, whose result it returns to
 * the entry's caller. */
__asm__(
    ".text\n"
    "agileos_table_entry:\n"
    " pop %r11\n"
    " lea agileos_table_trampolines+5(%rip), %r10\n"
    " sub %r10, %r11\n"
    " shr $3, %r11\n"
    " push %r9\n push %r8\n push %rcx\n push %rdx\n push %rsi\n push %rdi\n"
    " mov %r11d, %edi\n mov %rsp, %rsi\n sub $8, %rsp\n"
    " call agileos_table_call\n"
    " add $56, %rsp\n"
    " ret\n"
    ".balign 16\n"
    "agileos_table_trampolines:\n"
    " .rept 512\n call agileos_table_entry\n nop\n nop\n nop\n .endr\n");
extern char agileos_table_trampolines[];

static int parseId(const char* hex, unsigned char id[16]) {
  for (int i = 0; i < 16; ++i) {
    unsigned value;
    if (sscanf(hex + 2 * i, "%2x", &value) != 1) return 0;
    id[i] = (unsigned char)value;
  }
  return 1;
}

/* The protection of the mapping that holds `address` (from /proc/self/maps), to be restored after
 * patching: a table may share its page with data the program writes. */
static int protectionOf(uintptr_t address) {
  FILE* maps = fopen("/proc/self/maps", "r");
  char line[512], perms[8];
  unsigned long start, end;
  int protection = PROT_READ;
  while (maps != NULL && fgets(line, sizeof line, maps) != NULL) {
    if (sscanf(line, "%lx-%lx %7s", &start, &end, perms) == 3 && address >= start && address < end) {
      protection = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
                   (perms[2] == 'x' ? PROT_EXEC : 0);
      break;
    }
  }
  if (maps != NULL) fclose(maps);
  return protection;
}

static void patchTable(int table, void** entries) {
  const uint64_t bytes = (uint64_t)entries[0];
  if (bytes < 16 || bytes > 8 * kMaxSlots || bytes % 8 != 0) {
    fprintf(stderr, "[table %s] not traced: its first word (%#lx) is no size\n", gNames[table], bytes);
    return;
  }
  const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  const uintptr_t start = (uintptr_t)entries & ~(page - 1);
  const size_t length = ((uintptr_t)entries + bytes - start + page - 1) & ~(page - 1);
  const int protection = protectionOf(start);
  if (mprotect((void*)start, length, PROT_READ | PROT_WRITE) != 0) {
    perror("trace_private_tables: mprotect");
    return;
  }
  for (uint64_t slot = 1; slot < bytes / 8; ++slot) {
    gReal[table][slot] = (TableEntry)entries[slot];
    if (entries[slot] != NULL) entries[slot] = agileos_table_trampolines + 8 * (table * kMaxSlots + slot);
  }
  mprotect((void*)start, length, protection);
  fprintf(stderr, "[table %s] traced: %lu entries\n", gNames[table], bytes / 8);
}

__attribute__((constructor)) static void patchTables(void) {
  const char* wanted = getenv("AGILEOS_TRACE_TABLES");
  const char* path = getenv("AGILEOS_TRACE_DRIVER");
  if (wanted == NULL) return;
  void* driver = dlopen(path != NULL ? path : "libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (driver == NULL) {
    fprintf(stderr, "trace_private_tables: %s\n", dlerror());
    return;
  }
  int (*init)(unsigned) = (int (*)(unsigned))dlsym(driver, "cuInit");
  int (*getTable)(void**, const unsigned char*) =
      (int (*)(void**, const unsigned char*))dlsym(driver, "cuGetExportTable");
  if (init == NULL || getTable == NULL || init(0) != 0) {
    fprintf(stderr, "trace_private_tables: the driver does not initialize\n");
    return;
  }
  int tables = 0;
  for (const char* hex = wanted; tables < kMaxTables && strlen(hex) >= 32; hex += 33) {
    unsigned char id[16];
    void* entries = NULL;
    if (!parseId(hex, id)) break;
    memcpy(gNames[tables], hex, 8);
    if (getTable(&entries, id) != 0 || entries == NULL) {
      fprintf(stderr, "[table %s] the driver has no such table\n", gNames[tables]);
    } else {
      patchTable(tables, (void**)entries);
    }
    ++tables;
    if (hex[32] != ',') break;
  }
}
