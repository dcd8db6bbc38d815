#include "ptx/tensor_maps.h"

#include <algorithm>
#include <map>
#include <optional>

#include "ptx/declarations.h"
#include "ptx/instruction_forms.h"
#include "ptx/memory_access.h"
#include "ptx/parser.h"
#include "ptx/printer.h"

namespace agileos::ptx {
namespace {

constexpr std::uint64_t kTensorMapBytes = 128;
constexpr std::uint64_t kTensorMapAlignment = 64;  // what the copy engine requires of a map

std::string paramRegister(const std::string& prefix) { return prefix + "_tp"; }
std::string genericRegister(const std::string& prefix) { return prefix + "_tg"; }

// The operand index of a tensor copy's map, if `instruction` is a tensor copy.
std::optional<std::size_t> tensorMapOperand(const Instruction& instruction) {
  const MemoryClassification c = classifyMemory(instruction);
  if (c.verdict != MemoryClassification::Verdict::kAccess) return std::nullopt;
  for (const MemoryAccess& access : c.accesses) {
    if (access.tensorMap) return access.addressOperand;
  }
  return std::nullopt;
}

// The register naming the map in `[reg, {coords}]` or `[reg]` ("" for any other form: a symbol,
// an offset, an absolute address).
std::string mapRegister(const Operand& operand) {
  if (!operand.elements.empty()) {
    const Operand& first = operand.elements.front();
    return first.kind == Operand::Kind::kRegister && first.tokens.size() == 1 ? first.tokens[0].text : "";
  }
  return plainRegisterAddress(operand);
}

// The declared alignment of parameter `name` in a function header (0 if none is written).
std::uint64_t parameterAlignment(const Function& function, const std::string& name) {
  const std::vector<Token>& header = function.header;
  for (std::size_t i = 0; i < header.size(); ++i) {
    if (header[i].kind != TokenKind::kIdentifier || header[i].text != name) continue;
    for (std::size_t j = i; j-- > 0 && !header[j].isPunct(',') && !header[j].isPunct('(');) {
      if (header[j].is(TokenKind::kDirective, ".align") && j + 1 < header.size() &&
          header[j + 1].kind == TokenKind::kNumber) {
        return std::strtoull(header[j + 1].text.c_str(), nullptr, 0);
      }
    }
  }
  return 0;
}

// The index of `name` among the kernel's parameters if it is a tensor map's: `.param`, 128
// bytes, aligned to at least 64 bytes.
std::optional<std::uint32_t> tensorMapParameter(const Function& kernel, const std::string& name) {
  if (kernel.kind != Function::Kind::kEntry) return std::nullopt;
  const std::vector<DeclaredName> params = readParameters(kernel);
  for (std::size_t index = 0; index < params.size(); ++index) {
    const DeclaredName& p = params[index];
    if (p.name != name) continue;
    const std::uint64_t alignment = parameterAlignment(kernel, name);
    if (p.space != ".param" || p.bytes() != kTensorMapBytes || alignment < kTensorMapAlignment ||
        alignment % kTensorMapAlignment != 0) {
      return std::nullopt;
    }
    return static_cast<std::uint32_t>(index);
  }
  return std::nullopt;
}

// Every instruction of a body that names a register as its first operand (or in a vector
// there), by register: where the function writes it.
void collectDefinitions(const std::vector<Statement>& statements,
                        std::map<std::string, std::vector<const Instruction*>>* out) {
  for (const Statement& s : statements) {
    if (s.kind == Statement::Kind::kBlock) collectDefinitions(s.block, out);
    if (s.kind != Statement::Kind::kInstruction || s.instruction.operands.empty()) continue;
    const Operand& first = s.instruction.operands[0];
    if (first.kind == Operand::Kind::kRegister) (*out)[registerName(first)].push_back(&s.instruction);
    if (first.kind != Operand::Kind::kVector) continue;
    for (const Operand& element : first.elements) {
      if (element.kind == Operand::Kind::kRegister) (*out)[registerName(element)].push_back(&s.instruction);
    }
  }
}

class Rewriter {
 public:
  Rewriter(const Function& kernel, const std::string& prefix) : kernel_(kernel), prefix_(prefix) {
    collectDefinitions(kernel.body, &definitions_);
  }

  bool rewrite(std::vector<Statement>* statements) {
    for (Statement& statement : *statements) {
      if (statement.kind == Statement::Kind::kBlock) {
        if (!rewrite(&statement.block)) return false;
        continue;
      }
      if (statement.kind != Statement::Kind::kInstruction) continue;
      const std::optional<std::size_t> operand = tensorMapOperand(statement.instruction);
      if (!operand) continue;
      if (!rewriteCopy(&statement, *operand)) return false;
    }
    return true;
  }

  const std::string& error() const { return error_; }
  std::size_t rewritten() const { return rewritten_; }
  const std::vector<std::uint32_t>& params() const { return params_; }

 private:
  bool fail(const Instruction& instruction, const std::string& reason) {
    error_ = "line " + std::to_string(instruction.line) + ": " + reason + " (" + print(instruction) + ")";
    return false;
  }

  // The single symbol every definition of `reg` copies with `mov.b64|mov.u64 reg, symbol`.
  std::string movedSymbol(const std::string& reg) const {
    std::string symbol;
    const auto it = definitions_.find(reg);
    if (it == definitions_.end()) return {};
    for (const Instruction* def : it->second) {
      const bool form = def->opcode == "mov" && def->modifiers.size() == 1 &&
                        (def->modifiers[0] == ".b64" || def->modifiers[0] == ".u64") &&
                        def->operands.size() == 2 && def->operands[1].kind == Operand::Kind::kSymbol &&
                        def->operands[1].tokens.size() == 1;
      if (!form || (!symbol.empty() && symbol != def->operands[1].tokens[0].text)) return {};
      symbol = def->operands[1].tokens[0].text;
    }
    return symbol;
  }

  // The parameter whose generic address every definition of `reg` is (cvta.param.u64 reg, r
  // with r defined as movedSymbol), or "".
  std::string parameterOf(const std::string& reg) const {
    std::string symbol;
    const auto it = definitions_.find(reg);
    if (reg.empty() || it == definitions_.end()) return {};
    for (const Instruction* def : it->second) {
      const bool form = def->opcode == "cvta" &&
                        def->modifiers == std::vector<std::string>{".param", ".u64"} &&
                        def->operands.size() == 2 && def->operands[1].kind == Operand::Kind::kRegister;
      if (!form) return {};
      const std::string moved = movedSymbol(registerName(def->operands[1]));
      if (moved.empty() || (!symbol.empty() && symbol != moved)) return {};
      symbol = moved;
    }
    return symbol;
  }

  bool rewriteCopy(Statement* statement, std::size_t operandIndex) {
    const Instruction& instruction = statement->instruction;
    if (kernel_.kind != Function::Kind::kEntry) {
      return fail(instruction,
                  "a tensor copy in a device function (its map must be a parameter of the kernel)");
    }
    const Operand& operand = instruction.operands[operandIndex];
    const std::string parameter = parameterOf(mapRegister(operand));
    if (parameter.empty()) {
      return fail(
          instruction,
          "a tensor map that is not a kernel parameter's address (cvta.param of a `const "
          "__grid_constant__ CUtensorMap` parameter); maps loaded from memory or computed are refused");
    }
    const std::optional<std::uint32_t> index = tensorMapParameter(kernel_, parameter);
    if (!index) {
      return fail(instruction, "a tensor map parameter '" + parameter +
                                   "' that is not a .param .b8 array of 128 bytes aligned to 64 or more");
    }
    // The copy, its map register renamed, printed and parsed again for its operand.
    Instruction renamed = instruction;
    Operand& map = renamed.operands[operandIndex];
    for (Token& token : map.tokens) {
      if (token.kind == TokenKind::kIdentifier && token.text == mapRegister(operand)) {
        token.text = genericRegister(prefix_);
        break;
      }
    }
    const std::string a = paramRegister(prefix_), g = genericRegister(prefix_);
    const std::string text = ".reg .b64 " + a + ";\n.reg .b64 " + g + ";\nmov.b64 " + a + ", " + parameter +
                             ";\ncvta.param.u64 " + g + ", " + a + ";\n" + print(renamed) + "\n";
    const ParseResult parsed = parse(".version 9.0\n.entry tensor_map()\n{\n" + text + "}\n");
    if (!parsed.ok) return fail(instruction, "internal: a tensor map scope does not parse: " + parsed.error);
    std::vector<Statement> scope = parsed.module.items[1].function.body;
    if (scope.size() != 5 || mapRegister(scope.back().instruction.operands[operandIndex]) != g) {
      return fail(instruction, "internal: a tensor map scope of an unexpected form");
    }
    Statement original = std::move(*statement);
    original.instruction.operands[operandIndex] = scope.back().instruction.operands[operandIndex];
    scope.back() = std::move(original);
    statement->kind = Statement::Kind::kBlock;
    statement->block = std::move(scope);
    statement->instruction = {};
    if (std::find(params_.begin(), params_.end(), *index) == params_.end()) params_.push_back(*index);
    ++rewritten_;
    return true;
  }

  const Function& kernel_;
  const std::string& prefix_;
  std::map<std::string, std::vector<const Instruction*>> definitions_;
  std::vector<std::uint32_t> params_;
  std::string error_;
  std::size_t rewritten_ = 0;
};

// The parameter a checked scope names: `statements` is exactly the scope the rewrite writes, its
// last statement the copy at `operandIndex`. "" otherwise.
std::string checkedScopeParameter(const std::vector<Statement>& scope, std::size_t operandIndex,
                                  const std::string& prefix) {
  const std::string a = paramRegister(prefix), g = genericRegister(prefix);
  if (scope.size() != 5) return {};
  for (std::size_t i = 0; i < 2; ++i) {
    if (scope[i].kind != Statement::Kind::kDirective) return {};
    const std::vector<DeclaredName> declared = readDeclaration(scope[i].directive);
    if (declared.size() != 1 || declared[0].space != ".reg" || declared[0].elementBytes != 8 ||
        declared[0].registerRange != 0 || declared[0].name != (i == 0 ? a : g)) {
      return {};
    }
  }
  if (scope[2].kind != Statement::Kind::kInstruction || scope[3].kind != Statement::Kind::kInstruction ||
      scope[4].kind != Statement::Kind::kInstruction) {
    return {};
  }
  const Instruction& mov = scope[2].instruction;
  const Instruction& cvta = scope[3].instruction;
  if (!isForm(mov, "mov", {".b64"}, 2) || registerName(mov.operands[0]) != a ||
      mov.operands[1].kind != Operand::Kind::kSymbol || mov.operands[1].tokens.size() != 1) {
    return {};
  }
  if (!isForm(cvta, "cvta", {".param", ".u64"}, 2) || registerName(cvta.operands[0]) != g ||
      registerName(cvta.operands[1]) != a) {
    return {};
  }
  if (mapRegister(scope[4].instruction.operands[operandIndex]) != g) return {};
  return mov.operands[1].tokens[0].text;
}

// Visits every tensor copy of a body: `visit(copy, parameter)` with the parameter its scope
// names ("" if the copy is not the last statement of a checked scope).
template <typename Visit>
void forEachTensorCopy(const std::vector<Statement>& statements, const std::string& prefix, Visit&& visit) {
  for (std::size_t i = 0; i < statements.size(); ++i) {
    const Statement& s = statements[i];
    if (s.kind == Statement::Kind::kBlock) {
      forEachTensorCopy(s.block, prefix, visit);
      continue;
    }
    if (s.kind != Statement::Kind::kInstruction) continue;
    const std::optional<std::size_t> operand = tensorMapOperand(s.instruction);
    if (!operand) continue;
    const bool last = i + 1 == statements.size();
    visit(s.instruction, last ? checkedScopeParameter(statements, *operand, prefix) : std::string());
  }
}

}  // namespace

TensorMapResult guardTensorMaps(Module* module, const std::set<std::string>& trustedFunctions,
                                const std::string& prefix) {
  TensorMapResult result;
  for (TopLevel& item : module->items) {
    if (item.kind != TopLevel::Kind::kFunction || !item.function.hasBody) continue;
    if (trustedBody(item.function, trustedFunctions)) continue;
    Rewriter rewriter(item.function, prefix);
    if (!rewriter.rewrite(&item.function.body)) {
      result.error = rewriter.error();
      result.kernels.clear();
      return result;
    }
    result.rewrittenCopies += rewriter.rewritten();
    if (!rewriter.params().empty()) {
      KernelTensorMaps kernel{item.function.name, rewriter.params()};
      std::sort(kernel.params.begin(), kernel.params.end());
      result.kernels.push_back(std::move(kernel));
    }
  }
  result.ok = true;
  return result;
}

std::vector<std::string> findUncheckedTensorMaps(const Module& module,
                                                 const std::set<std::string>& trustedFunctions,
                                                 const std::string& prefix) {
  std::vector<std::string> unchecked;
  for (const TopLevel& item : module.items) {
    if (item.kind != TopLevel::Kind::kFunction || !item.function.hasBody) continue;
    if (trustedBody(item.function, trustedFunctions)) continue;
    const Function& function = item.function;
    forEachTensorCopy(function.body, prefix, [&](const Instruction& copy, const std::string& parameter) {
      if (parameter.empty() || !tensorMapParameter(function, parameter)) {
        unchecked.push_back("line " + std::to_string(copy.line) +
                            ": tensor map not a checked kernel parameter: " + print(copy));
      }
    });
  }
  return unchecked;
}

std::vector<KernelTensorMaps> tensorMapParameters(const Module& module, const std::string& prefix) {
  std::vector<KernelTensorMaps> kernels;
  for (const TopLevel& item : module.items) {
    if (item.kind != TopLevel::Kind::kFunction || !item.function.hasBody) continue;
    KernelTensorMaps kernel{item.function.name, {}};
    forEachTensorCopy(item.function.body, prefix, [&](const Instruction&, const std::string& parameter) {
      const std::optional<std::uint32_t> index = tensorMapParameter(item.function, parameter);
      if (index && std::find(kernel.params.begin(), kernel.params.end(), *index) == kernel.params.end())
        kernel.params.push_back(*index);
    });
    if (kernel.params.empty()) continue;
    std::sort(kernel.params.begin(), kernel.params.end());
    kernels.push_back(std::move(kernel));
  }
  return kernels;
}

}  // namespace agileos::ptx
