// The PTX tokenizer: PTX text -> tokens, for the parser (parser.h).
//
// Token classes follow the PTX ISA's lexical rules: identifiers (which here may
// contain dots, so an opcode with its modifiers "ld.global.v4.f32" and a special
// register "%tid.x" are one token each, split later by the parser), dot-directives
// (".reg", ".u32", ".v4", ".global"), numbers (decimal, hex, octal, binary, 0f/0d
// hex floats, decimal floats, optional U suffix), strings, and one-character
// punctuation. Comments are dropped. Every token records whether whitespace
// preceded it and on which line it starts (for messages). As for ptxas, a line
// break is whitespace like any other: no grammar rule of the parser reads it, and
// the printer never copies the source's layout.
//
// Strings hold printable ASCII; a backslash escapes the next character. A string token's
// text is normalized to hold no backslash, no inner quote and no comment marker ("//",
// "/*", "*/"): whatever a consumer makes of escapes and comments, the printed string ends
// at its closing quote, so it cannot hide code from one reader and show it to another.
//
// Input is untrusted (the application's PTX): the lexer never reads past the end,
// and reports the first character it cannot classify instead of guessing.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace agileos::ptx {

enum class TokenKind : std::uint8_t {
  kIdentifier,  // [A-Za-z_$%][A-Za-z0-9_$.]*  (opcodes, registers, symbols, labels)
  kDirective,   // '.' followed by [A-Za-z0-9_$]+
  kNumber,
  kString,  // with its quotes, normalized (see above)
  kPunct,   // one character: { } ( ) [ ] , ; : @ ! < > + - | * / = ~ & ^ ? %
};

struct Token {
  TokenKind kind = TokenKind::kPunct;
  std::string text;
  std::uint32_t line = 0;      // 1-based
  bool spaceBefore = false;    // whitespace (or a comment) precedes it on the same line
  bool newlineBefore = false;  // a line break precedes it (presentation only: no rule reads it)

  bool is(TokenKind k, std::string_view t) const { return kind == k && text == t; }
  bool isPunct(char c) const { return kind == TokenKind::kPunct && text.size() == 1 && text[0] == c; }
  // Spacing is presentation, not structure: two tokens are equal if their kind and text are.
  bool operator==(const Token& other) const { return kind == other.kind && text == other.text; }
};

struct LexResult {
  std::vector<Token> tokens;
  bool ok = true;
  std::string error;  // "line N: ..." when !ok
};

LexResult tokenize(std::string_view text);

}  // namespace agileos::ptx
