#include "ptx/printer.h"

#include <string_view>

namespace agileos::ptx {
namespace {

bool isPunct(const Token& t, std::string_view any) {
  return t.kind == TokenKind::kPunct && t.text.size() == 1 && any.find(t.text[0]) != std::string_view::npos;
}

// Whether a space goes between `left` and `right`. The layout is the printer's own, never
// the source's: a token is followed by one space unless the pair is one nvcc writes without
// (a register range %r<9>, an array name[4], an address [%rd1+-8], a call list (a, b),
// generic(x)+4, a label's ':'). The rules never join two words, never write '/' or '*'
// next to either (no comment marker can form), and never write two '+'/'-' together.
bool spaceBetween(const Token& left, const Token& right) {
  if (isPunct(left, "/*") || isPunct(right, "/*")) return true;
  if (isPunct(left, "+-") && isPunct(right, "+-")) return true;
  if (isPunct(right, ",;)]}>:")) return false;
  if (isPunct(left, "([{<!~")) return false;
  if (isPunct(left, "+-|&^") || isPunct(right, "+-|&^")) return false;
  if (right.isPunct('<') || right.isPunct('[')) return left.kind == TokenKind::kPunct && !left.isPunct(')');
  if (right.isPunct('('))
    return left.kind != TokenKind::kIdentifier && !left.is(TokenKind::kDirective, ".attribute");
  return true;
}

void appendTokens(const std::vector<Token>& tokens, std::size_t begin, std::size_t end, std::string* out) {
  for (std::size_t i = begin; i < end; ++i) {
    if (i > begin && spaceBetween(tokens[i - 1], tokens[i])) *out += ' ';
    *out += tokens[i].text;
  }
}

void appendTokens(const std::vector<Token>& tokens, std::string* out) {
  appendTokens(tokens, 0, tokens.size(), out);
}

bool isDataDirective(const Token& t) {
  return t.is(TokenKind::kDirective, ".b8") || t.is(TokenKind::kDirective, ".b16") ||
         t.is(TokenKind::kDirective, ".b32") || t.is(TokenKind::kDirective, ".b64");
}

// `.section .name`, then '{', each label and each data item on a line of its own, '}'
// (tokens as the parser placed them: .section, the name, '{', items, '}').
void appendSection(const Directive& section, std::string* out) {
  const std::vector<Token>& t = section.tokens;
  appendTokens(t, 0, 2, out);
  *out += "\n{\n";
  const std::size_t close = t.size() - 1;
  std::size_t item = 3;
  for (std::size_t k = 4; k < close; ++k) {
    const bool startsItem =
        isDataDirective(t[k]) || (t[k].kind == TokenKind::kIdentifier && t[k + 1].isPunct(':'));
    if (!startsItem) continue;
    appendTokens(t, item, k, out);
    *out += '\n';
    item = k;
  }
  if (item < close) {
    appendTokens(t, item, close, out);
    *out += '\n';
  }
  *out += '}';
}

void appendDirective(const Directive& directive, std::string* out) {
  if (directive.name == ".section" && directive.tokens.size() >= 4) {
    appendSection(directive, out);
  } else {
    appendTokens(directive.tokens, out);
  }
}

void appendOperand(const Operand& operand, std::string* out) { appendTokens(operand.tokens, out); }

void appendInstruction(const Instruction& instruction, std::string* out) {
  if (instruction.predicate) {
    *out += '@';
    if (instruction.predicate->negated) *out += '!';
    *out += instruction.predicate->reg;
    *out += ' ';
  }
  *out += instruction.opcode;
  for (const std::string& modifier : instruction.modifiers) *out += modifier;
  for (std::size_t i = 0; i < instruction.operands.size(); ++i) {
    *out += i == 0 ? "\t" : ", ";
    appendOperand(instruction.operands[i], out);
  }
  *out += ';';
}

void appendIndent(int depth, std::string* out) { out->append(static_cast<std::size_t>(depth), '\t'); }

void appendBlock(const std::vector<Statement>& statements, int depth, std::string* out) {
  for (const Statement& statement : statements) {
    switch (statement.kind) {
      case Statement::Kind::kInstruction:
        appendIndent(depth, out);
        appendInstruction(statement.instruction, out);
        break;
      case Statement::Kind::kLabel:
        *out += statement.label;
        *out += ':';
        break;
      case Statement::Kind::kDirective:
        appendIndent(depth, out);
        appendDirective(statement.directive, out);
        break;
      case Statement::Kind::kBlock:
        appendIndent(depth, out);
        *out += "{\n";
        appendBlock(statement.block, depth + 1, out);
        appendIndent(depth, out);
        *out += '}';
        break;
    }
    *out += '\n';
  }
}

}  // namespace

std::string print(const Instruction& instruction) {
  std::string out;
  appendInstruction(instruction, &out);
  return out;
}

std::string print(const Module& module) {
  std::string out;
  for (const TopLevel& item : module.items) {
    if (item.kind == TopLevel::Kind::kDirective) {
      appendDirective(item.directive, &out);
      out += '\n';
      continue;
    }
    const Function& function = item.function;
    appendTokens(function.header, &out);
    if (function.hasBody) {
      out += "\n{\n";
      appendBlock(function.body, 1, &out);
      out += '}';
    }
    out += "\n\n";
  }
  return out;
}

}  // namespace agileos::ptx
