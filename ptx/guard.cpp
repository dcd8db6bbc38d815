#include "ptx/guard.h"

#include <cstdint>
#include <limits>
#include <set>
#include <sstream>

#include "ptx/control_flow.h"
#include "ptx/frame_confinement.h"
#include "ptx/fresh_names.h"
#include "ptx/instruction_forms.h"
#include "ptx/memory_access.h"
#include "ptx/parser.h"
#include "ptx/printer.h"
#include "ptx/versions.h"

namespace agileos::ptx {
namespace {

// ---------------------------------------------------------------- check generation

// The guard zone's high words: it starts at protectedBegin - 4 GiB.
std::uint64_t zoneHigh(const GuardOptions& o) { return (o.protectedBegin >> 32) - 1; }
std::uint64_t zoneSpan(const GuardOptions& o) { return (o.protectedEnd >> 32) - zoneHigh(o); }

// Replaces an address operand by `[reg]`, the register the guard chose.
Operand addressOf(const std::string& reg) {
  const ParseResult parsed = parse(".version 9.0\n.entry e()\n{\nld.u8 %r, [" + reg + "];\n}\n");
  return parsed.module.items[1].function.body[0].instruction.operands[1];
}

Operand registerOf(const std::string& reg) {
  const ParseResult parsed = parse(".version 9.0\n.entry e()\n{\nmov.b32 %r, " + reg + ";\n}\n");
  return parsed.module.items[1].function.body[0].instruction.operands[1];
}

// PTX text of the statements that check one access; registers are `reg` + suffix. For a
// redirecting policy, *redirected is the register the access must use instead, and for a matrix
// access with a stride register, *stride the 32-bit copy of it that was checked and that the
// access must use (so that check and access read the same 32 bits, whatever the operand was).
bool appendCheck(const Instruction& instruction, const MemoryAccess& access, std::size_t index,
                 const std::string& reg, const GuardOptions& options, std::string* text,
                 std::string* redirected, std::string* stride, std::string* error) {
  const Operand& operand = instruction.operands[access.addressOperand];
  if (!operand.address) {
    *error = "an address the guard cannot bound (" + print(instruction) + ")";
    return false;
  }
  const AddressForm& form = *operand.address;
  const std::string n = std::to_string(index);
  const std::string a = reg + "_a" + n, v = reg + "_v" + n;
  std::ostringstream out;
  out << ".reg .u64 " << a << ";\n.reg .pred " << v << ";\n";
  // a = the effective address
  if (form.base.empty()) {
    out << "mov.u64 " << a << ", " << hexImmediate(static_cast<std::uint64_t>(form.offset)) << ";\n";
  } else if (form.base[0] == '%') {
    if (form.offset >= 0) {
      out << "add.u64 " << a << ", " << form.base << ", "
          << hexImmediate(static_cast<std::uint64_t>(form.offset)) << ";\n";
    } else {
      out << "sub.u64 " << a << ", " << form.base << ", "
          << hexImmediate(0 - static_cast<std::uint64_t>(form.offset)) << ";\n";
    }
  } else {
    out << "mov.u64 " << a << ", " << form.base << ";\n";
    out << "add.u64 " << a << ", " << a << ", " << hexImmediate(static_cast<std::uint64_t>(form.offset))
        << ";\n";
  }
  // v = a lies in the guard zone [protectedBegin - 4 GiB, protectedEnd). Every access is
  // narrower than 4 GiB (fixed widths; run-time sizes are .u32), so an access overlaps the
  // protected range only if it starts in the zone; the 4 GiB below the range are reserved
  // and unmapped (memmgr::kGuardZone), so flagging them stops nothing that could work. The
  // zone's bounds have zero low words, so the test is on the address's high word alone:
  // (hi - zoneHi) < spanHi, two 32-bit instructions.
  const bool runtimeWidth = access.sizeOperand || access.extent;
  if (!runtimeWidth && access.bytes == 0) {
    *error = "an access of unknown width (" + print(instruction) + ")";
    return false;
  }
  if (access.extent && !access.extent->strideOperand && access.extent->constantBytes > 0xFFFFFFFFull) {
    *error = "a matrix access wider than 4 GiB (" + print(instruction) + ")";
    return false;
  }
  if (!runtimeWidth && redirects(options.policy) && access.bytes > options.redirectLimit) {
    *error = "an access wider than the guard can redirect (" + print(instruction) + ")";
    return false;
  }
  const std::string l = reg + "_l" + n, h = reg + "_h" + n, d = reg + "_d" + n;
  out << ".reg .b32 " << l << ", " << h << ", " << d << ";\n";
  out << "mov.b64 {" << l << ", " << h << "}, " << a << ";\n";
  out << "sub.u32 " << d << ", " << h << ", " << hexImmediate(zoneHigh(options)) << ";\n";
  out << "setp.lt.u32 " << v << ", " << d << ", " << hexImmediate(zoneSpan(options)) << ";\n";
  if (instruction.predicate) {
    if (instruction.predicate->negated) {
      const std::string np = reg + "_np" + n;
      out << ".reg .pred " << np << ";\nnot.pred " << np << ", " << instruction.predicate->reg << ";\n";
      out << "and.pred " << v << ", " << v << ", " << np << ";\n";
    } else {
      out << "and.pred " << v << ", " << v << ", " << instruction.predicate->reg << ";\n";
    }
  }
  // Every policy but trap counts the hit.
  if (options.policy != GuardPolicy::kTrap) {
    const std::string c = reg + "_c" + n;
    out << ".reg .u64 " << c << ";\nmov.u64 " << c << ", " << hexImmediate(options.hitCounter) << ";\n";
    out << "@" << v << " red.global.add.u64 [" << c << "], 1;\n";
  }
  // Every policy but report redirects the hit: straight-line code (a select, no branch), so
  // the compiler keeps overlapping the kernel's accesses. A `trap` or a branch before each
  // access costs up to +33% (a shared-memory transpose, measured on an H200); a select, +3%.
  // Under trap the target is the fault window, reserved and never mapped: the access faults
  // there, which ends the kernel before any protected byte is touched.
  if (redirects(options.policy)) {
    const std::string t = reg + "_t" + n, r = reg + "_r" + n;
    out << ".reg .u64 " << t << ", " << r << ";\n";
    if (options.policy == GuardPolicy::kRemapOr) {
      out << "and.b64 " << t << ", " << a << ", " << hexImmediate(options.remapMask) << ";\n";
      out << "or.b64 " << t << ", " << t << ", " << hexImmediate(options.remapBase) << ";\n";
    } else {
      const std::uint64_t target = options.policy == GuardPolicy::kTrap ? options.faultWindow : options.sink;
      out << "mov.u64 " << t << ", " << hexImmediate(target) << ";\n";
    }
    out << "selp.b64 " << r << ", " << t << ", " << a << ", " << v << ";\n";
    // A run-time width (a copy's size operand, a matrix fragment's span) is computed into `sz`;
    // a hit the quarantine (or remap window) cannot hold then stops the kernel.
    const std::string sz = reg + "_s" + n;
    if (access.sizeOperand) {
      const Operand& size = instruction.operands[*access.sizeOperand];
      out << ".reg .u64 " << sz << ";\n";
      if (size.kind == Operand::Kind::kImmediate) {
        out << "mov.u64 " << sz << ", ";
        for (const Token& t : size.tokens) out << t.text;
        out << ";\n";
      } else if (size.kind == Operand::Kind::kRegister) {
        out << "cvt.u64.u32 " << sz << ", " << size.tokens[0].text << ";\n";
      } else {
        *error = "a copy size the guard cannot read (" + print(instruction) + ")";
        return false;
      }
    }
    if (access.extent) {
      // A matrix fragment spans its lines a stride apart. The zone test on its first byte is
      // sound only for a span under 4 GiB (see above): a wider one stops the kernel, hit or not.
      const MemoryAccess::Extent& extent = *access.extent;
      out << ".reg .u64 " << sz << ";\n";
      if (extent.strideOperand) {
        const Operand& given = instruction.operands[*extent.strideOperand];
        const std::string wide = reg + "_w" + n, copy = reg + "_st" + n;
        // mov.b32 takes only a 32-bit register (ptxas refuses a wider one).
        out << ".reg .b32 " << copy << ";\nmov.b32 " << copy << ", " << given.tokens[0].text << ";\n";
        out << "cvt.u64.u32 " << sz << ", " << copy << ";\n";
        *stride = copy;
        out << "mul.lo.u64 " << sz << ", " << sz << ", " << hexImmediate(extent.bytesPerStride) << ";\n";
        out << "add.u64 " << sz << ", " << sz << ", " << hexImmediate(extent.constantBytes) << ";\n";
        out << ".reg .pred " << wide << ";\nsetp.gt.u64 " << wide << ", " << sz << ", 0xFFFFFFFF;\n@" << wide
            << " trap;\n";
      } else {
        out << "mov.u64 " << sz << ", " << hexImmediate(extent.constantBytes) << ";\n";
      }
    }
    if (access.sizeOperand || access.extent) {
      const std::string big = reg + "_big" + n;
      out << ".reg .pred " << big << ";\nsetp.gt.and.u64 " << big << ", " << sz << ", "
          << hexImmediate(options.redirectLimit) << ", " << v << ";\n@" << big << " trap;\n";
    }
    *redirected = r;
  }
  *text += out.str();
  return true;
}

class Rewriter {
 public:
  Rewriter(const GuardOptions& options, std::string prefix) : options_(options), prefix_(std::move(prefix)) {}

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
      std::vector<std::pair<std::size_t, std::string>> redirections;  // operand, register
      std::vector<std::pair<std::size_t, std::string>> strides;       // operand, register
      for (const MemoryAccess& access : c.accesses) {
        if (!access.mayReachGlobal()) continue;
        std::string error, redirected, stride;
        if (!appendCheck(instruction, access, guarded, prefix_, options_, &text, &redirected, &stride,
                         &error)) {
          return fail(instruction, error);
        }
        if (!redirected.empty()) redirections.emplace_back(access.addressOperand, redirected);
        if (!stride.empty()) strides.emplace_back(*access.extent->strideOperand, stride);
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
      for (const auto& [operand, reg] : redirections) original.instruction.operands[operand] = addressOf(reg);
      for (const auto& [operand, reg] : strides) original.instruction.operands[operand] = registerOf(reg);
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
  std::string error_;
  std::size_t checked_ = 0;
};

// A body the guard leaves alone: trusted module code (GuardOptions::trustedFunctions).
bool trusted(const Function& function, const GuardOptions& options) {
  return trustedBody(function, options.trustedFunctions);
}

// ---------------------------------------------------------------- the independent checker

// The stop of a hit `v` whose run-time width `sz` the quarantine cannot hold (appendCheck): the
// next two instructions. `next` yields them.
template <typename Next>
bool quarantineStopFollows(Next& next, const std::string& sz, const std::string& v,
                           const GuardOptions& options) {
  const Instruction* big = next();
  const Instruction* stop = next();
  return big != nullptr && isForm(*big, "setp", {".gt", ".and", ".u64"}, 4) &&
         registerName(big->operands[1]) == sz && immediateValue(big->operands[2]) == options.redirectLimit &&
         registerName(big->operands[3]) == v && stop != nullptr && stop->predicate &&
         !stop->predicate->negated && stop->predicate->reg == registerName(big->operands[0]) &&
         stop->opcode == "trap";
}

// The span check of a matrix access (appendCheck): the span computed from the access's stride
// operand, a 32-bit copy the guard made (or the constant span), a stop when it is 4 GiB or wider,
// and a stop when a hit `v` is wider than the quarantine. `next` yields the instructions after the
// redirection.
template <typename Next>
bool matrixSpanChecked(Next& next, const Instruction& access, const MemoryAccess::Extent& extent,
                       const std::string& v, const GuardOptions& options, const std::string& prefix) {
  const Instruction* first = next();
  if (first == nullptr) return false;
  std::string sz;
  if (extent.strideOperand) {
    const Instruction* cvt = next();
    const Instruction* mul = next();
    const Instruction* add = next();
    const Instruction* wide = next();
    const Instruction* stopWide = next();
    // The access's stride is a 32-bit copy the guard made (mov.b32, guard prefix), and the span is
    // computed from that very register.
    const std::string stride = registerName(access.operands[*extent.strideOperand]);
    if (!isForm(*first, "mov", {".b32"}, 2) || registerName(first->operands[0]) != stride ||
        stride.rfind(prefix, 0) != 0 || cvt == nullptr || !isForm(*cvt, "cvt", {".u64", ".u32"}, 2) ||
        registerName(cvt->operands[1]) != stride || mul == nullptr ||
        !isForm(*mul, "mul", {".lo", ".u64"}, 3) || add == nullptr || !isForm(*add, "add", {".u64"}, 3) ||
        wide == nullptr || !isForm(*wide, "setp", {".gt", ".u64"}, 3) || stopWide == nullptr) {
      return false;
    }
    sz = registerName(cvt->operands[0]);
    if (registerName(mul->operands[0]) != sz || registerName(mul->operands[1]) != sz ||
        immediateValue(mul->operands[2]) != extent.bytesPerStride || registerName(add->operands[0]) != sz ||
        registerName(add->operands[1]) != sz || immediateValue(add->operands[2]) != extent.constantBytes ||
        registerName(wide->operands[1]) != sz || immediateValue(wide->operands[2]) != 0xFFFFFFFFull ||
        !stopWide->predicate || stopWide->predicate->negated ||
        stopWide->predicate->reg != registerName(wide->operands[0]) || stopWide->opcode != "trap") {
      return false;
    }
  } else {
    if (!isForm(*first, "mov", {".u64"}, 2) || immediateValue(first->operands[1]) != extent.constantBytes ||
        extent.constantBytes > 0xFFFFFFFFull) {
      return false;
    }
    sz = registerName(first->operands[0]);
  }
  return quarantineStopFollows(next, sz, v, options);
}

// Does `checks` (the instructions before the access in its scope) contain, in order, a
// complete check of `access` whose hit register is acted on by the policy? For a
// redirecting policy the access itself must use the register the check selected.
bool checkPresent(const std::vector<const Instruction*>& checks, const Instruction& access,
                  const MemoryAccess& memory, const GuardOptions& options, const std::string& prefix) {
  const Operand& operand = access.operands[memory.addressOperand];
  if (!operand.address) return false;
  const AddressForm& form = *operand.address;
  const bool redirect = redirects(options.policy);
  // A redirected access uses `[r]`; what matters is then that r is selected from the
  // checked address, so the check's address may be computed from any form.
  const std::string redirectedTo = redirect ? plainRegisterAddress(operand) : std::string();
  if (redirect && redirectedTo.rfind(prefix, 0) != 0) return false;
  for (std::size_t start = 0; start < checks.size(); ++start) {
    std::size_t k = start;
    auto next = [&]() -> const Instruction* { return k < checks.size() ? checks[k++] : nullptr; };
    // 1. a = base + offset
    const Instruction* i = next();
    if (i == nullptr) return false;
    std::string a;
    const auto offset = static_cast<std::uint64_t>(form.offset);
    if (redirect) {
      if (isForm(*i, "mov", {".u64"}, 2) && i->operands[1].kind == Operand::Kind::kSymbol) {
        const Instruction* add = next();
        if (add == nullptr || !isForm(*add, "add", {".u64"}, 3) ||
            registerName(add->operands[0]) != registerName(i->operands[0]) ||
            registerName(add->operands[1]) != registerName(i->operands[0])) {
          continue;
        }
      } else if (!isForm(*i, "mov", {".u64"}, 2) && !isForm(*i, "add", {".u64"}, 3) &&
                 !isForm(*i, "sub", {".u64"}, 3)) {
        continue;
      }
      a = registerName(i->operands[0]);
    } else if (form.base.empty() && isForm(*i, "mov", {".u64"}, 2) &&
               immediateValue(i->operands[1]) == offset) {
      a = registerName(i->operands[0]);
    } else if (!form.base.empty() && form.base[0] == '%' && isForm(*i, "add", {".u64"}, 3) &&
               registerName(i->operands[1]) == form.base && form.offset >= 0 &&
               immediateValue(i->operands[2]) == offset) {
      a = registerName(i->operands[0]);
    } else if (!form.base.empty() && form.base[0] == '%' && isForm(*i, "sub", {".u64"}, 3) &&
               registerName(i->operands[1]) == form.base && form.offset < 0 &&
               immediateValue(i->operands[2]) == 0 - offset) {
      a = registerName(i->operands[0]);
    } else if (!form.base.empty() && form.base[0] != '%' && isForm(*i, "mov", {".u64"}, 2) &&
               i->operands[1].kind == Operand::Kind::kSymbol && i->operands[1].tokens[0].text == form.base) {
      const Instruction* add = next();
      if (add == nullptr || !isForm(*add, "add", {".u64"}, 3) ||
          registerName(add->operands[1]) != registerName(i->operands[0]) ||
          registerName(add->operands[0]) != registerName(i->operands[0]) ||
          immediateValue(add->operands[2]) != offset) {
        continue;
      }
      a = registerName(i->operands[0]);
    } else {
      continue;
    }
    if (a.rfind(prefix, 0) != 0) continue;
    // 2. v = the high word of a lies in the guard zone (every access is narrower than 4 GiB)
    if (!memory.sizeOperand && !memory.extent &&
        (memory.bytes == 0 || (redirect && memory.bytes > options.redirectLimit)))
      continue;
    const Instruction* split = next();
    const Instruction* sub = next();
    const Instruction* lt = next();
    if (split == nullptr || sub == nullptr || lt == nullptr || !isForm(*split, "mov", {".b64"}, 2) ||
        split->operands[0].kind != Operand::Kind::kVector || split->operands[0].elements.size() != 2 ||
        registerName(split->operands[1]) != a || !isForm(*sub, "sub", {".u32"}, 3) ||
        registerName(sub->operands[1]) != registerName(split->operands[0].elements[1]) ||
        immediateValue(sub->operands[2]) != zoneHigh(options) || !isForm(*lt, "setp", {".lt", ".u32"}, 3) ||
        registerName(lt->operands[1]) != registerName(sub->operands[0]) ||
        immediateValue(lt->operands[2]) != zoneSpan(options)) {
      continue;
    }
    const std::string v = registerName(lt->operands[0]);
    // 4. under the access's predicate
    if (access.predicate) {
      const Instruction* first = next();
      if (first == nullptr) continue;
      if (access.predicate->negated) {
        const Instruction* andp = next();
        if (andp == nullptr || !isForm(*first, "not", {".pred"}, 2) ||
            nameOf(first->operands[1]) != access.predicate->reg || !isForm(*andp, "and", {".pred"}, 3) ||
            registerName(andp->operands[0]) != v || registerName(andp->operands[1]) != v ||
            registerName(andp->operands[2]) != registerName(first->operands[0])) {
          continue;
        }
      } else if (!isForm(*first, "and", {".pred"}, 3) || registerName(first->operands[0]) != v ||
                 registerName(first->operands[1]) != v ||
                 nameOf(first->operands[2]) != access.predicate->reg) {
        continue;
      }
    }
    // 5. the policy's action on a hit
    auto predicatedOn = [&](const Instruction* x) {
      return x != nullptr && x->predicate && !x->predicate->negated && x->predicate->reg == v;
    };
    if (options.policy != GuardPolicy::kTrap) {
      const Instruction* counter = next();
      const Instruction* count = next();
      if (counter == nullptr || !isForm(*counter, "mov", {".u64"}, 2) ||
          immediateValue(counter->operands[1]) != options.hitCounter || !predicatedOn(count) ||
          count->opcode != "red" || !count->hasModifier(".global") || count->operands.size() != 2 ||
          plainRegisterAddress(count->operands[0]) != registerName(counter->operands[0])) {
        continue;
      }
    }
    if (!redirect) return true;
    // 6. redirection: r = v ? safe : a, and the access uses [r]
    const Instruction* t1 = next();
    if (t1 == nullptr) continue;
    std::string t;
    if (options.policy == GuardPolicy::kRemapOr) {
      const Instruction* t2 = next();
      if (!isForm(*t1, "and", {".b64"}, 3) || registerName(t1->operands[1]) != a ||
          immediateValue(t1->operands[2]) != options.remapMask || t2 == nullptr ||
          !isForm(*t2, "or", {".b64"}, 3) || registerName(t2->operands[0]) != registerName(t1->operands[0]) ||
          registerName(t2->operands[1]) != registerName(t1->operands[0]) ||
          immediateValue(t2->operands[2]) != options.remapBase) {
        continue;
      }
      t = registerName(t1->operands[0]);
    } else {
      const std::uint64_t target = options.policy == GuardPolicy::kTrap ? options.faultWindow : options.sink;
      if (!isForm(*t1, "mov", {".u64"}, 2) || immediateValue(t1->operands[1]) != target) continue;
      t = registerName(t1->operands[0]);
    }
    const Instruction* sel = next();
    if (sel == nullptr || !isForm(*sel, "selp", {".b64"}, 4) ||
        registerName(sel->operands[0]) != redirectedTo || registerName(sel->operands[1]) != t ||
        registerName(sel->operands[2]) != a || registerName(sel->operands[3]) != v) {
      continue;
    }
    if (memory.sizeOperand) {
      const Instruction* sz = next();
      const Operand& sizeOperand = access.operands[*memory.sizeOperand];
      const bool sizeOk = sz != nullptr && ((isForm(*sz, "cvt", {".u64", ".u32"}, 2) &&
                                             registerName(sz->operands[1]) == registerName(sizeOperand)) ||
                                            (isForm(*sz, "mov", {".u64"}, 2) &&
                                             sizeOperand.kind == Operand::Kind::kImmediate &&
                                             immediateValue(sz->operands[1]) == immediateValue(sizeOperand)));
      if (!sizeOk || !quarantineStopFollows(next, registerName(sz->operands[0]), v, options)) continue;
    }
    if (memory.extent && !matrixSpanChecked(next, access, *memory.extent, v, options, prefix)) continue;
    return true;
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
      const bool own = options.policy != GuardPolicy::kTrap && instruction.opcode == "red" &&
                       instruction.predicate && instruction.predicate->reg.rfind(prefix, 0) == 0 &&
                       instruction.operands.size() == 2 &&
                       plainRegisterAddress(instruction.operands[0]).rfind(prefix, 0) == 0;
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
    case GuardPolicy::kRemapOr:
      return "remap_or";
    case GuardPolicy::kPoison:
      return "poison";
    case GuardPolicy::kSink:
      return "sink";
    case GuardPolicy::kReport:
      return "report";
  }
  return "unknown";
}

std::optional<GuardPolicy> parseGuardPolicy(std::string_view text) {
  for (GuardPolicy policy : {GuardPolicy::kTrap, GuardPolicy::kRemapOr, GuardPolicy::kPoison,
                             GuardPolicy::kSink, GuardPolicy::kReport}) {
    if (text == toString(policy)) return policy;
  }
  return std::nullopt;
}

bool redirects(GuardPolicy policy) { return policy != GuardPolicy::kReport; }

std::string validate(const GuardOptions& o) {
  const auto inProtected = [&](std::uint64_t begin, std::uint64_t bytes) {
    return begin >= o.protectedBegin && bytes <= o.protectedEnd - begin;
  };
  if (o.protectedBegin >= o.protectedEnd) return "the protected range is empty";
  // The check works on high words: the range and the 4 GiB guard zone below it.
  if (o.protectedBegin % (1ull << 32) != 0 || o.protectedEnd % (1ull << 32) != 0 ||
      o.protectedBegin < (1ull << 32)) {
    return "the protected range must start and end on 4 GiB boundaries, above the first 4 GiB";
  }
  if (o.policy == GuardPolicy::kTrap) {
    if (o.redirectLimit == 0) return "trap needs a redirect limit";
    if (!inProtected(o.faultWindow, o.redirectLimit))
      return "the fault window must lie inside the protected range";
    return {};
  }
  if (o.hitCounter % 8 != 0 || !inProtected(o.hitCounter, 8)) {
    return "the hit counter must be an aligned .u64 inside the protected range";
  }
  if (!redirects(o.policy)) return {};
  if (o.redirectLimit == 0) return "a redirecting policy needs a redirect limit";
  if (o.policy == GuardPolicy::kRemapOr) {
    if ((o.remapBase & o.remapMask) != 0) return "the remap base and mask overlap";
    const std::uint64_t top = o.remapBase + o.remapMask;  // no wrap: disjoint bits
    if (top > std::numeric_limits<std::uint64_t>::max() - o.redirectLimit) return "the remap window wraps";
    const std::uint64_t end = top + o.redirectLimit;
    if (o.remapBase < o.protectedEnd && end > o.protectedBegin)
      return "the remap window touches the protected range";
    return {};
  }
  if (!inProtected(o.sink, o.redirectLimit)) return "the sink must lie inside the protected range";
  if (o.hitCounter < o.sink + o.redirectLimit && o.hitCounter + 8 > o.sink) {
    return "the hit counter must not lie in the sink";
  }
  return {};
}

namespace {

// The redirecting policies count hits with red.add.u64, which ptxas admits only from .target sm_12
// on. A module written for sm_10 or sm_11 (nvcc 4's PTX, which cuda-samples still JIT-compile) is
// raised to sm_12 under every policy, so that one module guards alike under each: the raise takes
// nothing from it (sm_12 has every instruction of sm_10 and sm_11, and the JIT compiles for the
// device's own architecture whatever the target says) and keeps the target's other options. PTX
// ISA 1.0 and 1.1 do not know sm_12 (ptxas refuses the pair), so their modules keep their target:
// trap needs nothing newer, and a redirecting policy's output then fails at ptxas, closed. (The
// worker never hands the guard such a module: it raises every module below ISA 3.1 to 3.1 first,
// ptx/separate_compilation.h.)
void raiseLegacyTarget(Module* module) {
  Version version;  // an unreadable one reads as 0.0
  for (const TopLevel& item : module->items) {
    if (item.kind == TopLevel::Kind::kDirective && item.directive.name == ".version")
      version = parseVersion(item.directive).value_or(Version{});
  }
  if (version < Version{1, 2}) return;
  for (TopLevel& item : module->items) {
    if (item.kind != TopLevel::Kind::kDirective || item.directive.name != ".target") continue;
    for (Token& token : item.directive.tokens) {
      if (token.kind == TokenKind::kIdentifier && (token.text == "sm_10" || token.text == "sm_11"))
        token.text = "sm_12";
    }
  }
}

}  // namespace

GuardResult guardModule(const Module& input, const GuardOptions& options) {
  GuardResult result;
  if (std::string invalid = validate(options); !invalid.empty()) {
    result.error = "guard options: " + invalid;
    return result;
  }
  // Every identifier of the module, trusted functions' included: the prefix is fresh for
  // the whole module, whatever the link (ptx/module_link.h) merged into it.
  result.registerPrefix = freshPrefix(moduleIdentifiers(input), "%agileos_guard");
  result.module = input;
  // Control flow first: its check blocks hold no memory access, so the memory rewrite
  // below leaves them as they are, immediately before the transfers they check.
  const ControlFlowResult flow =
      guardControlFlow(&result.module, options.trustedFunctions, result.registerPrefix);
  if (!flow.ok) {
    result.error = flow.error;
    result.module = {};
    return result;
  }
  result.checkedControlTransfers = flow.checkedCalls + flow.checkedBranches;
  // Then parameter stores, and (confineFrameWrites) the writes that could reach a saved
  // return address; a generic write's frame block
  // ends in the write, which the memory rewrite below wraps in its own scope.
  const FrameConfinementResult frames = confineFrameWrites(&result.module, options.trustedFunctions,
                                                           result.registerPrefix, options.confineFrameWrites);
  if (!frames.ok) {
    result.error = frames.error;
    result.module = {};
    return result;
  }
  result.confinedFrameWrites = frames.checkedWrites;
  // Tensor copies next: each becomes a scope that reads its map from a kernel parameter; the
  // scope holds no access the memory rewrite below checks (the map is a parameter, the other
  // operands shared memory).
  TensorMapResult maps = guardTensorMaps(&result.module, options.trustedFunctions, result.registerPrefix);
  if (!maps.ok) {
    result.error = maps.error;
    result.module = {};
    return result;
  }
  result.tensorMapCopies = maps.rewrittenCopies;
  result.tensorMaps = std::move(maps.kernels);
  Rewriter rewriter(options, result.registerPrefix);
  for (TopLevel& item : result.module.items) {
    if (item.kind != TopLevel::Kind::kFunction || !item.function.hasBody) continue;
    if (trusted(item.function, options)) continue;
    if (!rewriter.rewrite(&item.function.body)) {
      result.error = rewriter.error();
      result.module = {};
      return result;
    }
  }
  result.checkedAccesses = rewriter.checked();
  raiseLegacyTarget(&result.module);
  result.ok = true;
  return result;
}

std::vector<std::string> findUnguardedAccesses(const Module& module, const GuardOptions& options,
                                               const std::string& registerPrefix) {
  std::vector<std::string> unguarded;
  for (const TopLevel& item : module.items) {
    if (item.kind == TopLevel::Kind::kFunction && item.function.hasBody && !trusted(item.function, options)) {
      findUnguarded(item.function.body, false, options, registerPrefix, &unguarded);
    }
  }
  for (std::string& line : findUncheckedControlFlow(module, options.trustedFunctions, registerPrefix)) {
    unguarded.push_back(std::move(line));
  }
  for (std::string& line : findUncheckedTensorMaps(module, options.trustedFunctions, registerPrefix)) {
    unguarded.push_back(std::move(line));
  }
  for (std::string& line : findUnconfinedFrameWrites(module, options.trustedFunctions, registerPrefix,
                                                     options.confineFrameWrites)) {
    unguarded.push_back(std::move(line));
  }
  return unguarded;
}

}  // namespace agileos::ptx
