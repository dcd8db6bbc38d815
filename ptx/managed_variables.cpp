#include "ptx/managed_variables.h"

#include <map>
#include <set>

#include "ptx/declarations.h"
#include "ptx/fresh_names.h"
#include "ptx/parser.h"

namespace agileos::ptx {
namespace {

// The index of `.attribute` in a declaration's tokens, or tokens.size().
std::size_t attributeAt(const std::vector<Token>& tokens) {
  for (std::size_t k = 0; k < tokens.size(); ++k) {
    if (tokens[k].is(TokenKind::kDirective, ".attribute")) return k;
  }
  return tokens.size();
}

bool isManagedDeclaration(const Directive& directive) {
  const std::vector<Token>& tokens = directive.tokens;
  for (std::size_t k = attributeAt(tokens); k < tokens.size() && !tokens[k].isPunct(')'); ++k) {
    if (tokens[k].is(TokenKind::kDirective, ".managed")) return true;
  }
  return false;
}

bool mentions(const std::vector<Token>& tokens, const std::set<std::string>& names) {
  for (const Token& t : tokens) {
    if (t.kind == TokenKind::kIdentifier && names.contains(t.text)) return true;
  }
  return false;
}

// One statement parsed from text (the printer's own syntax), as the guard builds its checks.
std::vector<Statement> parseStatements(const std::string& text, std::string* error) {
  const ParseResult parsed = parse(".version 9.0\n.entry managed_rewrite()\n{\n" + text + "}\n");
  if (!parsed.ok) {
    *error = "internal: a generated statement does not parse: " + parsed.error;
    return {};
  }
  return parsed.module.items[1].function.body;
}

Directive parseDeclaration(const std::string& text, std::string* error) {
  const ParseResult parsed = parse(".version 9.0\n" + text + "\n");
  if (!parsed.ok || parsed.module.items.size() != 2) {
    *error = "internal: a generated declaration does not parse: " + parsed.error;
    return {};
  }
  return parsed.module.items[1].directive;
}

class Rewriter {
 public:
  Rewriter(const std::map<std::string, std::string>& slots, std::string prefix)
      : slots_(slots), prefix_(std::move(prefix)) {
    for (const auto& [name, slot] : slots_) names_.insert(name);
  }

  bool function(Function* function) {
    if (mentions(function->header, names_)) {
      return fail(0, "a parameter of " + function->name + " shadows a __managed__ variable");
    }
    return rewrite(&function->body);
  }

  const std::string& error() const { return error_; }

 private:
  bool rewrite(std::vector<Statement>* statements) {
    for (Statement& statement : *statements) {
      switch (statement.kind) {
        case Statement::Kind::kBlock:
          if (!rewrite(&statement.block)) return false;
          break;
        case Statement::Kind::kLabel:
          if (names_.contains(statement.label)) return fail(0, "a label shadows a __managed__ variable");
          break;
        case Statement::Kind::kDirective:
          if (mentions(statement.directive.tokens, names_)) {
            return fail(statement.directive.tokens.empty() ? 0 : statement.directive.tokens[0].line,
                        "a __managed__ variable named in a " + statement.directive.name +
                            " directive (a declaration shadowing it, or a use AgileOS cannot rewrite)");
          }
          break;
        case Statement::Kind::kInstruction:
          if (!instruction(&statement)) return false;
          break;
      }
    }
    return true;
  }

  // Rewrites one instruction naming a managed variable into a block: the slot loads, then the
  // instruction with each such operand replaced by the register holding the variable's address.
  bool instruction(Statement* statement) {
    Instruction& instruction = statement->instruction;
    if (instruction.predicate && names_.contains(instruction.predicate->reg)) {
      return fail(instruction.line, "a __managed__ variable used as a predicate");
    }
    std::string text;
    for (Operand& operand : instruction.operands) {
      if (!mentions(operand.tokens, names_)) continue;
      std::string variable;
      std::int64_t offset = 0;
      bool address = false;
      if (operand.kind == Operand::Kind::kSymbol && operand.tokens.size() == 1) {
        variable = operand.tokens[0].text;
      } else if (operand.kind == Operand::Kind::kAddress && operand.address &&
                 names_.contains(operand.address->base) && operand.elements.empty()) {
        variable = operand.address->base;
        offset = operand.address->offset;
        address = true;
      } else if (!symbolPlusOffset(operand, &variable, &offset)) {
        return fail(instruction.line, "a __managed__ variable in an operand form AgileOS cannot rewrite");
      }
      const std::string reg = prefix_ + std::to_string(next_++);
      text += ".reg .u64 " + reg + ";\nld.global.u64 " + reg + ", [" + slots_.at(variable) + "];\n";
      if (offset != 0) text += "add.s64 " + reg + ", " + reg + ", " + std::to_string(offset) + ";\n";
      std::string error;
      const std::vector<Statement> replaced = parseStatements(
          std::string(address ? "ld.u8 %r, [" + reg + "];\n" : "mov.b64 %r, " + reg + ";\n"), &error);
      if (replaced.empty()) return fail(instruction.line, error);
      operand = replaced[0].instruction.operands[1];
    }
    if (text.empty()) return true;
    std::string error;
    std::vector<Statement> block = parseStatements(text, &error);
    if (block.empty()) return fail(instruction.line, error);
    block.push_back(std::move(*statement));
    statement->kind = Statement::Kind::kBlock;
    statement->block = std::move(block);
    statement->instruction = {};
    return true;
  }

  // `V+N` or `V-N` (an expression operand of mov and friends).
  bool symbolPlusOffset(const Operand& operand, std::string* variable, std::int64_t* offset) const {
    const std::vector<Token>& t = operand.tokens;
    if (operand.kind != Operand::Kind::kExpression || t.size() != 3 || t[0].kind != TokenKind::kIdentifier ||
        !names_.contains(t[0].text) || !(t[1].isPunct('+') || t[1].isPunct('-')) ||
        t[2].kind != TokenKind::kNumber) {
      return false;
    }
    Operand number;
    number.kind = Operand::Kind::kImmediate;
    number.tokens = {t[2]};
    const std::optional<std::uint64_t> value = immediateValue(number);
    if (!value || *value > (1ull << 40)) return false;
    *variable = t[0].text;
    *offset = t[1].isPunct('-') ? -static_cast<std::int64_t>(*value) : static_cast<std::int64_t>(*value);
    return true;
  }

  bool fail(std::uint32_t line, const std::string& reason) {
    error_ = (line != 0 ? "line " + std::to_string(line) + ": " : std::string()) + reason;
    return false;
  }

  const std::map<std::string, std::string>& slots_;  // variable -> slot
  std::set<std::string> names_;
  const std::string prefix_;
  std::size_t next_ = 0;
  std::string error_;
};

ManagedRewriteResult failed(std::string error) {
  ManagedRewriteResult result;
  result.error = "__managed__ variables: " + std::move(error);
  return result;
}

}  // namespace

bool hasManagedVariables(const Module& module) {
  for (const TopLevel& item : module.items) {
    if (item.kind == TopLevel::Kind::kDirective && isManagedDeclaration(item.directive)) return true;
  }
  return false;
}

ManagedRewriteResult rewriteManagedVariables(const Module& input) {
  ManagedRewriteResult result;
  if (!hasManagedVariables(input)) {
    result.module = input;
    result.ok = true;
    return result;
  }
  const std::set<std::string> identifiers = moduleIdentifiers(input);
  const std::string slotPrefix = freshPrefix(identifiers, "__agileos_managed_slot");
  const std::string registerPrefix = freshPrefix(identifiers, "%agileos_managed");
  std::map<std::string, std::string> slots;
  Module module;
  for (const TopLevel& item : input.items) {
    if (item.kind == TopLevel::Kind::kDirective && item.directive.name == ".address_size" &&
        !(item.directive.tokens.size() >= 2 && item.directive.tokens[1].text == "64")) {
      return failed("only .address_size 64 is supported");
    }
    if (item.kind != TopLevel::Kind::kDirective || !isManagedDeclaration(item.directive)) {
      module.items.push_back(item);
      continue;
    }
    const Directive& declaration = item.directive;
    if (declaration.name != ".global") return failed("a managed variable outside .global");
    std::vector<Token> tokens;
    bool linkage = false;
    for (std::size_t k = 0; k < declaration.tokens.size(); ++k) {
      const Token& t = declaration.tokens[k];
      if (t.is(TokenKind::kDirective, ".extern")) {
        return failed("an .extern managed variable (separate compilation) is not supported");
      }
      if (t.is(TokenKind::kDirective, ".visible") || t.is(TokenKind::kDirective, ".weak") ||
          t.is(TokenKind::kDirective, ".common")) {
        linkage = true;
      }
      if (!t.is(TokenKind::kDirective, ".attribute")) {
        tokens.push_back(t);
        continue;
      }
      // Exactly `.attribute ( .managed )`: anything more is a form this rewrite does not know.
      if (k + 3 >= declaration.tokens.size() || !declaration.tokens[k + 1].isPunct('(') ||
          !declaration.tokens[k + 2].is(TokenKind::kDirective, ".managed") ||
          !declaration.tokens[k + 3].isPunct(')')) {
        return failed("attributes other than .managed beside it are not supported");
      }
      k += 3;
    }
    Directive plain = declaration;
    plain.tokens = std::move(tokens);
    // Visible, so that the worker finds it by name (cuModuleGetGlobal) to read its initializer.
    if (!linkage)
      plain.tokens.insert(plain.tokens.begin(), Token{TokenKind::kDirective, ".visible", 0, false, false});
    TopLevel rewritten = item;
    rewritten.directive = std::move(plain);
    module.items.push_back(std::move(rewritten));
    for (const DeclaredName& name : readDeclaration(declaration)) {
      const std::optional<std::uint64_t> bytes = name.bytes();
      if (!bytes || *bytes == 0) return failed(name.name + ": its size is not known");
      ManagedVariable variable{name.name, slotPrefix + std::to_string(slots.size()), *bytes};
      std::string error;
      TopLevel slot;
      slot.kind = TopLevel::Kind::kDirective;
      slot.directive = parseDeclaration(".visible .global .align 8 .u64 " + variable.slot + ";", &error);
      if (!error.empty()) return failed(error);
      module.items.push_back(std::move(slot));
      slots.emplace(variable.name, variable.slot);
      result.variables.push_back(std::move(variable));
    }
  }
  // Every other module-level use of a managed variable is refused: an initializer naming it,
  // another declaration of its name. A debug .section may name it (its DWARF then describes
  // the module's own copy, which no code uses any more; no debugger reaches a client's kernels).
  std::set<std::string> names;
  for (const auto& [name, slot] : slots) names.insert(name);
  std::map<std::string, int> declarations;
  for (const TopLevel& item : module.items) {
    if (item.kind != TopLevel::Kind::kDirective || item.directive.name == ".section") continue;
    const std::vector<DeclaredName> declared = readDeclaration(item.directive);
    for (const DeclaredName& name : declared) {
      if (names.contains(name.name) && ++declarations[name.name] > 1) {
        return failed(name.name + " is declared more than once");
      }
    }
    std::vector<Token> initializer;
    bool past = false;
    for (const Token& t : item.directive.tokens) {
      past = past || t.isPunct('=');
      if (past) initializer.push_back(t);
    }
    if (mentions(declared.empty() ? item.directive.tokens : initializer, names)) {
      return failed("a managed variable named in the initializer of a declaration or in a " +
                    item.directive.name + " directive is not supported");
    }
  }
  Rewriter rewriter(slots, registerPrefix);
  for (TopLevel& item : module.items) {
    if (item.kind != TopLevel::Kind::kFunction || !item.function.hasBody) {
      if (item.kind == TopLevel::Kind::kFunction && mentions(item.function.header, names)) {
        return failed("a parameter of " + item.function.name + " shadows a managed variable");
      }
      continue;
    }
    if (!rewriter.function(&item.function)) return failed(rewriter.error());
  }
  result.module = std::move(module);
  result.ok = true;
  return result;
}

}  // namespace agileos::ptx
