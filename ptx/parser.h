// The PTX parser: text -> syntax tree (ast.h), via the tokenizer (lexer.h).
//
// It understands the module structure (line-terminated directives such as
// .version, .target, .address_size, .file, .loc and .section blocks; declarations
// ending in ';', with nested initializer braces; .entry and .func definitions and
// prototypes), function bodies with nested { } scopes, labels, predicated
// instructions with their opcode, modifiers and operands split at top-level commas,
// and classifies each operand (register, immediate, symbol, address with its base
// and offset, vector, list, sink, expression).
//
// Input is untrusted: every loop is bounded by the token count, nesting is limited
// (kMaxNesting), and anything the grammar does not allow is an error naming its
// line, never a guess.
#pragma once

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

// Splits "ld.global.v4.f32" into "ld" and {".global", ".v4", ".f32"}.
void splitOpcode(const std::string& word, std::string* opcode, std::vector<std::string>* modifiers);

}  // namespace agileos::ptx
