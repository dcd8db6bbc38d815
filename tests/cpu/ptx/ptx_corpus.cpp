#include "tests/cpu/ptx/ptx_corpus.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ptx/parser.h"

namespace agileos::ptx::testing {

namespace fs = std::filesystem;

Module parsed(const std::string& text) {
  const ParseResult r = parse(text);
  EXPECT_TRUE(r.ok) << r.error;
  return r.module;
}

std::vector<std::string> corpusFiles() {
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(AGILEOS_PTX_CORPUS_DIR)) {
    if (entry.path().extension() == ".ptx") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

int runPtxas(const std::string& text, const std::string& options, std::string* output, std::string* object) {
  const fs::path dir = fs::temp_directory_path() / ("agileos-ptxas-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path input = dir / "input.ptx";
  const fs::path written = dir / "output.cubin";
  std::ofstream(input, std::ios::binary) << text;
  const std::string command =
      std::string(AGILEOS_PTXAS) + " " + options + " " + input.string() + " -o " + written.string() + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return -1;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) *output += buffer;
  const int status = ::pclose(pipe);
  if (object != nullptr) *object = fs::exists(written) ? readFile(written.string()) : std::string();
  fs::remove_all(dir);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int assemble(const std::string& text, std::string* output) {
  const std::string target = text.find(".target sm_75") != std::string::npos ? "sm_75" : "sm_90";
  return runPtxas(text, "-arch=" + target, output);
}

}  // namespace agileos::ptx::testing
