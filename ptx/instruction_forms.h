// Reading instructions back, for the guard's independent checkers (guard.cpp, control_flow.cpp,
// frame_confinement.cpp, frame_floor.cpp): the forms of the operands and instructions the
// guard emits, matched exactly. One copy, so the checkers cannot drift apart.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <set>
#include <sstream>
#include <string>

#include "ptx/ast.h"

namespace agileos::ptx {

// A register operand's name ("" for anything else).
inline std::string registerName(const Operand& operand) {
  return operand.kind == Operand::Kind::kRegister && operand.tokens.size() == 1 ? operand.tokens[0].text
                                                                                : std::string();
}

// A register or symbol operand's one name ("" for anything else). PTX lets a program name a
// register without '%' (the parser then sees a symbol): how a user's predicate is referred to.
inline std::string nameOf(const Operand& operand) {
  const bool named = operand.kind == Operand::Kind::kRegister || operand.kind == Operand::Kind::kSymbol;
  return named && operand.tokens.size() == 1 ? operand.tokens[0].text : std::string();
}

// Unpredicated `opcode.modifiers` with exactly `operands` operands.
inline bool isForm(const Instruction& i, const char* opcode, std::initializer_list<const char*> modifiers,
                   std::size_t operands) {
  return !i.predicate && i.opcode == opcode && i.operands.size() == operands &&
         std::equal(i.modifiers.begin(), i.modifiers.end(), modifiers.begin(), modifiers.end());
}

// The register of an address operand of the form `[reg]` (offset 0), else "".
inline std::string plainRegisterAddress(const Operand& operand) {
  if (!operand.address || operand.address->offset != 0 || operand.address->base.empty() ||
      operand.address->base[0] != '%') {
    return {};
  }
  return operand.address->base;
}

// A body the guard leaves alone: trusted protected-module code (a .func the link filled,
// GuardOptions::trustedFunctions). Every .entry, whatever its name, is user code.
inline bool trustedBody(const Function& function, const std::set<std::string>& trusted) {
  return function.kind == Function::Kind::kFunc && trusted.count(function.name) != 0;
}

// An immediate as the guard writes it (0x...).
inline std::string hexImmediate(std::uint64_t value) {
  std::ostringstream out;
  out << "0x" << std::hex << value;
  return out.str();
}

}  // namespace agileos::ptx
