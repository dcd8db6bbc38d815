// Every PTX file of the corpus (nvcc output for the project's CUDA sources, built at
// build time): it parses, printing and re-parsing gives the same tree, printing is a
// fixpoint, and the printed text assembles with ptxas for sm_90 (so the printer keeps
// the program, not just the tree).
#include <gtest/gtest.h>

#include <map>

#include "ptx/parser.h"
#include "ptx/printer.h"
#include "tests/cpu/ptx/ptx_corpus.h"

namespace agileos::ptx {
namespace {

using testing::assemble;
using testing::corpusFiles;
using testing::readFile;

void countInstructions(const std::vector<Statement>& statements, std::map<std::string, int>* counts) {
  for (const Statement& s : statements) {
    if (s.kind == Statement::Kind::kInstruction) ++(*counts)[s.instruction.opcode];
    if (s.kind == Statement::Kind::kBlock) countInstructions(s.block, counts);
  }
}

TEST(PtxCorpus, IsThere) {
  const auto files = corpusFiles();
  EXPECT_GE(files.size(), 20u) << "the build makes the corpus; is it incomplete?";
}

TEST(PtxCorpus, EveryFileRoundTripsAndAssembles) {
  std::map<std::string, int> opcodes;
  for (const std::string& file : corpusFiles()) {
    SCOPED_TRACE(file);
    const std::string text = readFile(file);
    const ParseResult first = parse(text);
    ASSERT_TRUE(first.ok) << first.error;
    for (const TopLevel& item : first.module.items) {
      if (item.kind == TopLevel::Kind::kFunction) countInstructions(item.function.body, &opcodes);
    }
    const std::string printed = print(first.module);
    const ParseResult second = parse(printed);
    ASSERT_TRUE(second.ok) << second.error;
    EXPECT_EQ(first.module, second.module);
    EXPECT_EQ(print(second.module), printed);
    // For the original's target (sm_75 for default-architecture files) or sm_90.
    std::string output;
    EXPECT_EQ(assemble(printed, &output), 0) << output;
  }
  // The corpus exercises the forms the guard must handle.
  for (const char* opcode : {"ld", "st", "atom", "red", "cp", "call", "bra", "cvta", "mov", "ret"}) {
    EXPECT_GT(opcodes[opcode], 0) << opcode;
  }
}

}  // namespace
}  // namespace agileos::ptx
