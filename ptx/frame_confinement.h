// Return edges under the kernel memory guard (ptx/guard.h): writes that could reach a
// saved return address.
//
// ptxas keeps a device function's return address in a register and, in a function that
// makes calls (or runs short of registers), saves it and the callee-saved registers in the
// function's stack frame in the thread's local memory (seen on sm_90: STL [R1+0x1c], R20
// beside a 16-byte local array, later RET through the reloaded register). A write past a
// local variable, or through a generic pointer into the local window, could overwrite such
// a slot and send the `ret` anywhere: into the middle of a guarded access, past its check,
// with registers the kernel chose. The frame layout is ptxas's, so the guard can only
// confine writes to what PTX declares. Always, in every function that is not trusted code:
//   - `st.param` names a parameter declared in scope, with a constant offset inside it
//     (ptxas keeps call arguments and return values in registers or frame slots; ptxas 13.0
//     crashes on a store past one, or through a register).
// With `confineFuncWrites` (GuardOptions::confineFrameWrites; off by default, see below):
//   - In a `.func` body, every write that can land in the local window (st.local, and every
//     write with no state space: st, atom, red, mbarrier, ...) either names one of the
//     function's own `.local` variables in scope plus a constant offset that keeps the
//     whole write inside it (no check needed), or is the last statement of a block of its
//     own that computes the address into a fresh register, and traps, under the write's
//     predicate and whatever the memory policy, when the address lies in the local window
//     (`isspacep.local`; always, for st.local) and outside every `.local` variable of the
//     function in scope. The write then uses that register. A write through a symbol that
//     is neither such a variable nor a variable of another state space is refused, as are
//     `alloca`, `stacksave` and `stackrestore` in a .func (they move the stack pointer or
//     make frame memory that no declaration bounds).
//   - A kernel (`.entry`) needs no check: while its own instructions run, every frame
//     below its own has been popped, and its own frame holds no return address.
// Why it is off by default: a device function that is not inlined and writes into its
// caller's local array through a pointer (tests/gpu/programs/generic_windows.cu: a kernel
// hands its local array to a __noinline__ function) traps, since PTX cannot name the
// caller's variables. Closing the gap compatibly needs the caller's bounds passed down (a
// hidden parameter of every user function) or a check of the compiled SASS.
// Trusted bodies are neither rewritten nor checked.
//
// findUnconfinedFrameWrites verifies a guarded module on its own: it repeats the static
// rules and, when confining, requires the exact check pattern, bound to the variables in
// scope at the write, immediately before every other such write (or before the memory
// guard's block around it, whose access then uses the checked register).
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include "ptx/ast.h"

namespace agileos::ptx {

struct FrameConfinementResult {
  bool ok = false;
  std::string error;  // why the module is refused ("line N: ...")
  std::size_t checkedWrites = 0;
};

// Rewrites `module` in place (left half rewritten when refused: discard it then).
// `registerPrefix` is fresh: no identifier of the module starts with it.
FrameConfinementResult confineFrameWrites(Module* module, const std::set<std::string>& trustedFunctions,
                                          const std::string& registerPrefix, bool confineFuncWrites);

// One line per violation ("line N: ..."); empty when every write is confined.
std::vector<std::string> findUnconfinedFrameWrites(const Module& module,
                                                   const std::set<std::string>& trustedFunctions,
                                                   const std::string& registerPrefix, bool confineFuncWrites);

}  // namespace agileos::ptx
