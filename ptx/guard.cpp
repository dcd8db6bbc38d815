#include "ptx/guard.h"

#include <set>
#include <sstream>

#include "ptx/memory_access.h"
#include "ptx/parser.h"
#include "ptx/printer.h"

namespace agileos::ptx {
namespace {

std::string hex(std::uint64_t value) {
  std::ostringstream out;
  out << "0x" << std::hex << value;
  return out.str();
}

// ---------------------------------------------------------------- fresh names

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

// A prefix no identifier of the module starts with, so the guard's names cannot collide.
std::string freshPrefix(const std::set<std::string>& identifiers, std::string prefix) {
  // The first identifier not below `prefix` in order is the only one that can start with it.
  for (auto it = identifiers.lower_bound(prefix); it != identifiers.end() && it->rfind(prefix, 0) == 0;
       it = identifiers.lower_bound(prefix)) {
    prefix += '_';
  }
  return prefix;
}

// ---------------------------------------------------------------- check generation

// PTX text of the statements that check one access; registers are `reg` + suffix.
bool appendCheck(const Instruction& instruction, const MemoryAccess& access, std::size_t index,
                 const std::string& reg, const GuardOptions& options, const std::string& counter,
                 std::string* text, std::string* error) {
  const Operand& operand = instruction.operands[access.addressOperand];
  if (!operand.address) {
    *error = "an address the guard cannot bound (" + print(instruction) + ")";
    return false;
  }
  const AddressForm& form = *operand.address;
  const std::string n = std::to_string(index);
  const std::string a = reg + "_a" + n, lo = reg + "_lo" + n, v = reg + "_v" + n;
  std::ostringstream out;
  out << ".reg .u64 " << a << ";\n.reg .pred " << lo << ", " << v << ";\n";
  // a = the effective address
  if (form.base.empty()) {
    out << "mov.u64 " << a << ", " << hex(static_cast<std::uint64_t>(form.offset)) << ";\n";
  } else if (form.base[0] == '%') {
    if (form.offset >= 0) {
      out << "add.u64 " << a << ", " << form.base << ", " << hex(static_cast<std::uint64_t>(form.offset))
          << ";\n";
    } else {
      out << "sub.u64 " << a << ", " << form.base << ", " << hex(0 - static_cast<std::uint64_t>(form.offset))
          << ";\n";
    }
  } else {
    out << "mov.u64 " << a << ", " << form.base << ";\n";
    out << "add.u64 " << a << ", " << a << ", " << hex(static_cast<std::uint64_t>(form.offset)) << ";\n";
  }
  // lo = the access reaches past the protected range's start: a + width > begin
  if (access.sizeOperand) {
    const Operand& size = instruction.operands[*access.sizeOperand];
    const std::string s = reg + "_s" + n, e = reg + "_e" + n;
    out << ".reg .u64 " << s << ", " << e << ";\n";
    if (size.kind == Operand::Kind::kImmediate) {
      out << "mov.u64 " << s << ", ";
      for (const Token& t : size.tokens) out << t.text;
      out << ";\n";
    } else if (size.kind == Operand::Kind::kRegister) {
      out << "cvt.u64.u32 " << s << ", " << size.tokens[0].text << ";\n";
    } else {
      *error = "a copy size the guard cannot read (" + print(instruction) + ")";
      return false;
    }
    out << "add.u64 " << e << ", " << a << ", " << s << ";\n";
    out << "setp.gt.u64 " << lo << ", " << e << ", " << hex(options.protectedBegin) << ";\n";
  } else {
    if (access.bytes == 0 || access.bytes > options.protectedBegin) {
      *error = "an access of unbounded width (" + print(instruction) + ")";
      return false;
    }
    out << "setp.gt.u64 " << lo << ", " << a << ", " << hex(options.protectedBegin - access.bytes) << ";\n";
  }
  // v = ... and a < end, under the access's own predicate
  out << "setp.lt.and.u64 " << v << ", " << a << ", " << hex(options.protectedEnd) << ", " << lo << ";\n";
  if (instruction.predicate) {
    if (instruction.predicate->negated) {
      const std::string np = reg + "_np" + n;
      out << ".reg .pred " << np << ";\nnot.pred " << np << ", " << instruction.predicate->reg << ";\n";
      out << "and.pred " << v << ", " << v << ", " << np << ";\n";
    } else {
      out << "and.pred " << v << ", " << v << ", " << instruction.predicate->reg << ";\n";
    }
  }
  switch (options.policy) {
    case GuardPolicy::kTrap:
      out << "@" << v << " trap;\n";
      break;
    case GuardPolicy::kReport:
      out << "@" << v << " red.global.add.u64 [" << counter << "], 1;\n";
      break;
  }
  *text += out.str();
  return true;
}

class Rewriter {
 public:
  Rewriter(const GuardOptions& options, std::string prefix, std::string counter)
      : options_(options), prefix_(std::move(prefix)), counter_(std::move(counter)) {}

  bool rewrite(std::vector<Statement>* statements) {
    for (Statement& statement : *statements) {
      if (statement.kind == Statement::Kind::kBlock) {
        if (!rewrite(&statement.block)) return false;
        continue;
      }
      if (statement.kind != Statement::Kind::kInstruction) continue;
      const Instruction& instruction = statement.instruction;
      const MemoryClassification c = classifyMemory(instruction);
      if (c.verdict == MemoryClassification::Verdict::kUnsupported) {
        return fail(instruction, c.reason);
      }
      if (c.verdict == MemoryClassification::Verdict::kNone) continue;
      std::string text;
      std::size_t guarded = 0;
      for (const MemoryAccess& access : c.accesses) {
        if (!access.mayReachGlobal()) continue;
        std::string error;
        if (!appendCheck(instruction, access, guarded, prefix_, options_, counter_, &text, &error)) {
          return fail(instruction, error);
        }
        ++guarded;
      }
      if (guarded == 0) continue;
      // The checks and the access in a scope of their own (the registers are local to it).
      const ParseResult parsed = parse(".version 9.0\n.entry guard_check()\n{\n" + text + "}\n");
      if (!parsed.ok) return fail(instruction, "internal: a generated check does not parse: " + parsed.error);
      Statement block;
      block.kind = Statement::Kind::kBlock;
      block.block = parsed.module.items[1].function.body;
      Statement original = std::move(statement);
      block.block.push_back(std::move(original));
      statement = std::move(block);
      checked_ += guarded;
    }
    return true;
  }

  const std::string& error() const { return error_; }
  std::size_t checked() const { return checked_; }

 private:
  bool fail(const Instruction& instruction, const std::string& reason) {
    error_ = "line " + std::to_string(instruction.line) + ": " + reason;
    return false;
  }

  const GuardOptions& options_;
  const std::string prefix_;
  const std::string counter_;
  std::string error_;
  std::size_t checked_ = 0;
};

// ---------------------------------------------------------------- the independent checker

std::optional<std::uint64_t> immediate(const Operand& operand) {
  if (operand.kind != Operand::Kind::kImmediate || operand.tokens.size() != 1) return std::nullopt;
  const std::string& text = operand.tokens[0].text;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 0);
  if (end == nullptr || *end != '\0') return std::nullopt;
  return value;
}

std::string reg(const Operand& operand) {
  return operand.kind == Operand::Kind::kRegister ? operand.tokens[0].text : std::string();
}

bool is(const Instruction& i, const char* opcode, std::initializer_list<const char*> modifiers,
        std::size_t operands) {
  if (i.opcode != opcode || i.modifiers.size() != modifiers.size() || i.operands.size() != operands)
    return false;
  std::size_t k = 0;
  for (const char* m : modifiers) {
    if (i.modifiers[k++] != m) return false;
  }
  return !i.predicate.has_value();
}

// Does `checks` (the instructions before the access in its scope) contain, in order, a
// complete check of `access` whose hit register is acted on by the policy?
bool checkPresent(const std::vector<const Instruction*>& checks, const Instruction& access,
                  const MemoryAccess& memory, const GuardOptions& options, const std::string& prefix) {
  const Operand& operand = access.operands[memory.addressOperand];
  if (!operand.address) return false;
  const AddressForm& form = *operand.address;
  for (std::size_t start = 0; start < checks.size(); ++start) {
    std::size_t k = start;
    auto next = [&]() -> const Instruction* { return k < checks.size() ? checks[k++] : nullptr; };
    // 1. a = base + offset
    const Instruction* i = next();
    if (i == nullptr) return false;
    std::string a;
    const auto offset = static_cast<std::uint64_t>(form.offset);
    if (form.base.empty() && is(*i, "mov", {".u64"}, 2) && immediate(i->operands[1]) == offset) {
      a = reg(i->operands[0]);
    } else if (!form.base.empty() && form.base[0] == '%' && is(*i, "add", {".u64"}, 3) &&
               reg(i->operands[1]) == form.base && form.offset >= 0 && immediate(i->operands[2]) == offset) {
      a = reg(i->operands[0]);
    } else if (!form.base.empty() && form.base[0] == '%' && is(*i, "sub", {".u64"}, 3) &&
               reg(i->operands[1]) == form.base && form.offset < 0 &&
               immediate(i->operands[2]) == 0 - offset) {
      a = reg(i->operands[0]);
    } else if (!form.base.empty() && form.base[0] != '%' && is(*i, "mov", {".u64"}, 2) &&
               i->operands[1].kind == Operand::Kind::kSymbol && i->operands[1].tokens[0].text == form.base) {
      const Instruction* add = next();
      if (add == nullptr || !is(*add, "add", {".u64"}, 3) || reg(add->operands[1]) != reg(i->operands[0]) ||
          reg(add->operands[0]) != reg(i->operands[0]) || immediate(add->operands[2]) != offset) {
        continue;
      }
      a = reg(i->operands[0]);
    } else {
      continue;
    }
    if (a.rfind(prefix, 0) != 0) continue;
    // 2. lo = a + width > begin
    std::string lo;
    if (memory.sizeOperand) {
      const Instruction* s = next();
      const Instruction* e = next();
      const Instruction* gt = next();
      if (s == nullptr || e == nullptr || gt == nullptr) continue;
      const Operand& size = access.operands[*memory.sizeOperand];
      const bool sizeOk = (is(*s, "cvt", {".u64", ".u32"}, 2) && reg(s->operands[1]) == reg(size)) ||
                          (is(*s, "mov", {".u64"}, 2) && size.kind == Operand::Kind::kImmediate &&
                           immediate(s->operands[1]) == immediate(size));
      if (!sizeOk || !is(*e, "add", {".u64"}, 3) || reg(e->operands[1]) != a ||
          reg(e->operands[2]) != reg(s->operands[0]) || !is(*gt, "setp", {".gt", ".u64"}, 3) ||
          reg(gt->operands[1]) != reg(e->operands[0]) ||
          immediate(gt->operands[2]) != options.protectedBegin) {
        continue;
      }
      lo = reg(gt->operands[0]);
    } else {
      const Instruction* gt = next();
      if (gt == nullptr || !is(*gt, "setp", {".gt", ".u64"}, 3) || reg(gt->operands[1]) != a ||
          immediate(gt->operands[2]) != options.protectedBegin - memory.bytes) {
        continue;
      }
      lo = reg(gt->operands[0]);
    }
    // 3. v = a < end and lo
    const Instruction* lt = next();
    if (lt == nullptr || !is(*lt, "setp", {".lt", ".and", ".u64"}, 4) || reg(lt->operands[1]) != a ||
        immediate(lt->operands[2]) != options.protectedEnd || reg(lt->operands[3]) != lo) {
      continue;
    }
    const std::string v = reg(lt->operands[0]);
    // 4. under the access's predicate
    if (access.predicate) {
      const Instruction* first = next();
      if (first == nullptr) continue;
      if (access.predicate->negated) {
        const Instruction* andp = next();
        if (andp == nullptr || !is(*first, "not", {".pred"}, 2) ||
            reg(first->operands[1]) != access.predicate->reg || !is(*andp, "and", {".pred"}, 3) ||
            reg(andp->operands[0]) != v || reg(andp->operands[1]) != v ||
            reg(andp->operands[2]) != reg(first->operands[0])) {
          continue;
        }
      } else if (!is(*first, "and", {".pred"}, 3) || reg(first->operands[0]) != v ||
                 reg(first->operands[1]) != v || reg(first->operands[2]) != access.predicate->reg) {
        continue;
      }
    }
    // 5. the policy's action on a hit
    const Instruction* act = next();
    if (act == nullptr || !act->predicate || act->predicate->negated || act->predicate->reg != v) continue;
    const bool acted = options.policy == GuardPolicy::kTrap
                           ? act->opcode == "trap" && act->operands.empty()
                           : act->opcode == "red" && act->hasModifier(".global");
    if (acted) return true;
  }
  return false;
}

void findUnguarded(const std::vector<Statement>& statements, bool lastInGuardScope,
                   const GuardOptions& options, const std::string& prefix, std::vector<std::string>* out) {
  std::vector<const Instruction*> before;
  for (std::size_t index = 0; index < statements.size(); ++index) {
    const Statement& s = statements[index];
    if (s.kind == Statement::Kind::kBlock) {
      findUnguarded(s.block, true, options, prefix, out);
      before.clear();
      continue;
    }
    if (s.kind != Statement::Kind::kInstruction) continue;
    const Instruction& instruction = s.instruction;
    const MemoryClassification c = classifyMemory(instruction);
    bool guarded = true;
    if (c.verdict == MemoryClassification::Verdict::kUnsupported) {
      guarded = false;
    } else if (c.verdict == MemoryClassification::Verdict::kAccess) {
      // The guard's own counter update is the only access it adds.
      const bool own = options.policy == GuardPolicy::kReport && instruction.opcode == "red" &&
                       instruction.predicate && instruction.predicate->reg.rfind(prefix, 0) == 0;
      for (const MemoryAccess& access : c.accesses) {
        if (!access.mayReachGlobal() || own) continue;
        const bool last = lastInGuardScope && index + 1 == statements.size();
        if (!last || !checkPresent(before, instruction, access, options, prefix)) guarded = false;
      }
    }
    if (!guarded) out->push_back("line " + std::to_string(instruction.line) + ": " + print(instruction));
    before.push_back(&instruction);
  }
}

}  // namespace

const char* toString(GuardPolicy policy) {
  switch (policy) {
    case GuardPolicy::kTrap:
      return "trap";
    case GuardPolicy::kReport:
      return "report";
  }
  return "unknown";
}

GuardResult guardModule(const Module& input, const GuardOptions& options) {
  GuardResult result;
  if (options.protectedBegin >= options.protectedEnd) {
    result.error = "the protected range is empty";
    return result;
  }
  std::set<std::string> identifiers;
  for (const TopLevel& item : input.items) {
    if (item.kind == TopLevel::Kind::kDirective) collectIdentifiers(item.directive.tokens, &identifiers);
    if (item.kind == TopLevel::Kind::kFunction) {
      collectIdentifiers(item.function.header, &identifiers);
      collectIdentifiers(item.function.body, &identifiers);
    }
  }
  result.registerPrefix = freshPrefix(identifiers, "%agileos_guard");
  const std::string counter = freshPrefix(identifiers, options.reportCounter);
  result.module = input;
  Rewriter rewriter(options, result.registerPrefix, counter);
  bool needsCounter = false;
  for (TopLevel& item : result.module.items) {
    if (item.kind != TopLevel::Kind::kFunction || !item.function.hasBody) continue;
    if (!rewriter.rewrite(&item.function.body)) {
      result.error = rewriter.error();
      result.module = {};
      return result;
    }
  }
  needsCounter = options.policy == GuardPolicy::kReport && rewriter.checked() > 0;
  if (needsCounter) {
    // Declared right after the module header (.version/.target/.address_size), before any function.
    const ParseResult declaration = parse(".visible .global .align 8 .u64 " + counter + ";\n");
    std::size_t at = 0;
    while (at < result.module.items.size() && result.module.items[at].kind == TopLevel::Kind::kDirective &&
           (result.module.items[at].directive.name == ".version" ||
            result.module.items[at].directive.name == ".target" ||
            result.module.items[at].directive.name == ".address_size")) {
      ++at;
    }
    result.module.items.insert(result.module.items.begin() + static_cast<std::ptrdiff_t>(at),
                               declaration.module.items[0]);
  }
  result.checkedAccesses = rewriter.checked();
  result.ok = true;
  return result;
}

std::vector<std::string> findUnguardedAccesses(const Module& module, const GuardOptions& options,
                                               const std::string& registerPrefix) {
  std::vector<std::string> unguarded;
  for (const TopLevel& item : module.items) {
    if (item.kind == TopLevel::Kind::kFunction && item.function.hasBody) {
      findUnguarded(item.function.body, false, options, registerPrefix, &unguarded);
    }
  }
  return unguarded;
}

}  // namespace agileos::ptx
