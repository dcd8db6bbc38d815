#include "ptx/parser.h"

#include <cerrno>
#include <cstdlib>
#include <limits>

#include "ptx/memory_access.h"

namespace agileos::ptx {
namespace {

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
    if (inner[i].text == "_") return std::nullopt;  // the sink is no address
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

// A name a declaration, label, function or parameter may have: an identifier without the
// dots that only opcodes and special registers carry, and not "_", PTX's sink, which names
// nothing (a variable called "_" would be read as the sink where the guard names it: found by
// the layout fuzzer, the checker then sees a sink where the guard meant the variable).
bool isPlainName(const Token& t) {
  return t.kind == TokenKind::kIdentifier && t.text != "_" && t.text.find('.') == std::string::npos;
}

bool isLinkage(const Token& t) {
  return t.is(TokenKind::kDirective, ".visible") || t.is(TokenKind::kDirective, ".extern") ||
         t.is(TokenKind::kDirective, ".weak") || t.is(TokenKind::kDirective, ".common");
}

bool isStateSpace(const Token& t) {
  for (const char* space : {".reg", ".local", ".shared", ".param", ".const", ".global"}) {
    if (t.is(TokenKind::kDirective, space)) return true;
  }
  return false;
}

// A word of a declaration between its state space and its name: a type, a vector size, a
// pointer attribute's space, .ptr (.align and .attribute take operands: handled apart).
bool isDeclarationWord(const Token& t) {
  if (t.kind != TokenKind::kDirective) return false;
  if (typeBytes(t.text) != 0) return true;
  for (const char* word : {".pred", ".v2", ".v4", ".v8", ".ptr", ".global", ".const", ".shared", ".local",
                           ".texref", ".samplerref", ".surfref", ".f16x2", ".bf16x2"}) {
    if (t.text == word) return true;
  }
  return false;
}

bool isDataDirective(const Token& t) {
  return t.is(TokenKind::kDirective, ".b8") || t.is(TokenKind::kDirective, ".b16") ||
         t.is(TokenKind::kDirective, ".b32") || t.is(TokenKind::kDirective, ".b64");
}

// Sections hold debug information only (what nvcc -G and -lineinfo write); their data may
// name another such section (".b32 .debug_abbrev").
bool isDebugSectionName(const Token& t) {
  return t.kind == TokenKind::kDirective && t.text.rfind(".debug_", 0) == 0 && t.text.size() > 7;
}

// Function performance directives with the number of integers they take (min, max).
struct PerformanceDirective {
  const char* name;
  int minValues;
  int maxValues;
};
constexpr PerformanceDirective kPerformanceDirectives[] = {
    {".maxntid", 1, 3},           {".reqntid", 1, 3},           {".minnctapersm", 1, 1},
    {".maxnctapersm", 1, 1},      {".maxnreg", 1, 1},           {".noreturn", 0, 0},
    {".explicitcluster", 0, 0},   {".reqnctapercluster", 1, 3}, {".maxclusterrank", 1, 1},
    {".blocksareclusters", 0, 0},
};

// The parser. Every rule reads exactly the tokens its grammar places and fails on anything
// else: no rule skips ahead to a terminator, so no token reaches the tree (and the printed
// text) that a rule did not place. Line breaks are whitespace, as for ptxas.
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
  std::string found() const { return atEnd() ? std::string("the end of the text") : "'" + peek().text + "'"; }

  // ------------------------------------------------------------ token acceptors
  // Each appends the token it accepts to `out`.

  bool take(std::vector<Token>* out) {
    out->push_back(tokens_[pos_++]);
    return true;
  }
  bool punct(char c, std::vector<Token>* out, const char* context) {
    if (!peek().isPunct(c))
      return fail(std::string("expected '") + c + "' " + context + ", found " + found());
    return take(out);
  }
  bool integer(std::vector<Token>* out, const char* context) {
    if (!integerValue(peek()))
      return fail(std::string("expected an integer ") + context + ", found " + found());
    return take(out);
  }
  bool name(std::vector<Token>* out, const char* context) {
    if (!isPlainName(peek())) return fail(std::string("expected a name ") + context + ", found " + found());
    return take(out);
  }
  bool string(std::vector<Token>* out, const char* context) {
    if (peek().kind != TokenKind::kString)
      return fail(std::string("expected a string ") + context + ", found " + found());
    return take(out);
  }

  // ------------------------------------------------------------ module level

  bool parseTopLevel(TopLevel* item) {
    const Token& t = peek();
    if (t.kind != TokenKind::kDirective)
      return fail("expected a directive at module level, found '" + t.text + "'");
    item->kind = TopLevel::Kind::kDirective;
    Directive& d = item->directive;
    d.name = t.text;
    if (t.text == ".version") return parseVersion(&d);
    if (t.text == ".target") return parseTarget(&d);
    if (t.text == ".address_size") return parseAddressSize(&d);
    if (t.text == ".file") return parseFile(&d);
    if (t.text == ".section") return parseSection(&d);
    if (t.text == ".pragma") return parsePragma(&d);
    std::size_t k = pos_;
    while (k < tokens_.size() && isLinkage(tokens_[k])) ++k;
    if (k < tokens_.size() &&
        (tokens_[k].is(TokenKind::kDirective, ".entry") || tokens_[k].is(TokenKind::kDirective, ".func"))) {
      item->kind = TopLevel::Kind::kFunction;
      item->directive = {};
      return parseFunction(&item->function);
    }
    if (k < tokens_.size() && isStateSpace(tokens_[k])) return parseDeclaration(&d);
    return fail("unsupported directive '" + t.text + "' at module level");
  }

  // .version MAJOR.MINOR
  bool parseVersion(Directive* d) {
    take(&d->tokens);
    const Token& v = peek();
    const std::size_t dot = v.text.find('.');
    if (v.kind != TokenKind::kNumber || dot == std::string::npos || dot == 0 || dot + 1 == v.text.size() ||
        v.text.find_first_not_of("0123456789.") != std::string::npos ||
        v.text.find('.', dot + 1) != std::string::npos) {
      return fail(".version needs MAJOR.MINOR, found " + found());
    }
    return take(&d->tokens);
  }

  // .target NAME {, NAME}
  bool parseTarget(Directive* d) {
    take(&d->tokens);
    if (!name(&d->tokens, "after .target")) return false;
    while (peek().isPunct(',')) {
      take(&d->tokens);
      if (!name(&d->tokens, "in .target")) return false;
    }
    return true;
  }

  // .address_size 32|64
  bool parseAddressSize(Directive* d) {
    take(&d->tokens);
    if (peek().text != "32" && peek().text != "64")
      return fail(".address_size must be 32 or 64, found " + found());
    return take(&d->tokens);
  }

  // .file INDEX "NAME" [, TIMESTAMP, SIZE]
  bool parseFile(Directive* d) {
    take(&d->tokens);
    if (!integer(&d->tokens, "after .file") || !string(&d->tokens, "after .file's index")) return false;
    if (!peek().isPunct(',')) return true;
    take(&d->tokens);
    return integer(&d->tokens, "(.file's time stamp)") && punct(',', &d->tokens, "in .file") &&
           integer(&d->tokens, "(.file's size)");
  }

  // .pragma "TEXT" {, "TEXT"} ;
  bool parsePragma(Directive* d) {
    take(&d->tokens);
    if (!string(&d->tokens, "after .pragma")) return false;
    while (peek().isPunct(',')) {
      take(&d->tokens);
      if (!string(&d->tokens, "in .pragma")) return false;
    }
    return punct(';', &d->tokens, "after .pragma");
  }

  // .section .NAME { {LABEL: | .bN VALUE {, VALUE}} }: debug information, data only.
  bool parseSection(Directive* d) {
    take(&d->tokens);
    if (!isDebugSectionName(peek())) return fail("expected a .debug_ section name, found " + found());
    take(&d->tokens);
    if (!punct('{', &d->tokens, "to open a section")) return false;
    for (std::size_t items = 0; !peek().isPunct('}'); ++items) {
      if (atEnd()) return fail("a .section is not closed");
      if (isPlainName(peek()) && peek(1).isPunct(':')) {
        take(&d->tokens);
        take(&d->tokens);
        continue;
      }
      if (!isDataDirective(peek()))
        return fail("expected data (.b8 .b16 .b32 .b64) in a section, found " + found());
      take(&d->tokens);
      if (!sectionValue(&d->tokens)) return false;
      while (peek().isPunct(',')) {
        take(&d->tokens);
        if (!sectionValue(&d->tokens)) return false;
      }
    }
    return take(&d->tokens);  // '}'
  }

  // NUMBER | LABEL | .SECTION, joined by + and -.
  bool sectionValue(std::vector<Token>* out) {
    for (;;) {
      const Token& t = peek();
      if (!(integerValue(t) || isPlainName(t) || isDebugSectionName(t)))
        return fail("expected a number, a label or a section in section data, found " + found());
      take(out);
      if (!peek().isPunct('+') && !peek().isPunct('-')) return true;
      take(out);
    }
  }

  // ------------------------------------------------------------ declarations

  // [LINKAGE...] SPACE {WORD | .align N | .attribute(...)} DECLARATOR {, DECLARATOR} ;
  bool parseDeclaration(Directive* d) {
    while (isLinkage(peek())) take(&d->tokens);
    if (!isStateSpace(peek())) return fail("expected a state space, found " + found());
    d->name = peek().text;
    take(&d->tokens);
    if (!declarationWords(&d->tokens)) return false;
    if (!declarator(&d->tokens)) return false;
    while (peek().isPunct(',')) {
      take(&d->tokens);
      if (!declarator(&d->tokens)) return false;
    }
    return punct(';', &d->tokens, "to end a declaration");
  }

  bool declarationWords(std::vector<Token>* out) {
    for (;;) {
      const Token& t = peek();
      if (t.is(TokenKind::kDirective, ".align")) {
        take(out);
        if (!integer(out, "after .align")) return false;
      } else if (t.is(TokenKind::kDirective, ".attribute")) {
        take(out);
        if (!punct('(', out, "after .attribute")) return false;
        do {
          if (peek().kind != TokenKind::kDirective) return fail("expected an attribute, found " + found());
          take(out);
        } while (peek().isPunct(',') && take(out));
        if (!punct(')', out, "to close .attribute")) return false;
      } else if (isDeclarationWord(t)) {
        take(out);
      } else {
        return true;
      }
    }
  }

  // NAME [<N>] {[ [N] ]} [= INITIALIZER]
  bool declarator(std::vector<Token>* out) {
    if (!name(out, "in a declaration")) return false;
    if (peek().isPunct('<')) {
      take(out);
      if (!integer(out, "in a register range") || !punct('>', out, "to close a register range")) return false;
    }
    if (!dimensions(out)) return false;
    if (!peek().isPunct('=')) return true;
    take(out);
    return initializer(out, 0);
  }

  bool dimensions(std::vector<Token>* out) {
    while (peek().isPunct('[')) {
      take(out);
      if (!peek().isPunct(']') && !integer(out, "as an array size")) return false;
      if (!punct(']', out, "to close an array size")) return false;
    }
    return true;
  }

  // { INITIALIZER {, INITIALIZER} } | EXPRESSION
  bool initializer(std::vector<Token>* out, int depth) {
    if (depth > kMaxNesting) return fail("initializer nested too deep");
    if (!peek().isPunct('{')) return constantExpression(out, depth);
    take(out);
    if (!initializer(out, depth + 1)) return false;
    while (peek().isPunct(',')) {
      take(out);
      if (!initializer(out, depth + 1)) return false;
    }
    return punct('}', out, "to close an initializer");
  }

  // TERM {OP TERM}; TERM: [-|~|!] (NUMBER | NAME | generic(NAME) | (EXPRESSION))
  bool constantExpression(std::vector<Token>* out, int depth) {
    if (depth > kMaxNesting) return fail("expression nested too deep");
    for (;;) {
      while (peek().isPunct('-') || peek().isPunct('~') || peek().isPunct('!')) take(out);
      const Token& t = peek();
      if (t.kind == TokenKind::kNumber) {
        take(out);
      } else if (t.is(TokenKind::kIdentifier, "generic") && peek(1).isPunct('(')) {
        take(out);
        take(out);
        if (!name(out, "in generic()") || !punct(')', out, "to close generic(")) return false;
      } else if (isPlainName(t)) {
        take(out);
      } else if (t.isPunct('(')) {
        take(out);
        if (!constantExpression(out, depth + 1) || !punct(')', out, "to close an expression")) return false;
      } else {
        return fail("expected a constant, a name or generic(name), found " + found());
      }
      const Token& op = peek();
      if (!(op.isPunct('+') || op.isPunct('-') || op.isPunct('*') || op.isPunct('/') || op.isPunct('&') ||
            op.isPunct('|') || op.isPunct('^'))) {
        return true;
      }
      take(out);
    }
  }

  // ------------------------------------------------------------ functions

  // [LINKAGE...] .entry|.func [(RETURNS)] NAME [(PARAMS)] {PERFORMANCE} ( { BODY } | ; )
  bool parseFunction(Function* function) {
    std::vector<Token>& h = function->header;
    while (isLinkage(peek())) take(&h);
    function->kind = peek().text == ".entry" ? Function::Kind::kEntry : Function::Kind::kFunc;
    take(&h);
    if (function->kind == Function::Kind::kFunc && peek().isPunct('(')) {
      if (!parameterList(&h, false)) return false;
    }
    if (!isPlainName(peek())) return fail("expected a function name, found " + found());
    function->name = peek().text;
    take(&h);
    if (peek().isPunct('(') && !parameterList(&h, false)) return false;
    if (!performanceDirectives(&h)) return false;
    if (peek().isPunct(';')) return take(&h);  // a prototype
    if (!peek().isPunct('{')) return fail("function '" + function->name + "' has no body and no ';'");
    ++pos_;
    function->hasBody = true;
    return parseBlock(&function->body, 1);
  }

  // ( [PARAM {, PARAM}] ); PARAM: .param|.reg WORDS (NAME | _ with `anonymous`) {[ [N] ]}
  bool parameterList(std::vector<Token>* out, bool anonymous) {
    take(out);  // '('
    if (peek().isPunct(')')) return take(out);
    for (;;) {
      if (!peek().is(TokenKind::kDirective, ".param") && !peek().is(TokenKind::kDirective, ".reg"))
        return fail("expected .param or .reg in a parameter list, found " + found());
      take(out);
      if (!declarationWords(out)) return false;
      if (anonymous && peek().is(TokenKind::kIdentifier, "_")) {
        take(out);
      } else if (!name(out, "for a parameter")) {
        return false;
      }
      if (!dimensions(out)) return false;
      if (peek().isPunct(')')) return take(out);
      if (!punct(',', out, "between parameters")) return false;
    }
  }

  bool performanceDirectives(std::vector<Token>* out) {
    for (;;) {
      const PerformanceDirective* known = nullptr;
      for (const PerformanceDirective& p : kPerformanceDirectives) {
        if (peek().is(TokenKind::kDirective, p.name)) known = &p;
      }
      if (known == nullptr) return true;
      take(out);
      for (int n = 0; n < known->maxValues; ++n) {
        if (n > 0 && !peek().isPunct(',')) break;
        if (n > 0) take(out);
        if (!integer(out, (std::string("after ") + known->name).c_str())) return false;
      }
    }
  }

  // ------------------------------------------------------------ bodies

  // Statements until the '}' that closes the block (consumed).
  bool parseBlock(std::vector<Statement>* out, int depth) {
    if (depth > kMaxNesting) return fail("blocks nested too deep");
    while (!atEnd()) {
      const Token& t = peek();
      if (t.isPunct('}')) {
        ++pos_;
        return true;
      }
      if (t.isPunct(';')) {  // an empty statement: nothing to keep
        ++pos_;
        continue;
      }
      Statement statement;
      if (t.isPunct('{')) {
        ++pos_;
        statement.kind = Statement::Kind::kBlock;
        if (!parseBlock(&statement.block, depth + 1)) return false;
      } else if (t.kind == TokenKind::kDirective) {
        statement.kind = Statement::Kind::kDirective;
        if (!parseBodyDirective(&statement.directive, false)) return false;
      } else if (isPlainName(t) && peek(1).isPunct(':')) {
        statement.kind = Statement::Kind::kLabel;
        statement.label = t.text;
        pos_ += 2;
        out->push_back(std::move(statement));
        // A label may name the directive after it (a call prototype, a target list).
        if (peek().kind == TokenKind::kDirective) {
          Statement labelled;
          labelled.kind = Statement::Kind::kDirective;
          if (!parseBodyDirective(&labelled.directive, true)) return false;
          out->push_back(std::move(labelled));
        }
        continue;
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

  bool parseBodyDirective(Directive* d, bool afterLabel) {
    const std::string& n = peek().text;
    d->name = n;
    if (afterLabel) {
      if (n == ".callprototype") return parseCallPrototype(d);
      if (n == ".calltargets" || n == ".branchtargets") return parseTargetList(d);
    }
    if (n == ".loc") return parseLoc(d);
    if (n == ".pragma") return parsePragma(d);
    if (isStateSpace(peek())) return parseDeclaration(d);
    return fail("unsupported directive '" + n + "' in a function body");
  }

  // .loc FILE LINE COLUMN [, function_name NAME [+ N] [, inlined_at FILE LINE COLUMN]]
  bool parseLoc(Directive* d) {
    take(&d->tokens);
    for (int k = 0; k < 3; ++k) {
      if (!integer(&d->tokens, "in .loc")) return false;
    }
    if (!peek().isPunct(',')) return true;
    take(&d->tokens);
    if (!peek().is(TokenKind::kIdentifier, "function_name"))
      return fail("expected function_name in .loc, found " + found());
    take(&d->tokens);
    if (!name(&d->tokens, "after function_name")) return false;
    if (peek().isPunct('+')) {
      take(&d->tokens);
      if (!integer(&d->tokens, "after function_name's '+'")) return false;
    }
    if (!peek().isPunct(',')) return true;
    take(&d->tokens);
    if (!peek().is(TokenKind::kIdentifier, "inlined_at"))
      return fail("expected inlined_at in .loc, found " + found());
    take(&d->tokens);
    for (int k = 0; k < 3; ++k) {
      if (!integer(&d->tokens, "after inlined_at")) return false;
    }
    return true;
  }

  // .callprototype [(RETURN)] _ [(PARAMS)] [.noreturn] ;  (parameters named _)
  bool parseCallPrototype(Directive* d) {
    take(&d->tokens);
    if (peek().isPunct('(') && !parameterList(&d->tokens, true)) return false;
    if (!peek().is(TokenKind::kIdentifier, "_"))
      return fail("expected '_' in .callprototype, found " + found());
    take(&d->tokens);
    if (peek().isPunct('(') && !parameterList(&d->tokens, true)) return false;
    if (peek().is(TokenKind::kDirective, ".noreturn")) take(&d->tokens);
    return punct(';', &d->tokens, "to end .callprototype");
  }

  // .calltargets NAME {, NAME} ;   .branchtargets LABEL {, LABEL} ;
  bool parseTargetList(Directive* d) {
    take(&d->tokens);
    if (!name(&d->tokens, "in a target list")) return false;
    while (peek().isPunct(',')) {
      take(&d->tokens);
      if (!name(&d->tokens, "in a target list")) return false;
    }
    return punct(';', &d->tokens, "to end a target list");
  }

  // [@[!]PRED] OPCODE [OPERAND {, OPERAND}] ;
  bool parseInstruction(Instruction* instruction) {
    instruction->line = peek().line;
    if (peek().isPunct('@')) {
      ++pos_;
      Predicate predicate;
      if (peek().isPunct('!')) {
        predicate.negated = true;
        ++pos_;
      }
      if (!isPlainName(peek())) return fail("a guard predicate must be a register, found " + found());
      predicate.reg = tokens_[pos_++].text;
      instruction->predicate = predicate;
    }
    const Token& op = peek();
    if (op.kind != TokenKind::kIdentifier || op.text[0] == '%' || op.text[0] == '$')
      return fail("expected an opcode, found " + found());
    splitOpcode(tokens_[pos_++].text, &instruction->opcode, &instruction->modifiers);
    // Operands: tokens up to ';' at depth 0, split at commas at depth 0. An operand holds
    // names, numbers and punctuation only: a directive or a string has no place in one.
    std::vector<Token> current;
    int depth = 0;
    while (!atEnd()) {
      const Token& t = peek();
      if (t.isPunct(';')) {
        if (depth != 0) return fail("';' inside an operand of '" + instruction->opcode + "'");
        ++pos_;
        if (!current.empty())
          instruction->operands.push_back(classify(std::move(current)));
        else if (!instruction->operands.empty())
          return fail("an empty operand");
        return ok_;
      }
      if (t.kind == TokenKind::kDirective || t.kind == TokenKind::kString)
        return fail("unexpected " + found() + " in an operand of '" + instruction->opcode + "'");
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

std::optional<std::uint64_t> immediateValue(const Operand& operand) {
  if (operand.kind != Operand::Kind::kImmediate || operand.tokens.size() != 1) return std::nullopt;
  const std::string& text = operand.tokens[0].text;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 0);
  if (end == nullptr || *end != '\0') return std::nullopt;
  return value;
}

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
