#include "ptx/system_atomics.h"

#include <algorithm>

#include "ptx/lexer.h"

namespace agileos::ptx {
namespace {

bool isSystemAtomic(const Token& token) {
  if (token.kind != TokenKind::kIdentifier) return false;
  std::string_view text = token.text;
  const std::size_t dot = text.find('.');
  if (dot == std::string_view::npos) return false;
  const std::string_view opcode = text.substr(0, dot);
  if (opcode != "atom" && opcode != "red") return false;
  std::string_view rest = text.substr(dot + 1);
  while (!rest.empty()) {
    const std::size_t next = rest.find('.');
    if (rest.substr(0, next) == "sys") return true;
    if (next == std::string_view::npos) break;
    rest = rest.substr(next + 1);
  }
  return false;
}

}  // namespace

std::optional<std::vector<std::string>> kernelsWithSystemAtomics(std::string_view ptx) {
  // Most modules have none: no lexing for them.
  if (ptx.find(".sys") == std::string_view::npos) return std::vector<std::string>{};
  const LexResult lexed = tokenize(ptx);
  if (!lexed.ok) return std::nullopt;
  std::vector<std::string> entries, marked;
  bool inFunction = false;  // a .func's body marks every entry
  // The function being declared: its kind, its name (the first identifier outside parentheses),
  // and whether its body is open.
  bool declaring = false, declaringEntry = false;
  std::string name;
  int braces = 0, parens = 0;
  bool bodyIsEntry = false, funcUses = false;
  std::string bodyName;
  for (const Token& token : lexed.tokens) {
    if (braces == 0 && token.kind == TokenKind::kDirective &&
        (token.text == ".entry" || token.text == ".func")) {
      declaring = true;
      declaringEntry = token.text == ".entry";
      name.clear();
      parens = 0;
      continue;
    }
    if (token.isPunct('(')) ++parens;
    if (token.isPunct(')') && parens > 0) --parens;
    if (declaring && name.empty() && parens == 0 && token.kind == TokenKind::kIdentifier) name = token.text;
    if (declaring && braces == 0 && parens == 0 && token.isPunct(';')) declaring = false;  // a prototype
    if (token.isPunct('{')) {
      if (braces == 0 && declaring) {
        inFunction = true;
        bodyIsEntry = declaringEntry;
        bodyName = name;
        if (declaringEntry) entries.push_back(name);
        declaring = false;
      }
      ++braces;
      continue;
    }
    if (token.isPunct('}')) {
      if (braces > 0 && --braces == 0) inFunction = false;
      continue;
    }
    if (!inFunction || !isSystemAtomic(token)) continue;
    if (!bodyIsEntry) {
      funcUses = true;
    } else if (std::find(marked.begin(), marked.end(), bodyName) == marked.end()) {
      marked.push_back(bodyName);
    }
  }
  return funcUses ? entries : marked;
}

}  // namespace agileos::ptx
