#include "ptx/declarations.h"

#include <limits>

#include "ptx/memory_access.h"
#include "ptx/parser.h"

namespace agileos::ptx {
namespace {

bool isSpace(const Token& t) {
  for (const char* space : {".reg", ".local", ".shared", ".param", ".const", ".global"}) {
    if (t.is(TokenKind::kDirective, space)) return true;
  }
  return false;
}

std::optional<std::uint64_t> number(const Token& t) {
  if (t.kind != TokenKind::kNumber) return std::nullopt;
  Operand operand;
  operand.kind = Operand::Kind::kImmediate;
  operand.tokens.push_back(t);
  return immediateValue(operand);
}

// Reads `WORDS DECLARATOR {, DECLARATOR}` from tokens[k] on, for a declaration of `space`;
// stops at the first token that is not part of it (';', ')', ',' between parameters when
// `oneDeclarator`). Declarators of a parameter list take no initializer.
std::size_t readDeclarators(const std::vector<Token>& tokens, std::size_t k, const std::string& space,
                            bool oneDeclarator, std::vector<DeclaredName>* out) {
  std::uint32_t element = 0;
  std::uint32_t vector = 1;
  for (; k < tokens.size(); ++k) {
    const Token& t = tokens[k];
    if (t.is(TokenKind::kDirective, ".align")) {
      ++k;  // its number
    } else if (t.is(TokenKind::kDirective, ".attribute")) {
      while (k < tokens.size() && !tokens[k].isPunct(')')) ++k;
    } else if (t.kind == TokenKind::kDirective) {
      if (t.text == ".v2") vector = 2;
      if (t.text == ".v4") vector = 4;
      if (t.text == ".v8") vector = 8;
      if (const std::uint32_t b = typeBytes(t.text); b != 0) element = b;
    } else {
      break;
    }
  }
  while (k < tokens.size() && tokens[k].kind == TokenKind::kIdentifier) {
    DeclaredName d;
    d.name = tokens[k++].text;
    d.space = space;
    d.elementBytes = element * vector;
    if (k + 2 < tokens.size() && tokens[k].isPunct('<')) {
      const std::optional<std::uint64_t> n = number(tokens[k + 1]);
      d.registerRange =
          n && *n <= std::numeric_limits<std::uint32_t>::max() ? static_cast<std::uint32_t>(*n) : 0;
      k += 3;
    }
    while (k < tokens.size() && tokens[k].isPunct('[')) {
      const std::optional<std::uint64_t> n = k + 1 < tokens.size() ? number(tokens[k + 1]) : std::nullopt;
      if (!n || !d.elements || (*n != 0 && *d.elements > std::numeric_limits<std::uint64_t>::max() / *n)) {
        d.elements = std::nullopt;
      } else {
        d.elements = *d.elements * *n;
      }
      while (k < tokens.size() && !tokens[k].isPunct(']')) ++k;
      ++k;  // ']'
    }
    out->push_back(std::move(d));
    if (k < tokens.size() && tokens[k].isPunct('=')) {
      // An initializer: skip to the next top-level ',' or the end.
      int depth = 0;
      for (; k < tokens.size(); ++k) {
        if (tokens[k].isPunct('{') || tokens[k].isPunct('(')) ++depth;
        if (tokens[k].isPunct('}') || tokens[k].isPunct(')')) --depth;
        if (depth == 0 && (tokens[k].isPunct(',') || tokens[k].isPunct(';'))) break;
      }
    }
    if (oneDeclarator || k >= tokens.size() || !tokens[k].isPunct(',')) break;
    ++k;
  }
  return k;
}

}  // namespace

std::optional<std::uint64_t> DeclaredName::bytes() const {
  if (elementBytes == 0 || !elements) return std::nullopt;
  if (*elements > std::numeric_limits<std::uint64_t>::max() / elementBytes) return std::nullopt;
  return *elements * elementBytes;
}

std::vector<DeclaredName> readDeclaration(const Directive& directive) {
  std::vector<DeclaredName> out;
  const std::vector<Token>& tokens = directive.tokens;
  std::size_t k = 0;
  while (k < tokens.size() && !isSpace(tokens[k])) {
    if (tokens[k].kind != TokenKind::kDirective) return out;  // not a declaration
    ++k;                                                      // linkage
  }
  if (k >= tokens.size()) return out;
  readDeclarators(tokens, k + 1, tokens[k].text, false, &out);
  return out;
}

std::vector<DeclaredName> readParameters(const Function& function) {
  std::vector<DeclaredName> out;
  const std::vector<Token>& h = function.header;
  int depth = 0;
  for (std::size_t k = 0; k < h.size(); ++k) {
    if (h[k].isPunct('(')) ++depth;
    if (h[k].isPunct(')')) --depth;
    if (depth == 1 && (h[k].is(TokenKind::kDirective, ".param") || h[k].is(TokenKind::kDirective, ".reg"))) {
      k = readDeclarators(h, k + 1, h[k].text, true, &out);
      --k;  // the loop's ++k looks at the token that ended the parameter
    }
  }
  return out;
}

}  // namespace agileos::ptx
