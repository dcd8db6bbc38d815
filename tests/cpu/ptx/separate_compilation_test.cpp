// PTX older than ISA 3.1 (nvcc 4's, which cuda-samples' matrixMulDynlinkJIT JIT-compiles) reaches
// the driver's JIT linker raised to 3.1 (ptx/separate_compilation.h). Shown with ptxas, the
// compiler the linker runs: the original does not compile as separate code, the raised module
// does, and as a whole program both versions give the same cubin, byte for byte, plain and guarded
// under every policy (the raise changes no code).
#include "ptx/separate_compilation.h"

#include <gtest/gtest.h>

#include "ptx/guard.h"
#include "ptx/parser.h"
#include "ptx/printer.h"
#include "tests/cpu/ptx/guard_test_options.h"
#include "tests/cpu/ptx/ptx_corpus.h"

namespace agileos::ptx {
namespace {

using testing::corpusFiles;
using testing::guardOptions;
using testing::kAllPolicies;
using testing::readFile;
using testing::runPtxas;

TEST(SeparateCompilation, ReadsTheLeadingVersionAfterCommentsOnly) {
  EXPECT_EQ(leadingVersion("\t.version 1.4\n.target sm_10\n"), (Version{1, 4}));
  EXPECT_EQ(leadingVersion("// compiled by hand\n/* a\n block */ .version /* here */ 8.8\n"),
            (Version{8, 8}));
  EXPECT_EQ(leadingVersion(".version 10.12"), (Version{10, 12}));
  EXPECT_EQ(leadingVersion(".target sm_10\n.version 1.4\n"), std::nullopt) << "not the leading directive";
  EXPECT_EQ(leadingVersion(".versionx 1.4"), std::nullopt);
  EXPECT_EQ(leadingVersion(".version 1."), std::nullopt);
  EXPECT_EQ(leadingVersion(".version .4"), std::nullopt);
  EXPECT_EQ(leadingVersion(".version 1.4.2"), std::nullopt);
  EXPECT_EQ(leadingVersion(".version 99999999999.1"), std::nullopt) << "out of range";
  EXPECT_EQ(leadingVersion("/* never closed .version 1.4"), std::nullopt);
  EXPECT_EQ(leadingVersion(""), std::nullopt);
  EXPECT_TRUE(needsVersionRaise(".version 1.4\n"));
  EXPECT_TRUE(needsVersionRaise(".version 3.0\n"));
  EXPECT_FALSE(needsVersionRaise(".version 3.1\n"));
  EXPECT_FALSE(needsVersionRaise(".version 9.0\n"));
  EXPECT_FALSE(needsVersionRaise(".target sm_90\n"));
}

TEST(SeparateCompilation, RaisesOnlyAVersionBelowThreeOne) {
  for (const auto& [before, after, changed] :
       {std::tuple{"1.4", "3.1", true}, std::tuple{"3.0", "3.1", true}, std::tuple{"3.1", "3.1", false},
        std::tuple{"8.8", "8.8", false}}) {
    SCOPED_TRACE(before);
    const std::string text = std::string(".version ") + before + "\n.target sm_20\n.address_size 64\n";
    ParseResult parsed = parse(text);
    ASSERT_TRUE(parsed.ok) << parsed.error;
    EXPECT_EQ(raiseVersionForSeparateCompilation(&parsed.module), changed);
    EXPECT_EQ(leadingVersion(print(parsed.module)), leadingVersion(std::string(".version ") + after));
  }
}

// The legacy files of the corpus (tests/cpu/ptx/inputs/legacy_ptx14.ptx is one).
std::vector<std::string> legacyCorpusFiles() {
  std::vector<std::string> legacy;
  for (const std::string& file : corpusFiles()) {
    if (needsVersionRaise(readFile(file))) legacy.push_back(file);
  }
  return legacy;
}

// ptxas's whole-program cubin of `text` for sm_90.
std::string wholeProgramCubin(const std::string& text) {
  std::string output, cubin;
  EXPECT_EQ(runPtxas(text, "-arch=sm_90", &output, &cubin), 0) << output;
  EXPECT_FALSE(cubin.empty());
  return cubin;
}

void expectRaiseCompilesSeparatelyAndKeepsTheCode(const Module& module) {
  const std::string original = print(module);
  std::string output;
  EXPECT_NE(runPtxas(original, "-arch=sm_90 -c", &output), 0)
      << "ptxas now compiles PTX below 3.1 as separate "
         "code: the raise may no longer be needed";
  Module raised = module;
  ASSERT_TRUE(raiseVersionForSeparateCompilation(&raised));
  const std::string raisedText = print(raised);
  output.clear();
  EXPECT_EQ(runPtxas(raisedText, "-arch=sm_90 -c", &output), 0) << output;
  EXPECT_EQ(wholeProgramCubin(original), wholeProgramCubin(raisedText))
      << "the raised module compiles to other code than the original";
}

TEST(SeparateCompilation, TheRaisedLegacyCorpusCompilesSeparatelyToTheSameCode) {
  const std::vector<std::string> files = legacyCorpusFiles();
  ASSERT_FALSE(files.empty()) << "the corpus has no PTX below ISA 3.1";
  for (const std::string& file : files) {
    SCOPED_TRACE(file);
    const ParseResult parsed = parse(readFile(file));
    ASSERT_TRUE(parsed.ok) << parsed.error;
    expectRaiseCompilesSeparatelyAndKeepsTheCode(parsed.module);
    for (GuardPolicy policy : kAllPolicies) {
      SCOPED_TRACE(toString(policy));
      const GuardResult guarded = guardModule(parsed.module, guardOptions(policy));
      ASSERT_TRUE(guarded.ok) << guarded.error;
      expectRaiseCompilesSeparatelyAndKeepsTheCode(guarded.module);
    }
  }
}

}  // namespace
}  // namespace agileos::ptx
