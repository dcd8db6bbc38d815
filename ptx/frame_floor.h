// The frame floor (ptx/frame_confinement.h): how a device function learns which local
// addresses belong to the kernel's own frame, so that it may write there (a kernel hands a
// device function its local array) while every frame that holds a saved return address
// stays out of reach.
//
// The stack grows down and a kernel's frame is the top one: every device-function frame,
// with its saved return address, lies below the lowest address of the kernel's local
// variables. So the guard gives each kernel a floor (the lowest address of its top-level
// .local variables, or ~0 when it has none) and hands it down every call:
//   - every user device function (a .func with a body, not trusted module code; its
//     declarations too) gets one more parameter, `.param .b64 <prefix>_fp`, and every
//     `.callprototype` one more `.param .b64 _` (indirect calls reach user functions only,
//     ptx/control_flow.h);
//   - each such body starts by loading it into `<prefix>_floor` and passes that on;
//   - a kernel computes its floor right before each call into `<prefix>_fk<N>` (mov of its
//     first leading .local variable, then min.u64 with each other one), never keeping it in
//     a register across its own code: a spilled floor would sit in the kernel's frame, which
//     the callees may write;
//   - every call to a user function, direct or through a register, passes the floor in a
//     parameter `<prefix>_faN` declared and stored right before it (before the control-flow
//     check block of an indirect call).
// A write is then allowed at or above the floor (the kernel's frame, or above the stack),
// or inside the writing function's own variables. Names with the guard's fresh prefix
// cannot be written by the program. A user function defined here and called from another
// module (separate compilation) no longer links: its signature changed (fail closed).
//
// findMissingFrameFloor verifies the plumbing on its own: the parameter on every user
// function's header, the exact prologue of each device function, the floor passed at every
// call (in a kernel, computed by the exact sequence right before it), and no other write of
// `<prefix>_floor`.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "ptx/ast.h"

namespace agileos::ptx {

std::string frameFloorRegister(const std::string& registerPrefix);

// User device functions: .func names with a body in `module` that are not trusted.
std::set<std::string> frameFloorFunctions(const Module& module,
                                          const std::set<std::string>& trustedFunctions);

// Adds the floor to `module` (left half rewritten when it fails: discard it then).
bool addFrameFloor(Module* module, const std::set<std::string>& trustedFunctions,
                   const std::string& registerPrefix, std::string* error);

// One line per missing or altered piece of the plumbing.
std::vector<std::string> findMissingFrameFloor(const Module& module,
                                               const std::set<std::string>& trustedFunctions,
                                               const std::string& registerPrefix);

}  // namespace agileos::ptx
