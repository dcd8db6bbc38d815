// Device-side graph control in AgileOS's graphs: the definition of cudaGraphSetConditional.
//
// A kernel of a conditional graph sets its condition with cudaGraphSetConditional(handle, value).
// nvcc declares it `.extern .func cudaGraphSetConditional(.param .b64, .param .b32);` and the
// driver's JIT linker defines it for the driver's own graphs. AgileOS's graphs are the client's
// (client/session/graph.h): a conditional handle is the device address of a 32-bit word of the
// client's memory, which the client's graph executor reads at the conditional node. So the worker
// defines the function in the module itself, before the guard (which then checks it like any code
// of the module: the store reaches only what the module's other stores may):
//
//     .func cudaGraphSetConditional(.param .b64 handle, .param .b32 value)
//     { ld.param.u64 %h, [handle]; ld.param.u32 %v, [value]; st.global.u32 [%h], %v; ret; }
//
// Only a body-less declaration of exactly that signature is replaced. A module that defines the
// name itself keeps its function (its own code, guarded like the rest); one that declares it any
// other way is refused: the driver would link its own definition, code the guard never sees, which
// stores through a handle the program chose.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "ptx/ast.h"

namespace agileos::ptx {

inline constexpr std::string_view kGraphSetConditional = "cudaGraphSetConditional";

struct GraphConditionalsResult {
  bool ok = false;
  std::string error;     // when !ok
  Module module;         // the input when it declares no cudaGraphSetConditional
  bool defined = false;  // whether the declaration was replaced by the definition
};

GraphConditionalsResult defineGraphConditionals(const Module& input);

}  // namespace agileos::ptx
