// The definition of cudaGraphSetConditional (ptx/graph_conditionals.h), on nvcc output built here
// (tests/cpu/ptx/inputs/graph_conditionals.cu) and on hand-written forms: nvcc's declaration
// becomes a function that stores the value through the handle, the calls stay, the output
// assembles, the guard accepts it and instruments that store under every policy; a module's own
// definition is kept; any other declaration is refused with a reason; a module without the name
// is unchanged.
#include "ptx/graph_conditionals.h"

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

std::string nvccOutput() {
  return readFile(std::string(AGILEOS_PTX_MANAGED_DIR) + "/graph_conditionals.ptx");
}

const Function* findFunction(const Module& module, const std::string& name) {
  for (const TopLevel& item : module.items) {
    if (item.kind == TopLevel::Kind::kFunction && item.function.name == name) return &item.function;
  }
  return nullptr;
}

TEST(PtxGraphConditionals, NvccDeclarationBecomesAGuardedStoreThroughTheHandle) {
  const Module input = parsed(nvccOutput());
  const Function* declared = findFunction(input, "cudaGraphSetConditional");
  ASSERT_NE(declared, nullptr) << "nvcc declares the function";
  ASSERT_FALSE(declared->hasBody);
  const GraphConditionalsResult result = defineGraphConditionals(input);
  ASSERT_TRUE(result.ok) << result.error;
  EXPECT_TRUE(result.defined);
  const Function* defined = findFunction(result.module, "cudaGraphSetConditional");
  ASSERT_NE(defined, nullptr);
  EXPECT_TRUE(defined->hasBody);
  const std::string text = print(result.module);
  EXPECT_EQ(text.find(".extern .func cudaGraphSetConditional"), npos) << text;
  EXPECT_NE(text.find("st.global.u32\t[%agileos_handle], %agileos_value;"), npos) << text;
  EXPECT_NE(text.find("call.uni\tcudaGraphSetConditional"), npos) << "the calls stay";
  const ParseResult again = parse(text);
  ASSERT_TRUE(again.ok) << again.error;
  EXPECT_EQ(again.module, result.module);
  std::string output;
  EXPECT_EQ(assemble(text, &output), 0) << output << "\n" << text;

  for (GuardPolicy policy : testing::kAllPolicies) {
    const GuardOptions options = testing::guardOptions(policy);
    const GuardResult guarded = guardModule(result.module, options);
    ASSERT_TRUE(guarded.ok) << toString(policy) << ": " << guarded.error;
    // The store through the handle is checked like any store of the module.
    EXPECT_GT(guarded.checkedAccesses, 0u) << toString(policy);
    const std::string guardedText = print(guarded.module);
    EXPECT_EQ(checkEmittedText(guardedText, guarded.module, options, guarded.registerPrefix), "")
        << toString(policy);
    if (policy == GuardPolicy::kTrap || policy == GuardPolicy::kRemapOr) {
      EXPECT_EQ(assemble(guardedText, &output), 0) << toString(policy) << ": " << output;
    }
  }
}

TEST(PtxGraphConditionals, AModuleWithoutTheNameIsUnchanged) {
  const Module input = parsed(kHeader + ".visible .entry k()\n{\nret;\n}\n");
  const GraphConditionalsResult result = defineGraphConditionals(input);
  ASSERT_TRUE(result.ok) << result.error;
  EXPECT_FALSE(result.defined);
  EXPECT_EQ(result.module, input);
}

TEST(PtxGraphConditionals, AModulesOwnDefinitionIsKept) {
  const Module input = parsed(kHeader +
                              ".func cudaGraphSetConditional(.param .b64 h, .param .b32 v)\n{\nret;\n}\n"
                              ".visible .entry k()\n{\nret;\n}\n");
  const GraphConditionalsResult result = defineGraphConditionals(input);
  ASSERT_TRUE(result.ok) << result.error;
  EXPECT_FALSE(result.defined);
  EXPECT_EQ(result.module, input);
}

TEST(PtxGraphConditionals, AnyOtherDeclarationIsRefusedWithTheReason) {
  for (const std::string declaration : {
           ".extern .func cudaGraphSetConditional(.param .u64 h, .param .b32 v);",
           ".extern .func cudaGraphSetConditional(.param .b64 h);",
           ".extern .func cudaGraphSetConditional(.param .b64 h, .param .b32 v, .param .b32 w);",
           ".extern .func (.param .b32 r) cudaGraphSetConditional(.param .b64 h, .param .b32 v);",
           ".extern .func cudaGraphSetConditional;",
           ".weak .func cudaGraphSetConditional(.param .b64 h, .param .b32 v);",
       }) {
    const ParseResult input = parse(kHeader + declaration + "\n.visible .entry k()\n{\nret;\n}\n");
    if (!input.ok) continue;  // a form the parser refuses never reaches the rewrite
    const GraphConditionalsResult result = defineGraphConditionals(input.module);
    EXPECT_FALSE(result.ok) << declaration;
    EXPECT_NE(result.error.find("cudaGraphSetConditional"), npos) << declaration << ": " << result.error;
  }
  // PTX's .alias could give the driver's function another name; the front end reads no such directive.
  EXPECT_FALSE(parse(kHeader +
                     ".extern .func cudaGraphSetConditional(.param .b64 a, .param .b32 b);\n"
                     ".func setter(.param .b64 a, .param .b32 b);\n.alias setter, cudaGraphSetConditional;\n")
                   .ok)
      << "an alias of it";
  const ParseResult twice = parse(kHeader +
                                  ".extern .func cudaGraphSetConditional(.param .b64 a, .param .b32 b);\n"
                                  ".extern .func cudaGraphSetConditional(.param .b64 c, .param .b32 d);\n");
  ASSERT_TRUE(twice.ok) << twice.error;
  EXPECT_FALSE(defineGraphConditionals(twice.module).ok) << "declared twice";
}

}  // namespace
}  // namespace agileos::ptx
