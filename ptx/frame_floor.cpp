#include "ptx/frame_floor.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>

#include "ptx/declarations.h"
#include "ptx/instruction_forms.h"
#include "ptx/parser.h"
#include "ptx/printer.h"

namespace agileos::ptx {
namespace {

std::string parameterName(const std::string& prefix) { return prefix + "_fp"; }

bool startsWith(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

Token token(TokenKind kind, std::string text) {
  Token t;
  t.kind = kind;
  t.text = std::move(text);
  return t;
}

// Appends `.param .b64 NAME` to the parameter list that follows tokens[at] (the function's
// name, or a prototype's `_`), making the list if there is none.
void appendParameter(std::vector<Token>* tokens, std::size_t at, const std::string& name) {
  const std::vector<Token> parameter = {token(TokenKind::kDirective, ".param"),
                                        token(TokenKind::kDirective, ".b64"),
                                        token(TokenKind::kIdentifier, name)};
  const std::size_t open = at + 1;
  if (open >= tokens->size() || !(*tokens)[open].isPunct('(')) {
    std::vector<Token> list = {token(TokenKind::kPunct, "(")};
    list.insert(list.end(), parameter.begin(), parameter.end());
    list.push_back(token(TokenKind::kPunct, ")"));
    tokens->insert(tokens->begin() + static_cast<std::ptrdiff_t>(open), list.begin(), list.end());
    return;
  }
  std::size_t close = open;
  for (int depth = 0; close < tokens->size(); ++close) {
    if ((*tokens)[close].isPunct('(')) ++depth;
    if ((*tokens)[close].isPunct(')') && --depth == 0) break;
  }
  std::vector<Token> inserted;
  if (close != open + 1) inserted.push_back(token(TokenKind::kPunct, ","));
  inserted.insert(inserted.end(), parameter.begin(), parameter.end());
  tokens->insert(tokens->begin() + static_cast<std::ptrdiff_t>(close), inserted.begin(), inserted.end());
}

// The index of the first identifier `name` outside parentheses, or npos.
std::size_t topLevelIdentifier(const std::vector<Token>& tokens, const std::string& name) {
  int depth = 0;
  for (std::size_t k = 0; k < tokens.size(); ++k) {
    if (tokens[k].isPunct('(')) ++depth;
    if (tokens[k].isPunct(')')) --depth;
    if (depth == 0 && tokens[k].is(TokenKind::kIdentifier, name)) return k;
  }
  return std::string::npos;
}

std::vector<Statement> statementsOf(const std::string& text) {
  const ParseResult parsed = parse(".version 9.0\n.func frame_floor()\n{\n" + text + "}\n");
  return parsed.ok ? parsed.module.items[1].function.body : std::vector<Statement>{};
}

// The .local variables a body declares before its first instruction (the prologue may name them).
std::vector<std::string> topLevelLocals(const std::vector<Statement>& body) {
  std::vector<std::string> names;
  for (const Statement& s : body) {
    if (s.kind != Statement::Kind::kDirective) break;
    for (const DeclaredName& d : readDeclaration(s.directive)) {
      if (d.space == ".local" && d.registerRange == 0) names.push_back(d.name);
    }
  }
  return names;
}

// The call's target operand index (after an optional return list), or npos.
std::size_t targetIndex(const Instruction& call) {
  if (call.opcode != "call" || call.operands.empty()) return std::string::npos;
  const std::size_t t = call.operands[0].kind == Operand::Kind::kList ? 1 : 0;
  return t < call.operands.size() ? t : std::string::npos;
}

// Whether the call reaches a user function (by name or through a register).
bool callsUserFunction(const Instruction& call, const std::set<std::string>& users) {
  const std::size_t t = targetIndex(call);
  if (t == std::string::npos) return false;
  const Operand& target = call.operands[t];
  if (target.kind == Operand::Kind::kRegister) return true;
  return target.kind == Operand::Kind::kSymbol && users.count(target.tokens[0].text) != 0;
}

std::string tokensText(const Operand& operand) {
  std::string text;
  for (const Token& t : operand.tokens) text += (text.empty() ? "" : " ") + t.text;
  return text;
}

// The call with `argument` appended to its argument list.
std::optional<Instruction> withArgument(const Instruction& call, const std::string& argument) {
  const std::size_t t = targetIndex(call);
  std::string text;
  if (call.predicate)
    text += "@" + std::string(call.predicate->negated ? "!" : "") + call.predicate->reg + " ";
  text += call.opcode;
  for (const std::string& m : call.modifiers) text += m;
  bool appended = false;
  for (std::size_t k = 0; k < call.operands.size(); ++k) {
    text += k == 0 ? " " : ", ";
    const Operand& o = call.operands[k];
    if (k == t + 1 && o.kind == Operand::Kind::kList) {
      text += "(";
      for (const Operand& e : o.elements) text += tokensText(e) + ", ";
      text += argument + ")";
      appended = true;
    } else {
      text += tokensText(o);
    }
    if (k == t && (k + 1 >= call.operands.size() || call.operands[k + 1].kind != Operand::Kind::kList)) {
      text += ", (" + argument + ")";
      appended = true;
    }
  }
  if (!appended) return std::nullopt;
  const ParseResult parsed = parse(".version 9.0\n.entry frame_floor()\n{\n" + text + ";\n}\n");
  if (!parsed.ok || parsed.module.items[1].function.body.size() != 1) return std::nullopt;
  Instruction rebuilt = parsed.module.items[1].function.body[0].instruction;
  rebuilt.line = call.line;
  return rebuilt;
}

// `dest` = the lowest address of `locals` (~0 when there are none): mov, then min.u64 with
// each other variable through a register of its own.
std::string floorComputation(const std::string& dest, const std::vector<std::string>& locals) {
  std::string text =
      "mov.u64 " + dest + ", " + (locals.empty() ? std::string("0xffffffffffffffff") : locals[0]) + ";\n";
  for (std::size_t k = 1; k < locals.size(); ++k) {
    const std::string m = dest + "_m" + std::to_string(k);
    text += ".reg .u64 " + m + ";\nmov.u64 " + m + ", " + locals[k] + ";\nmin.u64 " + dest + ", " + dest +
            ", " + m + ";\n";
  }
  return text;
}

class Plumber {
 public:
  Plumber(std::set<std::string> users, std::string prefix)
      : users_(std::move(users)), prefix_(std::move(prefix)), floor_(frameFloorRegister(prefix_)) {}

  // The body about to be plumbed: a kernel's (its leading local variables make the floor,
  // computed afresh at each call) or a device function's (`kernelLocals` null: it passes on
  // the floor it was given).
  void setFunction(const std::vector<std::string>* kernelLocals) { kernelLocals_ = kernelLocals; }

  bool body(std::vector<Statement>* statements, bool top = true) {
    std::vector<Statement> out;
    out.reserve(statements->size());
    for (Statement& s : *statements) {
      if (!top && kernelLocals_ != nullptr && s.kind == Statement::Kind::kDirective &&
          shadowsLocal(s.directive)) {
        return fail(
            s.directive.tokens.empty() ? 0 : s.directive.tokens.front().line,
            "a declaration in a block shadows a local variable of the kernel (its frame floor names it)");
      }
      if (s.kind == Statement::Kind::kBlock) {
        if (!body(&s.block, false)) return false;
      } else if (s.kind == Statement::Kind::kDirective && s.directive.name == ".callprototype") {
        const std::size_t name = topLevelIdentifier(s.directive.tokens, "_");
        if (name == std::string::npos) return fail(0, "a .callprototype without its `_`");
        appendParameter(&s.directive.tokens, name, "_");
      } else if (s.kind == Statement::Kind::kInstruction && callsUserFunction(s.instruction, users_)) {
        const std::string argument = prefix_ + "_fa" + std::to_string(arguments_++);
        std::optional<Instruction> call = withArgument(s.instruction, argument);
        if (!call) return fail(s.instruction.line, "a call the guard cannot pass the frame floor to");
        std::string text = ".param .b64 " + argument + ";\n";
        std::string value = floor_;
        if (kernelLocals_ != nullptr) {
          // In a kernel the floor is computed right before each call, never kept in a register
          // across the kernel's code: a spill of it would sit in the kernel's own frame, which
          // the callees may write.
          value = prefix_ + "_fk" + std::to_string(arguments_ - 1);
          text += ".reg .u64 " + value + ";\n" + floorComputation(value, *kernelLocals_);
        }
        text += "st.param.b64 [" + argument + "+0], " + value + ";\n";
        std::vector<Statement> pass = statementsOf(text);
        if (pass.empty())
          return fail(s.instruction.line, "internal: the frame floor's argument does not parse");
        // An indirect call's control-flow check block stays immediately before it.
        const bool indirect =
            s.instruction.operands[targetIndex(s.instruction)].kind == Operand::Kind::kRegister;
        const std::size_t at = indirect && !out.empty() && out.back().kind == Statement::Kind::kBlock
                                   ? out.size() - 1
                                   : out.size();
        out.insert(out.begin() + static_cast<std::ptrdiff_t>(at), pass.begin(), pass.end());
        s.instruction = std::move(*call);
      }
      out.push_back(std::move(s));
    }
    *statements = std::move(out);
    return true;
  }

  const std::string& error() const { return error_; }

  // Whether a declaration names one of the kernel's leading local variables again.
  bool shadowsLocal(const Directive& directive) const {
    for (const DeclaredName& d : readDeclaration(directive)) {
      if (std::find(kernelLocals_->begin(), kernelLocals_->end(), d.name) != kernelLocals_->end())
        return true;
    }
    return false;
  }

 private:
  bool fail(std::uint32_t line, const std::string& reason) {
    error_ = "line " + std::to_string(line) + ": " + reason;
    return false;
  }

  const std::set<std::string> users_;
  const std::string prefix_;
  const std::string floor_;
  const std::vector<std::string>* kernelLocals_ = nullptr;
  std::size_t arguments_ = 0;
  std::string error_;
};

// ---------------------------------------------------------------- the checker

class Checker {
 public:
  Checker(const std::set<std::string>& users, const std::string& prefix, std::vector<std::string>* out)
      : users_(users), prefix_(prefix), floor_(frameFloorRegister(prefix)), out_(out) {}

  // Calls, and writes of the floor outside `prologue`.
  // `kernelLocals`: the body is a kernel's, whose calls pass a floor computed right before
  // them from these variables; otherwise a device function's, whose calls pass its floor.
  void body(const std::vector<Statement>& statements, const std::set<const Instruction*>& prologue, bool top,
            const std::vector<std::string>* kernelLocals) {
    for (std::size_t k = 0; k < statements.size(); ++k) {
      const Statement& s = statements[k];
      if (s.kind == Statement::Kind::kBlock) {
        body(s.block, prologue, false, kernelLocals);
        continue;
      }
      if (s.kind == Statement::Kind::kDirective && !top) {
        for (const Token& t : s.directive.tokens) {
          if (t.text == floor_) report(0, "the frame floor is declared again in a block");
        }
        if (kernelLocals != nullptr) {
          for (const DeclaredName& d : readDeclaration(s.directive)) {
            if (std::find(kernelLocals->begin(), kernelLocals->end(), d.name) != kernelLocals->end())
              report(0, "a block declares the kernel's local variable '" + d.name + "' again");
          }
        }
      }
      if (s.kind != Statement::Kind::kInstruction) continue;
      const Instruction& i = s.instruction;
      if (prologue.count(&i) == 0 && !i.operands.empty() && i.operands[0].tokens.size() == 1 &&
          i.operands[0].tokens[0].text == floor_) {
        report(i.line, "the frame floor is written: " + print(i));
      }
      if (callsUserFunction(i, users_) && !passesFloor(statements, k, kernelLocals)) {
        report(i.line, "a call that does not pass the frame floor: " + print(i));
      }
    }
  }

  std::set<const Instruction*> functionPrologue(const std::vector<Statement>& body, std::uint32_t line) {
    std::vector<const Instruction*> seq = topInstructions(body);
    if (seq.empty() || !isForm(*seq[0], "ld", {".param", ".u64"}, 2) ||
        registerName(seq[0]->operands[0]) != floor_ || !seq[0]->operands[1].address ||
        seq[0]->operands[1].address->base != parameterName(prefix_) ||
        seq[0]->operands[1].address->offset != 0) {
      report(line, "a device function without the frame floor's prologue");
      return {};
    }
    return {seq[0]};
  }

  void report(std::uint32_t line, const std::string& what) {
    out_->push_back("line " + std::to_string(line) + ": " + what);
  }

 private:
  static std::vector<const Instruction*> topInstructions(const std::vector<Statement>& body) {
    std::vector<const Instruction*> seq;
    for (const Statement& s : body) {
      if (s.kind == Statement::Kind::kInstruction) seq.push_back(&s.instruction);
    }
    return seq;
  }

  // In a kernel: `value` (a fresh register) is computed by the instructions right before
  // statements[at]: mov value, first-variable-or-~0 { mov m, variable; min value, value, m },
  // each variable one of the kernel's leading locals (each bounds the kernel's frame from
  // below, so any subset of them gives a sound floor).
  bool computedBefore(const std::vector<Statement>& statements, std::size_t at, const std::string& value,
                      const std::vector<std::string>& locals) const {
    if (!startsWith(value, prefix_)) return false;
    const auto local = [&](const Operand& o) {
      // A variable may be named with a leading '%' (then the parser sees a register): nameOf.
      const std::string name = nameOf(o);
      return !name.empty() && std::find(locals.begin(), locals.end(), name) != locals.end();
    };
    std::vector<const Instruction*> before;  // the instructions before `at`, nearest last
    for (std::size_t j = 0; j < at; ++j) {
      if (statements[j].kind == Statement::Kind::kInstruction) before.push_back(&statements[j].instruction);
    }
    std::size_t k = before.size();
    while (k >= 2 && isForm(*before[k - 1], "min", {".u64"}, 3) &&
           registerName(before[k - 1]->operands[0]) == value &&
           registerName(before[k - 1]->operands[1]) == value && isForm(*before[k - 2], "mov", {".u64"}, 2) &&
           registerName(before[k - 2]->operands[0]) == registerName(before[k - 1]->operands[2]) &&
           startsWith(registerName(before[k - 2]->operands[0]), prefix_) &&
           local(before[k - 2]->operands[1])) {
      k -= 2;
    }
    if (k == 0) return false;
    const Instruction& first = *before[k - 1];
    return isForm(first, "mov", {".u64"}, 2) && registerName(first.operands[0]) == value &&
           (local(first.operands[1]) || immediateValue(first.operands[1]) == ~std::uint64_t{0});
  }

  // The call's last argument is a parameter declared and stored with the floor before it in
  // the same block (in a kernel: the floor computed right before that store).
  bool passesFloor(const std::vector<Statement>& statements, std::size_t k,
                   const std::vector<std::string>* kernelLocals) const {
    const Instruction& call = statements[k].instruction;
    const std::size_t t = targetIndex(call);
    if (t + 1 >= call.operands.size() || call.operands[t + 1].kind != Operand::Kind::kList ||
        call.operands[t + 1].elements.empty()) {
      return false;
    }
    const Operand& last = call.operands[t + 1].elements.back();
    if (last.tokens.size() != 1 || !startsWith(last.tokens[0].text, prefix_ + "_fa")) return false;
    const std::string argument = last.tokens[0].text;
    for (std::size_t j = 0; j < k; ++j) {
      const Statement& s = statements[j];
      if (s.kind != Statement::Kind::kInstruction) continue;
      const Instruction& i = s.instruction;
      if (!isForm(i, "st", {".param", ".b64"}, 2) || !i.operands[0].address ||
          i.operands[0].address->base != argument || i.operands[0].address->offset != 0) {
        continue;
      }
      const std::string value = registerName(i.operands[1]);
      if (kernelLocals == nullptr) return value == floor_;
      return computedBefore(statements, j, value, *kernelLocals);
    }
    return false;
  }

  const std::set<std::string>& users_;
  const std::string prefix_;
  const std::string floor_;
  std::vector<std::string>* out_;
};

}  // namespace

std::string frameFloorRegister(const std::string& registerPrefix) { return registerPrefix + "_floor"; }

std::set<std::string> frameFloorFunctions(const Module& module,
                                          const std::set<std::string>& trustedFunctions) {
  std::set<std::string> users;
  for (const TopLevel& item : module.items) {
    if (item.kind == TopLevel::Kind::kFunction && item.function.kind == Function::Kind::kFunc &&
        item.function.hasBody && !trustedBody(item.function, trustedFunctions)) {
      users.insert(item.function.name);
    }
  }
  return users;
}

bool addFrameFloor(Module* module, const std::set<std::string>& trustedFunctions,
                   const std::string& registerPrefix, std::string* error) {
  const std::set<std::string> users = frameFloorFunctions(*module, trustedFunctions);
  const std::string floor = frameFloorRegister(registerPrefix);
  Plumber plumber(users, registerPrefix);
  for (TopLevel& item : module->items) {
    if (item.kind != TopLevel::Kind::kFunction) continue;
    Function& f = item.function;
    const bool user = f.kind == Function::Kind::kFunc && users.count(f.name) != 0;
    if (user) {
      const std::size_t name = topLevelIdentifier(f.header, f.name);
      if (name == std::string::npos) {
        *error = "internal: the header of '" + f.name + "' does not name it";
        return false;
      }
      appendParameter(&f.header, name, parameterName(registerPrefix));
    }
    if (!f.hasBody || trustedBody(f, trustedFunctions)) continue;
    const std::vector<std::string> locals = topLevelLocals(f.body);
    plumber.setFunction(user ? nullptr : &locals);
    if (!plumber.body(&f.body)) {
      *error = plumber.error();
      return false;
    }
    if (!user) continue;  // a kernel computes its floor at each call
    const std::string prologue =
        ".reg .u64 " + floor + ";\nld.param.u64 " + floor + ", [" + parameterName(registerPrefix) + "];\n";
    std::vector<Statement> statements = statementsOf(prologue);
    if (statements.empty()) {
      *error = "internal: the frame floor's prologue does not parse";
      return false;
    }
    // After the body's own declarations.
    std::size_t at = 0;
    while (at < f.body.size() && f.body[at].kind == Statement::Kind::kDirective) ++at;
    f.body.insert(f.body.begin() + static_cast<std::ptrdiff_t>(at), statements.begin(), statements.end());
  }
  return true;
}

std::vector<std::string> findMissingFrameFloor(const Module& module,
                                               const std::set<std::string>& trustedFunctions,
                                               const std::string& registerPrefix) {
  std::vector<std::string> out;
  const std::set<std::string> users = frameFloorFunctions(module, trustedFunctions);
  Checker checker(users, registerPrefix, &out);
  for (const TopLevel& item : module.items) {
    if (item.kind != TopLevel::Kind::kFunction) continue;
    const Function& f = item.function;
    const std::uint32_t line = f.header.empty() ? 0 : f.header.front().line;
    if (f.kind == Function::Kind::kFunc && users.count(f.name) != 0) {
      const std::vector<DeclaredName> parameters = readParameters(f);
      if (parameters.empty() || parameters.back().name != parameterName(registerPrefix) ||
          parameters.back().space != ".param" || parameters.back().elementBytes != 8) {
        checker.report(line, "'" + f.name + "' does not take the frame floor as its last parameter");
      }
    }
    if (!f.hasBody || trustedBody(f, trustedFunctions)) continue;
    const bool kernel = f.kind == Function::Kind::kEntry;
    const std::set<const Instruction*> prologue =
        kernel ? std::set<const Instruction*>{} : checker.functionPrologue(f.body, line);
    const std::vector<std::string> locals = topLevelLocals(f.body);
    checker.body(f.body, prologue, true, kernel ? &locals : nullptr);
  }
  return out;
}

}  // namespace agileos::ptx
