#include "ptx/frame_confinement.h"

#include <cctype>
#include <cstdint>
#include <map>
#include <optional>
#include <sstream>
#include <utility>

#include "ptx/declarations.h"
#include "ptx/frame_floor.h"
#include "ptx/instruction_forms.h"
#include "ptx/memory_access.h"
#include "ptx/parser.h"
#include "ptx/printer.h"

namespace agileos::ptx {
namespace {

bool startsWith(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

// ---------------------------------------------------------------- names in scope

// The declarations visible at a statement: the module's, the function's parameters, then
// one level per enclosing block (a block's declarations count for the whole block).
class Scopes {
 public:
  void push(const std::vector<DeclaredName>& names) {
    std::map<std::string, DeclaredName> level;
    for (const DeclaredName& d : names) level.insert_or_assign(d.name, d);
    levels_.push_back(std::move(level));
  }
  void pushBlock(const std::vector<Statement>& statements) {
    std::vector<DeclaredName> names;
    for (const Statement& s : statements) {
      if (s.kind != Statement::Kind::kDirective) continue;
      for (DeclaredName& d : readDeclaration(s.directive)) names.push_back(std::move(d));
    }
    push(names);
  }
  void pop() { levels_.pop_back(); }

  // The innermost declaration of `name` (a register range does not declare its stem).
  const DeclaredName* find(const std::string& name) const {
    for (auto level = levels_.rbegin(); level != levels_.rend(); ++level) {
      const auto it = level->find(name);
      if (it != level->end() && it->second.registerRange == 0) return &it->second;
    }
    return nullptr;
  }

  // The width in bytes of register `reg` (declared by name or in a `%r<N>` range), 0 if unknown.
  std::uint32_t registerBytes(const std::string& reg) const {
    std::size_t digits = reg.size();
    while (digits > 0 && std::isdigit(static_cast<unsigned char>(reg[digits - 1])) != 0) --digits;
    const std::string stem = reg.substr(0, digits);
    const std::string index = reg.substr(digits);
    for (auto level = levels_.rbegin(); level != levels_.rend(); ++level) {
      if (const auto it = level->find(reg); it != level->end() && it->second.registerRange == 0) {
        return it->second.space == ".reg" ? it->second.elementBytes : 0;
      }
      if (index.empty() || index.size() > 9 || (index.size() > 1 && index[0] == '0')) continue;
      if (const auto it = level->find(stem); it != level->end() && it->second.registerRange != 0) {
        if (it->second.space == ".reg" && std::stoul(index) < it->second.registerRange)
          return it->second.elementBytes;
      }
    }
    return 0;
  }

  // The .local variables visible here (each name once: the innermost declaration).
  std::vector<DeclaredName> localVariables() const {
    std::vector<DeclaredName> out;
    std::set<std::string> seen;
    for (auto level = levels_.rbegin(); level != levels_.rend(); ++level) {
      for (const auto& [name, d] : *level) {
        if (!seen.insert(name).second) continue;
        if (d.space == ".local" && d.registerRange == 0) out.push_back(d);
      }
    }
    return out;
  }

 private:
  std::vector<std::map<std::string, DeclaredName>> levels_;
};

std::vector<DeclaredName> moduleDeclarations(const Module& module) {
  std::vector<DeclaredName> names;
  for (const TopLevel& item : module.items) {
    if (item.kind != TopLevel::Kind::kDirective) continue;
    for (DeclaredName& d : readDeclaration(item.directive)) names.push_back(std::move(d));
  }
  return names;
}

// ---------------------------------------------------------------- the rules

// Where an instruction is, for the rules: not confining, or confining in a kernel or a .func.
enum class FrameRole : std::uint8_t { kOpen, kKernel, kFunc };

// Stack-pointer instructions the confinement cannot bound. `stackrestore` sets the stack
// pointer to any value, so a callee's frame (and its saved return address) could be put at
// or above the kernel's frame floor: refused everywhere. `alloca` and `stacksave` only in a
// .func (alloca'd memory is no declared variable; a kernel's alloca only moves later frames
// further down, below the floor).
bool movesTheStack(const Instruction& instruction, FrameRole role) {
  if (role == FrameRole::kOpen) return false;
  if (instruction.opcode == "stackrestore") return true;
  return role == FrameRole::kFunc && (instruction.opcode == "alloca" || instruction.opcode == "stacksave");
}

FrameRole roleOf(const Function& function, bool confining) {
  if (!confining) return FrameRole::kOpen;
  return function.kind == Function::Kind::kFunc ? FrameRole::kFunc : FrameRole::kKernel;
}

// A write `bytes` wide at `name + offset` lies inside the variable `d`.
bool inside(const DeclaredName& d, std::int64_t offset, std::uint32_t bytes) {
  const std::optional<std::uint64_t> size = d.bytes();
  return size && offset >= 0 && bytes <= *size && static_cast<std::uint64_t>(offset) <= *size - bytes;
}

// What a write needs.
struct WritePlan {
  enum class Kind : std::uint8_t { kNone, kCheck, kRefuse };
  Kind kind = Kind::kNone;
  std::string reason;                    // kRefuse
  const MemoryAccess* access = nullptr;  // kCheck: the write to check
};

WritePlan refuse(std::string reason) {
  WritePlan plan;
  plan.kind = WritePlan::Kind::kRefuse;
  plan.reason = std::move(reason);
  return plan;
}

// The rules for one instruction (shared by the rewrite and the checker). `role`: whether
// writes are confined, and whether the instruction is in a kernel or a .func.
WritePlan planWrites(const Instruction& instruction, const MemoryClassification& c, const Scopes& scopes,
                     FrameRole role) {
  const bool inFunc = role == FrameRole::kFunc;
  if (movesTheStack(instruction, role))
    return refuse("'" + instruction.opcode + "' moves the stack pointer, which the guard cannot bound");
  if (c.verdict != MemoryClassification::Verdict::kAccess) return {};
  WritePlan plan;
  for (const MemoryAccess& access : c.accesses) {
    if (!access.writes) continue;
    const Operand& operand = instruction.operands[access.addressOperand];
    if (access.space == StateSpace::kParam) {
      const DeclaredName* d = operand.address ? scopes.find(operand.address->base) : nullptr;
      if (d == nullptr || d->space != ".param" || access.sizeOperand || access.extent ||
          !inside(*d, operand.address->offset, access.bytes)) {
        return refuse("a parameter store the guard cannot place inside a declared parameter (" +
                      print(instruction) + ")");
      }
      continue;
    }
    if (!inFunc || (access.space != StateSpace::kLocal && access.space != StateSpace::kGeneric)) continue;
    if (!operand.address || access.sizeOperand || access.extent || access.bytes == 0)
      return refuse("a write to local memory the guard cannot bound (" + print(instruction) + ")");
    const AddressForm& form = *operand.address;
    if (!form.base.empty() && form.base[0] != '%') {
      const DeclaredName* d = scopes.find(form.base);
      if (access.space == StateSpace::kLocal) {
        if (d == nullptr || d->space != ".local" || !inside(*d, form.offset, access.bytes)) {
          return refuse("a local store outside the function's own variables (" + print(instruction) + ")");
        }
        continue;  // inside one of the function's own variables: nothing to check at run time
      }
      if (d == nullptr || (d->space != ".global" && d->space != ".shared" && d->space != ".const")) {
        return refuse("a generic write through a name the guard cannot place (" + print(instruction) + ")");
      }
    }
    if (plan.kind == WritePlan::Kind::kCheck)
      return refuse("two writes to local memory in one instruction (" + print(instruction) + ")");
    plan.kind = WritePlan::Kind::kCheck;
    plan.access = &access;
  }
  return plan;
}

// The register names of one check (a block of its own: they never meet another check's).
struct CheckNames {
  explicit CheckNames(const std::string& prefix)
      : address(prefix + "_wa"),
        outside(prefix + "_wo"),
        isLocal(prefix + "_wl"),
        localAddress(prefix + "_wx"),
        negated(prefix + "_wn"),
        base(prefix + "_wb"),
        distance(prefix + "_wd"),
        floor(frameFloorRegister(prefix)) {}
  std::string address, outside, isLocal, localAddress, negated, base, distance, floor;
};

// ---------------------------------------------------------------- the rewrite

class Rewriter {
 public:
  explicit Rewriter(const std::string& prefix) : names_(prefix) {}

  bool rewrite(std::vector<Statement>* statements, Scopes* scopes, FrameRole role) {
    scopes->pushBlock(*statements);
    for (Statement& statement : *statements) {
      if (statement.kind == Statement::Kind::kBlock) {
        if (!rewrite(&statement.block, scopes, role)) return false;
        continue;
      }
      if (statement.kind != Statement::Kind::kInstruction) continue;
      const Instruction& instruction = statement.instruction;
      const MemoryClassification c = classifyMemory(instruction);
      if (c.verdict == MemoryClassification::Verdict::kUnsupported) continue;  // the memory guard refuses it
      const WritePlan plan = planWrites(instruction, c, *scopes, role);
      if (plan.kind == WritePlan::Kind::kRefuse) return fail(instruction, plan.reason);
      if (plan.kind == WritePlan::Kind::kNone) continue;
      std::string text, error;
      if (!checkText(instruction, *plan.access, *scopes, &text, &error)) return fail(instruction, error);
      const ParseResult parsed = parse(".version 9.0\n.func frame_check()\n{\n" + text + "}\n");
      if (!parsed.ok)
        return fail(instruction, "internal: a generated frame check does not parse: " + parsed.error);
      Statement block;
      block.kind = Statement::Kind::kBlock;
      block.block = parsed.module.items[1].function.body;
      Statement write = std::move(statement);
      write.instruction.operands[plan.access->addressOperand] = registerAddress(names_.address);
      block.block.push_back(std::move(write));
      statement = std::move(block);
      ++checked_;
    }
    scopes->pop();
    return true;
  }

  const std::string& error() const { return error_; }
  std::size_t checked() const { return checked_; }

 private:
  static Operand registerAddress(const std::string& reg) {
    const ParseResult parsed = parse(".version 9.0\n.entry e()\n{\nst.u8 [" + reg + "], 0;\n}\n");
    return parsed.module.items[1].function.body[0].instruction.operands[0];
  }

  bool checkText(const Instruction& instruction, const MemoryAccess& access, const Scopes& scopes,
                 std::string* text, std::string* error) const {
    const AddressForm& form = *instruction.operands[access.addressOperand].address;
    const CheckNames& n = names_;
    const bool generic = access.space == StateSpace::kGeneric;
    std::ostringstream out;
    out << ".reg .u64 " << n.address << ";\n.reg .pred " << n.outside << ";\n";
    const auto offsetBy = [&](const std::string& from) {
      if (form.offset >= 0) {
        out << "add.u64 " << n.address << ", " << from << ", "
            << hexImmediate(static_cast<std::uint64_t>(form.offset)) << ";\n";
      } else {
        out << "sub.u64 " << n.address << ", " << from << ", "
            << hexImmediate(0 - static_cast<std::uint64_t>(form.offset)) << ";\n";
      }
    };
    if (form.base.empty()) {
      out << "mov.u64 " << n.address << ", " << hexImmediate(static_cast<std::uint64_t>(form.offset))
          << ";\n";
    } else if (form.base[0] == '%') {
      const std::uint32_t width = scopes.registerBytes(form.base);
      if (width == 8) {
        offsetBy(form.base);
      } else if (width == 4 && !generic) {
        out << "cvt.u64.u32 " << n.address << ", " << form.base << ";\n";
        offsetBy(n.address);
      } else {
        *error = "an address register of a width the guard cannot tell (" + print(instruction) + ")";
        return false;
      }
    } else {
      // A variable of another state space (planWrites): its generic address, plus the offset.
      out << "cvta" << scopes.find(form.base)->space << ".u64 " << n.address << ", " << form.base << ";\n";
      offsetBy(n.address);
    }
    std::string x = n.address;
    if (generic) {
      out << ".reg .pred " << n.isLocal << ";\n.reg .u64 " << n.localAddress << ";\n";
      out << "isspacep.local " << n.isLocal << ", " << n.address << ";\n";
      out << "cvta.to.local.u64 " << n.localAddress << ", " << n.address << ";\n";
      x = n.localAddress;
    }
    // outside = the write lies outside every .local variable in scope that can hold it:
    // (x - variable) > size - width, unsigned, for each.
    std::size_t k = 0;
    for (const DeclaredName& d : scopes.localVariables()) {
      const std::optional<std::uint64_t> size = d.bytes();
      if (!size || *size < access.bytes) continue;
      const std::string b = n.base + std::to_string(k), dist = n.distance + std::to_string(k);
      out << ".reg .u64 " << b << ", " << dist << ";\n";
      out << "mov.u64 " << b << ", " << d.name << ";\n";
      out << "sub.u64 " << dist << ", " << x << ", " << b << ";\n";
      if (k == 0) {
        out << "setp.gt.u64 " << n.outside << ", " << dist << ", " << hexImmediate(*size - access.bytes)
            << ";\n";
      } else {
        out << "setp.gt.and.u64 " << n.outside << ", " << dist << ", " << hexImmediate(*size - access.bytes)
            << ", " << n.outside << ";\n";
      }
      ++k;
    }
    if (k == 0) out << "setp.ge.u64 " << n.outside << ", " << x << ", 0x0;\n";  // no variable: always outside
    // ... and below the frame floor: at or above it lies the kernel's own frame (ptx/frame_floor.h).
    out << "setp.lt.and.u64 " << n.outside << ", " << x << ", " << n.floor << ", " << n.outside << ";\n";
    if (generic) out << "and.pred " << n.outside << ", " << n.outside << ", " << n.isLocal << ";\n";
    if (instruction.predicate) {
      if (instruction.predicate->negated) {
        out << ".reg .pred " << n.negated << ";\nnot.pred " << n.negated << ", " << instruction.predicate->reg
            << ";\n";
        out << "and.pred " << n.outside << ", " << n.outside << ", " << n.negated << ";\n";
      } else {
        out << "and.pred " << n.outside << ", " << n.outside << ", " << instruction.predicate->reg << ";\n";
      }
    }
    out << "@" << n.outside << " trap;\n";
    *text = out.str();
    return true;
  }

  bool fail(const Instruction& instruction, const std::string& reason) {
    error_ = "line " + std::to_string(instruction.line) + ": " + reason;
    return false;
  }

  const CheckNames names_;
  std::string error_;
  std::size_t checked_ = 0;
};

// ---------------------------------------------------------------- the independent checker

class Checker {
 public:
  Checker(std::string prefix, std::vector<std::string>* out) : prefix_(std::move(prefix)), out_(out) {}

  // `parent`: the statements of the enclosing block when `statements` is its last statement.
  void check(const std::vector<Statement>& statements, Scopes* scopes, FrameRole role,
             const std::vector<Statement>* parent) {
    scopes->pushBlock(statements);
    for (std::size_t index = 0; index < statements.size(); ++index) {
      const Statement& s = statements[index];
      const bool last = index + 1 == statements.size();
      if (s.kind == Statement::Kind::kBlock) {
        check(s.block, scopes, role, last ? &statements : nullptr);
        continue;
      }
      if (s.kind != Statement::Kind::kInstruction) continue;
      const Instruction& instruction = s.instruction;
      const MemoryClassification c = classifyMemory(instruction);
      if (c.verdict == MemoryClassification::Verdict::kUnsupported)
        continue;  // the memory checker reports it
      const WritePlan plan = planWrites(instruction, c, *scopes, role);
      if (plan.kind == WritePlan::Kind::kNone) continue;
      if (plan.kind == WritePlan::Kind::kRefuse || !last ||
          !confined(statements, parent, instruction, *plan.access, *scopes)) {
        out_->push_back("line " + std::to_string(instruction.line) + ": " + print(instruction));
      }
    }
    scopes->pop();
  }

 private:
  // The write (last of `block`) uses a register that a frame check bounded: either `block`
  // is the frame check, or `block` is the memory guard's scope, last in the frame check
  // `parent`, and the write's register is the checked one or selected from it.
  bool confined(const std::vector<Statement>& block, const std::vector<Statement>* parent,
                const Instruction& write, const MemoryAccess& access, const Scopes& scopes) const {
    const std::string used = plainRegisterAddress(write.operands[access.addressOperand]);
    if (!startsWith(used, prefix_)) return false;
    if (frameCheck(block, used, write, access, scopes)) return true;
    if (parent == nullptr) return false;
    // The memory guard's scope: under a redirecting policy `selp.b64 used, t, a, v` with
    // `add.u64 a, checked, 0x0`; under report the write keeps the checked register.
    std::string checked = used;
    std::string selectedFrom;
    for (const Instruction* i : instructions(block)) {
      if (isForm(*i, "selp", {".b64"}, 4) && registerName(i->operands[0]) == used)
        selectedFrom = registerName(i->operands[2]);
    }
    if (!selectedFrom.empty()) {
      checked.clear();
      for (const Instruction* i : instructions(block)) {
        if (isForm(*i, "add", {".u64"}, 3) && registerName(i->operands[0]) == selectedFrom &&
            immediateValue(i->operands[2]) == 0) {
          checked = registerName(i->operands[1]);
        }
      }
      if (checked.empty()) return false;
    }
    // Nothing in the memory guard's scope redeclares or writes the checked register.
    for (const Statement& s : block) {
      if (s.kind == Statement::Kind::kDirective) {
        for (const Token& t : s.directive.tokens) {
          if (t.text == checked) return false;
        }
      }
      if (s.kind == Statement::Kind::kInstruction && &s.instruction != &write &&
          !s.instruction.operands.empty() && nameOf(s.instruction.operands[0]) == checked) {
        return false;
      }
      if (s.kind == Statement::Kind::kBlock) return false;
    }
    return frameCheck(*parent, checked, write, access, scopes);
  }

  // The instructions of `block` before its last statement; nullptr entries never.
  static std::vector<const Instruction*> instructions(const std::vector<Statement>& block) {
    std::vector<const Instruction*> out;
    for (std::size_t k = 0; k + 1 < block.size(); ++k) {
      if (block[k].kind == Statement::Kind::kInstruction) out.push_back(&block[k].instruction);
    }
    return out;
  }

  // `block` (but its last statement) is exactly a frame check of register `a` for `write`:
  // register declarations, the definition of `a`, [isspacep.local l, a; cvta.to.local x, a],
  // the bounds against .local variables in scope, [and l], [the predicate], @o trap.
  bool frameCheck(const std::vector<Statement>& block, const std::string& a, const Instruction& write,
                  const MemoryAccess& access, const Scopes& scopes) const {
    std::vector<const Instruction*> seq;
    for (std::size_t k = 0; k + 1 < block.size(); ++k) {
      const Statement& s = block[k];
      if (s.kind == Statement::Kind::kBlock) return false;
      if (s.kind == Statement::Kind::kLabel) return false;
      if (s.kind == Statement::Kind::kDirective && s.directive.name != ".reg") return false;
      if (s.kind == Statement::Kind::kInstruction) seq.push_back(&s.instruction);
    }
    std::size_t k = 0;
    auto next = [&]() -> const Instruction* { return k < seq.size() ? seq[k++] : nullptr; };
    auto peekNext = [&]() -> const Instruction* { return k < seq.size() ? seq[k] : nullptr; };
    // 1. the address: one or two unpredicated instructions that define `a` (its value is
    // free: the write uses `a` itself).
    for (int defs = 0; defs < 2; ++defs) {
      const Instruction* d = peekNext();
      if (d == nullptr || d->predicate || d->operands.empty() || registerName(d->operands[0]) != a ||
          (d->opcode != "add" && d->opcode != "sub" && d->opcode != "mov" && d->opcode != "cvt" &&
           d->opcode != "cvta")) {
        if (defs == 0) return false;
        break;
      }
      ++k;
    }
    std::string x = a, l;
    const bool generic = access.space == StateSpace::kGeneric;
    if (generic) {
      const Instruction* space = next();
      const Instruction* to = next();
      if (space == nullptr || to == nullptr || !isForm(*space, "isspacep", {".local"}, 2) ||
          registerName(space->operands[1]) != a || !isForm(*to, "cvta", {".to", ".local", ".u64"}, 2) ||
          registerName(to->operands[1]) != a) {
        return false;
      }
      l = registerName(space->operands[0]);
      x = registerName(to->operands[0]);
      if (!startsWith(l, prefix_) || !startsWith(x, prefix_)) return false;
    }
    // 2. o = outside every variable named (each a .local variable in scope that holds the write)
    std::string o;
    const Instruction* first = peekNext();
    if (first != nullptr && isForm(*first, "setp", {".ge", ".u64"}, 3) &&
        registerName(first->operands[1]) == x && immediateValue(first->operands[2]) == 0) {
      ++k;
      o = registerName(first->operands[0]);
    } else {
      for (bool initial = true;; initial = false) {
        const Instruction* mov = peekNext();
        if (mov == nullptr || !isForm(*mov, "mov", {".u64"}, 2)) break;
        ++k;
        const Instruction* sub = next();
        const Instruction* gt = next();
        // nameOf: a variable may be named with a leading '%' (the parser then sees a register).
        if (sub == nullptr || gt == nullptr || nameOf(mov->operands[1]).empty()) return false;
        const std::string b = registerName(mov->operands[0]);
        const DeclaredName* d = scopes.find(nameOf(mov->operands[1]));
        if (!startsWith(b, prefix_) || d == nullptr || d->space != ".local" || !d->bytes() ||
            *d->bytes() < access.bytes) {
          return false;
        }
        const std::uint64_t limit = *d->bytes() - access.bytes;
        if (!isForm(*sub, "sub", {".u64"}, 3) || registerName(sub->operands[1]) != x ||
            registerName(sub->operands[2]) != b)
          return false;
        const std::string dist = registerName(sub->operands[0]);
        if (!startsWith(dist, prefix_)) return false;
        if (initial) {
          if (!isForm(*gt, "setp", {".gt", ".u64"}, 3)) return false;
          o = registerName(gt->operands[0]);
        } else if (!isForm(*gt, "setp", {".gt", ".and", ".u64"}, 4) || registerName(gt->operands[0]) != o ||
                   registerName(gt->operands[3]) != o) {
          return false;
        }
        if (registerName(gt->operands[1]) != dist || immediateValue(gt->operands[2]) != limit) return false;
      }
    }
    if (!startsWith(o, prefix_)) return false;
    const Instruction* floor = next();
    if (floor == nullptr || !isForm(*floor, "setp", {".lt", ".and", ".u64"}, 4) ||
        registerName(floor->operands[0]) != o || registerName(floor->operands[1]) != x ||
        registerName(floor->operands[2]) != frameFloorRegister(prefix_) ||
        registerName(floor->operands[3]) != o) {
      return false;
    }
    if (generic) {
      const Instruction* andLocal = next();
      if (andLocal == nullptr || !isForm(*andLocal, "and", {".pred"}, 3) ||
          registerName(andLocal->operands[0]) != o || registerName(andLocal->operands[1]) != o ||
          registerName(andLocal->operands[2]) != l) {
        return false;
      }
    }
    // 3. under the write's predicate
    if (write.predicate) {
      const Instruction* p = next();
      if (p == nullptr) return false;
      if (write.predicate->negated) {
        const Instruction* andp = next();
        if (!isForm(*p, "not", {".pred"}, 2) || nameOf(p->operands[1]) != write.predicate->reg ||
            !startsWith(registerName(p->operands[0]), prefix_) || andp == nullptr ||
            !isForm(*andp, "and", {".pred"}, 3) || registerName(andp->operands[0]) != o ||
            registerName(andp->operands[1]) != o ||
            registerName(andp->operands[2]) != registerName(p->operands[0])) {
          return false;
        }
      } else if (!isForm(*p, "and", {".pred"}, 3) || registerName(p->operands[0]) != o ||
                 registerName(p->operands[1]) != o || nameOf(p->operands[2]) != write.predicate->reg) {
        return false;
      }
    }
    // 4. the trap, and nothing after it
    const Instruction* stop = next();
    return stop != nullptr && stop->opcode == "trap" && stop->operands.empty() && stop->predicate &&
           !stop->predicate->negated && stop->predicate->reg == o && k == seq.size();
  }

  const std::string prefix_;
  std::vector<std::string>* out_;
};

}  // namespace

FrameConfinementResult confineFrameWrites(Module* module, const std::set<std::string>& trustedFunctions,
                                          const std::string& registerPrefix, bool confineFuncWrites) {
  FrameConfinementResult result;
  if (confineFuncWrites && !addFrameFloor(module, trustedFunctions, registerPrefix, &result.error))
    return result;
  Scopes scopes;
  scopes.push(moduleDeclarations(*module));
  Rewriter rewriter(registerPrefix);
  for (TopLevel& item : module->items) {
    if (item.kind != TopLevel::Kind::kFunction || !item.function.hasBody) continue;
    if (trustedBody(item.function, trustedFunctions)) continue;
    scopes.push(readParameters(item.function));
    const bool ok = rewriter.rewrite(&item.function.body, &scopes, roleOf(item.function, confineFuncWrites));
    if (!ok) {
      result.error = rewriter.error();
      return result;
    }
    scopes.pop();
  }
  result.checkedWrites = rewriter.checked();
  result.ok = true;
  return result;
}

std::vector<std::string> findUnconfinedFrameWrites(const Module& module,
                                                   const std::set<std::string>& trustedFunctions,
                                                   const std::string& registerPrefix,
                                                   bool confineFuncWrites) {
  std::vector<std::string> out;
  Scopes scopes;
  scopes.push(moduleDeclarations(module));
  Checker checker(registerPrefix, &out);
  for (const TopLevel& item : module.items) {
    if (item.kind != TopLevel::Kind::kFunction || !item.function.hasBody) continue;
    if (trustedBody(item.function, trustedFunctions)) continue;
    scopes.push(readParameters(item.function));
    checker.check(item.function.body, &scopes, roleOf(item.function, confineFuncWrites), nullptr);
    scopes.pop();
  }
  if (confineFuncWrites) {
    for (std::string& line : findMissingFrameFloor(module, trustedFunctions, registerPrefix))
      out.push_back(std::move(line));
  }
  return out;
}

}  // namespace agileos::ptx
