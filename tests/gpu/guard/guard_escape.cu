// guard_escape: adversarial kernels that try to reach the protected GPU address range
// [0xF0000000000, 0xF8000000000) by every route we know of, one route per process.
//
// Usage: guard_escape --list              route names, one per line, each followed by its runner
//                                         flags where it has any (" may-refuse,modules=kvstore")
//        guard_escape --describe          "name<TAB>the PTX instruction that makes the access"
//        guard_escape --image NAME        the image a loaded route loads (PTX text or binary)
//        guard_escape --route NAME        runs one route, prints one line on stdout:
//          route=NAME outcome=WORD detail="..."
// Exit status: 0 when the run itself worked, whatever the outcome; 1 on a harness failure
// (then outcome=error); 2 on a usage error.
//
// Build: sm_90 PTX only (-gencode arch=compute_90,code=compute_90), shared cudart, -ldl. Only
// PTX, so that the AgileOS worker has to JIT-compile its guarded rewrite: no SASS to fall
// back on. The accesses are written in inline PTX so the intended instruction is emitted. (The
// SASS-only fatbin and cubin of two loaded routes are data embedded in the host code, generated
// by tests/gpu/CMakeLists.txt: guard/escape_sass_images.h.)
//
// Two modes, chosen by what the process finds:
//   - AgileOS (the shim exports agileosGuardCanary): routes aim at a 2 MiB "canary" page in
//     protected module memory that the worker fills with 0xA5 (worker flag
//     --test-guard-canary); the I/O-aperture routes aim at 0xF0000000000, reserved but not
//     mapped. agileosGuardStatus tells whether the canary is intact, how many guard hits
//     the client's kernels made and which policy applies; the outcome is judged by it:
//       trap      stopped          the launch or the next synchronize returned an error
//       poison    poisoned         synchronize -> cudaErrorIllegalAddress, canary intact, hits >= 1
//       sink      sunk             no error, reads are not canary bytes, canary intact, hits >= 1
//       remap_or  remapped         the access landed in the first user buffer at a & 0x1FFFFF
//                 fault | n/a      it faulted | the first buffer is not at 0xF8000000000
//       report    reached-counted  the access ran unchanged and was counted
//                 fault            the unmapped I/O aperture faulted
//       any       ESCAPED          anything else: "evidence: ..." when canary bytes were read or
//                                  the canary changed, "unexplained: ..." otherwise
//                 timeout          a bulk copy never completed (bounded wait)
//   - native (no such symbol): maps the same addresses itself through the driver's VMM API
//     (libcuda.so.1, dlopen) and shows that each access WOULD have succeeded: `reached`
//     (read 0xA5 bytes, or changed the target), otherwise `unreached`.
// Markers written are 0x5A5A5A5A (or 0xF0F0F0F0 for atom.max); never the byte 0xA5.
//
// Loaded routes (issue 13): the routes whose names start with layout_, sass_, elf_, indirect_
// and trusted_ do not use this program's own kernels: they load an image at run time with
// cudaLibraryLoadData (loaded_images.h: hand-written PTX whose layout is the attack; a SASS-only
// fatbin and an ELF cubin built from escape_sass_kernel.cu) and launch its kernel with
// cudaLaunchKernel. Under AgileOS they may also come out as
//       any       refused          the image was refused: cudaLibraryLoadData or
//                                  cudaLibraryGetKernel failed, or the launch failed with an
//                                  image error (cudaErrorInvalidPtx, ...NoKernelImageForDevice...)
// and the indirect_/trusted_ routes (calls through a register into the middle of a function) as
//       poison, sink  stopped      the launch or synchronize failed, canary intact (under trap
//                                  that is `stopped` anyway, under remap_or `fault`)
// `--list` marks them (may-refuse, may-stop); the runner accepts those outcomes for them only.
// return_edge_overflow (issue 13, return edges) writes over a recursive device function's saved
// return address: natively `reached` means its `ret` went astray (cudaErrorInvalidPc or an
// illegal instruction); under AgileOS the frame check traps (`stopped`; `fault` under remap_or
// and report, as it traps under every policy).
// The trusted_ routes need a client admitted with the kvstore module (--list: modules=kvstore);
// natively there is no module, so they are `n/a` there (native-n/a) once their PTX has loaded
// and the placeholder answered ENOSYS.
#include <cuda.h>  // driver types only: the functions are resolved with dlsym in native mode
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <mma.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "guard/escape_sass_images.h"  // generated (tests/gpu/CMakeLists.txt): kEscapeSassFatbin, kEscapeSassCubin
#include "loaded_images.h"

// The AgileOS shim's test hooks (client/cudart). Only declared: resolved with dlsym, so the
// program also runs with the real runtime, where they do not exist.
extern "C" cudaError_t agileosGuardCanary(unsigned long long* address, unsigned long long* bytes);
extern "C" cudaError_t agileosGuardStatus(int* canaryIntact, unsigned long long* hits, char* policy,
                                          size_t policyBytes);

namespace {

// The layout of memmgr/address_layout.h.
constexpr std::uint64_t kIoAperture = 0xF0000000000ull;
constexpr std::uint64_t kModuleRange = 0xF1000000000ull;
constexpr std::uint64_t kUserRange = 0xF8000000000ull;
constexpr std::uint64_t k2MiB = 2ull << 20;
// remap_or: a hit's address becomes kUserRange | (a & kRemapMask).
constexpr std::uint64_t kRemapMask = k2MiB - 1;
// The remap buffer covers the remap window plus the widest access starting near its end.
constexpr std::size_t kRemapBytes = 2 * k2MiB;

// Native mode: where the program maps memory itself. The canary lies inside the module range
// like the worker's; the two edges cover the routes aimed at the range's boundaries.
constexpr std::uint64_t kNativeCanary = kModuleRange + 0x40000000ull;
constexpr std::uint64_t kNativeApertureEdge = kIoAperture - k2MiB;  // 4 MiB across 0xF0000000000
constexpr std::uint64_t kNativeModuleEndEdge = kUserRange - k2MiB;  // 4 MiB across 0xF8000000000

constexpr unsigned char kCanaryByte = 0xA5;
constexpr unsigned kCanaryWord = 0xA5A5A5A5u;  // only ever a compare value, never written
constexpr unsigned kMarker = 0x5A5A5A5Au;
constexpr unsigned long long kMarker64 = 0x5A5A5A5A5A5A5A5Aull;
constexpr unsigned kMaxMarker = 0xF0F0F0F0u;  // atom.max: above both the canary and the remap pattern
constexpr unsigned kBulkBytes = 128;          // bulk copies: a multiple of 16, 16-byte aligned
constexpr unsigned char kOutFill = 0x3C;      // the output buffer before a route
constexpr std::size_t kOutBytes = 4096;
constexpr std::size_t kBulkStatusOffset = 2048;  // in the output buffer: a bulk read's completion word
constexpr unsigned kBulkDone = 1, kBulkTimedOut = 2;

// The first byte of the canary a route aims at: distinct per route, 128-byte aligned.
constexpr std::uint64_t kCanaryRouteBase = 0x10000;
constexpr std::uint64_t kCanaryRouteStride = 0x400;

// remap_or check: the bytes of the remap buffer before a route. 0x80..0x9F: never 0xA5 or
// 0x3C; bit 6 clear, so red.or with the marker changes every byte; the top byte of a word
// lies between the atom.min and atom.max markers, so both change it.
unsigned char remapPattern(std::size_t i) {
  return static_cast<unsigned char>(0x80u | ((i * 7 + (i >> 9)) & 0x1Fu));
}

}  // namespace

// ------------------------------------------------------------------ device side

namespace {

__device__ unsigned sharedAddress(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ unsigned long long globalTimerNs() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ void storeWords(unsigned char* out, const unsigned* words, int n) {
  for (int i = 0; i < n; ++i) reinterpret_cast<unsigned*>(out)[i] = words[i];
}

// Reads `bytes` (a multiple of 16, at most kBulkBytes) from `src` with a bulk (TMA) copy into
// shared memory completed through an mbarrier, then copies them to `out`. The wait is bounded
// (1 s of wall time): a copy that never completes is reported, not waited for.
__device__ void bulkReadInto(const void* src, unsigned bytes, unsigned char* out) {
  __shared__ __align__(128) unsigned char buffer[kBulkBytes];
  __shared__ __align__(8) unsigned long long barrier;
  const unsigned bar = sharedAddress(&barrier), dst = sharedAddress(buffer);
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar) : "memory");
  // Make the initialised barrier visible to the async proxy that completes it.
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile(
      "{\n\t.reg .b64 %%escape_state;\n\t"
      "mbarrier.arrive.expect_tx.shared::cta.b64 %%escape_state, [%0], %1;\n\t}" ::"r"(bar),
      "r"(bytes)
      : "memory");
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
      "l"(src), "r"(bytes), "r"(bar)
      : "memory");
  unsigned done = 0;
  const unsigned long long start = globalTimerNs();
  for (int i = 0; i < 4000000 && done == 0; ++i) {
    asm volatile(
        "{\n\t.reg .pred %%escape_done;\n\t"
        "mbarrier.test_wait.parity.shared::cta.b64 %%escape_done, [%1], 0;\n\t"
        "selp.u32 %0, 1, 0, %%escape_done;\n\t}"
        : "=r"(done)
        : "r"(bar)
        : "memory");
    if (done == 0) {
      if (globalTimerNs() - start > 1000000000ull) break;
      __nanosleep(100);
    }
  }
  if (done != 0) {
    for (unsigned i = 0; i < bytes; ++i) out[i] = buffer[i];
  }
  *reinterpret_cast<unsigned*>(out + kBulkStatusOffset) = done != 0 ? kBulkDone : kBulkTimedOut;
}

// Writes (or, with `reduce`, adds) kBulkBytes of marker words to `dst` with a bulk copy from
// shared memory, and waits for the bulk group to complete.
template <bool reduce>
__device__ void bulkWriteFrom(void* dst) {
  __shared__ __align__(128) unsigned buffer[kBulkBytes / 4];
  for (unsigned i = 0; i < kBulkBytes / 4; ++i) buffer[i] = kMarker;
  // The generic-proxy writes above must be visible to the async proxy that reads them.
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  if (reduce) {
    asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.u32 [%0], [%1], %2;" ::"l"(dst),
                 "r"(sharedAddress(buffer)), "r"(kBulkBytes)
                 : "memory");
  } else {
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst),
                 "r"(sharedAddress(buffer)), "r"(kBulkBytes)
                 : "memory");
  }
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

// A store in a function of its own (a PTX .func reached by `call`): the guard must rewrite
// function bodies, not only kernels.
__device__ __noinline__ void storeOutOfLine(void* p, unsigned value) {
  asm volatile("st.global.u32 [%0], %1;" ::"l"(p), "r"(value) : "memory");
}

}  // namespace

// A pointer the kernel finds inside a by-value struct parameter (read through .param).
struct HiddenTarget {
  unsigned tag;
  void* target;
  unsigned value;
};

// The kernels: one per route, each making exactly one access to the target with the
// instruction its name says; a read's result goes to `out` (user memory).
extern "C" {

__global__ void escape_preflight(unsigned* out) { out[threadIdx.x] = 0xC0DE0000u + threadIdx.x; }

__global__ void escape_ld_u8(const void* p, unsigned char* out) {
  unsigned v;
  asm volatile("ld.global.u8 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  out[0] = static_cast<unsigned char>(v);
}

__global__ void escape_ld_u32(const void* p, unsigned char* out) {
  unsigned v[1];
  asm volatile("ld.global.u32 %0, [%1];" : "=r"(v[0]) : "l"(p) : "memory");
  storeWords(out, v, 1);
}

__global__ void escape_ld_v2_u32(const void* p, unsigned char* out) {
  unsigned v[2];
  asm volatile("ld.global.v2.u32 {%0, %1}, [%2];" : "=r"(v[0]), "=r"(v[1]) : "l"(p) : "memory");
  storeWords(out, v, 2);
}

__global__ void escape_ld_v4_u32(const void* p, unsigned char* out) {
  unsigned v[4];
  asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3])
               : "l"(p)
               : "memory");
  storeWords(out, v, 4);
}

__global__ void escape_ld_v2_u64(const void* p, unsigned char* out) {
  unsigned long long v[2];
  asm volatile("ld.global.v2.u64 {%0, %1}, [%2];" : "=l"(v[0]), "=l"(v[1]) : "l"(p) : "memory");
  reinterpret_cast<unsigned long long*>(out)[0] = v[0];
  reinterpret_cast<unsigned long long*>(out)[1] = v[1];
}

__global__ void escape_ld_nc_v4_u32(const void* p, unsigned char* out) {
  unsigned v[4];
  asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3])
               : "l"(p)
               : "memory");
  storeWords(out, v, 4);
}

__global__ void escape_ldu_u32(const void* p, unsigned char* out) {
  unsigned v[1];
  asm volatile("ldu.global.u32 %0, [%1];" : "=r"(v[0]) : "l"(p) : "memory");
  storeWords(out, v, 1);
}

__global__ void escape_st_u32(void* p) {
  asm volatile("st.global.u32 [%0], %1;" ::"l"(p), "r"(kMarker) : "memory");
}

__global__ void escape_st_v4_u32(void* p) {
  asm volatile("st.global.v4.u32 [%0], {%1, %1, %1, %1};" ::"l"(p), "r"(kMarker) : "memory");
}

__global__ void escape_st_u64(void* p) {
  asm volatile("st.global.u64 [%0], %1;" ::"l"(p), "l"(kMarker64) : "memory");
}

// Generic addressing (no state space): the hardware decides the window at run time.
__global__ void escape_ld_generic_u32(const void* p, unsigned char* out) {
  unsigned v[1];
  asm volatile("ld.u32 %0, [%1];" : "=r"(v[0]) : "l"(p) : "memory");
  storeWords(out, v, 1);
}

__global__ void escape_st_generic_u32(void* p) {
  asm volatile("st.u32 [%0], %1;" ::"l"(p), "r"(kMarker) : "memory");
}

__global__ void escape_atom_add_u32(void* p, unsigned char* out) {
  unsigned v[1];
  asm volatile("atom.global.add.u32 %0, [%1], %2;" : "=r"(v[0]) : "l"(p), "r"(kMarker) : "memory");
  storeWords(out, v, 1);
}

// Swaps in the marker only where the canary pattern is (natively: it is).
__global__ void escape_atom_cas_b32(void* p, unsigned char* out) {
  unsigned v[1];
  asm volatile("atom.global.cas.b32 %0, [%1], %2, %3;"
               : "=r"(v[0])
               : "l"(p), "r"(kCanaryWord), "r"(kMarker)
               : "memory");
  storeWords(out, v, 1);
}

__global__ void escape_atom_exch_b64(void* p, unsigned char* out) {
  unsigned long long v;
  asm volatile("atom.global.exch.b64 %0, [%1], %2;" : "=l"(v) : "l"(p), "l"(kMarker64) : "memory");
  reinterpret_cast<unsigned long long*>(out)[0] = v;
}

__global__ void escape_atom_max_u32(void* p, unsigned char* out) {
  unsigned v[1];
  asm volatile("atom.global.max.u32 %0, [%1], %2;" : "=r"(v[0]) : "l"(p), "r"(kMaxMarker) : "memory");
  storeWords(out, v, 1);
}

__global__ void escape_atom_min_u32(void* p, unsigned char* out) {
  unsigned v[1];
  asm volatile("atom.global.min.u32 %0, [%1], %2;" : "=r"(v[0]) : "l"(p), "r"(kMarker) : "memory");
  storeWords(out, v, 1);
}

__global__ void escape_red_add_u32(void* p) {
  asm volatile("red.global.add.u32 [%0], %1;" ::"l"(p), "r"(kMarker) : "memory");
}

__global__ void escape_red_or_b32(void* p) {
  asm volatile("red.global.or.b32 [%0], %1;" ::"l"(p), "r"(kMarker) : "memory");
}

__global__ void escape_atom_generic_add_u32(void* p, unsigned char* out) {
  unsigned v[1];
  asm volatile("atom.add.u32 %0, [%1], %2;" : "=r"(v[0]) : "l"(p), "r"(kMarker) : "memory");
  storeWords(out, v, 1);
}

// An asynchronous 16-byte copy from global to shared memory (Ampere cp.async).
__global__ void escape_cp_async_ca(const void* p, unsigned char* out) {
  __shared__ __align__(16) unsigned char staging[16];
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16;" ::"r"(sharedAddress(staging)), "l"(p) : "memory");
  asm volatile("cp.async.wait_all;" ::: "memory");
  for (int i = 0; i < 16; ++i) out[i] = staging[i];
}

__global__ void escape_bulk_read(const void* p, unsigned char* out) { bulkReadInto(p, kBulkBytes, out); }

// Matrix fragments (issue 17): a warp loads a 16 x 16 float tile with wmma.load.c through a run-time
// stride (16) and stores it into the output with wmma.store.d; or stores a tile of the marker.
constexpr unsigned kWmmaTileBytes = 16 * 16 * sizeof(float);
__global__ void escape_wmma_load(const void* p, unsigned char* out, unsigned ldm) {
  nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> tile;
  nvcuda::wmma::load_matrix_sync(tile, static_cast<const float*>(p), ldm, nvcuda::wmma::mem_row_major);
  nvcuda::wmma::store_matrix_sync(reinterpret_cast<float*>(out), tile, 16, nvcuda::wmma::mem_row_major);
}
__global__ void escape_wmma_store(void* p, unsigned ldm) {
  nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> tile;
  nvcuda::wmma::fill_fragment(tile, __uint_as_float(kMarker));
  nvcuda::wmma::store_matrix_sync(static_cast<float*>(p), tile, ldm, nvcuda::wmma::mem_row_major);
}

__global__ void escape_bulk_write(void* p) { bulkWriteFrom<false>(p); }

__global__ void escape_bulk_reduce_add(void* p) { bulkWriteFrom<true>(p); }

__global__ void escape_noinline_st(void* p) { storeOutOfLine(p, kMarker); }

// Return edges (issue 13): a recursive device function (ptxas cannot inline it away) saves its
// return address in its frame beside its local array. One level down, after its call has
// returned, it writes the marker over the words past its array: its own saved registers and the
// frame above. Natively its `ret` then goes astray (cudaErrorInvalidPc or an illegal
// instruction); under the guard the write is outside the function's own variables and below the
// kernel's frame floor, so the kernel traps first.
__device__ __noinline__ unsigned frameOverflow(unsigned depth, unsigned from, unsigned count) {
  unsigned a[4];
  volatile unsigned* words = a;  // every write stays a local store
  for (unsigned i = 0; i < 4; ++i) words[i] = depth + i;
  const unsigned r = depth == 0 ? 1u : frameOverflow(depth - 1, from, count);
  if (depth == 1) {
    for (unsigned i = from; i < from + count; ++i) words[i] = kMarker;
  }
  return r + words[(depth + r) & 3u];
}
__global__ void escape_frame_overflow(unsigned from, unsigned count, unsigned char* out) {
  const unsigned r = frameOverflow(3u, from, count);
  memcpy(out, &r, sizeof r);
}

// The store runs under a predicate computed from a kernel argument (1 at run time).
__global__ void escape_predicated_st(void* p, unsigned flag) {
  asm volatile(
      "{\n\t.reg .pred %%escape_flag;\n\t"
      "setp.ne.u32 %%escape_flag, %2, 0;\n\t"
      "@%%escape_flag st.global.u32 [%0], %1;\n\t}" ::"l"(p),
      "r"(kMarker), "r"(flag)
      : "memory");
}

// The address is an immediate: ptxas accepts a bare [imm] only for .local, so the immediate
// is the offset of a register set to 0 in the same asm block (the whole address is a
// compile-time constant).
__global__ void escape_imm_st() {
  asm volatile(
      "{\n\t.reg .u64 %%escape_zero;\n\t"
      "mov.u64 %%escape_zero, 0;\n\t"
      "st.global.u32 [%%escape_zero+0xF0000000000], %0;\n\t}" ::"r"(kMarker)
      : "memory");
}

// The absolute address as the immediate offset of a register the host sets to 0.
__global__ void escape_imm_ld(const void* zero, unsigned char* out) {
  unsigned v[1];
  asm volatile("ld.global.u32 %0, [%1+0xF0000000000];" : "=r"(v[0]) : "l"(zero) : "memory");
  storeWords(out, v, 1);
}

__global__ void escape_struct_st(HiddenTarget hidden) {
  asm volatile("st.global.u32 [%0], %1;" ::"l"(hidden.target), "r"(hidden.value) : "memory");
}

// The address is a user pointer plus an offset the kernel reads from user memory.
__global__ void escape_runtime_offset_ld(const unsigned char* base, const long long* offset,
                                         unsigned char* out) {
  const unsigned char* p = base + *offset;
  unsigned v[1];
  asm volatile("ld.global.u32 %0, [%1];" : "=r"(v[0]) : "l"(p) : "memory");
  storeWords(out, v, 1);
}

}  // extern "C"

// ------------------------------------------------------------------ the routes

namespace {

// What a route aims at: the canary, or a fixed address at an edge of the protected range.
enum class Aim { kCanary, kApertureStart, kStraddleBegin, kStraddleEnd };

enum RouteFlags : unsigned {
  kReads = 1,       // the access's value lands in the output buffer
  kWrites = 2,      // the access changes its target
  kIfCanary = 4,    // ... only where the target holds the canary pattern (compare-and-swap)
  kBulkStatus = 8,  // the kernel reports whether its bulk copy completed
  // Loaded routes (see the top of the file); the runner reads these from --list.
  kMayRefuse = 16,    // under AgileOS its image may be refused: outcome `refused`
  kMayStop = 32,      // a call into the middle of a function: a fault is `stopped` under every policy
  kNativeNa = 64,     // natively there is nothing to reach (no protected module): `n/a`
  kKvstore = 128,     // needs a client admitted with the kvstore module (AGILEOS_MODULES=kvstore)
  kSweep = 256,       // tries entry points one launch at a time: its store need not happen
  kReturnEdge = 512,  // writes over saved return addresses: natively `reached` = the return went astray
};

struct Launch {
  std::uint64_t target;    // the address the route aims at
  unsigned char* out;      // user memory: what a read route read
  unsigned char* scratch;  // user memory: base and offset cell of the run-time address
};

void* at(std::uint64_t address) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(address)); }

void checkCuda(cudaError_t status, const char* call);
#define CHECK(call) checkCuda((call), #call)

// ------------------------------------------------------------------ loaded routes

// What a loaded route did before launchRoute synchronizes: the load, and a sweep's launches.
struct Loaded {
  cudaError_t load = cudaSuccess;  // cudaLibraryLoadData or cudaLibraryGetKernel
  const char* call = "";           // which of the two failed
  cudaError_t launch = cudaSuccess;
  cudaError_t sync = cudaSuccess;  // a sweep synchronizes after each launch
  int calls = 0;                   // a sweep's launches
  unsigned offset = 0;             // the entry offset of its last launch
  int placeholder = 0;             // trusted_ routes: what agileos_kvstore_put returned
};
Loaded gLoaded;

// Whether the route's target no longer holds what it held before (native: re-read; AgileOS: the
// canary is no longer intact). Set by runNative/runAgileos; a sweep stops at the first change.
std::function<bool()> gTargetChanged = [] { return false; };

// Errors with which a refused image shows at the launch (the worker may load lazily).
bool imageError(cudaError_t status) {
  return status == cudaErrorInvalidPtx || status == cudaErrorNoKernelImageForDevice ||
         status == cudaErrorInvalidKernelImage || status == cudaErrorUnsupportedPtxVersion ||
         status == cudaErrorInvalidSource || status == cudaErrorSharedObjectInitFailed;
}

// Loads `image` (PTX text, a fatbin or an ELF cubin) and resolves `names`; false, with gLoaded.load
// set, when either is refused.
bool loadKernels(const void* image, std::initializer_list<std::pair<const char*, cudaKernel_t*>> names) {
  cudaLibrary_t library = nullptr;
  cudaError_t status = cudaLibraryLoadData(&library, image, nullptr, nullptr, 0, nullptr, nullptr, 0);
  if (status != cudaSuccess) {
    gLoaded.load = status;
    gLoaded.call = "cudaLibraryLoadData";
    return false;
  }
  for (const auto& [name, kernel] : names) {
    status = cudaLibraryGetKernel(kernel, library, name);
    if (status != cudaSuccess) {
      gLoaded.load = status;
      gLoaded.call = "cudaLibraryGetKernel";
      return false;
    }
  }
  return true;
}

cudaError_t launchOne(cudaKernel_t kernel, void** args) {
  return cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(1), dim3(1), args, 0, nullptr);
}

// A layout or SASS-only route: escape_loaded(target, out) of `image`, once.
void launchLoaded(const void* image, const Launch& l) {
  cudaKernel_t kernel = nullptr;
  if (!loadKernels(image, {{"escape_loaded", &kernel}})) return;
  void* target = at(l.target);
  void* out = l.out;
  void* args[] = {&target, &out};
  gLoaded.launch = launchOne(kernel, args);
}

// A layout route: the module `text` returns, once.
template <std::string (*text)()>
void launchLayout(const Launch& l) {
  static const std::string ptx = text();
  launchLoaded(ptx.c_str(), l);
}

// One launch of a sweep: `kernel` with `args`, of which *offset is the entry offset; false when
// the sweep must end (the launch failed or the target changed).
bool sweepStep(cudaKernel_t kernel, void** args, unsigned* offset, unsigned value) {
  *offset = value;
  gLoaded.calls += 1;
  gLoaded.offset = value;
  gLoaded.launch = launchOne(kernel, args);
  if (gLoaded.launch != cudaSuccess) return false;
  gLoaded.sync = cudaDeviceSynchronize();
  if (gLoaded.sync != cudaSuccess) return false;
  return !gTargetChanged();
}

// SASS instructions are 16 bytes on sm_90: each launch enters one instruction further away.
constexpr unsigned kSassInstruction = 16;
// indirect_own_function. The worker compiles guarded PTX through cuLink (relocatable code); there
// ptxas 13.0 (sm_90) makes of the guarded escape_store_fn, under every policy: the high word of
// the address less 0xEFE (instruction 1 or 2), the global memory descriptor (3), the comparison
// with the protected range (5; 7 under report), then the select of the redirect target or the
// address, the store and the 48-step tail. An entry just past the comparison takes the caller's
// predicate ("not protected", from the kernel's own check of its store to out) and stores to the
// target unchecked, if the store accepts the caller's uniform registers as its descriptor (that
// is what the GPU run shows). Under AgileOS the sweep enters at kOwnEntries first, then from 40
// (inside the tail, past the store) down to 1; natively from 1 upwards (the first entry already
// stores: there is no check to skip).
constexpr unsigned kOwnEntries[] = {6, 7, 8};
constexpr unsigned kOwnSweepFrom = 40;
bool gNative = false;  // set by runNative
// trusted_body_*: the entry past agileos_kvstore_get's check (its first instruction after the
// branch to the EFAULT return): instruction 26 of the code ptxas 13.0 makes for sm_90 of the HEAD
// kvstore module linked into either route's PTX when compiled as the worker does (cuLink,
// relocatable code), under every policy (checked on the CPU machine with the HEAD link and guard,
// ptxas -c, nvlink and a decoder of the sm_90 opcodes). get keeps its value pointer in R32:R33 and
// its key in R40:R41, which the kernel leaves holding the target (loaded_images.h); 26-28 call the
// constant that returns the table; 29 onwards take the caller's R4:R5 (the `fake` argument) as
// the table. The sweep enters at 29 (the fake table), 28 and 27 (they return cleanly), 26 (the
// real table, where escape_put stored the key), then 25..23; so a layout up to three
// instructions longer is still entered at a storing instruction first. Entered at 26..29, get
// returns through the frame of the kernel's helper escape_call_get (loaded_images.h): the client
// survives the store, and the canary can be judged.
// AGILEOS_GUARD_ESCAPE_TRUSTED_ENTRY=N replaces 26 (a re-run by hand against another compiler).
constexpr unsigned kTrustedEntry = 26;
constexpr unsigned kTrustedWindow = 3;
constexpr unsigned kKvstoreCapacity = 65536;  // AGILEOS_KVSTORE_CAPACITY
constexpr unsigned long long kKvstoreValue = 0x5A5A5A5A5A5A5A5Aull;

void sweepOwnFunction(const Launch& l) {
  static const std::string ptx = guard_escape_images::ownFunctionModule();
  cudaKernel_t kernel = nullptr;
  if (!loadKernels(ptx.c_str(), {{"escape_loaded", &kernel}})) return;
  void* target = at(l.target);
  void* out = l.out;
  unsigned offset = 0;
  void* args[] = {&target, &out, &offset};
  auto first = [](unsigned k) {
    for (unsigned entry : kOwnEntries) {
      if (k == entry) return true;
    }
    return false;
  };
  if (!gNative) {
    for (unsigned k : kOwnEntries) {
      if (!sweepStep(kernel, args, &offset, k * kSassInstruction)) return;
    }
  }
  for (unsigned i = 0; i < kOwnSweepFrom; ++i) {
    const unsigned k = gNative ? 1 + i : kOwnSweepFrom - i;
    if (!gNative && first(k)) continue;
    if (!sweepStep(kernel, args, &offset, k * kSassInstruction)) break;
  }
}

// Puts the target as a key through the placeholder; sweeps only where the module answered
// (natively, or without the module, the placeholder returns -38: no trusted body to enter).
void sweepTrustedBody(const std::string& ptx, unsigned entry, const Launch& l) {
  cudaKernel_t put = nullptr, kernel = nullptr;
  if (!loadKernels(ptx.c_str(), {{"escape_put", &put}, {"escape_loaded", &kernel}})) return;
  void* target = at(l.target);
  void* out = l.out;
  unsigned long long key = l.target;
  void* putArgs[] = {&out, &key};
  gLoaded.launch = launchOne(put, putArgs);
  if (gLoaded.launch != cudaSuccess) return;
  gLoaded.sync = cudaDeviceSynchronize();
  if (gLoaded.sync != cudaSuccess) return;
  gLoaded.sync = cudaMemcpy(&gLoaded.placeholder, l.out, sizeof gLoaded.placeholder, cudaMemcpyDeviceToHost);
  if (gLoaded.sync != cudaSuccess || gLoaded.placeholder != 0) return;

  // The fake table.
  std::vector<unsigned long long> entries(2 * kKvstoreCapacity);
  for (std::size_t i = 0; i < entries.size(); i += 2) {
    entries[i] = l.target + 1;  // the tag of key `target`
    entries[i + 1] = kKvstoreValue;
  }
  void* fake = nullptr;
  CHECK(cudaMalloc(&fake, entries.size() * sizeof entries[0]));
  CHECK(cudaMemcpy(fake, entries.data(), entries.size() * sizeof entries[0], cudaMemcpyHostToDevice));

  if (const char* text = std::getenv("AGILEOS_GUARD_ESCAPE_TRUSTED_ENTRY"); text != nullptr) {
    entry = static_cast<unsigned>(std::strtoul(text, nullptr, 10));
  }
  unsigned offset = 0;
  void* args[] = {&target, &out, &offset, &fake};
  for (unsigned k = entry + kTrustedWindow; k >= 1 && k + kTrustedWindow >= entry; --k) {
    if (!sweepStep(kernel, args, &offset, k * kSassInstruction)) break;
  }
}

struct Route {
  const char* name;
  const char* instruction;  // the PTX instruction that makes the access
  Aim aim;
  unsigned width;  // bytes accessed
  unsigned flags;
  void (*launch)(const Launch&);
};

const Route kRoutes[] = {
    {"ld_u8", "ld.global.u8", Aim::kCanary, 1, kReads,
     [](const Launch& l) { escape_ld_u8<<<1, 1>>>(at(l.target), l.out); }},
    {"ld_u32", "ld.global.u32", Aim::kCanary, 4, kReads,
     [](const Launch& l) { escape_ld_u32<<<1, 1>>>(at(l.target), l.out); }},
    {"ld_v2_u32", "ld.global.v2.u32", Aim::kCanary, 8, kReads,
     [](const Launch& l) { escape_ld_v2_u32<<<1, 1>>>(at(l.target), l.out); }},
    {"ld_v4_u32", "ld.global.v4.u32", Aim::kCanary, 16, kReads,
     [](const Launch& l) { escape_ld_v4_u32<<<1, 1>>>(at(l.target), l.out); }},
    {"ld_v2_u64", "ld.global.v2.u64", Aim::kCanary, 16, kReads,
     [](const Launch& l) { escape_ld_v2_u64<<<1, 1>>>(at(l.target), l.out); }},
    {"ld_nc_v4_u32", "ld.global.nc.v4.u32", Aim::kCanary, 16, kReads,
     [](const Launch& l) { escape_ld_nc_v4_u32<<<1, 1>>>(at(l.target), l.out); }},
    {"ldu_u32", "ldu.global.u32", Aim::kCanary, 4, kReads,
     [](const Launch& l) { escape_ldu_u32<<<1, 1>>>(at(l.target), l.out); }},
    {"st_u32", "st.global.u32", Aim::kCanary, 4, kWrites,
     [](const Launch& l) { escape_st_u32<<<1, 1>>>(at(l.target)); }},
    {"st_v4_u32", "st.global.v4.u32", Aim::kCanary, 16, kWrites,
     [](const Launch& l) { escape_st_v4_u32<<<1, 1>>>(at(l.target)); }},
    {"st_u64", "st.global.u64", Aim::kCanary, 8, kWrites,
     [](const Launch& l) { escape_st_u64<<<1, 1>>>(at(l.target)); }},
    {"ld_generic_u32", "ld.u32", Aim::kCanary, 4, kReads,
     [](const Launch& l) { escape_ld_generic_u32<<<1, 1>>>(at(l.target), l.out); }},
    {"st_generic_u32", "st.u32", Aim::kCanary, 4, kWrites,
     [](const Launch& l) { escape_st_generic_u32<<<1, 1>>>(at(l.target)); }},
    {"atom_add_u32", "atom.global.add.u32", Aim::kCanary, 4, kReads | kWrites,
     [](const Launch& l) { escape_atom_add_u32<<<1, 1>>>(at(l.target), l.out); }},
    {"atom_cas_b32", "atom.global.cas.b32", Aim::kCanary, 4, kReads | kWrites | kIfCanary,
     [](const Launch& l) { escape_atom_cas_b32<<<1, 1>>>(at(l.target), l.out); }},
    {"atom_exch_b64", "atom.global.exch.b64", Aim::kCanary, 8, kReads | kWrites,
     [](const Launch& l) { escape_atom_exch_b64<<<1, 1>>>(at(l.target), l.out); }},
    {"atom_max_u32", "atom.global.max.u32", Aim::kCanary, 4, kReads | kWrites,
     [](const Launch& l) { escape_atom_max_u32<<<1, 1>>>(at(l.target), l.out); }},
    {"atom_min_u32", "atom.global.min.u32", Aim::kCanary, 4, kReads | kWrites,
     [](const Launch& l) { escape_atom_min_u32<<<1, 1>>>(at(l.target), l.out); }},
    {"red_add_u32", "red.global.add.u32", Aim::kCanary, 4, kWrites,
     [](const Launch& l) { escape_red_add_u32<<<1, 1>>>(at(l.target)); }},
    {"red_or_b32", "red.global.or.b32", Aim::kCanary, 4, kWrites,
     [](const Launch& l) { escape_red_or_b32<<<1, 1>>>(at(l.target)); }},
    {"atom_generic_add_u32", "atom.add.u32", Aim::kCanary, 4, kReads | kWrites,
     [](const Launch& l) { escape_atom_generic_add_u32<<<1, 1>>>(at(l.target), l.out); }},
    {"cp_async_ca", "cp.async.ca.shared.global (16 bytes) + cp.async.wait_all", Aim::kCanary, 16, kReads,
     [](const Launch& l) { escape_cp_async_ca<<<1, 1>>>(at(l.target), l.out); }},
    {"bulk_read", "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes (128 bytes)",
     Aim::kCanary, kBulkBytes, kReads | kBulkStatus,
     [](const Launch& l) { escape_bulk_read<<<1, 1>>>(at(l.target), l.out); }},
    {"wmma_load", "wmma.load.c.sync.aligned.row.m16n16k16.global.f32 (16 x 16, run-time stride 16)",
     Aim::kCanary, kWmmaTileBytes, kReads,
     [](const Launch& l) { escape_wmma_load<<<1, 32>>>(at(l.target), l.out, 16u); }},
    {"wmma_store", "wmma.store.d.sync.aligned.row.m16n16k16.global.f32 (16 x 16, run-time stride 16)",
     Aim::kCanary, kWmmaTileBytes, kWrites,
     [](const Launch& l) { escape_wmma_store<<<1, 32>>>(at(l.target), 16u); }},
    {"bulk_write", "cp.async.bulk.global.shared::cta.bulk_group (128 bytes)", Aim::kCanary, kBulkBytes,
     kWrites, [](const Launch& l) { escape_bulk_write<<<1, 1>>>(at(l.target)); }},
    {"bulk_reduce_add", "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.u32 (128 bytes)",
     Aim::kCanary, kBulkBytes, kWrites,
     [](const Launch& l) { escape_bulk_reduce_add<<<1, 1>>>(at(l.target)); }},
    {"noinline_st", "st.global.u32 in a .func (call)", Aim::kCanary, 4, kWrites,
     [](const Launch& l) { escape_noinline_st<<<1, 1>>>(at(l.target)); }},
    {"return_edge_overflow",
     "st.local past a[3] of a recursive .func one level down (a[4..15] = marker: its saved return address), "
     "then ret",
     Aim::kCanary, 4, kMayStop | kReturnEdge,
     [](const Launch& l) { escape_frame_overflow<<<1, 1>>>(4u, 12u, l.out); }},
    {"predicated_st", "@p st.global.u32 (p from a kernel argument)", Aim::kCanary, 4, kWrites,
     [](const Launch& l) { escape_predicated_st<<<1, 1>>>(at(l.target), 1u); }},
    {"imm_st", "st.global.u32 [zero+0xF0000000000] (zero: mov 0, same asm)", Aim::kApertureStart, 4, kWrites,
     [](const Launch&) { escape_imm_st<<<1, 1>>>(); }},
    {"imm_ld", "ld.global.u32 [%rd+0xF0000000000] (%rd: a kernel argument, 0)", Aim::kApertureStart, 4,
     kReads, [](const Launch& l) { escape_imm_ld<<<1, 1>>>(nullptr, l.out); }},
    {"struct_ptr_st", "st.global.u32 through a pointer in a by-value struct", Aim::kCanary, 4, kWrites,
     [](const Launch& l) {
       escape_struct_st<<<1, 1>>>(HiddenTarget{0x7A6u, at(l.target), kMarker});
     }},
    {"runtime_offset_ld", "ld.global.u32 [user pointer + offset read from user memory]", Aim::kCanary, 4,
     kReads,
     [](const Launch& l) {
       // base + offset == target, with the offset only in device memory.
       const long long offset =
           static_cast<long long>(l.target - reinterpret_cast<std::uintptr_t>(l.scratch));
       CHECK(cudaMemcpy(l.scratch, &offset, sizeof offset, cudaMemcpyHostToDevice));
       escape_runtime_offset_ld<<<1, 1>>>(l.scratch, reinterpret_cast<const long long*>(l.scratch), l.out);
     }},
    // No aligned fixed-width access can cross 0xF0000000000 (a misaligned vector access faults
    // natively), so the straddles are bulk reads: 64 bytes outside the range, 64 inside.
    {"straddle_begin",
     "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes (128 bytes at 0xF0000000000 - 64)",
     Aim::kStraddleBegin, kBulkBytes, kReads | kBulkStatus,
     [](const Launch& l) { escape_bulk_read<<<1, 1>>>(at(l.target), l.out); }},
    {"straddle_end",
     "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes (128 bytes at 0xF8000000000 - 64)",
     Aim::kStraddleEnd, kBulkBytes, kReads | kBulkStatus,
     [](const Launch& l) { escape_bulk_read<<<1, 1>>>(at(l.target), l.out); }},

    // Issue 13, class 1: the guard's front end must read the text as ptxas does. Each loads
    // escape_loaded (ld.global.u32 [p] into out, then st.global.u32 [p]) laid out differently.
    {"layout_one_line", "ld.global.u32 + st.global.u32, PTX loaded at run time: the whole module on one line",
     Aim::kCanary, 4, kReads | kWrites | kMayRefuse, launchLayout<guard_escape_images::oneLineModule>},
    {"layout_after_target",
     "ld.global.u32 + st.global.u32, PTX loaded at run time: the kernel on the line of .target", Aim::kCanary,
     4, kReads | kWrites | kMayRefuse, launchLayout<guard_escape_images::afterTarget>},
    {"layout_after_address_size",
     "ld.global.u32 + st.global.u32, PTX loaded at run time: the kernel on the line of .address_size",
     Aim::kCanary, 4, kReads | kWrites | kMayRefuse, launchLayout<guard_escape_images::afterAddressSize>},
    {"layout_after_file",
     "ld.global.u32 + st.global.u32, PTX loaded at run time: the kernel on the line of a module-level .file",
     Aim::kCanary, 4, kReads | kWrites | kMayRefuse, launchLayout<guard_escape_images::afterFile>},
    {"layout_string_line_comment",
     "ld.global.u32 + st.global.u32, PTX loaded at run time: the kernel on the line of a .file whose name "
     "holds //",
     Aim::kCanary, 4, kReads | kWrites | kMayRefuse, launchLayout<guard_escape_images::lineCommentInString>},
    {"layout_string_block_comment",
     "ld.global.u32 + st.global.u32, PTX loaded at run time: the kernel between a .file name holding /* and "
     "one "
     "holding */",
     Aim::kCanary, 4, kReads | kWrites | kMayRefuse,
     launchLayout<guard_escape_images::blockCommentInStrings>},
    {"layout_after_loc",
     "ld.global.u32 + st.global.u32, PTX loaded at run time: each access on the line of a .loc in the body",
     Aim::kCanary, 4, kReads | kWrites | kMayRefuse, launchLayout<guard_escape_images::afterLoc>},
    {"layout_after_section",
     "ld.global.u32 + st.global.u32, PTX loaded at run time: the kernel after a .section .debug_abbrev on "
     "its line",
     Aim::kCanary, 4, kReads | kWrites | kMayRefuse, launchLayout<guard_escape_images::afterSection>},
    {"layout_after_pragma",
     "ld.global.u32 + st.global.u32, PTX loaded at run time: each access on the line of a .pragma in the "
     "body",
     Aim::kCanary, 4, kReads | kWrites | kMayRefuse, launchLayout<guard_escape_images::afterPragma>},
    {"layout_cr_only",
     "ld.global.u32 + st.global.u32, PTX loaded at run time: lines ended by carriage returns alone",
     Aim::kCanary, 4, kReads | kWrites | kMayRefuse, launchLayout<guard_escape_images::carriageReturns>},
    {"layout_comments_tabs",
     "ld.global.u32 + st.global.u32, PTX loaded at run time: block comments spanning lines, CRLF, tabs, line "
     "comments inside operand lists",
     Aim::kCanary, 4, kReads | kWrites | kMayRefuse, launchLayout<guard_escape_images::commentsAndTabs>},

    // Issue 13, class 4: no PTX at all, while the client holds protected state (its canary).
    {"sass_only_fatbin", "ld.global.u32 + st.global.u32 (a fatbin with sm_90 SASS and no PTX)", Aim::kCanary,
     4, kReads | kWrites | kMayRefuse, [](const Launch& l) { launchLoaded(kEscapeSassFatbin, l); }},
    {"elf_cubin", "ld.global.u32 + st.global.u32 (a bare sm_90 ELF cubin)", Aim::kCanary, 4,
     kReads | kWrites | kMayRefuse, [](const Launch& l) { launchLoaded(kEscapeSassCubin, l); }},

    // Issue 13, class 2: a call through a register into the middle of a function, past its checks.
    {"indirect_own_function",
     "call through a register to escape_store_fn + 16*k (k = 6, 7, 8, then 40..1), past the guard's check of "
     "its "
     "st.global.u32",
     Aim::kCanary, 4, kWrites | kMayRefuse | kMayStop | kSweep, [](const Launch& l) { sweepOwnFunction(l); }},
    {"trusted_body_mov",
     "call through a register to agileos_kvstore_get + 16*k (k = 29..23; address taken with mov), past "
     "agileos_user_range_ok: the module's store of the value",
     Aim::kCanary, 8, kWrites | kMayRefuse | kMayStop | kSweep | kNativeNa | kKvstore,
     [](const Launch& l) {
       static const std::string ptx = guard_escape_images::trustedBodyModule(false);
       sweepTrustedBody(ptx, kTrustedEntry, l);
     }},
    {"trusted_body_table",
     "as trusted_body_mov (k = 29..23), the address read from the header's placeholder table (ld.global.u64)",
     Aim::kCanary, 8, kWrites | kMayRefuse | kMayStop | kSweep | kNativeNa | kKvstore,
     [](const Launch& l) {
       static const std::string ptx = guard_escape_images::trustedBodyModule(true);
       sweepTrustedBody(ptx, kTrustedEntry, l);
     }},
};

// The image a loaded route loads, for --image: its PTX text, or the embedded binary.
std::string routeImage(const Route& route) {
  namespace images = guard_escape_images;
  const std::string name = route.name;
  const std::pair<const char*, std::string (*)()> texts[] = {
      {"layout_one_line", images::oneLineModule},
      {"layout_after_target", images::afterTarget},
      {"layout_after_address_size", images::afterAddressSize},
      {"layout_after_file", images::afterFile},
      {"layout_string_line_comment", images::lineCommentInString},
      {"layout_string_block_comment", images::blockCommentInStrings},
      {"layout_after_loc", images::afterLoc},
      {"layout_after_section", images::afterSection},
      {"layout_after_pragma", images::afterPragma},
      {"layout_cr_only", images::carriageReturns},
      {"layout_comments_tabs", images::commentsAndTabs},
      {"indirect_own_function", images::ownFunctionModule},
  };
  for (const auto& [candidate, text] : texts) {
    if (name == candidate) return text();
  }
  if (name == "trusted_body_mov") return images::trustedBodyModule(false);
  if (name == "trusted_body_table") return images::trustedBodyModule(true);
  if (name == "sass_only_fatbin")
    return std::string(kEscapeSassFatbin, kEscapeSassFatbin + sizeof kEscapeSassFatbin);
  if (name == "elf_cubin") return std::string(kEscapeSassCubin, kEscapeSassCubin + sizeof kEscapeSassCubin);
  return "";
}

// The runner's flags of a route (--list): what it may come out as besides the usual outcomes.
std::string routeFlags(const Route& route) {
  std::string flags;
  auto add = [&](unsigned flag, const char* word) {
    if ((route.flags & flag) != 0) flags += (flags.empty() ? "" : ",") + std::string(word);
  };
  add(kMayRefuse, "may-refuse");
  add(kMayStop, "may-stop");
  add(kNativeNa, "native-n/a");
  add(kKvstore, "modules=kvstore");
  return flags;
}

// ------------------------------------------------------------------ reporting

const char* gRouteName = "?";

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  char text[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(text, sizeof text, fmt, args);
  va_end(args);
  return text;
}

// The one result line; quotes in the detail would break the runner's parsing.
void printResult(const char* outcome, std::string detail) {
  for (char& c : detail) {
    if (c == '"' || c == '\n') c = '\'';
  }
  std::printf("route=%s outcome=%s detail=\"%s\"\n", gRouteName, outcome, detail.c_str());
  std::fflush(stdout);
}

[[noreturn]] void harnessFailure(const std::string& why) {
  std::fprintf(stderr, "guard_escape %s: harness failure: %s\n", gRouteName, why.c_str());
  printResult("error", why);
  std::exit(1);
}

void checkCuda(cudaError_t status, const char* call) {
  if (status != cudaSuccess) harnessFailure(format("%s -> %s", call, cudaGetErrorName(status)));
}

std::string hexBytes(const unsigned char* bytes, std::size_t n) {
  std::string text;
  for (std::size_t i = 0; i < n && i < 16; ++i) text += format("%02x", bytes[i]);
  if (n > 16) text += "..";
  return text;
}

bool anyByte(const unsigned char* bytes, std::size_t n, unsigned char value) {
  for (std::size_t i = 0; i < n; ++i) {
    if (bytes[i] == value) return true;
  }
  return false;
}

bool allBytes(const unsigned char* bytes, std::size_t n, unsigned char value) {
  for (std::size_t i = 0; i < n; ++i) {
    if (bytes[i] != value) return false;
  }
  return true;
}

// ------------------------------------------------------------------ running a route

std::uint64_t routeTarget(const Route& route, std::uint64_t canary) {
  switch (route.aim) {
    case Aim::kCanary:
      return canary + kCanaryRouteBase + static_cast<std::uint64_t>(&route - kRoutes) * kCanaryRouteStride;
    case Aim::kApertureStart:
      return kIoAperture;
    case Aim::kStraddleBegin:
      return kIoAperture - kBulkBytes / 2;
    case Aim::kStraddleEnd:
      return kUserRange - kBulkBytes / 2;
  }
  return 0;
}

// A kernel of the same module that touches only user memory: proves the module loaded and
// kernels run, so that a refused module is never mistaken for a stopped access.
void preflight(unsigned char* out) {
  escape_preflight<<<1, 32>>>(reinterpret_cast<unsigned*>(out));
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  unsigned words[32];
  CHECK(cudaMemcpy(words, out, sizeof words, cudaMemcpyDeviceToHost));
  for (unsigned i = 0; i < 32; ++i) {
    if (words[i] != 0xC0DE0000u + i)
      harnessFailure(format("the preflight kernel wrote %08x at word %u", words[i], i));
  }
  CHECK(cudaMemset(out, kOutFill, kOutBytes));
}

struct Run {
  cudaError_t load = cudaSuccess;    // loaded routes: cudaLibraryLoadData / cudaLibraryGetKernel
  const char* loadCall = "";         // which of them failed
  cudaError_t launch = cudaSuccess;  // cudaGetLastError right after the launch
  cudaError_t sync = cudaSuccess;    // the next cudaDeviceSynchronize
  cudaError_t later = cudaSuccess;   // AgileOS, after a failure: a later device call (sticky?)
  std::vector<unsigned char> out;    // the output buffer, when neither failed
  bool failed() const { return load != cudaSuccess || launch != cudaSuccess || sync != cudaSuccess; }
  const char* error() const {
    return cudaGetErrorName(load != cudaSuccess ? load : launch != cudaSuccess ? launch : sync);
  }
  // The image was refused: not loaded, or its launch failed with an image error.
  bool refused() const { return load != cudaSuccess || imageError(launch); }
};

Run launchRoute(const Route& route, const Launch& launch) {
  Run run;
  gLoaded = Loaded{};
  route.launch(launch);
  run.load = gLoaded.load;
  run.loadCall = gLoaded.call;
  if (run.load != cudaSuccess) return run;  // nothing was launched
  const cudaError_t last = cudaGetLastError();
  run.launch = gLoaded.launch != cudaSuccess ? gLoaded.launch : last;
  run.sync = gLoaded.sync != cudaSuccess ? gLoaded.sync : cudaDeviceSynchronize();
  if (!run.failed()) {
    run.out.resize(kOutBytes);
    CHECK(cudaMemcpy(run.out.data(), launch.out, kOutBytes, cudaMemcpyDeviceToHost));
  }
  return run;
}

unsigned bulkStatus(const Run& run) {
  unsigned status;
  std::memcpy(&status, run.out.data() + kBulkStatusOffset, sizeof status);
  return status;
}

// ------------------------------------------------------------------ native mode

struct Driver {
  decltype(&cuDeviceGet) deviceGet;
  decltype(&cuMemGetAllocationGranularity) granularity;
  decltype(&cuMemAddressReserve) reserve;
  decltype(&cuMemCreate) create;
  decltype(&cuMemMap) map;
  decltype(&cuMemSetAccess) setAccess;
  decltype(&cuGetErrorName) errorName;
};

template <typename F>
void resolve(void* library, const char* name, F* function) {
  *function = reinterpret_cast<F>(dlsym(library, name));
  if (*function == nullptr) harnessFailure(format("libcuda.so.1 has no %s", name));
}

Driver openDriver() {
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    harnessFailure(
        format("neither the AgileOS guard test hooks (agileosGuardCanary) nor the driver: dlopen "
               "libcuda.so.1: %s",
               why != nullptr ? why : "?"));
  }
  Driver d{};
  resolve(library, "cuDeviceGet", &d.deviceGet);
  resolve(library, "cuMemGetAllocationGranularity", &d.granularity);
  resolve(library, "cuMemAddressReserve", &d.reserve);
  resolve(library, "cuMemCreate", &d.create);
  resolve(library, "cuMemMap", &d.map);
  resolve(library, "cuMemSetAccess", &d.setAccess);
  resolve(library, "cuGetErrorName", &d.errorName);
  return d;
}

void checkDriver(const Driver& d, CUresult status, const char* call) {
  if (status == CUDA_SUCCESS) return;
  const char* name = nullptr;
  d.errorName(status, &name);
  harnessFailure(format("%s -> %s", call, name != nullptr ? name : "?"));
}

// Maps `bytes` of fresh device memory at exactly `address` (the runtime's context is current)
// and fills it with the canary byte.
void mapFixed(const Driver& d, std::uint64_t address, std::size_t bytes) {
  CUdevice device;
  checkDriver(d, d.deviceGet(&device, 0), "cuDeviceGet");
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  std::size_t granularity = 0;
  checkDriver(d, d.granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
              "cuMemGetAllocationGranularity");
  if (granularity == 0 || address % granularity != 0 || bytes % granularity != 0) {
    harnessFailure(format("0x%llx + %zu is not a multiple of the allocation granularity %zu",
                          static_cast<unsigned long long>(address), bytes, granularity));
  }
  const CUdeviceptr got = static_cast<CUdeviceptr>(address);  // inside a reserveFixed range
  CUmemGenericAllocationHandle handle;
  checkDriver(d, d.create(&handle, bytes, &prop, 0), "cuMemCreate");
  checkDriver(d, d.map(got, bytes, 0, handle, 0), "cuMemMap");
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  checkDriver(d, d.setAccess(got, bytes, &access, 1), "cuMemSetAccess");
  CHECK(cudaMemset(at(address), kCanaryByte, bytes));
  CHECK(cudaDeviceSynchronize());
}

// Reserves [address, address + bytes) exactly. The driver honours a fixed address for large
// reservations (the worker's ranges) but not for a few MiB (measured on the H200), so the
// native mode reserves the worker's ranges whole, and one as large below them.
void reserveFixed(const Driver& d, std::uint64_t address, std::uint64_t bytes) {
  CUdeviceptr got = 0;
  checkDriver(d, d.reserve(&got, bytes, 0, static_cast<CUdeviceptr>(address), 0), "cuMemAddressReserve");
  if (got != address) {
    harnessFailure(format("cuMemAddressReserve granted 0x%llx, not the requested 0x%llx",
                          static_cast<unsigned long long>(got), static_cast<unsigned long long>(address)));
  }
}

int runNative(const Route& route) {
  gNative = true;
  CHECK(cudaSetDevice(0));
  CHECK(cudaFree(nullptr));  // the primary context, current on this thread for the driver calls
  const Driver driver = openDriver();
  constexpr std::uint64_t k64GiB = 64ull << 30;
  reserveFixed(driver, kIoAperture - k64GiB, k64GiB);             // below the protected range
  reserveFixed(driver, kIoAperture, kModuleRange - kIoAperture);  // the I/O aperture
  reserveFixed(driver, kModuleRange, kUserRange - kModuleRange);  // protected module memory
  reserveFixed(driver, kUserRange, k64GiB);                       // above it
  mapFixed(driver, kNativeCanary, k2MiB);
  // Each edge in two mappings: a mapping cannot span two reservations.
  mapFixed(driver, kNativeApertureEdge, k2MiB);
  mapFixed(driver, kNativeApertureEdge + k2MiB, k2MiB);
  mapFixed(driver, kNativeModuleEndEdge, k2MiB);
  mapFixed(driver, kNativeModuleEndEdge + k2MiB, k2MiB);
  unsigned char *out = nullptr, *scratch = nullptr;
  CHECK(cudaMalloc(&out, kOutBytes));
  CHECK(cudaMalloc(&scratch, kOutBytes));
  preflight(out);

  const Launch launch{routeTarget(route, kNativeCanary), out, scratch};
  gTargetChanged = [&] {
    std::vector<unsigned char> now(route.width);
    CHECK(cudaMemcpy(now.data(), at(launch.target), route.width, cudaMemcpyDeviceToHost));
    return !allBytes(now.data(), route.width, kCanaryByte);
  };
  const Run run = launchRoute(route, launch);
  if ((route.flags & kReturnEdge) != 0) {
    const bool astray = run.sync == cudaErrorInvalidPc || run.sync == cudaErrorIllegalInstruction ||
                        run.launch == cudaErrorInvalidPc || run.launch == cudaErrorIllegalInstruction;
    printResult(
        astray ? "reached" : "unreached",
        astray
            ? format("natively the return went astray: %s (the writes reached a saved return address)",
                     run.error())
            : format("natively the return was not redirected (%s)", run.failed() ? run.error() : "no error"));
    return 0;
  }
  if (run.failed()) {
    printResult("unreached", format("natively the access failed: %s%s%s", run.loadCall,
                                    run.load != cudaSuccess ? " -> " : "", run.error()));
    return 0;
  }
  if ((route.flags & kNativeNa) != 0) {
    // The PTX loaded and ran; without a module the placeholder answers ENOSYS and there is no
    // trusted body to enter.
    if (gLoaded.placeholder != -38) {
      printResult("unreached",
                  format("natively agileos_kvstore_put returned %d, not -38", gLoaded.placeholder));
    } else {
      printResult("n/a",
                  "natively no protected module is linked: the PTX loaded, agileos_kvstore_put "
                  "returned -38 (ENOSYS), so there is no trusted body to enter");
    }
    return 0;
  }
  if ((route.flags & kBulkStatus) != 0 && bulkStatus(run) != kBulkDone) {
    printResult("timeout",
                format("the bulk copy did not complete within 1 s (status %08x)", bulkStatus(run)));
    return 0;
  }
  std::string detail = format("target 0x%llx", static_cast<unsigned long long>(launch.target));
  if ((route.flags & kSweep) != 0)
    detail += format("; %d call(s), the last at +%u", gLoaded.calls, gLoaded.offset);
  bool reached = true;
  if ((route.flags & kReads) != 0) {
    const bool canaryRead = allBytes(run.out.data(), route.width, kCanaryByte);
    detail +=
        format("; read %s%s", hexBytes(run.out.data(), route.width).c_str(), canaryRead ? " (canary)" : "");
    reached = reached && canaryRead;
  }
  if ((route.flags & kWrites) != 0) {
    std::vector<unsigned char> now(route.width);
    CHECK(cudaMemcpy(now.data(), at(launch.target), route.width, cudaMemcpyDeviceToHost));
    const bool changed = !allBytes(now.data(), route.width, kCanaryByte);
    detail +=
        format("; target now %s%s", hexBytes(now.data(), route.width).c_str(), changed ? " (changed)" : "");
    reached = reached && changed;
  }
  printResult(reached ? "reached" : "unreached", detail);
  return 0;
}

// ------------------------------------------------------------------ AgileOS mode

struct Hooks {
  decltype(&agileosGuardCanary) canary = nullptr;
  decltype(&agileosGuardStatus) status = nullptr;
};

Hooks findHooks() {
  Hooks hooks;
  hooks.canary = reinterpret_cast<decltype(&agileosGuardCanary)>(dlsym(RTLD_DEFAULT, "agileosGuardCanary"));
  hooks.status = reinterpret_cast<decltype(&agileosGuardStatus)>(dlsym(RTLD_DEFAULT, "agileosGuardStatus"));
  if ((hooks.canary == nullptr) != (hooks.status == nullptr)) {
    harnessFailure("only one of agileosGuardCanary and agileosGuardStatus is exported");
  }
  return hooks;
}

struct GuardStatus {
  cudaError_t call = cudaSuccess;
  bool intact = false;
  unsigned long long hits = 0;
  std::string policy;
};

GuardStatus guardStatus(const Hooks& hooks) {
  GuardStatus status;
  int intact = 0;
  char policy[64] = {};
  status.call = hooks.status(&intact, &status.hits, policy, sizeof policy);
  policy[sizeof policy - 1] = '\0';
  status.intact = intact != 0;
  status.policy = policy;
  return status;
}

// What the route did under the client's policy (see the table at the top of the file).
struct Verdict {
  const char* outcome;
  std::string detail;
};

Verdict judge(const Route& route, const Launch& launch, const Run& run, const GuardStatus& after,
              unsigned long long hits, const std::string& policy, bool remapAtBase,
              const std::vector<unsigned char>& remapped) {
  const bool reads = (route.flags & kReads) != 0, writes = (route.flags & kWrites) != 0;
  std::string facts = format("policy=%s; target 0x%llx; launch %s; sync %s", policy.c_str(),
                             static_cast<unsigned long long>(launch.target), cudaGetErrorName(run.launch),
                             cudaGetErrorName(run.sync));
  if (after.call != cudaSuccess) {
    facts += format("; agileosGuardStatus -> %s", cudaGetErrorName(after.call));
  } else {
    facts += format("; canary %s; hits %llu", after.intact ? "intact" : "CHANGED", hits);
  }
  const bool haveOut = !run.failed();
  if (haveOut && reads) facts += format("; read %s", hexBytes(run.out.data(), route.width).c_str());
  if (run.load != cudaSuccess) facts += format("; %s -> %s", run.loadCall, cudaGetErrorName(run.load));
  if ((route.flags & kSweep) != 0)
    facts += format("; %d call(s), the last at +%u", gLoaded.calls, gLoaded.offset);
  if (run.failed() && run.load == cudaSuccess)
    facts += format("; a later cudaMemset -> %s", cudaGetErrorName(run.later));
  const bool counted = after.call == cudaSuccess && hits >= 1;
  const bool intact = after.call == cudaSuccess && after.intact;
  // Loaded routes: an image refused with the canary intact, or (a call into the middle of a
  // function) a fault with the canary intact.
  const bool mayRefuse = (route.flags & kMayRefuse) != 0, mayStop = (route.flags & kMayStop) != 0;
  const bool mustWrite = writes && (route.flags & kSweep) == 0;
  if (mayRefuse && run.refused() && intact) return {"refused", format("%s; ", run.error()) + facts};

  if (policy == "report") {  // enforces nothing: the access must run, and be counted
    if (run.failed()) return {"fault", facts};
    if ((route.flags & kBulkStatus) != 0 && bulkStatus(run) != kBulkDone) return {"timeout", facts};
    if (!counted) return {"ESCAPED", "unexplained: report counted no hit; " + facts};
    if (route.aim == Aim::kCanary) {
      if (reads && !allBytes(run.out.data(), route.width, kCanaryByte))
        return {"ESCAPED", "unexplained: report read other than the canary; " + facts};
      if (mustWrite && after.intact)
        return {"ESCAPED", "unexplained: report left the canary unchanged; " + facts};
    }
    return {"reached-counted", facts};
  }

  // Every enforcing policy: canary bytes read or the canary changed is an escape, whatever else.
  if (after.call == cudaSuccess && !after.intact)
    return {"ESCAPED", "evidence: the canary changed; " + facts};
  if (haveOut && reads && anyByte(run.out.data(), route.width, kCanaryByte))
    return {"ESCAPED", "evidence: the read returned canary bytes; " + facts};

  if (policy == "trap") {
    if (run.failed()) return {"stopped", format("%s; ", run.error()) + facts};
    return {"ESCAPED", "unexplained: no error under trap; " + facts};
  }
  const bool poisoned = run.launch == cudaSuccess && run.sync == cudaErrorIllegalAddress && intact && counted;
  // A call into the middle of a function may fault wherever it lands, under any policy (poison's
  // own outcome first; under remap_or a fault is `fault` anyway). The guard's control-flow check
  // traps under every policy: `trap` ends the kernel with cudaErrorLaunchFailure and loses the
  // context, so the canary can no longer be read, as under the trap policy.
  const bool trapped = after.call != cudaSuccess &&
                       (run.launch == cudaErrorLaunchFailure || run.sync == cudaErrorLaunchFailure);
  if (mayStop && run.failed() && (intact || trapped) && policy != "remap_or" &&
      !(policy == "poison" && poisoned))
    return {"stopped",
            format("%s%s; ", run.error(), trapped ? " (a trap: the context is lost)" : "") + facts};
  if (policy == "poison") {
    if (poisoned) return {"poisoned", facts};
    return {"ESCAPED", "unexplained: not poisoned as expected; " + facts};
  }
  if (policy == "sink") {
    if (!run.failed() && (route.flags & kBulkStatus) != 0 && bulkStatus(run) != kBulkDone)
      return {"timeout", facts};
    if (!run.failed() && intact && counted) return {"sunk", facts};
    return {"ESCAPED", "unexplained: not sunk as expected; " + facts};
  }
  if (policy == "remap_or") {
    if (!remapAtBase) return {"n/a", "the first allocation is not at 0xF8000000000; " + facts};
    if (run.failed()) return {"fault", format("%s; ", run.error()) + facts};
    if ((route.flags & kBulkStatus) != 0 && bulkStatus(run) != kBulkDone) return {"timeout", facts};
    if (!intact || !counted) return {"ESCAPED", "unexplained: remap_or without a counted hit; " + facts};
    // The access must have landed in the remap buffer at a & mask, and nowhere else in it.
    const std::size_t offset = launch.target & kRemapMask;
    facts += format("; remap offset 0x%zx now %s", offset,
                    hexBytes(remapped.data() + offset, route.width).c_str());
    if (reads) {
      for (std::size_t i = 0; i < route.width; ++i) {
        if (run.out[i] != remapPattern(offset + i))
          return {"ESCAPED", "unexplained: the read did not return the remapped bytes; " + facts};
      }
    }
    bool windowChanged = false;
    for (std::size_t i = 0; i < remapped.size(); ++i) {
      const bool inWindow = i >= offset && i < offset + route.width;
      if (remapped[i] == remapPattern(i)) continue;
      if (!inWindow) return {"ESCAPED", format("unexplained: remap buffer changed at 0x%zx; ", i) + facts};
      windowChanged = true;
    }
    if (mustWrite && (route.flags & kIfCanary) == 0 && !windowChanged)
      return {"ESCAPED", "unexplained: the write did not reach the remapped address; " + facts};
    return {"remapped", facts};
  }
  return {"ESCAPED", "unexplained: unknown guard policy; " + facts};
}

int runAgileos(const Route& route, const Hooks& hooks) {
  // remap_or sends hits to the first 2 MiB of the user range: the first allocation.
  void* remap = nullptr;
  CHECK(cudaMalloc(&remap, kRemapBytes));
  const bool remapAtBase = reinterpret_cast<std::uintptr_t>(remap) == kUserRange;
  unsigned char *out = nullptr, *scratch = nullptr;
  CHECK(cudaMalloc(&out, kOutBytes));
  CHECK(cudaMalloc(&scratch, kOutBytes));
  // Also loads the module: the worker sets up the client's guard page and canary then.
  preflight(out);

  unsigned long long canary = 0, canaryBytes = 0;
  const cudaError_t canaryCall = hooks.canary(&canary, &canaryBytes);
  if (canaryCall != cudaSuccess) {
    harnessFailure(format("agileosGuardCanary -> %s (is the worker started with --test-guard-canary?)",
                          cudaGetErrorName(canaryCall)));
  }
  const std::uint64_t needed = kCanaryRouteBase + (sizeof kRoutes / sizeof kRoutes[0]) * kCanaryRouteStride;
  if (canary < kModuleRange || canary + canaryBytes > kUserRange || canaryBytes < needed) {
    harnessFailure(
        format("the canary 0x%llx + %llu is not a protected range of at least %llu bytes (is the "
               "worker started with --test-guard-canary?)",
               canary, canaryBytes, static_cast<unsigned long long>(needed)));
  }
  const GuardStatus before = guardStatus(hooks);
  if (before.call != cudaSuccess)
    harnessFailure(format("agileosGuardStatus -> %s", cudaGetErrorName(before.call)));
  if (!before.intact) harnessFailure("the canary is not intact before the route ran");
  const bool remapPolicy = before.policy == "remap_or";
  std::vector<unsigned char> pattern(kRemapBytes);
  for (std::size_t i = 0; i < kRemapBytes; ++i) pattern[i] = remapPattern(i);
  if (remapPolicy) CHECK(cudaMemcpy(remap, pattern.data(), kRemapBytes, cudaMemcpyHostToDevice));

  const Launch launch{routeTarget(route, canary), out, scratch};
  gTargetChanged = [&] {
    const GuardStatus now = guardStatus(hooks);
    return now.call != cudaSuccess || !now.intact;
  };
  Run run = launchRoute(route, launch);
  if ((route.flags & kKvstore) != 0 && !run.failed() && gLoaded.placeholder != 0) {
    harnessFailure(
        format("agileos_kvstore_put returned %d (-38: the kvstore module is not linked into this "
               "client's code: run with AGILEOS_MODULES=kvstore against a daemon whose module pool "
               "has kvstore)",
               gLoaded.placeholder));
  }
  const GuardStatus after = guardStatus(hooks);
  // Whether the failure is sticky (poison promises it is): reported, not judged.
  if (run.failed()) run.later = cudaMemset(out, 0, 4);
  std::vector<unsigned char> remapped;
  if (remapPolicy && remapAtBase && !run.failed()) {
    remapped.resize(kRemapBytes);
    CHECK(cudaMemcpy(remapped.data(), remap, kRemapBytes, cudaMemcpyDeviceToHost));
  }
  const unsigned long long hits = after.hits >= before.hits ? after.hits - before.hits : 0;
  const Verdict verdict = judge(route, launch, run, after, hits, before.policy, remapAtBase, remapped);
  printResult(verdict.outcome, verdict.detail);
  return 0;
}

int usage() {
  std::fprintf(stderr, "usage: guard_escape --list | --describe | --route NAME | --image NAME\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && (std::strcmp(argv[1], "--list") == 0 || std::strcmp(argv[1], "--describe") == 0)) {
    const bool describe = std::strcmp(argv[1], "--describe") == 0;
    for (const Route& route : kRoutes) {
      const std::string flags = routeFlags(route);
      if (describe) {
        std::printf("%s\t%s\n", route.name, route.instruction);
      } else {
        std::printf("%s%s%s\n", route.name, flags.empty() ? "" : " ", flags.c_str());
      }
    }
    return 0;
  }
  if (argc != 3 || (std::strcmp(argv[1], "--route") != 0 && std::strcmp(argv[1], "--image") != 0))
    return usage();
  const Route* route = nullptr;
  for (const Route& candidate : kRoutes) {
    if (std::strcmp(candidate.name, argv[2]) == 0) route = &candidate;
  }
  if (route == nullptr) {
    std::fprintf(stderr, "guard_escape: no route named %s (see --list)\n", argv[2]);
    return 2;
  }
  if (std::strcmp(argv[1], "--image") == 0) {
    const std::string image = routeImage(*route);
    if (image.empty()) {
      std::fprintf(stderr, "guard_escape: route %s uses this program's own kernels, not a loaded image\n",
                   route->name);
      return 2;
    }
    std::fwrite(image.data(), 1, image.size(), stdout);
    return 0;
  }
  gRouteName = route->name;
  const Hooks hooks = findHooks();
  return hooks.canary != nullptr ? runAgileos(*route, hooks) : runNative(*route);
}
