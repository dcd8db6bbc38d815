#include "ptx/printer.h"

namespace agileos::ptx {
namespace {

// Tokens with one space where the source had whitespace; `keepLines` keeps line breaks.
void appendTokens(const std::vector<Token>& tokens, bool keepLines, std::string* out) {
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const Token& t = tokens[i];
    if (i > 0) {
      if (keepLines && t.newlineBefore) {
        *out += '\n';
      } else if (t.spaceBefore || t.newlineBefore) {
        *out += ' ';
      }
    }
    *out += t.text;
  }
}

void appendOperand(const Operand& operand, std::string* out) { appendTokens(operand.tokens, false, out); }

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
        appendTokens(statement.directive.tokens, false, out);
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
      appendTokens(item.directive.tokens, true, &out);
      out += '\n';
      continue;
    }
    const Function& function = item.function;
    appendTokens(function.header, true, &out);
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
