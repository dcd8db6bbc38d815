// Tensor maps (issue 17): the guard's pass for copies through a CUtensorMap.
//
// A tensor copy (cp.async.bulk.tensor, cp.reduce.async.bulk.tensor,
// cp.async.bulk.prefetch.tensor, prefetch.tensormap) reaches global memory through the 128 bytes
// of its map, not through an address the memory guard could check: the copy engine reads the
// map's base, dimensions and strides and touches only elements inside them. So the guard makes
// sure the map is one the worker issued, in two steps:
//   - here: every tensor copy's map is the address of a parameter of the kernel it runs in,
//     declared as `.param .align A .b8 name[128]` with A >= 64 (what `const __grid_constant__
//     CUtensorMap` compiles to). nvcc writes `mov.b64 %a, name; cvta.param.u64 %g, %a;` and
//     names %g in the copy; the pass resolves the copy's register to the parameter through
//     every definition of the two registers in the function (each must be exactly that form, of
//     one parameter) and then rewrites the copy into a scope of its own that computes the
//     address afresh from the parameter's name, with fresh registers:
//         { .reg .b64 P_tpN; .reg .b64 P_tgN; mov.b64 P_tpN, name; cvta.param.u64 P_tgN, P_tpN;
//           <the copy, its map operand [P_tgN, {...}]> }
//     so the map the copy reads is that parameter whatever the rest of the kernel does (a
//     definition the resolution missed, or a path that reaches the copy without one, can only
//     make the program read another of its own parameters). Anything else is refused with the
//     line: a map in a register loaded from memory or computed, a map in a device function
//     (.func), a parameter of another size. tensormap.replace and tensormap.cp_fenceproxy
//     (a kernel building or changing a map) are refused by the classifier (memory_access.h).
//     Kernel parameters cannot be written by the kernel (ptxas refuses st.param to one).
//   - in the worker: at every launch of such a kernel, the bytes of each of these parameters
//     must equal a map the worker issued to the client over one live allocation of its own
//     (worker/tensor_map_table.h); the result here says which parameters those are.
// findUncheckedTensorMaps verifies the rewritten form on its own, on any tree (the emitted text
// is parsed again and checked: ptx/emitted_check.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "ptx/ast.h"

namespace agileos::ptx {

// The parameters of one kernel that its tensor copies use as maps: indices in the kernel's
// parameter list (the driver's cuFuncGetParamInfo order), ascending, each once.
struct KernelTensorMaps {
  std::string kernel;
  std::vector<std::uint32_t> params;
  bool operator==(const KernelTensorMaps&) const = default;
};

struct TensorMapResult {
  bool ok = false;
  std::string error;                      // with the line, when !ok
  std::size_t rewrittenCopies = 0;        // tensor copies rewritten
  std::vector<KernelTensorMaps> kernels;  // only kernels with at least one tensor copy
};

// Rewrites every tensor copy of every untrusted body as above; registers start with `prefix`.
TensorMapResult guardTensorMaps(Module* module, const std::set<std::string>& trustedFunctions,
                                const std::string& prefix);

// One line per tensor copy that is not the last statement of the scope above, with a
// 128-byte, 64-aligned parameter of its own kernel (empty: every map is a kernel parameter).
std::vector<std::string> findUncheckedTensorMaps(const Module& module,
                                                 const std::set<std::string>& trustedFunctions,
                                                 const std::string& prefix);

// The tensor-map parameters of each kernel of a module that passed findUncheckedTensorMaps.
std::vector<KernelTensorMaps> tensorMapParameters(const Module& module, const std::string& prefix);

}  // namespace agileos::ptx
