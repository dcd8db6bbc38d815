#include "ptx/lexer.h"

#include <cctype>

namespace agileos::ptx {
namespace {

bool isIdentifierStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '$' || c == '%';
}
bool isIdentifierChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '$' || c == '.';
}
bool isDigit(char c) { return c >= '0' && c <= '9'; }

// "::" inside an opcode or a modifier (".shared::cta", "mbarrier::complete_tx::bytes") belongs
// to the word; a single ':' (after a label) does not.
bool doubleColonContinues(std::string_view text, std::size_t i) {
  return i + 2 < text.size() && text[i] == ':' && text[i + 1] == ':' &&
         (std::isalnum(static_cast<unsigned char>(text[i + 2])) != 0 || text[i + 2] == '_');
}
bool isHexDigit(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

constexpr std::string_view kPunctuation = "{}()[],;:@!<>+-|*/=~&^?";

}  // namespace

LexResult tokenize(std::string_view text) {
  LexResult result;
  std::size_t i = 0;
  std::uint32_t line = 1;
  bool space = false;
  bool newline = true;
  auto fail = [&](const std::string& what) {
    result.ok = false;
    result.error = "line " + std::to_string(line) + ": " + what;
    return result;
  };
  auto emit = [&](TokenKind kind, std::size_t begin, std::size_t end) {
    result.tokens.push_back(Token{kind, std::string(text.substr(begin, end - begin)), line, space, newline});
    space = false;
    newline = false;
  };
  while (i < text.size()) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      ++i;
      newline = true;
      space = false;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      space = true;
      ++i;
      continue;
    }
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      while (i < text.size() && text[i] != '\n') ++i;
      space = true;
      continue;
    }
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      const std::size_t end = text.find("*/", i + 2);
      if (end == std::string_view::npos) return fail("unterminated comment");
      for (std::size_t k = i; k < end; ++k) {
        if (text[k] == '\n') {
          ++line;
          newline = true;
        }
      }
      i = end + 2;
      space = true;
      continue;
    }
    const std::size_t begin = i;
    if (c == '"') {
      // A string holds printable ASCII only, with no backslash and no comment marker: then no
      // reading of escapes or comments (ptxas's or ours) can end it anywhere but at the next
      // '"', and it cannot hide the code that follows it.
      ++i;
      while (i < text.size() && text[i] != '"') {
        const char s = text[i];
        if (s < 0x20 || s > 0x7e || s == '\\')
          return fail("a string may hold only printable characters, no '\\'");
        if ((s == '/' || s == '*') && i + 1 < text.size() && (text[i + 1] == '/' || text[i + 1] == '*') &&
            !(s == '*' && text[i + 1] == '*')) {
          return fail("a string may not hold a comment marker");
        }
        ++i;
      }
      if (i >= text.size()) return fail("unterminated string");
      ++i;
      emit(TokenKind::kString, begin, i);
      continue;
    }
    if (c == '.' && i + 1 < text.size() &&
        (std::isalpha(static_cast<unsigned char>(text[i + 1])) != 0 || text[i + 1] == '_')) {
      ++i;
      while (i < text.size()) {
        if (std::isalnum(static_cast<unsigned char>(text[i])) != 0 || text[i] == '_' || text[i] == '$') {
          ++i;
        } else if (doubleColonContinues(text, i)) {
          i += 2;
        } else {
          break;
        }
      }
      emit(TokenKind::kDirective, begin, i);
      continue;
    }
    if (isIdentifierStart(c)) {
      ++i;
      while (i < text.size()) {
        if (isIdentifierChar(text[i])) {
          ++i;
        } else if (doubleColonContinues(text, i)) {
          i += 2;
        } else {
          break;
        }
      }
      emit(TokenKind::kIdentifier, begin, i);
      continue;
    }
    if (isDigit(c)) {
      // 0x.., 0b.., 0f........, 0d................, decimal (with fraction/exponent), U suffix.
      if (c == '0' && i + 1 < text.size() &&
          (text[i + 1] == 'f' || text[i + 1] == 'F' || text[i + 1] == 'd' || text[i + 1] == 'D' ||
           text[i + 1] == 'x' || text[i + 1] == 'X')) {
        i += 2;
        while (i < text.size() && isHexDigit(text[i])) ++i;
      } else if (c == '0' && i + 1 < text.size() && (text[i + 1] == 'b' || text[i + 1] == 'B')) {
        i += 2;
        while (i < text.size() && (text[i] == '0' || text[i] == '1')) ++i;
      } else {
        while (i < text.size() && isDigit(text[i])) ++i;
        if (i < text.size() && text[i] == '.') {
          ++i;
          while (i < text.size() && isDigit(text[i])) ++i;
        }
        if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
          std::size_t k = i + 1;
          if (k < text.size() && (text[k] == '+' || text[k] == '-')) ++k;
          if (k < text.size() && isDigit(text[k])) {
            i = k;
            while (i < text.size() && isDigit(text[i])) ++i;
          }
        }
      }
      if (i < text.size() && (text[i] == 'U' || text[i] == 'u')) ++i;
      emit(TokenKind::kNumber, begin, i);
      continue;
    }
    if (kPunctuation.find(c) != std::string_view::npos) {
      ++i;
      emit(TokenKind::kPunct, begin, i);
      continue;
    }
    return fail(std::string("unexpected character '") +
                (std::isprint(static_cast<unsigned char>(c))
                     ? std::string(1, c)
                     : "\\x" + std::to_string(static_cast<unsigned char>(c))) +
                "'");
  }
  return result;
}

}  // namespace agileos::ptx
