// The rewrite of __managed__ variables (ptx/managed_variables.h), on nvcc output built here (the
// GPU suite's managed_variables program) and on hand-written forms: every use of a variable's
// address becomes a load of its slot, the declarations lose `.attribute(.managed)` and keep their
// initializers, the output assembles, the guard accepts it under every policy (and its emitted
// text passes the check before the JIT and assembles), a module without managed variables is
// unchanged, and every form the rewrite does not know is refused with a reason.
#include "ptx/managed_variables.h"

#include <gtest/gtest.h>

#include "ptx/emitted_check.h"
#include "ptx/guard.h"
#include "ptx/parser.h"
#include "ptx/printer.h"
#include "tests/cpu/ptx/guard_test_options.h"
#include "tests/cpu/ptx/ptx_corpus.h"

namespace agileos::ptx {
namespace {

using testing::assemble;
using testing::parsed;
using testing::readFile;

constexpr auto npos = std::string::npos;

const std::string kHeader = ".version 9.0\n.target sm_90\n.address_size 64\n";

std::string nvccOutput() { return readFile(std::string(AGILEOS_PTX_MANAGED_DIR) + "/managed_variables.ptx"); }

// The number of instructions (at any depth) that name `symbol` in an operand.
int uses(const std::vector<Statement>& statements, const std::string& symbol) {
  int count = 0;
  for (const Statement& s : statements) {
    if (s.kind == Statement::Kind::kBlock) count += uses(s.block, symbol);
    if (s.kind != Statement::Kind::kInstruction) continue;
    for (const Operand& o : s.instruction.operands) {
      for (const Token& t : o.tokens) count += t.text == symbol ? 1 : 0;
    }
  }
  return count;
}

int uses(const Module& module, const std::string& symbol) {
  int count = 0;
  for (const TopLevel& item : module.items) {
    if (item.kind == TopLevel::Kind::kFunction) count += uses(item.function.body, symbol);
  }
  return count;
}

void expectAssembles(const std::string& text) {
  std::string output;
  EXPECT_EQ(assemble(text, &output), 0) << output << "\n" << text;
}

void expectGuardAccepts(const Module& module) {
  for (GuardPolicy policy : testing::kAllPolicies) {
    const GuardOptions options = testing::guardOptions(policy);
    const GuardResult guarded = guardModule(module, options);
    ASSERT_TRUE(guarded.ok) << toString(policy) << ": " << guarded.error;
    std::string text = print(guarded.module);
    EXPECT_EQ(checkEmittedText(text, guarded.module, options, guarded.registerPrefix), "")
        << toString(policy);
    if (policy == GuardPolicy::kTrap || policy == GuardPolicy::kRemapOr) expectAssembles(text);
  }
}

TEST(PtxManagedVariables, NvccOutputIsRewrittenAssemblesAndIsGuarded) {
  const Module input = parsed(nvccOutput());
  ASSERT_TRUE(hasManagedVariables(input));
  const ManagedRewriteResult result = rewriteManagedVariables(input);
  ASSERT_TRUE(result.ok) << result.error;
  ASSERT_EQ(result.variables.size(), 4u);
  const std::map<std::string, std::uint64_t> expected = {
      {"counter", 4}, {"table", 64}, {"stats", 24}, {"wide", 32}};
  for (const ManagedVariable& variable : result.variables) {
    ASSERT_TRUE(expected.contains(variable.name)) << variable.name;
    EXPECT_EQ(variable.bytes, expected.at(variable.name)) << variable.name;
    EXPECT_EQ(uses(result.module, variable.name), 0) << variable.name << " is still used by code";
    EXPECT_GT(uses(result.module, variable.slot), 0) << variable.slot << " is never loaded";
    EXPECT_GT(uses(input, variable.name), 0) << variable.name;
  }
  EXPECT_FALSE(hasManagedVariables(result.module));
  const std::string text = print(result.module);
  EXPECT_EQ(text.find(".managed"), npos) << text;
  // The initializers stay, for the worker to read back.
  EXPECT_NE(text.find(".visible .global .align 4 .u32 counter = 5;"), npos) << text;
  EXPECT_NE(text.find("wide[32] = {10,"), npos) << text;
  // The plain __device__ variable is untouched.
  EXPECT_GT(uses(result.module, "plainDevice"), 0);
  const ParseResult again = parse(text);
  ASSERT_TRUE(again.ok) << again.error;
  EXPECT_EQ(again.module, result.module);
  expectAssembles(text);
  expectGuardAccepts(result.module);
}

TEST(PtxManagedVariables, EachAddressFormBecomesASlotLoad) {
  const std::string text = kHeader +
                           ".global .attribute(.managed) .align 4 .u32 v = 3;\n"
                           ".global .attribute(.managed) .align 8 .b8 arr[64];\n"
                           ".visible .entry k(.param .u64 p)\n{\n"
                           ".reg .pred %p<2>; .reg .b32 %r<8>; .reg .b64 %rd<8>;\n"
                           "mov.u64 %rd1, v;\n"
                           "cvta.global.u64 %rd2, arr;\n"
                           "mov.u64 %rd3, arr+8;\n"
                           "ld.global.u32 %r1, [arr+12];\n"
                           "st.global.u32 [v], %r1;\n"
                           "atom.global.add.u32 %r2, [v], 1;\n"
                           "setp.eq.u32 %p1, %r2, 0;\n"
                           "@%p1 ld.u32 %r3, [arr+4];\n"
                           "ld.param.u64 %rd4, [p];\n"
                           "st.global.u64 [%rd4], %rd1;\n"
                           "st.global.u64 [%rd4+8], %rd2;\n"
                           "st.global.u64 [%rd4+16], %rd3;\n"
                           "st.global.u32 [%rd4+24], %r3;\n"
                           "ret;\n}\n";
  const ManagedRewriteResult result = rewriteManagedVariables(parsed(text));
  ASSERT_TRUE(result.ok) << result.error;
  ASSERT_EQ(result.variables.size(), 2u);
  EXPECT_EQ(result.variables[0].name, "v");
  EXPECT_EQ(result.variables[0].bytes, 4u);
  EXPECT_EQ(result.variables[1].name, "arr");
  EXPECT_EQ(result.variables[1].bytes, 64u);
  EXPECT_EQ(uses(result.module, "v"), 0);
  EXPECT_EQ(uses(result.module, "arr"), 0);
  EXPECT_EQ(uses(result.module, result.variables[0].slot), 3);
  EXPECT_EQ(uses(result.module, result.variables[1].slot), 4);
  const std::string out = print(result.module);
  EXPECT_NE(out.find("add.s64"), npos) << "offsets are added to the loaded address\n" << out;
  EXPECT_NE(out.find(".visible .global .align 8 .u64 " + result.variables[0].slot + ";"), npos) << out;
  expectAssembles(out);
  expectGuardAccepts(result.module);
}

TEST(PtxManagedVariables, ModuleWithoutManagedVariablesIsUnchanged) {
  const Module input = parsed(kHeader +
                              ".visible .global .align 4 .u32 g = 1;\n"
                              ".visible .entry k()\n{\n.reg .b64 %rd<2>;\nmov.u64 %rd1, g;\nret;\n}\n");
  EXPECT_FALSE(hasManagedVariables(input));
  const ManagedRewriteResult result = rewriteManagedVariables(input);
  ASSERT_TRUE(result.ok);
  EXPECT_TRUE(result.variables.empty());
  EXPECT_EQ(result.module, input);
}

TEST(PtxManagedVariables, NamesAreFreshInTheModule) {
  const ManagedRewriteResult result = rewriteManagedVariables(
      parsed(kHeader + ".global .attribute(.managed) .align 4 .u32 v;\n"
                       ".visible .global .align 8 .u64 __agileos_managed_slot0;\n"
                       ".visible .entry k()\n{\n.reg .b64 %agileos_managed0;\nmov.u64 %agileos_managed0, v;\n"
                       "st.global.u64 [__agileos_managed_slot0], %agileos_managed0;\nret;\n}\n"));
  ASSERT_TRUE(result.ok) << result.error;
  ASSERT_EQ(result.variables.size(), 1u);
  EXPECT_NE(result.variables[0].slot, "__agileos_managed_slot0");
  const std::string out = print(result.module);
  EXPECT_EQ(uses(result.module, "__agileos_managed_slot0"), 1) << "the module's own global is left alone";
  expectAssembles(out);
}

TEST(PtxManagedVariables, UnknownFormsAreRefused) {
  const std::string managed = ".global .attribute(.managed) .align 8 .u64 v;\n";
  const auto body = [&](const std::string& statements) {
    return kHeader + managed + ".visible .entry k()\n{\n.reg .b64 %rd<4>;\n" + statements + "ret;\n}\n";
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"initializer", kHeader + managed + ".visible .global .align 8 .u64 p = v;\n"},
      {"initializer list", kHeader + managed + ".visible .global .align 8 .u64 q[2] = {0, v};\n"},
      {"extern", kHeader + ".extern .global .attribute(.managed) .align 8 .u64 v;\n"},
      {"unknown size", kHeader + ".global .attribute(.managed) .align 8 .u64 v[];\n"},
      {"other attribute", kHeader + ".global .attribute(.managed, .unified) .align 8 .u64 v;\n"},
      {"address size", ".version 9.0\n.target sm_90\n.address_size 32\n" + managed},
      {"shadowing declaration", body(".local .align 8 .u64 v;\n")},
      {"shadowing parameter", kHeader + managed + ".visible .entry k(.param .u64 v)\n{\nret;\n}\n"},
      {"vector operand", body("st.global.v2.u64 [%rd1], {v, %rd2};\n")},
      {"expression operand", body("mov.u64 %rd1, v+%rd2;\n")},
      {"declared twice", kHeader + managed + ".global .align 8 .u64 v;\n"},
  };
  for (const auto& [name, text] : cases) {
    const ParseResult input = parse(text);
    if (!input.ok) {
      ADD_FAILURE() << name << ": the case does not parse: " << input.error;
      continue;
    }
    const ManagedRewriteResult result = rewriteManagedVariables(input.module);
    EXPECT_FALSE(result.ok) << name << "\n" << print(result.module);
    EXPECT_EQ(result.error.rfind("__managed__ variables: ", 0), 0u) << name << ": " << result.error;
  }
}

}  // namespace
}  // namespace agileos::ptx
