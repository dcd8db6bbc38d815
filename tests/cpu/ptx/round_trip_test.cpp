// Every PTX file of the corpus (nvcc output for the project's CUDA sources, built at
// build time): it parses, printing and re-parsing gives the same tree, printing is a
// fixpoint, and the printed text assembles with ptxas for sm_90 (so the printer keeps
// the program, not just the tree).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "ptx/parser.h"
#include "ptx/printer.h"

namespace agileos::ptx {
namespace {

namespace fs = std::filesystem;

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::vector<fs::path> corpus() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(AGILEOS_PTX_CORPUS_DIR)) {
    if (entry.path().extension() == ".ptx") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

void countInstructions(const std::vector<Statement>& statements, std::map<std::string, int>* counts) {
  for (const Statement& s : statements) {
    if (s.kind == Statement::Kind::kInstruction) ++(*counts)[s.instruction.opcode];
    if (s.kind == Statement::Kind::kBlock) countInstructions(s.block, counts);
  }
}

// Runs ptxas on `text`; returns its exit status and output.
int assemble(const std::string& text, const std::string& target, std::string* output) {
  const fs::path dir = fs::temp_directory_path() / ("agileos-ptx-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path input = dir / "printed.ptx";
  std::ofstream(input, std::ios::binary) << text;
  const std::string command = std::string(AGILEOS_PTXAS) + " -arch=" + target + " " + input.string() +
                              " -o " + (dir / "printed.cubin").string() + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return -1;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) *output += buffer;
  const int status = ::pclose(pipe);
  fs::remove_all(dir);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(PtxCorpus, IsThere) {
  const auto files = corpus();
  EXPECT_GE(files.size(), 20u) << "the build makes the corpus; is it incomplete?";
}

TEST(PtxCorpus, EveryFileRoundTripsAndAssembles) {
  std::map<std::string, int> opcodes;
  for (const fs::path& file : corpus()) {
    SCOPED_TRACE(file.filename().string());
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
    // The original's target (sm_75 for default-architecture files) and sm_90 both assemble.
    const std::string target = text.find(".target sm_75") != std::string::npos ? "sm_75" : "sm_90";
    std::string output;
    EXPECT_EQ(assemble(printed, target, &output), 0) << output;
  }
  // The corpus exercises the forms the guard must handle.
  for (const char* opcode : {"ld", "st", "atom", "red", "cp", "call", "bra", "cvta", "mov", "ret"}) {
    EXPECT_GT(opcodes[opcode], 0) << opcode;
  }
}

}  // namespace
}  // namespace agileos::ptx
