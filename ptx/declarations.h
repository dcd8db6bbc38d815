// What a declaration declares, read back from the tokens the parser kept (parser.h checked
// their grammar): the names, their state space, element size and array extent. The guard
// needs them to bound writes to a function's own variables (ptx/frame_confinement.h) and
// to know the width of an address register.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ptx/ast.h"

namespace agileos::ptx {

struct DeclaredName {
  std::string name;
  std::string space;                // ".reg", ".local", ".param", ".shared", ".global", ".const"
  std::uint32_t elementBytes = 0;   // the type's size times the vector length; 0 for .pred or none
  std::uint32_t registerRange = 0;  // N of `name<N>` (declares name0 .. name<N-1>); 0 if none
  // The product of the array sizes (1 for a scalar); nullopt when a size is left out (`[]`)
  // or the product overflows.
  std::optional<std::uint64_t> elements = 1;

  // The object's size in bytes, when both the element size and the extent are known.
  std::optional<std::uint64_t> bytes() const;
};

// The names a declaration statement or module-level declaration declares (empty for any
// other directive).
std::vector<DeclaredName> readDeclaration(const Directive& directive);

// The parameters of a function header, return parameters first (their state space is
// ".param" or ".reg").
std::vector<DeclaredName> readParameters(const Function& function);

}  // namespace agileos::ptx
