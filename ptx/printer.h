// The PTX printer: syntax tree (ast.h) -> text that ptxas accepts and that parses
// back to the same tree.
//
// Output is canonical and deterministic (the guard's compiled-module cache is keyed by
// a hash of it): one statement per line, bodies indented by one tab per block level,
// an instruction as "[@p ]opcode.modifiers<TAB>operand, operand;", and inside a
// statement one space wherever the source had whitespace. Line breaks inside
// top-level directives (the lines of a .section block) are kept, since they end
// statements there.
#pragma once

#include <string>

#include "ptx/ast.h"

namespace agileos::ptx {

std::string print(const Module& module);
std::string print(const Instruction& instruction);

}  // namespace agileos::ptx
