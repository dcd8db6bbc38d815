#include "ptx/control_flow.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <optional>
#include <utility>

#include "ptx/instruction_forms.h"
#include "ptx/parser.h"
#include "ptx/printer.h"

namespace agileos::ptx {
namespace {

constexpr char kReserved[] = "__agileos_";

bool startsWith(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

// ---------------------------------------------------------------- functions and their roles

// What a kernel may do with a function. Ordered: a name declared twice takes the larger
// role (a name that is ever an .entry is an entry).
enum class Role : std::uint8_t {
  kUser,      // the client's own .func: may be called directly and indirectly
  kTrusted,   // a placeholder the link filled with module code: direct calls only
  kReserved,  // __agileos_*: module code, reached only through the calls the link placed
  kEntry,     // a kernel: not a call target
};

using Roles = std::map<std::string, Role>;  // every function the module declares or defines

Roles functionRoles(const Module& module, const std::set<std::string>& trusted) {
  Roles roles;
  for (const TopLevel& item : module.items) {
    if (item.kind != TopLevel::Kind::kFunction) continue;
    const Function& f = item.function;
    Role role = Role::kUser;
    if (f.kind == Function::Kind::kEntry) {
      role = Role::kEntry;
    } else if (startsWith(f.name, kReserved)) {
      role = Role::kReserved;
    } else if (trusted.count(f.name) != 0) {
      role = Role::kTrusted;
    }
    const auto [it, inserted] = roles.emplace(f.name, role);
    if (!inserted) it->second = std::max(it->second, role);
  }
  return roles;
}

std::optional<Role> roleOf(const Roles& roles, const std::string& name) {
  const auto it = roles.find(name);
  return it == roles.end() ? std::nullopt : std::optional<Role>(it->second);
}

// The function bodies the guard rewrites and checks.
bool guardedBody(const Function& function, const std::set<std::string>& trusted) {
  return function.hasBody && !trustedBody(function, trusted);
}

std::string lineOf(std::uint32_t line) { return "line " + std::to_string(line); }

// ---------------------------------------------------------------- instruction forms

struct CallForm {
  enum class Kind : std::uint8_t { kDirect, kIndirect, kUnknown };
  Kind kind = Kind::kUnknown;
  std::size_t callee = 0;  // index of the callee operand
};

// call{.uni} [(ret),] func [, (args)]                      a direct call
// call{.uni} [(ret),] fptr [, (args)], prototype-or-list   an indirect call
// ptxas decides by the same form: with the trailing label the callee must be a register,
// without it a function (so a register named like a function cannot pass for one).
CallForm callForm(const Instruction& call) {
  CallForm form;
  const std::vector<Operand>& ops = call.operands;
  const bool uni = call.modifiers.size() == 1 && call.modifiers[0] == ".uni";
  if (!call.modifiers.empty() && !uni) return form;
  const std::size_t callee = !ops.empty() && ops[0].kind == Operand::Kind::kList ? 1 : 0;
  if (callee >= ops.size() || nameOf(ops[callee]).empty()) return form;
  form.callee = callee;
  auto isList = [&](std::size_t k) { return ops[k].kind == Operand::Kind::kList; };
  auto isLabel = [&](std::size_t k) { return ops[k].kind == Operand::Kind::kSymbol; };
  const std::size_t rest = ops.size() - callee - 1;
  if (rest == 0 || (rest == 1 && isList(callee + 1))) {
    form.kind = CallForm::Kind::kDirect;
  } else if (ops[callee].kind == Operand::Kind::kRegister &&
             ((rest == 1 && isLabel(callee + 1)) ||
              (rest == 2 && isList(callee + 1) && isLabel(callee + 2)))) {
    // Only a %-register may be called through: a function's name with a trailing label is no
    // call ptxas compiles, and the guard would rewrite it as neither form (found by the layout
    // fuzzer: "call (r), func, label" took the frame floor's argument list before the label and
    // then read as an unchecked indirect call). A register declared without '%' is refused too.
    form.kind = CallForm::Kind::kIndirect;
  }
  return form;
}

// brx.idx{.uni} index, list
struct IndexedBranch {
  std::string index;  // a .u32 register
  std::string list;   // the label of a .branchtargets list
};

std::optional<IndexedBranch> indexedBranch(const Instruction& brx) {
  const std::vector<std::string>& m = brx.modifiers;
  const bool idx = (m.size() == 1 && m[0] == ".idx") || (m.size() == 2 && m[0] == ".idx" && m[1] == ".uni");
  if (!idx || brx.operands.size() != 2 || brx.operands[0].kind != Operand::Kind::kRegister ||
      brx.operands[1].kind != Operand::Kind::kSymbol) {
    return std::nullopt;
  }
  return IndexedBranch{nameOf(brx.operands[0]), nameOf(brx.operands[1])};
}

// The target lists of one function: `.branchtargets` (label -> number of labels) and
// `.calltargets` (label -> the names it lists), with how often each label is defined.
struct TargetLists {
  std::map<std::string, std::size_t> branchLengths;
  std::map<std::string, std::vector<std::string>> callTargets;
  std::map<std::string, std::size_t> labels;
};

std::vector<std::string> identifiers(const std::vector<Token>& tokens) {
  std::vector<std::string> names;
  for (const Token& t : tokens) {
    if (t.kind == TokenKind::kIdentifier) names.push_back(t.text);
  }
  return names;
}

void collectTargetLists(const std::vector<Statement>& statements, TargetLists* out) {
  for (std::size_t k = 0; k < statements.size(); ++k) {
    const Statement& s = statements[k];
    if (s.kind == Statement::Kind::kBlock) collectTargetLists(s.block, out);
    if (s.kind != Statement::Kind::kLabel) continue;
    ++out->labels[s.label];
    if (k + 1 == statements.size() || statements[k + 1].kind != Statement::Kind::kDirective) continue;
    const Directive& list = statements[k + 1].directive;
    if (list.name == ".branchtargets") out->branchLengths[s.label] = identifiers(list.tokens).size();
    if (list.name == ".calltargets") out->callTargets[s.label] = identifiers(list.tokens);
  }
}

bool definedOnce(const TargetLists& lists, const std::string& label) {
  const auto defined = lists.labels.find(label);
  return defined != lists.labels.end() && defined->second == 1;
}

// The length of the list `label` names, or 0 unless it is the one label of a list.
std::size_t listLength(const TargetLists& lists, const std::string& label) {
  const auto list = lists.branchLengths.find(label);
  return definedOnce(lists, label) && list != lists.branchLengths.end() ? list->second : 0;
}

// The functions an indirect call's `.calltargets` list allows (calling anything else is
// undefined in PTX), or nullptr when its last operand names no such list (a prototype).
const std::vector<std::string>* callTargetsOf(const TargetLists& lists, const Instruction& call) {
  const std::string label = nameOf(call.operands.back());
  const auto list = lists.callTargets.find(label);
  return definedOnce(lists, label) && list != lists.callTargets.end() ? &list->second : nullptr;
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// ---------------------------------------------------------------- names of functions

// What the module does with function names, outside trusted bodies.
struct NameScan {
  std::set<std::string> targets;      // the client's functions whose address is taken
  std::vector<std::string> problems;  // "line N: why", one per forbidden use
};

// Directives inside a body whose names are references, not declarations.
bool listsFunctions(const std::string& directive) {
  return directive == ".calltargets" || directive == ".branchtargets" || directive == ".callprototype";
}

// Module-level directives that name no symbol of the program.
bool namesNoSymbol(const std::string& directive) {
  return directive == ".version" || directive == ".target" || directive == ".address_size" ||
         directive == ".file";
}

class NameScanner {
 public:
  NameScanner(const Roles& roles, const std::set<std::string>& trusted) : roles_(roles), trusted_(trusted) {}

  NameScan run(const Module& module) {
    for (const TopLevel& item : module.items) {
      if (item.kind == TopLevel::Kind::kDirective && !namesNoSymbol(item.directive.name)) {
        for (const Token& t : item.directive.tokens) takesAddress(t);
      }
      if (item.kind == TopLevel::Kind::kFunction && guardedBody(item.function, trusted_)) {
        scanFunction(item.function);
      }
    }
    return std::move(scan_);
  }

 private:
  void scanFunction(const Function& function) {
    function_ = function.name;
    bool ownName = true;  // the header names the function itself once
    for (const Token& t : function.header) {
      if (ownName && t.kind == TokenKind::kIdentifier && t.text == function.name) {
        ownName = false;
        continue;
      }
      shadows(t);
    }
    scanBody(function.body);
  }

  void scanBody(const std::vector<Statement>& statements) {
    for (const Statement& s : statements) {
      switch (s.kind) {
        case Statement::Kind::kInstruction:
          scanInstruction(s.instruction);
          break;
        case Statement::Kind::kLabel:
          if (roleOf(roles_, s.label)) {
            scan_.problems.push_back("function '" + function_ + "': label '" + s.label +
                                     "' has the name of a function, which it would shadow");
          }
          break;
        case Statement::Kind::kDirective:
          if (s.directive.name == ".loc" || s.directive.name == ".pragma") break;
          for (const Token& t : s.directive.tokens) {
            if (listsFunctions(s.directive.name)) {
              takesAddress(t);
            } else {
              shadows(t);
            }
          }
          break;
        case Statement::Kind::kBlock:
          scanBody(s.block);
          break;
      }
    }
  }

  void scanInstruction(const Instruction& instruction) {
    std::optional<std::size_t> directCallee;
    if (instruction.opcode == "call") {
      const CallForm form = callForm(instruction);
      if (form.kind == CallForm::Kind::kUnknown) {
        problem(instruction.line, "a call of a form the guard does not know (" + print(instruction) + ")");
        return;
      }
      if (form.kind == CallForm::Kind::kDirect) {
        directCallee = form.callee;
        callsDirectly(nameOf(instruction.operands[form.callee]), instruction.line);
      }
    }
    // A predicate named like a function would read the function's address in a check.
    if (instruction.predicate) takesAddress(instruction.predicate->reg, instruction.line);
    for (std::size_t k = 0; k < instruction.operands.size(); ++k) {
      if (k == directCallee) continue;
      for (const Token& t : instruction.operands[k].tokens) takesAddress(t);
    }
  }

  // A direct call may enter the client's functions and the placeholders, nothing else.
  void callsDirectly(const std::string& callee, std::uint32_t line) {
    const std::optional<Role> role = roleOf(roles_, callee);
    if (!role) {
      problem(line, "a direct call to '" + callee + "', which the module does not declare as a function");
    } else if (*role == Role::kReserved) {
      problem(line, "a call to '" + callee + "', reserved for protected-module code (names starting with " +
                        kReserved + ")");
    } else if (*role == Role::kEntry) {
      problem(line, "a call to kernel '" + callee + "'");
    }
  }

  void takesAddress(const Token& t) {
    if (t.kind == TokenKind::kIdentifier) takesAddress(t.text, t.line);
  }

  // `name` names a function outside the callee of a direct call: it takes its address.
  void takesAddress(const std::string& name, std::uint32_t line) {
    const std::optional<Role> role = roleOf(roles_, name);
    if (!role) return;
    switch (*role) {
      case Role::kUser:
        scan_.targets.insert(name);
        break;
      case Role::kTrusted:
        problem(line, "takes the address of '" + name +
                          "', trusted protected-module code, which only a direct call may enter");
        break;
      case Role::kReserved:
        problem(line, "names '" + name + "', reserved for protected-module code (names starting with " +
                          kReserved + ")");
        break;
      case Role::kEntry:
        problem(line, "takes the address of kernel '" + name + "' (a kernel is not a call target)");
        break;
    }
  }

  // `t` is declared in the function's scope (a parameter, register, variable, or in a local
  // initializer): naming a function there would shadow it in the guard's checks.
  void shadows(const Token& t) {
    if (t.kind != TokenKind::kIdentifier || !roleOf(roles_, t.text)) return;
    problem(t.line, "function '" + function_ + "' declares '" + t.text +
                        "', the name of a function, which the declaration would shadow");
  }

  void problem(std::uint32_t line, const std::string& why) {
    scan_.problems.push_back(lineOf(line) + ": " + why);
  }

  const Roles& roles_;
  const std::set<std::string>& trusted_;
  std::string function_;
  NameScan scan_;
};

// Module-level initializers that name placeholders (kTrusted: not __agileos_*, which stay
// refused) hold 0 there instead; returns how many names were replaced.
std::size_t neutralisePlaceholderAddresses(Module* module, const Roles& roles) {
  std::size_t replaced = 0;
  for (TopLevel& item : module->items) {
    if (item.kind != TopLevel::Kind::kDirective) continue;
    std::vector<Token>& tokens = item.directive.tokens;
    const auto initializer =
        std::find_if(tokens.begin(), tokens.end(), [](const Token& t) { return t.isPunct('='); });
    for (auto t = initializer; t != tokens.end(); ++t) {
      if (t->kind != TokenKind::kIdentifier || roleOf(roles, t->text) != Role::kTrusted) continue;
      t->kind = TokenKind::kNumber;
      t->text = "0";
      ++replaced;
    }
  }
  return replaced;
}

// ---------------------------------------------------------------- the checks

// `bad &= the instruction's predicate` (nothing when it has none); `negated` is declared
// at the top of the block when the predicate is negated.
std::string underPredicate(const std::optional<Predicate>& predicate, const std::string& bad,
                           const std::string& negated) {
  if (!predicate) return {};
  if (!predicate->negated) return "and.pred " + bad + ", " + bad + ", " + predicate->reg + ";\n";
  return "not.pred " + negated + ", " + predicate->reg + ";\nand.pred " + bad + ", " + bad + ", " + negated +
         ";\n";
}

std::string predicateDeclaration(const std::optional<Predicate>& predicate, const std::string& negated) {
  return predicate && predicate->negated ? ".reg .pred " + negated + ";\n" : std::string();
}

// Traps unless `callee` holds the address of one of `targets`, under the call's predicate.
std::string callCheck(const std::string& callee, const std::vector<std::string>& targets,
                      const std::optional<Predicate>& predicate, const std::string& prefix) {
  if (targets.empty()) {  // nothing may be called indirectly: trap whenever the call would run
    if (!predicate) return "trap;\n";
    return std::string("@") + (predicate->negated ? "!" : "") + predicate->reg + " trap;\n";
  }
  const std::string t = prefix + "_ft", bad = prefix + "_fb", negated = prefix + "_fn";
  std::string out =
      ".reg .u64 " + t + ";\n.reg .pred " + bad + ";\n" + predicateDeclaration(predicate, negated);
  for (std::size_t k = 0; k < targets.size(); ++k) {
    out += "mov.u64 " + t + ", " + targets[k] + ";\n";
    out += k == 0 ? "setp.ne.u64 " + bad + ", " + callee + ", " + t + ";\n"
                  : "setp.ne.and.u64 " + bad + ", " + callee + ", " + t + ", " + bad + ";\n";
  }
  return out + underPredicate(predicate, bad, negated) + "@" + bad + " trap;\n";
}

// Traps if `index` is not below `length`, under the branch's predicate.
std::string branchCheck(const IndexedBranch& branch, std::size_t length,
                        const std::optional<Predicate>& predicate, const std::string& prefix) {
  const std::string bad = prefix + "_xb", negated = prefix + "_xn";
  return ".reg .pred " + bad + ";\n" + predicateDeclaration(predicate, negated) + "setp.ge.u32 " + bad +
         ", " + branch.index + ", " + std::to_string(length) + ";\n" +
         underPredicate(predicate, bad, negated) + "@" + bad + " trap;\n";
}

std::optional<Statement> parsedBlock(const std::string& text) {
  const ParseResult parsed = parse(".version 9.0\n.entry guard_check()\n{\n" + text + "}\n");
  if (!parsed.ok) return std::nullopt;
  Statement block;
  block.kind = Statement::Kind::kBlock;
  block.block = parsed.module.items[1].function.body;
  return block;
}

class Rewriter {
 public:
  Rewriter(std::vector<std::string> targets, std::string prefix)
      : targets_(std::move(targets)), prefix_(std::move(prefix)) {}

  bool rewriteFunction(Function* function) {
    TargetLists lists;
    collectTargetLists(function->body, &lists);
    return rewrite(&function->body, lists);
  }

  const std::string& error() const { return error_; }
  std::size_t calls() const { return calls_; }
  std::size_t branches() const { return branches_; }

 private:
  // Each indirect call and brx.idx gets its check block immediately before it.
  bool rewrite(std::vector<Statement>* statements, const TargetLists& lists) {
    std::vector<Statement> out;
    out.reserve(statements->size());
    for (Statement& s : *statements) {
      if (s.kind == Statement::Kind::kBlock && !rewrite(&s.block, lists)) return false;
      if (s.kind == Statement::Kind::kInstruction) {
        std::optional<Statement> check;
        if (!checkFor(s.instruction, lists, &check)) return false;
        if (check) out.push_back(std::move(*check));
      }
      out.push_back(std::move(s));
    }
    *statements = std::move(out);
    return true;
  }

  bool checkFor(const Instruction& instruction, const TargetLists& lists, std::optional<Statement>* check) {
    std::string text;
    if (instruction.opcode == "call") {
      const CallForm form = callForm(instruction);
      if (form.kind == CallForm::Kind::kUnknown)
        return fail(instruction, "a call of a form the guard does not know");
      if (form.kind == CallForm::Kind::kDirect) return true;
      comparisons_ += targets_.size();
      if (comparisons_ > kMaxTargetComparisons) {
        return fail(instruction,
                    "too many indirect calls times address-taken functions for the guard to check");
      }
      text = callCheck(nameOf(instruction.operands[form.callee]), targetsOf(instruction, lists),
                       instruction.predicate, prefix_);
      ++calls_;
    } else if (instruction.opcode == "brx") {
      const std::optional<IndexedBranch> branch = indexedBranch(instruction);
      if (!branch) return fail(instruction, "an indexed branch of a form the guard does not know");
      const std::size_t length = listLength(lists, branch->list);
      if (length == 0) {
        return fail(instruction,
                    "'" + branch->list + "' is not the label of one .branchtargets list of its function");
      }
      text = branchCheck(*branch, length, instruction.predicate, prefix_);
      ++branches_;
    } else {
      return true;
    }
    *check = parsedBlock(text);
    return check->has_value() || fail(instruction, "internal: a generated control-flow check does not parse");
  }

  // The module's address-taken functions, or those of them the call's .calltargets list names.
  std::vector<std::string> targetsOf(const Instruction& call, const TargetLists& lists) const {
    const std::vector<std::string>* listed = callTargetsOf(lists, call);
    if (listed == nullptr) return targets_;
    std::vector<std::string> targets;
    for (const std::string& name : targets_) {
      if (contains(*listed, name)) targets.push_back(name);
    }
    return targets;
  }

  bool fail(const Instruction& instruction, const std::string& why) {
    error_ = lineOf(instruction.line) + ": " + why + " (" + print(instruction) + ")";
    return false;
  }

  const std::vector<std::string> targets_;
  const std::string prefix_;
  std::string error_;
  std::size_t calls_ = 0, branches_ = 0, comparisons_ = 0;
};

// ---------------------------------------------------------------- the independent checker

// Unpredicated `opcode.modifiers` with `operands` operands (instruction_forms.h; null: no).
bool is(const Instruction* i, const char* opcode, std::initializer_list<const char*> modifiers,
        std::size_t operands) {
  return i != nullptr && isForm(*i, opcode, modifiers, operands);
}

// The instructions of the statement before a checked transfer, if it is a check block: a
// scope holding instructions and .reg declarations of the guard's names only (so it can
// shadow nothing the program declared, and no label lets control enter it halfway).
std::optional<std::vector<const Instruction*>> checkInstructions(const Statement* block,
                                                                 const std::string& prefix) {
  if (block == nullptr || block->kind != Statement::Kind::kBlock) return std::nullopt;
  std::vector<const Instruction*> out;
  for (const Statement& s : block->block) {
    if (s.kind == Statement::Kind::kInstruction) {
      out.push_back(&s.instruction);
      continue;
    }
    if (s.kind != Statement::Kind::kDirective || s.directive.name != ".reg") return std::nullopt;
    for (const Token& t : s.directive.tokens) {
      if (t.kind == TokenKind::kIdentifier && !startsWith(t.text, prefix)) return std::nullopt;
    }
  }
  return out;
}

class Checker {
 public:
  Checker(const Roles& roles, std::string prefix, std::vector<std::string>* out)
      : roles_(roles), prefix_(std::move(prefix)), out_(out) {}

  void checkFunction(const Function& function) {
    TargetLists lists;
    collectTargetLists(function.body, &lists);
    check(function.body, lists);
  }

 private:
  void check(const std::vector<Statement>& statements, const TargetLists& lists) {
    for (std::size_t k = 0; k < statements.size(); ++k) {
      const Statement& s = statements[k];
      if (s.kind == Statement::Kind::kBlock) check(s.block, lists);
      if (s.kind != Statement::Kind::kInstruction) continue;
      const Statement* before = k == 0 ? nullptr : &statements[k - 1];
      const Instruction& instruction = s.instruction;
      if (instruction.opcode == "call") checkCall(instruction, before, lists);
      if (instruction.opcode == "brx") checkBranch(instruction, before, lists);
    }
  }

  void checkCall(const Instruction& call, const Statement* before, const TargetLists& lists) {
    const CallForm form = callForm(call);
    if (form.kind != CallForm::Kind::kIndirect) return;  // the name scan reports unknown forms
    const std::optional<std::vector<const Instruction*>> checks = checkInstructions(before, prefix_);
    if (!checks ||
        !callChecked(*checks, call, nameOf(call.operands[form.callee]), callTargetsOf(lists, call))) {
      report(call, "an indirect call without the check of its target");
    }
  }

  void checkBranch(const Instruction& brx, const Statement* before, const TargetLists& lists) {
    const std::optional<IndexedBranch> branch = indexedBranch(brx);
    const std::size_t length = branch ? listLength(lists, branch->list) : 0;
    if (length == 0) return report(brx, "a branch the guard cannot bound");
    const std::optional<std::vector<const Instruction*>> checks = checkInstructions(before, prefix_);
    if (!checks || !branchChecked(*checks, brx, *branch, length)) {
      report(brx, "an indexed branch without the check of its index");
    }
  }

  bool prefixed(const std::string& name) const { return !name.empty() && startsWith(name, prefix_); }
  // A program register: named, and not one a check block could declare.
  bool programRegister(const std::string& name) const { return !name.empty() && !prefixed(name); }

  // `operand` is a function the client may call indirectly (and `listed` names, if any).
  bool callable(const Operand& operand, const std::vector<std::string>* listed) const {
    const std::string name = nameOf(operand);
    return programRegister(name) && roleOf(roles_, name) == Role::kUser &&
           (listed == nullptr || contains(*listed, name));
  }

  // (mov.u64 t, F; setp.ne[.and].u64 bad, callee, t[, bad])+ over callable F (in the call's
  // .calltargets list when it names one), then the call's predicate and the trap; or, when
  // nothing may be called, a trap under the call's predicate alone.
  bool callChecked(const std::vector<const Instruction*>& checks, const Instruction& call,
                   const std::string& callee, const std::vector<std::string>* listed) const {
    if (!programRegister(callee) || (call.predicate && !programRegister(call.predicate->reg))) return false;
    if (checks.size() == 1 && checks[0]->opcode == "trap" && checks[0]->modifiers.empty() &&
        checks[0]->operands.empty() && checks[0]->predicate == call.predicate) {
      return true;
    }
    std::size_t k = 0;
    std::string bad;
    while (k + 1 < checks.size() && checks[k]->opcode == "mov") {
      const Instruction* mov = checks[k++];
      const Instruction* setp = checks[k++];
      if (!is(mov, "mov", {".u64"}, 2) || !callable(mov->operands[1], listed)) return false;
      const std::string t = nameOf(mov->operands[0]);
      const bool first = bad.empty();
      if (first ? !is(setp, "setp", {".ne", ".u64"}, 3) : !is(setp, "setp", {".ne", ".and", ".u64"}, 4)) {
        return false;
      }
      if (first) bad = nameOf(setp->operands[0]);
      if (!prefixed(t) || !prefixed(bad) || t == bad || nameOf(setp->operands[0]) != bad ||
          nameOf(setp->operands[1]) != callee || nameOf(setp->operands[2]) != t ||
          (!first && nameOf(setp->operands[3]) != bad)) {
        return false;
      }
    }
    return !bad.empty() && trapsUnderPredicate(checks, k, call.predicate, bad);
  }

  // setp.ge.u32 bad, index, length, then the branch's predicate and the trap.
  bool branchChecked(const std::vector<const Instruction*>& checks, const Instruction& brx,
                     const IndexedBranch& branch, std::size_t length) const {
    if (!programRegister(branch.index) || (brx.predicate && !programRegister(brx.predicate->reg)))
      return false;
    if (checks.empty() || !is(checks[0], "setp", {".ge", ".u32"}, 3)) return false;
    const std::string bad = nameOf(checks[0]->operands[0]);
    return prefixed(bad) && nameOf(checks[0]->operands[1]) == branch.index &&
           immediateValue(checks[0]->operands[2]) == length &&
           trapsUnderPredicate(checks, 1, brx.predicate, bad);
  }

  // checks[k...] = [and.pred bad, bad, p | not.pred n, p; and.pred bad, bad, n] @bad trap; and nothing else.
  bool trapsUnderPredicate(const std::vector<const Instruction*>& checks, std::size_t k,
                           const std::optional<Predicate>& predicate, const std::string& bad) const {
    auto next = [&]() -> const Instruction* { return k < checks.size() ? checks[k++] : nullptr; };
    if (predicate) {
      std::string condition = predicate->reg;
      if (predicate->negated) {
        const Instruction* negate = next();
        if (!is(negate, "not", {".pred"}, 2) || nameOf(negate->operands[1]) != predicate->reg) return false;
        condition = nameOf(negate->operands[0]);
        if (!prefixed(condition) || condition == bad) return false;
      }
      const Instruction* both = next();
      if (!is(both, "and", {".pred"}, 3) || nameOf(both->operands[0]) != bad ||
          nameOf(both->operands[1]) != bad || nameOf(both->operands[2]) != condition) {
        return false;
      }
    }
    const Instruction* trap = next();
    return trap != nullptr && trap->opcode == "trap" && trap->modifiers.empty() && trap->operands.empty() &&
           trap->predicate && !trap->predicate->negated && trap->predicate->reg == bad && k == checks.size();
  }

  void report(const Instruction& instruction, const std::string& why) {
    out_->push_back(lineOf(instruction.line) + ": " + print(instruction) + " (" + why + ")");
  }

  const Roles& roles_;
  const std::string prefix_;
  std::vector<std::string>* out_;
};

}  // namespace

ControlFlowResult guardControlFlow(Module* module, const std::set<std::string>& trustedFunctions,
                                   const std::string& registerPrefix) {
  ControlFlowResult result;
  const Roles roles = functionRoles(*module, trustedFunctions);
  result.neutralisedInitializers = neutralisePlaceholderAddresses(module, roles);
  NameScan scan = NameScanner(roles, trustedFunctions).run(*module);
  if (!scan.problems.empty()) {
    result.error = scan.problems.front();
    return result;
  }
  if (scan.targets.size() > kMaxIndirectTargets) {
    result.error = "the module takes the address of " + std::to_string(scan.targets.size()) +
                   " functions; the guard checks indirect calls against at most " +
                   std::to_string(kMaxIndirectTargets);
    return result;
  }
  Rewriter rewriter(std::vector<std::string>(scan.targets.begin(), scan.targets.end()), registerPrefix);
  for (TopLevel& item : module->items) {
    if (item.kind != TopLevel::Kind::kFunction || !guardedBody(item.function, trustedFunctions)) continue;
    if (!rewriter.rewriteFunction(&item.function)) {
      result.error = rewriter.error();
      return result;
    }
  }
  result.checkedCalls = rewriter.calls();
  result.checkedBranches = rewriter.branches();
  result.ok = true;
  return result;
}

std::vector<std::string> findUncheckedControlFlow(const Module& module,
                                                  const std::set<std::string>& trustedFunctions,
                                                  const std::string& registerPrefix) {
  const Roles roles = functionRoles(module, trustedFunctions);
  std::vector<std::string> out = NameScanner(roles, trustedFunctions).run(module).problems;
  Checker checker(roles, registerPrefix, &out);
  for (const TopLevel& item : module.items) {
    if (item.kind == TopLevel::Kind::kFunction && guardedBody(item.function, trustedFunctions)) {
      checker.checkFunction(item.function);
    }
  }
  return out;
}

}  // namespace agileos::ptx
