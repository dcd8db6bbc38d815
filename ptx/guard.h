// The kernel memory guard (paper IV-E, V-E): rewrites a PTX module so that no access
// its kernels make can touch the protected range (the I/O aperture and protected
// module memory, memmgr/address_layout.h), whatever address the kernel computes.
//
// Every instruction is classified (memory_access.h). Each access that can reach
// global memory (global or generic space) is preceded, in a scope of its own, by a
// check of its whole extent [a, a + width) against the protected range, computed in
// fresh registers whose names no identifier of the module shares, under the access's
// own predicate. What happens on a hit is the policy (paper V-E):
//   - kTrap:    the access is redirected into the fault window, reserved and never mapped,
//               where it faults: the kernel stops before any protected byte is touched;
//               the context is lost, so the worker is retired (one client per context);
//   - kPoison:  the hit is counted and the access is redirected to the quarantine (the
//               sink); the worker fails the client's next synchronising call;
//   - kSink:    counted and redirected to the quarantine; nothing fails (debugging);
//   - kRemapOr: counted and the address becomes (a & remapMask) | remapBase, a user-range
//               address (compatibility experiments; not isolation-safe between clients);
//   - kReport:  counted; the access runs unchanged (audit only, enforces nothing).
// Every policy but trap counts with `red.global.add.u64` on `hitCounter`, an absolute
// address in protected memory that no user access can reach. Redirection is a select, so
// the checks add no branches (a `trap` or a branch per access keeps the compiler from
// overlapping accesses; measured up to +33%). A redirected access of run-time width (bulk
// copies) wider than `redirectLimit` traps instead, as its target could not hold it.
// Shared, local, param and const accesses cannot reach the protected range and are
// left alone. An instruction the classifier refuses makes the whole module refused,
// with the reason and the line: nothing loads unchecked.
//
// Control flow (ptx/control_flow.h): a check that jumps can be skipped, so a kernel may
// transfer control only to the entry of one of its module's own functions or to a label
// its function lists. Before every indirect call the guard checks (under the call's
// predicate, whatever the policy) that the target equals the address of one of the
// module's address-taken functions, and traps otherwise; before every `brx.idx`, that
// the index is inside its `.branchtargets` list. Addresses of trusted functions, of
// `__agileos_*` functions and of kernels may not be taken (module-level initializers
// naming a placeholder, such as a public header's placeholder table, get 0 instead);
// trusted code is reached only through direct calls. Return edges
// (ptx/frame_confinement.h): parameter stores stay inside their parameter, and a device
// function's writes that may land in the local window must stay inside its own .local
// variables or at or above its kernel's frame floor (ptx/frame_floor.h), or the kernel
// traps, so that no saved return address can be overwritten. Tensor copies
// (ptx/tensor_maps.h) read their map from a 128-byte kernel parameter, which the worker checks
// at launch. findUnguardedAccesses verifies all of it on its own.
//
// The rewrite is deterministic: the same module and options give the same text.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "ptx/ast.h"
#include "ptx/tensor_maps.h"

namespace agileos::ptx {

enum class GuardPolicy : std::uint8_t { kTrap, kRemapOr, kPoison, kSink, kReport };

const char* toString(GuardPolicy policy);
std::optional<GuardPolicy> parseGuardPolicy(std::string_view text);  // "trap", "remap_or", ...
// Whether a hit's access is redirected (every policy but report).
bool redirects(GuardPolicy policy);

struct GuardOptions {
  GuardPolicy policy = GuardPolicy::kTrap;
  std::uint64_t protectedBegin = 0;  // [begin, end): no access may overlap it
  std::uint64_t protectedEnd = 0;
  // Every policy but kTrap: the .u64 the guard increments per hit (8-byte aligned,
  // inside the protected range).
  std::uint64_t hitCounter = 0;
  // kPoison, kSink: hits go to [sink, sink + redirectLimit) (inside the protected range,
  // holding nothing but quarantined bytes).
  std::uint64_t sink = 0;
  // kTrap: hits go to [faultWindow, faultWindow + redirectLimit), inside the protected
  // range, reserved and never mapped, so that the access faults.
  std::uint64_t faultWindow = 0;
  // kRemapOr: a hit's address becomes (a & remapMask) | remapBase; remapBase & remapMask
  // must be 0 and [remapBase, remapBase + remapMask + redirectLimit) outside the range.
  std::uint64_t remapBase = 0;
  std::uint64_t remapMask = 0;
  // The widest access a redirecting policy redirects; wider fixed-width accesses make the
  // module refused, wider run-time widths trap.
  std::uint64_t redirectLimit = 0;
  // .func definitions whose bodies are trusted protected-module code (ptx/module_link.h:
  // LinkResult::trustedFunctions): guardModule leaves their bodies unchanged and
  // findUnguardedAccesses does not report them. The module code checks the untrusted
  // pointers it is given itself. Only the link's own list belongs here: every other
  // function (and every .entry, whatever its name) is guarded as before.
  std::set<std::string> trustedFunctions;
  // Return edges (ptx/frame_confinement.h): bound every write a .func makes to the local
  // window to its own .local variables and its kernel's frame. Off only for tests of the
  // other checks on their own.
  bool confineFrameWrites = true;
};

// Why `options` cannot be used (empty when they can).
std::string validate(const GuardOptions& options);

struct GuardResult {
  bool ok = false;
  std::string error;  // why the module is refused (with a line), when !ok
  Module module;      // the rewritten module, when ok
  std::size_t checkedAccesses = 0;
  std::size_t checkedControlTransfers = 0;  // indirect calls and brx.idx (ptx/control_flow.h)
  std::size_t confinedFrameWrites = 0;      // writes checked against the frame (ptx/frame_confinement.h)
  std::size_t tensorMapCopies = 0;          // tensor copies bound to a kernel parameter (ptx/tensor_maps.h)
  // The kernels whose tensor copies read maps from their parameters, with those parameters:
  // the worker compares them with the maps it issued at every launch.
  std::vector<KernelTensorMaps> tensorMaps;
  std::string registerPrefix;  // the fresh prefix of the guard's registers
};

GuardResult guardModule(const Module& module, const GuardOptions& options);

// Independent check of a guarded module: every access that can reach global memory is
// the last statement of a scope that first checks exactly its extent, under its
// predicate, and acts on a hit; every indirect call and brx.idx follows its check and no
// forbidden function address is taken (findUncheckedControlFlow). Returns one line per
// access or transfer that is not so guarded (empty: the module is fully guarded).
std::vector<std::string> findUnguardedAccesses(const Module& module, const GuardOptions& options,
                                               const std::string& registerPrefix);

}  // namespace agileos::ptx
