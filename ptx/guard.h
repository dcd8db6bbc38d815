// The kernel memory guard (paper IV-E, V-E): rewrites a PTX module so that no access
// its kernels make can touch the protected range (the I/O aperture and protected
// module memory, memmgr/address_layout.h), whatever address the kernel computes.
//
// Every instruction is classified (memory_access.h). Each access that can reach
// global memory (global or generic space) is preceded, in a scope of its own, by a
// check of its whole extent [a, a + width) against the protected range, computed in
// fresh registers whose names no identifier of the module shares, under the access's
// own predicate; what the check does on a hit is the policy:
//   - kTrap:   `trap` (the context is lost; the worker is retired);
//   - kReport: count the hit in the guard's counter and let the access run (measures,
//              enforces nothing; the worker logs that it is not enforcing).
// (remap_or, poison and sink come with the worker's guard state; see issue 4.)
// Shared, local, param and const accesses cannot reach the protected range and are
// left alone. An instruction the classifier refuses makes the whole module refused,
// with the reason and the line: nothing loads unchecked.
//
// The rewrite is deterministic: the same module and options give the same text.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ptx/ast.h"

namespace agileos::ptx {

enum class GuardPolicy : std::uint8_t { kTrap, kReport };

const char* toString(GuardPolicy policy);

struct GuardOptions {
  GuardPolicy policy = GuardPolicy::kTrap;
  std::uint64_t protectedBegin = 0;  // [begin, end): no access may overlap it
  std::uint64_t protectedEnd = 0;
  // kReport: the name of a .global .u64 counter the guard declares in the module and
  // increments (atom.global.add) for every hit.
  std::string reportCounter = "agileos_guard_hits";
};

struct GuardResult {
  bool ok = false;
  std::string error;  // why the module is refused (with a line), when !ok
  Module module;      // the rewritten module, when ok
  std::size_t checkedAccesses = 0;
  std::string registerPrefix;  // the fresh prefix of the guard's registers
};

GuardResult guardModule(const Module& module, const GuardOptions& options);

// Independent check of a guarded module: every access that can reach global memory is
// the last statement of a scope that first checks exactly its extent, under its
// predicate, and acts on a hit. Returns one line per access that is not so guarded
// (empty: the module is fully guarded).
std::vector<std::string> findUnguardedAccesses(const Module& module, const GuardOptions& options,
                                               const std::string& registerPrefix);

}  // namespace agileos::ptx
