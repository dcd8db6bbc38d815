// Return edges under the kernel memory guard (ptx/guard.h): writes that could reach a
// saved return address.
//
// ptxas keeps a device function's return address in a register and, in a function that
// makes calls (or runs short of registers), saves it and the callee-saved registers in the
// function's stack frame in the thread's local memory (seen on sm_90: STL [R1+0x1c], R20
// beside a 16-byte local array, later RET through the reloaded register). A write past a
// local variable, or through a generic pointer into the local window, could overwrite such
// a slot and send the `ret` anywhere: into the middle of a guarded access, past its check,
// with registers the kernel chose. The frame layout is ptxas's, so the guard confines
// writes to what PTX declares. In every function that is not trusted code:
//   - `st.param` names a parameter declared in scope, with a constant offset inside it
//     (ptxas keeps call arguments and return values in registers or frame slots; ptxas 13.0
//     crashes on a store past one, or through a register).
// With `confineFuncWrites` (GuardOptions::confineFrameWrites, on by default):
//   - Every kernel computes a frame floor and every call hands it down (ptx/frame_floor.h):
//     at or above it lies only the kernel's own frame, which holds no return address.
//   - In a `.func` body, every write that can land in the local window (st.local, and every
//     write with no state space: st, atom, red, mbarrier, ...) either names one of the
//     function's own `.local` variables in scope plus a constant offset that keeps the
//     whole write inside it (no check needed), or is the last statement of a block of its
//     own that computes the address into a fresh register, and traps, under the write's
//     predicate and whatever the memory policy, when the address lies in the local window
//     (`isspacep.local`; always, for st.local), outside every `.local` variable of the
//     function in scope, and below the floor. The write then uses that register. A write
//     through a symbol that is neither such a variable nor a variable of another state
//     space is refused, as are `alloca` and `stacksave` in a .func (frame memory that no
//     declaration bounds) and `stackrestore` anywhere (it could put a callee's frame, with
//     its saved return address, at or above the floor).
//   - A kernel's own writes need no check: while its instructions run, every frame below
//     its own has been popped, and its own frame holds no return address.
// What it costs: a device function that is not inlined may write its own variables and the
// kernel's (a kernel handing its local array to a __noinline__ function works,
// tests/gpu/programs/generic_windows.cu), but not those of an intermediate device function
// (a pointer to a caller's local array passed further down traps); and a user function
// called from another module no longer links (its signature gained the floor).
// Trusted bodies are neither rewritten nor checked.
//
// findUnconfinedFrameWrites verifies a guarded module on its own: it repeats the static
// rules and, when confining, requires the exact check pattern, bound to the variables in
// scope at the write and to the floor, immediately before every other such write (or before
// the memory guard's block around it, whose access then uses the checked register), and the
// floor's plumbing (findMissingFrameFloor).
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
