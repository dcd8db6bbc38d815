// The PTX printer: syntax tree (ast.h) -> the text the driver's JIT compiles.
//
// Everything is emitted from the tree in the printer's own layout; nothing of the
// source's layout (line breaks, comments, spacing) is copied. One statement per line,
// bodies indented by one tab per block level, an instruction as
// "[@p ]opcode.modifiers<TAB>operand, operand;", a function header on one line, a
// .section's items one per line, and inside a statement the spacing of spaceBetween()
// in printer.cpp. Output is deterministic (the compiled-module cache is keyed by a
// hash of it) and parses back to the same tree (ptx/emitted_check.h checks that
// before every JIT).
#pragma once

#include <string>

#include "ptx/ast.h"

namespace agileos::ptx {

std::string print(const Module& module);
std::string print(const Instruction& instruction);

}  // namespace agileos::ptx
