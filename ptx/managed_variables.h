// The rewrite of a module's __managed__ variables into shared host memory the worker places.
//
// nvcc declares a __managed__ variable as `.global .attribute(.managed) ... V [= init];` and
// takes its address in code (`mov.u64 %rd, V;`, `ld.global.u32 %r, [V+4];`, `cvta.global.u64
// %rd, V;`). The driver would give V memory of its own (CUDA's managed memory in the worker's
// process), which the client cannot reach. AgileOS instead keeps each V where the module puts
// it, as a plain `.visible .global` (with its initializer, which the worker reads back once
// after loading), and adds a pointer slot `.visible .global .align 8 .u64 SLOT;` per variable;
// every use of V's address in an instruction becomes a load of SLOT (plus V's offset), in a
// scope of its own holding the new register:
//
//     mov.u64 %rd1, V;           ->  { .reg .u64 %R; ld.global.u64 %R, [SLOT]; mov.u64 %rd1, %R; }
//     ld.global.u32 %r, [V+4];   ->  { .reg .u64 %R; ld.global.u64 %R, [SLOT];
//                                      add.s64 %R, %R, 4; ld.global.u32 %r, [%R]; }
//
// The worker writes into SLOT the address of a managed segment of the client (one address for
// the client and the device) holding V's bytes, so the kernels and the program's host code see
// one memory. Generic and global addresses are equal on every 64-bit GPU, so the same address
// serves `mov`, `cvta.global` and generic accesses alike.
//
// Forms the rewrite does not know are refused with the reason, never passed through: V in the
// initializer of another declaration, in a vector, list or expression operand other than
// `V+N`, in a directive or label of a function body (a declaration shadowing V), an
// `.extern` managed variable (separate compilation), other attributes beside `.managed`, a
// variable whose size is not known, `.address_size` other than 64.
//
// The rewrite runs before the kernel memory guard, which checks its output like any code (the
// slot is a module global; the accesses through the loaded address are checked like any).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ptx/ast.h"

namespace agileos::ptx {

struct ManagedVariable {
  std::string name;  // V, as the program registered it (__cudaRegisterManagedVar)
  std::string slot;  // the pointer slot's name (unique in the module)
  std::uint64_t bytes = 0;
};

struct ManagedRewriteResult {
  bool ok = false;
  std::string error;  // when !ok
  Module module;      // the input when it has no managed variables
  std::vector<ManagedVariable> variables;
};

// Whether any module-level declaration carries `.attribute(.managed)`.
bool hasManagedVariables(const Module& module);

ManagedRewriteResult rewriteManagedVariables(const Module& input);

}  // namespace agileos::ptx
