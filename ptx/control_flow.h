// Control flow under the kernel memory guard (ptx/guard.h): a kernel may transfer control
// only to the entry of a function of its own module, or to a label its function lists.
//
// A function pointer is a code offset: a call through a register to a function's address
// plus a few bytes runs the rest of that function past its first instructions (a trusted
// module function past its argument checks; a guarded function past a check, with
// registers the caller chose). So, in every function that is not trusted module code:
//   - Function names. Every place that names a function, other than the callee of a
//     direct `call`, takes its address (mov, cvta, add, any other operand, an initializer
//     such as a vtable `= {0, 0, f}`, a `.calltargets` list). The address of a trusted
//     function (GuardOptions::trustedFunctions), of a function named `__agileos_*`, or of
//     a `.entry` (a kernel is not a call target) may not be taken: the module is refused,
//     with the line. One exception, in module-level variable initializers only: a trusted
//     function other than `__agileos_*` (a placeholder that the link replaced) becomes 0.
//     The placeholder table of a module's public header (AGILEOS_MODULE_PLACEHOLDER_TABLE)
//     lists them there only so that nvcc keeps their signatures; so no trusted code
//     address is left in memory the client can read. A direct call may reach a
//     placeholder, never a `__agileos_*` function: those are reachable only through the
//     direct calls the link placed in trusted bodies. A local name (register, variable,
//     parameter, label) that is also a function's name is refused, since it would shadow
//     the function in the checks below.
//   - Indirect calls (`call` through a register, with a `.callprototype` or `.calltargets`
//     operand, predicated or not): the block immediately before the call checks, under
//     the call's predicate, that the register holds the address of one of the module's
//     own address-taken functions (of those its `.calltargets` list names, if it names
//     one: calling anything else is undefined in PTX), and traps otherwise, whatever the
//     memory policy (a wild call is not an access that can be redirected). Where nothing
//     may be called, a plain `trap` under the call's predicate. At most
//     kMaxIndirectTargets functions and kMaxTargetComparisons comparisons per module.
//   - Indexed branches (`brx.idx index, list`, to one of the labels of a `.branchtargets`
//     list; an index past its end is undefined in PTX): the block immediately before the
//     branch traps, under the branch's predicate, if the index is not below the length.
//   - `bra`, `ret`, `exit` and direct `call` are left as they are. A `ret` goes where the
//     return address ptxas may have saved in the frame says; ptx/frame_confinement.h keeps
//     the kernel's writes away from those slots.
// The checks use registers named with the guard's fresh prefix, declared in their block.
// Trusted bodies are neither rewritten nor checked.
//
// findUncheckedControlFlow verifies a guarded module on its own: it repeats the name rules
// and requires the exact check pattern before every indirect call and brx.idx, with
// comparisons only against functions that may be called indirectly.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include "ptx/ast.h"

namespace agileos::ptx {

inline constexpr std::size_t kMaxIndirectTargets = 4096;
inline constexpr std::size_t kMaxTargetComparisons = std::size_t{1} << 22;

struct ControlFlowResult {
  bool ok = false;
  std::string error;  // why the module is refused ("line N: ..." where there is a line)
  std::size_t checkedCalls = 0;
  std::size_t checkedBranches = 0;
  std::size_t neutralisedInitializers = 0;  // placeholder addresses set to 0
};

// Rewrites `module` in place (left half rewritten when refused: discard it then).
// `registerPrefix` is fresh: no identifier of the module starts with it.
ControlFlowResult guardControlFlow(Module* module, const std::set<std::string>& trustedFunctions,
                                   const std::string& registerPrefix);

// One line per violation ("line N: ..."); empty when every indirect transfer is checked
// and no forbidden function is named.
std::vector<std::string> findUncheckedControlFlow(const Module& module,
                                                  const std::set<std::string>& trustedFunctions,
                                                  const std::string& registerPrefix);

}  // namespace agileos::ptx
