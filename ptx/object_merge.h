// Merging the PTX of several relocatable objects into one module: what nvlink does for the SASS of
// a separately compiled (-rdc) program, done on PTX, so that such a program's code can go through
// the guard as one module (worker/fatbin/relocatable_objects.h).
//
// Each object is nvcc -rdc PTX: its functions and variables are `.visible` (or `.weak`, for
// templates and inline functions every object that uses them defines), internal (no linkage:
// nvcc names them uniquely per file, `_ZN.._INTERNAL_<hash>_<file>...`), or `.extern`
// declarations of what another object (or the device runtime) defines. The merge keeps every
// object's items in object order, under one `.version` (the highest), `.target` and
// `.address_size` (which must agree), and resolves names as ptxas requires of one module:
//   - a symbol's first declaration carries the linkage of its definition (an `.extern`
//     prototype of a function another object defines becomes that definition's linkage; an
//     `.extern` variable another object defines is replaced by that definition, moved up);
//   - the first definition of a `.weak` symbol is kept; later definitions and later prototypes of
//     it are dropped (ptxas refuses a prototype after the definition);
//   - a name defined `.visible` twice, defined by two objects with different linkage, or used
//     internally by two objects is refused;
//   - `.extern` declarations nobody defines stay (the device runtime's functions: the JIT or the
//     worker defines them);
//   - with debug information in more than one object, `.file`, `.section` and `.loc` are dropped
//     (their file numbers would collide); the code is unchanged.
// Anything else it cannot place refuses the whole merge with a message; nothing is half merged.
// The merged module is parsed again by its user and checked like any other (the guard, then
// ptx::checkEmittedText); ptxas is the judge of the merge in tests/cpu/ptx/object_merge_test.cpp.
#pragma once

#include <string>
#include <vector>

#include "ptx/ast.h"

namespace agileos::ptx {

struct MergeResult {
  bool ok = false;
  std::string error;  // why, when !ok
  Module module;
};

// At least one object; one object comes back unchanged.
MergeResult mergeObjects(const std::vector<Module>& objects);

}  // namespace agileos::ptx
