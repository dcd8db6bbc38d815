#include "ptx/fresh_names.h"

namespace agileos::ptx {

void collectIdentifiers(const std::vector<Token>& tokens, std::set<std::string>* out) {
  for (const Token& t : tokens) {
    if (t.kind == TokenKind::kIdentifier) out->insert(t.text);
  }
}

void collectIdentifiers(const std::vector<Statement>& statements, std::set<std::string>* out) {
  for (const Statement& s : statements) {
    switch (s.kind) {
      case Statement::Kind::kInstruction:
        if (s.instruction.predicate) out->insert(s.instruction.predicate->reg);
        for (const Operand& o : s.instruction.operands) collectIdentifiers(o.tokens, out);
        break;
      case Statement::Kind::kLabel:
        out->insert(s.label);
        break;
      case Statement::Kind::kDirective:
        collectIdentifiers(s.directive.tokens, out);
        break;
      case Statement::Kind::kBlock:
        collectIdentifiers(s.block, out);
        break;
    }
  }
}

std::set<std::string> moduleIdentifiers(const Module& module) {
  std::set<std::string> identifiers;
  for (const TopLevel& item : module.items) {
    if (item.kind == TopLevel::Kind::kDirective) collectIdentifiers(item.directive.tokens, &identifiers);
    if (item.kind == TopLevel::Kind::kFunction) {
      collectIdentifiers(item.function.header, &identifiers);
      collectIdentifiers(item.function.body, &identifiers);
    }
  }
  return identifiers;
}

std::string freshPrefix(const std::set<std::string>& identifiers, std::string prefix) {
  // The first identifier not below `prefix` in order is the only one that can start with it.
  for (auto it = identifiers.lower_bound(prefix); it != identifiers.end() && it->rfind(prefix, 0) == 0;
       it = identifiers.lower_bound(prefix)) {
    prefix += '_';
  }
  return prefix;
}

}  // namespace agileos::ptx
