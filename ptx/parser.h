// The PTX parser: text -> syntax tree (ast.h), via the tokenizer (lexer.h).
//
// Every construct is read by a rule of its own grammar, and anything a rule does not
// place is an error naming its line, never skipped over or kept as raw text: module
// directives (.version MAJOR.MINOR, .target, .address_size, .file, .pragma, .section
// with debug data only), variable declarations (linkage, state space, .align,
// .attribute, types, names with register ranges and array sizes, constant
// initializers), .entry and .func headers (return and parameter lists, performance
// directives) and prototypes, function bodies with nested { } scopes, labels,
// .loc/.pragma/declarations, call prototypes and target lists, and predicated
// instructions with their operands split at top-level commas and classified (register,
// immediate, symbol, address with its base and offset, vector, list, sink,
// expression). As for ptxas, a line break is whitespace: no directive ends at one.
//
// Input is untrusted: every loop is bounded by the token count, nesting is limited
// (kMaxNesting).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ptx/ast.h"

namespace agileos::ptx {

inline constexpr int kMaxNesting = 256;

struct ParseResult {
  Module module;
  bool ok = false;
  std::string error;  // "line N: ..." when !ok
};

ParseResult parse(std::string_view text);

// The value of a one-token immediate operand written as C writes an unsigned integer
// (decimal, 0x hex, leading-0 octal), as the guard emits its constants; nullopt otherwise.
// The checkers read the guard's constants back with it.
std::optional<std::uint64_t> immediateValue(const Operand& operand);

// Splits "ld.global.v4.f32" into "ld" and {".global", ".v4", ".f32"}.
void splitOpcode(const std::string& word, std::string* opcode, std::vector<std::string>* modifiers);

}  // namespace agileos::ptx
