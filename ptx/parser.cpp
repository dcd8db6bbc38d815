#include "ptx/parser.h"

#include <cerrno>
#include <cstdlib>
#include <limits>

namespace agileos::ptx {
namespace {

// Directives that end at the end of their line rather than at a ';'.
bool isLineTerminated(const std::string& name) {
  return name == ".version" || name == ".target" || name == ".address_size" || name == ".file" ||
         name == ".loc";
}

bool isOpening(const Token& t) { return t.isPunct('(') || t.isPunct('[') || t.isPunct('{'); }
bool isClosing(const Token& t) { return t.isPunct(')') || t.isPunct(']') || t.isPunct('}'); }

// Parses a PTX integer literal (decimal, 0x hex, 0b binary, leading 0 octal, optional U).
std::optional<std::int64_t> integerValue(const Token& token) {
  if (token.kind != TokenKind::kNumber) return std::nullopt;
  std::string text = token.text;
  if (!text.empty() && (text.back() == 'U' || text.back() == 'u')) text.pop_back();
  if (text.size() > 1 && (text[1] == 'f' || text[1] == 'F' || text[1] == 'd' || text[1] == 'D'))
    return std::nullopt;
  if (text.find_first_of(".eE") != std::string::npos &&
      !(text.size() > 1 && (text[1] == 'x' || text[1] == 'X'))) {
    return std::nullopt;
  }
  int base = 10;
  std::size_t start = 0;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    start = 2;
  } else if (text.size() > 2 && text[0] == '0' && (text[1] == 'b' || text[1] == 'B')) {
    base = 2;
    start = 2;
  } else if (text.size() > 1 && text[0] == '0') {
    base = 8;
    start = 1;
  }
  errno = 0;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text.c_str() + start, &end, base);
  if (errno != 0 || end == nullptr || *end != '\0' || end == text.c_str() + start) return std::nullopt;
  if (value > static_cast<unsigned long long>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
  return static_cast<std::int64_t>(value);
}

// The simple address forms: [base], [base+imm], [base+-imm], [base-imm], [imm].
std::optional<AddressForm> addressForm(const std::vector<Token>& inner) {
  AddressForm form;
  std::size_t i = 0;
  if (i < inner.size() && inner[i].kind == TokenKind::kIdentifier) {
    form.base = inner[i].text;
    ++i;
    if (i == inner.size()) return form;
    bool negative = false;
    if (inner[i].isPunct('+')) {
      ++i;
      if (i < inner.size() && inner[i].isPunct('-')) {
        negative = true;
        ++i;
      }
    } else if (inner[i].isPunct('-')) {
      negative = true;
      ++i;
    } else {
      return std::nullopt;
    }
    if (i + 1 != inner.size()) return std::nullopt;
    const auto value = integerValue(inner[i]);
    if (!value) return std::nullopt;
    form.offset = negative ? -*value : *value;
    return form;
  }
  bool negative = false;
  if (i < inner.size() && inner[i].isPunct('-')) {
    negative = true;
    ++i;
  }
  if (i + 1 != inner.size()) return std::nullopt;
  const auto value = integerValue(inner[i]);
  if (!value) return std::nullopt;
  form.offset = negative ? -*value : *value;
  return form;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  ParseResult run() {
    ParseResult result;
    while (ok_ && !atEnd()) {
      TopLevel item;
      if (!parseTopLevel(&item)) break;
      result.module.items.push_back(std::move(item));
    }
    result.ok = ok_;
    result.error = error_;
    return result;
  }

 private:
  bool atEnd() const { return pos_ >= tokens_.size(); }
  const Token& peek(std::size_t ahead = 0) const {
    static const Token kEnd{TokenKind::kPunct, "", 0, false, true};
    return pos_ + ahead < tokens_.size() ? tokens_[pos_ + ahead] : kEnd;
  }
  bool fail(const std::string& what) {
    if (ok_) {
      ok_ = false;
      const std::uint32_t line = atEnd() ? (tokens_.empty() ? 0 : tokens_.back().line) : peek().line;
      error_ = "line " + std::to_string(line) + ": " + what;
    }
    return false;
  }

  // Tokens of a line-terminated directive: the name and every later token on its line.
  Directive lineDirective() {
    Directive directive;
    directive.name = peek().text;
    directive.tokens.push_back(tokens_[pos_++]);
    while (!atEnd() && !peek().newlineBefore) directive.tokens.push_back(tokens_[pos_++]);
    return directive;
  }

  // Tokens up to and including the first ';' at bracket depth 0 (or, with `block`, through
  // the '}' that closes the first brace group opened at depth 0, for .section).
  bool collectUntilEnd(Directive* directive, bool blockEnds) {
    int depth = 0;
    while (!atEnd()) {
      const Token& t = peek();
      if (isOpening(t) && ++depth > kMaxNesting) return fail("nesting too deep");
      if (isClosing(t) && --depth < 0) return fail("unbalanced '" + t.text + "'");
      directive->tokens.push_back(tokens_[pos_++]);
      if (depth == 0 && (t.isPunct(';') || (blockEnds && t.isPunct('}')))) return true;
    }
    return fail("'" + directive->name + "' is not terminated");
  }

  // True if the tokens from here to the first ';' or '{' at depth 0 contain .entry or .func.
  bool startsFunction() const {
    int depth = 0;
    for (std::size_t k = pos_; k < tokens_.size(); ++k) {
      const Token& t = tokens_[k];
      if (depth == 0 && (t.is(TokenKind::kDirective, ".entry") || t.is(TokenKind::kDirective, ".func")))
        return true;
      if (depth == 0 && (t.isPunct(';') || t.isPunct('{'))) return false;
      if (t.isPunct('(') || t.isPunct('[')) ++depth;
      if (t.isPunct(')') || t.isPunct(']')) --depth;
    }
    return false;
  }

  bool parseTopLevel(TopLevel* item) {
    const Token& t = peek();
    if (t.kind != TokenKind::kDirective)
      return fail("expected a directive at module level, found '" + t.text + "'");
    if (isLineTerminated(t.text)) {
      item->kind = TopLevel::Kind::kDirective;
      item->directive = lineDirective();
      return true;
    }
    if (t.text == ".section") {
      item->kind = TopLevel::Kind::kDirective;
      item->directive.name = t.text;
      return collectUntilEnd(&item->directive, true);
    }
    if (startsFunction()) {
      item->kind = TopLevel::Kind::kFunction;
      return parseFunction(&item->function);
    }
    item->kind = TopLevel::Kind::kDirective;
    item->directive.name = t.text;
    return collectUntilEnd(&item->directive, false);
  }

  bool parseFunction(Function* function) {
    int depth = 0;
    bool named = false;
    bool expectName = false;
    while (!atEnd()) {
      const Token& t = peek();
      if (depth == 0 && t.isPunct('{')) break;
      if (t.isPunct('(') || t.isPunct('[')) ++depth;
      if ((t.isPunct(')') || t.isPunct(']')) && --depth < 0)
        return fail("unbalanced '" + t.text + "' in a function header");
      if (depth == 0 && t.is(TokenKind::kDirective, ".entry")) {
        function->kind = Function::Kind::kEntry;
        expectName = true;
      } else if (depth == 0 && t.is(TokenKind::kDirective, ".func")) {
        function->kind = Function::Kind::kFunc;
        expectName = true;
      } else if (expectName && depth == 0 && t.kind == TokenKind::kIdentifier) {
        function->name = t.text;
        named = true;
        expectName = false;
      }
      function->header.push_back(tokens_[pos_++]);
      if (depth == 0 && t.isPunct(';')) {
        if (!named) return fail("a function declaration without a name");
        return true;  // a prototype
      }
    }
    if (!named) return fail("a function without a name");
    if (atEnd()) return fail("function '" + function->name + "' has no body and no ';'");
    ++pos_;  // '{'
    function->hasBody = true;
    return parseBlock(&function->body, 1);
  }

  // Statements until the '}' that closes the block (consumed).
  bool parseBlock(std::vector<Statement>* out, int depth) {
    if (depth > kMaxNesting) return fail("blocks nested too deep");
    while (!atEnd()) {
      const Token& t = peek();
      if (t.isPunct('}')) {
        ++pos_;
        return true;
      }
      Statement statement;
      if (t.isPunct('{')) {
        ++pos_;
        statement.kind = Statement::Kind::kBlock;
        if (!parseBlock(&statement.block, depth + 1)) return false;
      } else if (t.kind == TokenKind::kDirective) {
        statement.kind = Statement::Kind::kDirective;
        if (isLineTerminated(t.text)) {
          statement.directive = lineDirective();
        } else {
          statement.directive.name = t.text;
          if (!collectUntilEnd(&statement.directive, false)) return false;
        }
      } else if (t.kind == TokenKind::kIdentifier && peek(1).isPunct(':')) {
        statement.kind = Statement::Kind::kLabel;
        statement.label = t.text;
        pos_ += 2;
      } else if (t.isPunct('@') || t.kind == TokenKind::kIdentifier) {
        statement.kind = Statement::Kind::kInstruction;
        if (!parseInstruction(&statement.instruction)) return false;
      } else {
        return fail("unexpected '" + t.text + "' in a function body");
      }
      out->push_back(std::move(statement));
    }
    return fail("a block is not closed");
  }

  bool parseInstruction(Instruction* instruction) {
    instruction->line = peek().line;
    if (peek().isPunct('@')) {
      ++pos_;
      Predicate predicate;
      if (peek().isPunct('!')) {
        predicate.negated = true;
        ++pos_;
      }
      if (peek().kind != TokenKind::kIdentifier) return fail("a guard predicate must be a register");
      predicate.reg = tokens_[pos_++].text;
      instruction->predicate = predicate;
    }
    if (peek().kind != TokenKind::kIdentifier) return fail("expected an opcode, found '" + peek().text + "'");
    splitOpcode(tokens_[pos_++].text, &instruction->opcode, &instruction->modifiers);
    // Operands: tokens up to ';' at depth 0, split at commas at depth 0.
    std::vector<Token> current;
    int depth = 0;
    while (!atEnd()) {
      const Token& t = peek();
      if (depth == 0 && t.isPunct(';')) {
        ++pos_;
        if (!current.empty())
          instruction->operands.push_back(classify(std::move(current)));
        else if (!instruction->operands.empty())
          return fail("an empty operand");
        return ok_;
      }
      if (isOpening(t) && ++depth > kMaxNesting) return fail("nesting too deep");
      if (isClosing(t) && --depth < 0) return fail("unbalanced '" + t.text + "' in an instruction");
      if (depth == 0 && t.isPunct(',')) {
        if (current.empty()) return fail("an empty operand");
        instruction->operands.push_back(classify(std::move(current)));
        current.clear();
        ++pos_;
        continue;
      }
      current.push_back(tokens_[pos_++]);
    }
    return fail("instruction '" + instruction->opcode + "' is not terminated by ';'");
  }

  // Splits the tokens between an operand's outer brackets at commas at depth 0.
  std::vector<Operand> elementsOf(const std::vector<Token>& tokens) {
    std::vector<Operand> elements;
    std::vector<Token> current;
    int depth = 0;
    for (std::size_t k = 1; k + 1 < tokens.size(); ++k) {
      const Token& t = tokens[k];
      if (isOpening(t)) ++depth;
      if (isClosing(t)) --depth;
      if (depth == 0 && t.isPunct(',')) {
        elements.push_back(classify(std::move(current)));
        current.clear();
        continue;
      }
      current.push_back(t);
    }
    if (!current.empty()) elements.push_back(classify(std::move(current)));
    return elements;
  }

  Operand classify(std::vector<Token> tokens) {
    Operand operand;
    if (tokens.empty()) return operand;  // an empty element of a list, "(a, , b)": an empty expression
    const Token& first = tokens.front();
    const bool wrapped =
        tokens.size() >= 2 && isOpening(first) && isClosing(tokens.back()) && groupCloses(tokens);
    if (tokens.size() == 1 && first.kind == TokenKind::kIdentifier) {
      operand.kind = first.text == "_"      ? Operand::Kind::kSink
                     : first.text[0] == '%' ? Operand::Kind::kRegister
                                            : Operand::Kind::kSymbol;
    } else if ((tokens.size() == 1 && first.kind == TokenKind::kNumber) ||
               (tokens.size() == 2 && first.isPunct('-') && tokens[1].kind == TokenKind::kNumber)) {
      operand.kind = Operand::Kind::kImmediate;
    } else if (wrapped && first.isPunct('[')) {
      operand.kind = Operand::Kind::kAddress;
      const std::vector<Token> inner(tokens.begin() + 1, tokens.end() - 1);
      operand.address = addressForm(inner);
      if (!operand.address) {
        bool comma = false;
        for (const Token& t : inner) comma |= t.isPunct(',');
        if (comma) operand.elements = elementsOf(tokens);
      }
    } else if (wrapped && first.isPunct('{')) {
      operand.kind = Operand::Kind::kVector;
      operand.elements = elementsOf(tokens);
    } else if (wrapped && first.isPunct('(')) {
      operand.kind = Operand::Kind::kList;
      operand.elements = elementsOf(tokens);
    } else {
      operand.kind = Operand::Kind::kExpression;
    }
    operand.tokens = std::move(tokens);
    return operand;
  }

  // True if the first token's bracket closes exactly at the last token.
  static bool groupCloses(const std::vector<Token>& tokens) {
    int depth = 0;
    for (std::size_t k = 0; k < tokens.size(); ++k) {
      if (isOpening(tokens[k])) ++depth;
      if (isClosing(tokens[k])) --depth;
      if (depth == 0 && k + 1 < tokens.size()) return false;
    }
    return depth == 0;
  }

  std::vector<Token> tokens_;
  std::size_t pos_ = 0;
  bool ok_ = true;
  std::string error_;
};

}  // namespace

void splitOpcode(const std::string& word, std::string* opcode, std::vector<std::string>* modifiers) {
  modifiers->clear();
  const std::size_t dot = word.find('.');
  *opcode = word.substr(0, dot);
  std::size_t start = dot;
  while (start != std::string::npos) {
    const std::size_t next = word.find('.', start + 1);
    modifiers->push_back(word.substr(start, next == std::string::npos ? std::string::npos : next - start));
    start = next;
  }
}

bool Instruction::hasModifier(const std::string& modifier) const {
  for (const std::string& m : modifiers) {
    if (m == modifier) return true;
  }
  return false;
}

ParseResult parse(std::string_view text) {
  LexResult lexed = tokenize(text);
  if (!lexed.ok) {
    ParseResult result;
    result.error = lexed.error;
    return result;
  }
  return Parser(std::move(lexed.tokens)).run();
}

}  // namespace agileos::ptx
