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

// One pass over the text, one step per token class. Each lex* step starts at a character that
// begins its class, consumes the token and emits it; a step that cannot read the text records
// the error (fail) and returns false, and the pass stops there.
class Lexer {
 public:
  explicit Lexer(std::string_view text) : text_(text) {}

  LexResult run() {
    while (i_ < text_.size()) {
      if (skipBlank()) continue;
      if (startsComment()) {
        if (!skipComment()) return result_;
        continue;
      }
      const char c = text_[i_];
      bool ok = true;
      if (c == '"') {
        ok = lexString();
      } else if (c == '.' && i_ + 1 < text_.size() &&
                 (std::isalpha(static_cast<unsigned char>(text_[i_ + 1])) != 0 || text_[i_ + 1] == '_')) {
        lexWord(TokenKind::kDirective);
      } else if (isIdentifierStart(c)) {
        lexWord(TokenKind::kIdentifier);
      } else if (isDigit(c)) {
        lexNumber();
      } else if (kPunctuation.find(c) != std::string_view::npos) {
        emit(TokenKind::kPunct, i_, i_ + 1);
        ++i_;
      } else {
        ok = fail(std::string("unexpected character '") +
                  (std::isprint(static_cast<unsigned char>(c))
                       ? std::string(1, c)
                       : "\\x" + std::to_string(static_cast<unsigned char>(c))) +
                  "'");
      }
      if (!ok) return result_;
    }
    return result_;
  }

 private:
  bool fail(const std::string& what) {
    result_.ok = false;
    result_.error = "line " + std::to_string(line_) + ": " + what;
    return false;
  }

  void emit(TokenKind kind, std::size_t begin, std::size_t end) {
    result_.tokens.push_back(
        Token{kind, std::string(text_.substr(begin, end - begin)), line_, space_, newline_});
    space_ = false;
    newline_ = false;
  }

  // A line break or other whitespace: consumed, and remembered for the next token.
  bool skipBlank() {
    const char c = text_[i_];
    if (c == '\n') {
      ++line_;
      ++i_;
      newline_ = true;
      space_ = false;
      return true;
    }
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      space_ = true;
      ++i_;
      return true;
    }
    return false;
  }

  bool startsComment() const {
    return text_[i_] == '/' && i_ + 1 < text_.size() && (text_[i_ + 1] == '/' || text_[i_ + 1] == '*');
  }

  // "// ..." to the end of the line (the line break stays), or "/* ... */" (counting its line
  // breaks). A comment is whitespace.
  bool skipComment() {
    if (text_[i_ + 1] == '/') {
      while (i_ < text_.size() && text_[i_] != '\n') ++i_;
      space_ = true;
      return true;
    }
    const std::size_t end = text_.find("*/", i_ + 2);
    if (end == std::string_view::npos) return fail("unterminated comment");
    for (std::size_t k = i_; k < end; ++k) {
      if (text_[k] == '\n') {
        ++line_;
        newline_ = true;
      }
    }
    i_ = end + 2;
    space_ = true;
    return true;
  }

  // A string holds printable ASCII only; a backslash escapes the character after it, as in C
  // (nvcc 4's PTX names Windows files that way: "C:/VC/\INCLUDE\crtdefs.h"). The token's text is
  // normalized so that no reader can end it anywhere but at its closing quote: each escape
  // becomes '/' followed by the escaped character ('\'' for a quote, '/' for a backslash), and of
  // a "//", "/*" or "* /" pair the character that makes it a marker becomes '_'. The printer
  // copies token texts, so what ptxas reads is the normalized string, whatever it would have made
  // of the escapes and markers in the input. (Strings are file names and pragmas; a file name's
  // spelling changes nothing the GPU runs.)
  bool lexString() {
    ++i_;
    std::string text = "\"";
    while (i_ < text_.size() && text_[i_] != '"') {
      const char s = text_[i_];
      if (s < 0x20 || s > 0x7e) return fail("a string may hold only printable characters");
      char out[2] = {s, 0};
      std::size_t count = 1;
      if (s == '\\') {
        if (i_ + 1 >= text_.size() || text_[i_ + 1] < 0x20 || text_[i_ + 1] > 0x7e)
          return fail("a '\\' in a string escapes no printable character");
        const char escaped = text_[++i_];
        out[0] = '/';
        out[1] = escaped == '"' ? '\'' : escaped == '\\' ? '/' : escaped;
        count = 2;
      }
      for (std::size_t k = 0; k < count; ++k) {
        char c = out[k];
        const char previous = text.back();
        if ((previous == '/' && (c == '/' || c == '*')) || (previous == '*' && c == '/')) c = '_';
        text += c;
      }
      ++i_;
    }
    if (i_ >= text_.size()) return fail("unterminated string");
    ++i_;
    text += '"';
    result_.tokens.push_back(Token{TokenKind::kString, std::move(text), line_, space_, newline_});
    space_ = false;
    newline_ = false;
    return true;
  }

  // A directive (".reg", ".shared::cta") or an identifier ("ld.global.v4.f32", "%tid.x"): the
  // first character is already known to start one; "::" inside continues the word.
  void lexWord(TokenKind kind) {
    const std::size_t begin = i_++;
    const auto continues = [&](char c) {
      if (kind == TokenKind::kIdentifier) return isIdentifierChar(c);
      return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '$';
    };
    while (i_ < text_.size()) {
      if (continues(text_[i_])) {
        ++i_;
      } else if (doubleColonContinues(text_, i_)) {
        i_ += 2;
      } else {
        break;
      }
    }
    emit(kind, begin, i_);
  }

  void skipDigits() {
    while (i_ < text_.size() && isDigit(text_[i_])) ++i_;
  }

  // 0x.., 0b.., 0f........, 0d................, decimal (with fraction/exponent), U suffix.
  void lexNumber() {
    const std::size_t begin = i_;
    const char next = i_ + 1 < text_.size() ? text_[i_ + 1] : '\0';
    if (text_[i_] == '0' &&
        (next == 'f' || next == 'F' || next == 'd' || next == 'D' || next == 'x' || next == 'X')) {
      i_ += 2;
      while (i_ < text_.size() && isHexDigit(text_[i_])) ++i_;
    } else if (text_[i_] == '0' && (next == 'b' || next == 'B')) {
      i_ += 2;
      while (i_ < text_.size() && (text_[i_] == '0' || text_[i_] == '1')) ++i_;
    } else {
      skipDigits();
      if (i_ < text_.size() && text_[i_] == '.') {
        ++i_;
        skipDigits();
      }
      if (i_ < text_.size() && (text_[i_] == 'e' || text_[i_] == 'E')) {
        std::size_t k = i_ + 1;
        if (k < text_.size() && (text_[k] == '+' || text_[k] == '-')) ++k;
        if (k < text_.size() && isDigit(text_[k])) {
          i_ = k;
          skipDigits();
        }
      }
    }
    if (i_ < text_.size() && (text_[i_] == 'U' || text_[i_] == 'u')) ++i_;
    emit(TokenKind::kNumber, begin, i_);
  }

  std::string_view text_;
  std::size_t i_ = 0;
  std::uint32_t line_ = 1;
  bool space_ = false;   // whitespace (or a comment) since the last token, on this line
  bool newline_ = true;  // a line break since the last token (the first token starts a line)
  LexResult result_;
};

}  // namespace

LexResult tokenize(std::string_view text) { return Lexer(text).run(); }

}  // namespace agileos::ptx
