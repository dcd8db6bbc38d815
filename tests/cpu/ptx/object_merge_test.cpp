// Merging the PTX of a separately compiled program's objects (ptx/object_merge.h), judged by
// ptxas: nvcc -rdc=true objects that call each other's functions, read each other's variables and
// each define the same template do not assemble as one module concatenated; merged, they assemble
// as a whole program, with both objects' kernels, and guarded under every policy.
#include "ptx/object_merge.h"

#include <gtest/gtest.h>

#include "ptx/guard.h"
#include "ptx/parser.h"
#include "ptx/printer.h"
#include "tests/cpu/ptx/guard_test_options.h"
#include "tests/cpu/ptx/ptx_corpus.h"

namespace agileos::ptx {
namespace {

using testing::guardOptions;
using testing::kAllPolicies;
using testing::readFile;
using testing::runPtxas;

Module object(const std::string& name) {
  const ParseResult parsed = parse(readFile(std::string(AGILEOS_PTX_OBJECTS_DIR) + "/" + name + ".ptx"));
  EXPECT_TRUE(parsed.ok) << parsed.error;
  return parsed.module;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(ObjectMerge, TwoObjectsAssembleAsOneProgramOnlyMerged) {
  const std::string uses = readFile(std::string(AGILEOS_PTX_OBJECTS_DIR) + "/uses.ptx");
  const std::string defines = readFile(std::string(AGILEOS_PTX_OBJECTS_DIR) + "/defines.ptx");
  std::string output;
  // The second object without its header (.version, .target, .address_size), after the first.
  const std::size_t body = defines.find('\n', defines.find(".address_size"));
  ASSERT_NE(body, std::string::npos);
  EXPECT_NE(runPtxas(uses + defines.substr(body), "-arch=sm_90", &output), 0)
      << "the premise: concatenated objects are not one module";
  EXPECT_NE(output.find("Duplicate definition"), std::string::npos) << output;

  for (const auto& [first, second] : {std::pair{"uses", "defines"}, std::pair{"defines", "uses"}}) {
    SCOPED_TRACE(first);
    const MergeResult merged = mergeObjects({object(first), object(second)});
    ASSERT_TRUE(merged.ok) << merged.error;
    const std::string text = print(merged.module);
    output.clear();
    EXPECT_EQ(runPtxas(text, "-arch=sm_90", &output), 0) << output << text;
    output.clear();
    EXPECT_EQ(runPtxas(text, "-arch=sm_90 -c", &output), 0)
        << "as the worker's JIT linker compiles it: " << output;
    EXPECT_NE(text.find(".entry usesKernel"), std::string::npos);
    EXPECT_NE(text.find(".entry definesKernel"), std::string::npos);
    std::size_t definitions = 0, declarations = 0;
    for (const TopLevel& item : merged.module.items) {
      if (item.kind != TopLevel::Kind::kFunction || item.function.name != "_Z6squareIiET_S0_") continue;
      ++(item.function.hasBody ? definitions : declarations);
    }
    EXPECT_EQ(definitions, 1u) << "one definition of the template";
    EXPECT_LE(declarations, 1u) << "at most one prototype, before it";
    EXPECT_EQ(text.find(".extern .global .align 4 .u32 sharedCounter"), std::string::npos);
    EXPECT_EQ(text.find(".extern .func  (.param .b32 func_retval0) _Z5twicei"), std::string::npos);
    EXPECT_EQ(count(text, ".version"), 1u);
    // What the worker does next: parsed again and guarded, under every policy.
    const ParseResult again = parse(text);
    ASSERT_TRUE(again.ok) << again.error;
    for (GuardPolicy policy : kAllPolicies) {
      const GuardResult guarded = guardModule(again.module, guardOptions(policy));
      ASSERT_TRUE(guarded.ok) << guarded.error;
      output.clear();
      EXPECT_EQ(runPtxas(print(guarded.module), "-arch=sm_90", &output), 0) << output;
    }
  }
}

TEST(ObjectMerge, LineInformationOfSeveralObjectsIsDropped) {
  const MergeResult merged = mergeObjects({object("uses_lineinfo"), object("defines_lineinfo")});
  ASSERT_TRUE(merged.ok) << merged.error;
  const std::string text = print(merged.module);
  EXPECT_EQ(text.find(".file"), std::string::npos);
  EXPECT_EQ(text.find(".loc"), std::string::npos);
  std::string output;
  EXPECT_EQ(runPtxas(text, "-arch=sm_90", &output), 0) << output;
  // One object keeps its own.
  const MergeResult single = mergeObjects({object("uses_lineinfo")});
  ASSERT_TRUE(single.ok);
  EXPECT_NE(print(single.module).find(".loc"), std::string::npos);
}

TEST(ObjectMerge, WhatOneModuleCannotHoldIsRefused) {
  // A kernel both objects define.
  const MergeResult twice = mergeObjects({object("uses"), object("uses")});
  EXPECT_FALSE(twice.ok);
  EXPECT_NE(twice.error.find("defined by object 0 and again by object 1"), std::string::npos) << twice.error;

  // Targets that differ.
  Module other = object("defines");
  for (TopLevel& item : other.items) {
    if (item.kind == TopLevel::Kind::kDirective && item.directive.name == ".target")
      item.directive.tokens[1].text = "sm_80";
  }
  const MergeResult targets = mergeObjects({object("uses"), other});
  EXPECT_FALSE(targets.ok);
  EXPECT_NE(targets.error.find(".target"), std::string::npos) << targets.error;

  // An internal name another object uses.
  const ParseResult a = parse(".version 8.0\n.target sm_90\n.address_size 64\n.func f()\n{\nret;\n}\n");
  const ParseResult b = parse(".version 8.0\n.target sm_90\n.address_size 64\n.extern .func f();\n");
  ASSERT_TRUE(a.ok && b.ok);
  const MergeResult internal = mergeObjects({a.module, b.module});
  EXPECT_FALSE(internal.ok);
  EXPECT_NE(internal.error.find("internal name"), std::string::npos) << internal.error;

  EXPECT_FALSE(mergeObjects({}).ok);
}

TEST(ObjectMerge, TheHighestVersionIsKeptAndUndefinedExternsStay) {
  const ParseResult a = parse(
      ".version 7.0\n.target sm_90\n.address_size 64\n.extern .func vprintf_like(.param .b64 p);\n"
      ".visible .entry k()\n{\nret;\n}\n");
  const ParseResult b =
      parse(".version 8.5\n.target sm_90\n.address_size 64\n.visible .func g()\n{\nret;\n}\n");
  ASSERT_TRUE(a.ok && b.ok);
  const MergeResult merged = mergeObjects({a.module, b.module});
  ASSERT_TRUE(merged.ok) << merged.error;
  const std::string text = print(merged.module);
  EXPECT_NE(text.find(".version 8.5"), std::string::npos) << text;
  EXPECT_NE(text.find(".extern .func vprintf_like"), std::string::npos) << text;
}

}  // namespace
}  // namespace agileos::ptx
