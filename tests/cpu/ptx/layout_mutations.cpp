#include "tests/cpu/ptx/layout_mutations.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <vector>

namespace agileos::ptx::testing {
namespace {

// ---------------------------------------------------------------- a deterministic generator

class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {  // splitmix64
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::size_t below(std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(next() % n); }
  bool chance(unsigned numerator, unsigned denominator) { return below(denominator) < numerator; }
  template <typename T, std::size_t N>
  const T& pick(const T (&items)[N]) {
    return items[below(N)];
  }

 private:
  std::uint64_t state_;
};

// ---------------------------------------------------------------- the local tokenizer

enum class Gap : std::uint8_t { kNone, kSpace, kNewline };

struct Piece {
  enum class Kind : std::uint8_t { kWord, kString, kPunct };
  Kind kind = Kind::kPunct;
  std::string text;
  Gap gap = Gap::kNone;   // what separated it from the previous token (comments count as space)
  std::string insert;     // text a mutation puts between the gap and the token
  std::string separator;  // set by a mutation: replaces the gap's rendering

  bool is(char c) const { return kind == Kind::kPunct && text.size() == 1 && text[0] == c; }
  bool isWord() const { return kind == Kind::kWord; }
  bool isDirective() const { return kind == Kind::kWord && text.size() > 1 && text[0] == '.'; }
  bool isNumber() const {
    return kind == Kind::kWord && std::isdigit(static_cast<unsigned char>(text[0])) != 0;
  }
};

bool isWordChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '$' || c == '%' || c == '.';
}

void widen(Gap* gap, Gap to) {
  if (static_cast<int>(to) > static_cast<int>(*gap)) *gap = to;
}

std::vector<Piece> split(std::string_view text) {
  std::vector<Piece> pieces;
  Gap gap = Gap::kNone;
  std::size_t i = 0;
  auto push = [&](Piece::Kind kind, std::size_t begin, std::size_t end) {
    Piece piece;
    piece.kind = kind;
    piece.text = std::string(text.substr(begin, end - begin));
    piece.gap = gap;
    pieces.push_back(std::move(piece));
    gap = Gap::kNone;
  };
  while (i < text.size()) {
    const char c = text[i];
    if (c == '\n') {
      widen(&gap, Gap::kNewline);
      ++i;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      widen(&gap, Gap::kSpace);
      ++i;
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      while (i < text.size() && text[i] != '\n') ++i;
      widen(&gap, Gap::kSpace);
    } else if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      const std::size_t end = text.find("*/", i + 2);
      const std::size_t stop = end == std::string_view::npos ? text.size() : end + 2;
      widen(&gap,
            text.substr(i, stop - i).find('\n') != std::string_view::npos ? Gap::kNewline : Gap::kSpace);
      i = stop;
    } else if (c == '"') {
      const std::size_t begin = i++;
      while (i < text.size() && text[i] != '"' && text[i] != '\n')
        i += (text[i] == '\\' && i + 1 < text.size()) ? 2 : 1;
      if (i < text.size() && text[i] == '"') ++i;
      push(Piece::Kind::kString, begin, std::min(i, text.size()));
    } else if (isWordChar(c)) {
      const std::size_t begin = i;
      while (i < text.size()) {
        if (isWordChar(text[i])) {
          ++i;
        } else if (text[i] == ':' && i + 2 < text.size() && text[i + 1] == ':' && isWordChar(text[i + 2])) {
          i += 2;
        } else {
          break;
        }
      }
      push(Piece::Kind::kWord, begin, i);
    } else {
      push(Piece::Kind::kPunct, i, i + 1);
      ++i;
    }
  }
  return pieces;
}

std::string render(const std::vector<Piece>& pieces) {
  std::string out;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const Piece& p = pieces[i];
    if (i > 0 || !p.separator.empty()) {
      if (!p.separator.empty()) {
        out += p.separator;
      } else {
        out += p.gap == Gap::kNewline ? "\n" : p.gap == Gap::kSpace ? " " : "";
      }
    }
    out += p.insert;
    out += p.text;
  }
  out += '\n';
  return out;
}

// ---------------------------------------------------------------- statements

struct Statement {
  enum class Kind : std::uint8_t {
    kLineDirective,
    kDirective,
    kInstruction,
    kLabel,
    kOpen,
    kClose,
    kHeader,
    kOther
  };
  Kind kind = Kind::kOther;
  std::size_t begin = 0, end = 0;  // pieces [begin, end)
  bool inBody = false;
};

bool isLineDirective(const std::string& name) {
  return name == ".version" || name == ".target" || name == ".address_size" || name == ".file" ||
         name == ".loc";
}

// The end of a line directive at `i`, found from its arguments (not from a line break):
// `.version 8.3`, `.target sm_90, debug`, `.file 1 "a.cu", 12, 34`,
// `.loc 1 2 3, function_name $L__x, inlined_at 1 4 5`.
std::size_t lineDirectiveEnd(const std::vector<Piece>& p, std::size_t i) {
  std::size_t j = i + 1;
  if (j < p.size() && (p[j].isWord() || p[j].kind == Piece::Kind::kString) && !p[j].isDirective()) ++j;
  while (j < p.size()) {
    const Piece& prev = p[j - 1];
    if (p[j].is(',') && j + 1 < p.size() && !p[j + 1].isDirective()) {
      j += 2;
    } else if (p[j].isNumber() && (prev.isNumber() || prev.text == "inlined_at")) {
      ++j;
    } else if (p[j].kind == Piece::Kind::kString && prev.isNumber()) {
      ++j;
    } else if (p[j].isWord() && !p[j].isDirective() && prev.text == "function_name") {
      ++j;
    } else if (p[j].is('+') && j + 1 < p.size() && p[j + 1].isNumber()) {
      j += 2;
    } else {
      break;
    }
  }
  return std::min(j, p.size());
}

// The end of a statement that ends at the first ';' at bracket depth 0 (included); stops
// before a '}' that would close an enclosing block.
std::size_t semicolonEnd(const std::vector<Piece>& p, std::size_t i) {
  int depth = 0;
  for (std::size_t j = i; j < p.size(); ++j) {
    if (p[j].is('(') || p[j].is('[') || p[j].is('{')) ++depth;
    if (p[j].is(')') || p[j].is(']') || p[j].is('}')) {
      if (--depth < 0) return std::max(j, i + 1);
    }
    if (depth == 0 && p[j].is(';')) return j + 1;
  }
  return p.size();
}

std::vector<Statement> statements(const std::vector<Piece>& p) {
  std::vector<Statement> out;
  int bodyDepth = 0;
  std::size_t i = 0;
  while (i < p.size()) {
    Statement s;
    s.begin = i;
    s.inBody = bodyDepth > 0;
    const Piece& t = p[i];
    if (bodyDepth > 0) {
      if (t.is('{')) {
        s.kind = Statement::Kind::kOpen;
        s.end = i + 1;
        ++bodyDepth;
      } else if (t.is('}')) {
        s.kind = Statement::Kind::kClose;
        s.end = i + 1;
        --bodyDepth;
      } else if (t.isDirective() && isLineDirective(t.text)) {
        s.kind = Statement::Kind::kLineDirective;
        s.end = lineDirectiveEnd(p, i);
      } else if (t.isDirective()) {
        s.kind = Statement::Kind::kDirective;
        s.end = semicolonEnd(p, i);
      } else if (t.isWord() && i + 1 < p.size() && p[i + 1].is(':')) {
        s.kind = Statement::Kind::kLabel;
        s.end = i + 2;
      } else if (t.isWord() || t.is('@')) {
        s.kind = Statement::Kind::kInstruction;
        s.end = semicolonEnd(p, i);
      } else {
        s.end = i + 1;
      }
    } else if (t.isDirective() && isLineDirective(t.text)) {
      s.kind = Statement::Kind::kLineDirective;
      s.end = lineDirectiveEnd(p, i);
    } else if (t.isDirective() && t.text == ".section") {
      // Through the '}' that closes its first brace group.
      int depth = 0;
      std::size_t j = i;
      for (; j < p.size(); ++j) {
        if (p[j].is('{')) ++depth;
        if (p[j].is('}') && --depth <= 0) break;
      }
      s.end = std::min(j + 1, p.size());
    } else {
      // A declaration (to its ';') or a function header (to the '{' of its body).
      bool function = false, initializer = false;
      int depth = 0;
      std::size_t j = i;
      for (; j < p.size(); ++j) {
        if (depth == 0 && (p[j].text == ".entry" || p[j].text == ".func")) function = true;
        if (p[j].is('=')) initializer = true;
        if (depth == 0 && p[j].is('{') && function && !initializer) break;
        if (p[j].is('(') || p[j].is('[') || p[j].is('{')) ++depth;
        if (p[j].is(')') || p[j].is(']') || p[j].is('}')) --depth;
        if (depth <= 0 && p[j].is(';')) {
          ++j;
          break;
        }
      }
      s.end = std::max(std::min(j, p.size()), i + 1);
      if (s.end < p.size() && p[s.end].is('{') && function && !initializer) {
        s.kind = Statement::Kind::kHeader;
        out.push_back(s);
        s = Statement{Statement::Kind::kOpen, s.end, s.end + 1, false};
        bodyDepth = 1;
      } else {
        s.kind = Statement::Kind::kDirective;
      }
    }
    i = s.end;
    out.push_back(s);
  }
  return out;
}

bool isBodyStatement(const Statement& s) {
  return s.inBody && s.kind != Statement::Kind::kOpen && s.kind != Statement::Kind::kClose;
}

// The file number of the module's first `.file`, or 1.
std::string fileNumber(const std::vector<Piece>& p) {
  for (std::size_t i = 0; i + 1 < p.size(); ++i) {
    if (p[i].text == ".file" && p[i + 1].isNumber()) return p[i + 1].text;
  }
  return "1";
}

std::string loc(const std::vector<Piece>& p, Random* random) {
  return ".loc " + fileNumber(p) + " " + std::to_string(1 + random->below(400)) + " " +
         std::to_string(random->below(80));
}

// ---------------------------------------------------------------- layout mutations

// What kLocBefore, kLocSameLine, kPragmaBefore and kEmptyStatements put before a statement.
std::string insertion(LayoutMutation mutation, const std::vector<Piece>& p, Random* random) {
  switch (mutation) {
    case LayoutMutation::kLocBefore:
      return loc(p, random) + "\n";
    case LayoutMutation::kLocSameLine:
      return loc(p, random) + " ";
    case LayoutMutation::kPragmaBefore:
      return random->chance(1, 2) ? ".pragma \"nounroll\";\n" : ".pragma \"nounroll\"; ";
    default:
      return random->chance(1, 2) ? ";\n" : "; ";
  }
}

void apply(LayoutMutation mutation, std::vector<Piece>* pieces, Random* random) {
  std::vector<Piece>& p = *pieces;
  const std::vector<Statement> all = statements(p);
  switch (mutation) {
    case LayoutMutation::kOneLine:
      for (Piece& piece : p) {
        if (piece.gap == Gap::kNewline) piece.gap = Gap::kSpace;
      }
      break;
    case LayoutMutation::kNewlines: {
      // ptxas finds the PTX version on the first line: `.version\n9.0` is "missing .version
      // directive" to it. One variant in four breaks that line too.
      const bool splitVersion = random->chance(1, 4);
      for (std::size_t i = 1; i < p.size(); ++i) {
        if (!splitVersion && p[i - 1].text == ".version") continue;
        if (random->chance(1, 3)) {
          p[i].gap = Gap::kNewline;
        } else if (p[i].gap == Gap::kNewline && random->chance(1, 3)) {
          p[i].gap = Gap::kSpace;
        }
      }
      break;
    }
    case LayoutMutation::kBlockComments: {
      static constexpr const char* kComments[] = {"/**/",
                                                  "/* c */",
                                                  "/* st.global.u32 [%rd1], %r1; */",
                                                  "/*\n.loc 1 1 1\n*/",
                                                  "/* \" */",
                                                  "/* // */",
                                                  "/***/",
                                                  "/* * / */",
                                                  "/*/ st.u8 [0], 1; */",
                                                  "/*\n\n*/",
                                                  "/* .version 9.0 */"};
      for (std::size_t i = 1; i < p.size(); ++i) {
        if (!random->chance(1, 4)) continue;
        const std::string comment = random->pick(kComments);
        const std::string before = p[i].gap == Gap::kNone ? "" : " ";
        const std::string after = p[i].gap == Gap::kNewline ? "\n" : random->chance(1, 2) ? " " : "";
        p[i].separator = before + comment + after;
      }
      break;
    }
    case LayoutMutation::kLineComments: {
      static constexpr const char* kComments[] = {
          "//", "// c", "// st.global.u32 [%rd1], %r1;", "// /*", "//*/", "// \"", "// .loc 1 1 1", "////"};
      for (std::size_t i = 1; i < p.size(); ++i) {
        if (p[i].gap == Gap::kNewline ? random->chance(1, 2) : random->chance(1, 10)) {
          p[i].separator = std::string(random->chance(1, 2) ? " " : "") + random->pick(kComments) + "\n";
        }
      }
      break;
    }
    case LayoutMutation::kWhitespace: {
      static constexpr const char* kSpaces[] = {"\t", "  ", " \t ", "\f", "\r", "\t\t\t", " \r "};
      static constexpr const char* kLines[] = {"\r\n", "\n\n", "\n\t\t", " \n ", "\n\f", "\r\n\r\n"};
      // \v is whitespace to C's isspace but not to ptxas: in one variant of three only, so
      // that the others still assemble.
      const bool vertical = random->chance(1, 3);
      for (std::size_t i = 1; i < p.size(); ++i) {
        if (vertical && p[i].gap != Gap::kNone && random->chance(1, 8)) {
          p[i].separator = p[i].gap == Gap::kNewline ? "\n\v" : "\v";
        } else if (p[i].gap == Gap::kNewline) {
          if (random->chance(1, 2)) p[i].separator = random->pick(kLines);
        } else if (p[i].gap == Gap::kSpace) {
          if (random->chance(1, 2)) p[i].separator = random->pick(kSpaces);
        } else if (random->chance(1, 5)) {
          p[i].separator = random->chance(1, 2) ? " " : "\t";
        }
      }
      break;
    }
    case LayoutMutation::kJoinStatements: {
      const bool everything = random->chance(1, 3);
      for (const Statement& s : all) {
        if (s.inBody && s.begin < p.size() && p[s.begin].gap == Gap::kNewline &&
            (everything || random->chance(1, 2)))
          p[s.begin].gap = Gap::kSpace;
      }
      break;
    }
    case LayoutMutation::kJoinAfterLineDirectives:
      for (const Statement& s : all) {
        if (s.kind == Statement::Kind::kLineDirective && s.end < p.size() && random->chance(3, 4))
          p[s.end].gap = Gap::kSpace;
      }
      break;
    case LayoutMutation::kLocBefore:
    case LayoutMutation::kLocSameLine:
    case LayoutMutation::kPragmaBefore:
    case LayoutMutation::kEmptyStatements:
      for (const Statement& s : all) {
        const bool statement =
            isBodyStatement(s) || (mutation == LayoutMutation::kEmptyStatements && !s.inBody &&
                                   s.kind != Statement::Kind::kOpen && s.begin > 0);
        if (!statement || s.begin >= p.size() || !random->chance(1, 3)) continue;
        if (mutation == LayoutMutation::kLocSameLine && s.kind != Statement::Kind::kInstruction &&
            !random->chance(1, 4)) {
          continue;
        }
        p[s.begin].insert.insert(0, insertion(mutation, p, random));
      }
      break;
    case LayoutMutation::kMixed: {
      static constexpr LayoutMutation kParts[] = {LayoutMutation::kOneLine,
                                                  LayoutMutation::kNewlines,
                                                  LayoutMutation::kBlockComments,
                                                  LayoutMutation::kLineComments,
                                                  LayoutMutation::kWhitespace,
                                                  LayoutMutation::kJoinStatements,
                                                  LayoutMutation::kJoinAfterLineDirectives,
                                                  LayoutMutation::kLocBefore,
                                                  LayoutMutation::kLocSameLine,
                                                  LayoutMutation::kPragmaBefore,
                                                  LayoutMutation::kEmptyStatements};
      const std::size_t steps = 2 + random->below(2);
      for (std::size_t k = 0; k < steps; ++k) {
        // Each step works on the text the previous one produced.
        const std::string text = render(p);
        p = split(text);
        apply(random->pick(kParts), &p, random);
      }
      break;
    }
  }
}

// ---------------------------------------------------------------- statement mutations

std::vector<Piece> slice(const std::vector<Piece>& p, std::size_t begin, std::size_t end) {
  return std::vector<Piece>(p.begin() + static_cast<std::ptrdiff_t>(begin),
                            p.begin() + static_cast<std::ptrdiff_t>(end));
}

// A random statement for which `want` holds, or none.
template <typename Predicate>
const Statement* pickStatement(const std::vector<Statement>& all, Random* random, Predicate want) {
  std::vector<const Statement*> candidates;
  for (const Statement& s : all) {
    if (want(s)) candidates.push_back(&s);
  }
  return candidates.empty() ? nullptr : candidates[random->below(candidates.size())];
}

void startOnNewLine(std::vector<Piece>* moved, Random* random) {
  if (!moved->empty()) (*moved)[0].gap = random->chance(3, 4) ? Gap::kNewline : Gap::kSpace;
}

bool isMemoryOpcode(const std::string& word) {
  for (const char* op : {"ld.", "st.", "ld", "st", "atom.", "red.", "prefetch.", "cp.", "ldu."}) {
    const std::string prefix(op);
    if (word == prefix || (prefix.back() == '.' && word.rfind(prefix, 0) == 0)) return true;
  }
  return false;
}

std::string withSpace(const std::string& word, const std::string& space) {
  static constexpr const char* kSpaces[] = {".global",      ".shared::cta", ".shared::cluster",
                                            ".shared",      ".local",       ".param::entry",
                                            ".param::func", ".param",       ".const"};
  std::string out = word;
  for (const char* known : kSpaces) {
    const std::string s(known);
    for (std::size_t at = out.find(s); at != std::string::npos; at = out.find(s, at)) {
      const std::size_t after = at + s.size();
      if (after == out.size() || out[after] == '.') {
        out.erase(at, s.size());
        out.insert(at, space);
        return out;
      }
      at = after;
    }
  }
  // No state space: add one after the opcode.
  const std::size_t dot = out.find('.');
  out.insert(dot == std::string::npos ? out.size() : dot, space);
  return out;
}

}  // namespace

const char* toString(LayoutMutation mutation) {
  switch (mutation) {
    case LayoutMutation::kOneLine:
      return "one-line";
    case LayoutMutation::kNewlines:
      return "newlines";
    case LayoutMutation::kBlockComments:
      return "block-comments";
    case LayoutMutation::kLineComments:
      return "line-comments";
    case LayoutMutation::kWhitespace:
      return "whitespace";
    case LayoutMutation::kJoinStatements:
      return "join-statements";
    case LayoutMutation::kJoinAfterLineDirectives:
      return "join-after-line-directives";
    case LayoutMutation::kLocBefore:
      return "loc-before";
    case LayoutMutation::kLocSameLine:
      return "loc-same-line";
    case LayoutMutation::kPragmaBefore:
      return "pragma-before";
    case LayoutMutation::kEmptyStatements:
      return "empty-statements";
    case LayoutMutation::kMixed:
      return "mixed";
  }
  return "?";
}

bool keepsTokens(LayoutMutation mutation) {
  switch (mutation) {
    case LayoutMutation::kOneLine:
    case LayoutMutation::kNewlines:
    case LayoutMutation::kBlockComments:
    case LayoutMutation::kLineComments:
    case LayoutMutation::kWhitespace:
    case LayoutMutation::kJoinStatements:
    case LayoutMutation::kJoinAfterLineDirectives:
      return true;
    default:
      return false;
  }
}

std::string mutateLayout(std::string_view ptx, LayoutMutation mutation, std::uint64_t seed) {
  Random random(seed * 0x2545F4914F6CDD1Dull + static_cast<std::uint64_t>(mutation));
  std::vector<Piece> pieces = split(ptx);
  apply(mutation, &pieces, &random);
  return render(pieces);
}

const char* toString(StatementMutation mutation) {
  switch (mutation) {
    case StatementMutation::kDuplicate:
      return "duplicate";
    case StatementMutation::kDelete:
      return "delete";
    case StatementMutation::kSwap:
      return "swap";
    case StatementMutation::kStateSpace:
      return "state-space";
    case StatementMutation::kMoveDirective:
      return "move-directive";
  }
  return "?";
}

std::string mutateStatements(std::string_view ptx, StatementMutation mutation, std::uint64_t seed) {
  Random random(seed * 0x9E3779B97F4A7C15ull + 77 + static_cast<std::uint64_t>(mutation));
  std::vector<Piece> p = split(ptx);
  const std::vector<Statement> all = statements(p);
  // The opcode of an instruction statement (after its guard predicate), or x.end.
  auto opcodeAt = [&](const Statement& x) {
    std::size_t op = x.begin;
    if (op < x.end && p[op].is('@')) op += op + 1 < x.end && p[op + 1].is('!') ? 3 : 2;
    return std::min(op, x.end);
  };
  switch (mutation) {
    case StatementMutation::kDuplicate: {
      const Statement* s = pickStatement(all, &random, isBodyStatement);
      if (s == nullptr) break;
      std::vector<Piece> copy = slice(p, s->begin, s->end);
      startOnNewLine(&copy, &random);
      p.insert(p.begin() + static_cast<std::ptrdiff_t>(s->end), copy.begin(), copy.end());
      break;
    }
    case StatementMutation::kDelete: {
      const Statement* s = pickStatement(all, &random, [](const Statement& x) {
        return x.kind != Statement::Kind::kOpen && x.kind != Statement::Kind::kClose;
      });
      if (s == nullptr) break;
      p.erase(p.begin() + static_cast<std::ptrdiff_t>(s->begin),
              p.begin() + static_cast<std::ptrdiff_t>(s->end));
      break;
    }
    case StatementMutation::kSwap: {
      std::vector<std::size_t> candidates;  // index k: swap statements k and k + 1
      for (std::size_t k = 0; k + 1 < all.size(); ++k) {
        if (isBodyStatement(all[k]) && isBodyStatement(all[k + 1])) candidates.push_back(k);
      }
      if (candidates.empty()) break;
      const std::size_t k = candidates[random.below(candidates.size())];
      const Statement &a = all[k], &b = all[k + 1];
      std::vector<Piece> first = slice(p, a.begin, a.end), second = slice(p, b.begin, b.end);
      std::swap(first[0].gap, second[0].gap);
      std::vector<Piece> both = second;
      both.insert(both.end(), first.begin(), first.end());
      std::copy(both.begin(), both.end(), p.begin() + static_cast<std::ptrdiff_t>(a.begin));
      break;
    }
    case StatementMutation::kStateSpace: {
      const Statement* s = pickStatement(all, &random, [&](const Statement& x) {
        if (x.kind != Statement::Kind::kInstruction) return false;
        const std::size_t op = opcodeAt(x);
        return op < x.end && isMemoryOpcode(p[op].text);
      });
      if (s == nullptr) break;
      const std::size_t op = opcodeAt(*s);
      static constexpr const char* kSpaces[] = {"",       ".global", ".shared",      ".local",
                                                ".const", ".param",  ".shared::cta", ".shared::cluster"};
      p[op].text = withSpace(p[op].text, random.pick(kSpaces));
      break;
    }
    case StatementMutation::kMoveDirective: {
      const Statement* s = pickStatement(all, &random, [&](const Statement& x) {
        return x.kind == Statement::Kind::kLineDirective || x.kind == Statement::Kind::kDirective;
      });
      if (s == nullptr) break;
      std::vector<Piece> moved = slice(p, s->begin, s->end);
      p.erase(p.begin() + static_cast<std::ptrdiff_t>(s->begin),
              p.begin() + static_cast<std::ptrdiff_t>(s->end));
      const std::vector<Statement> rest = statements(p);
      std::size_t at = p.size();
      if (!rest.empty()) at = rest[random.below(rest.size())].begin;
      startOnNewLine(&moved, &random);
      if (at < p.size() && random.chance(1, 2)) p[at].gap = Gap::kSpace;  // the next statement on its line
      p.insert(p.begin() + static_cast<std::ptrdiff_t>(at), moved.begin(), moved.end());
      break;
    }
  }
  if (!p.empty()) p[0].gap = Gap::kNone;
  return render(p);
}

}  // namespace agileos::ptx::testing
