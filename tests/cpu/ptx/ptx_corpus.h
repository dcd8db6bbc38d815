// What the PTX tests share: the corpus nvcc builds at build time (AGILEOS_PTX_CORPUS_DIR)
// and ptxas (AGILEOS_PTXAS), to show that printed or rewritten PTX still assembles.
#pragma once

#include <string>
#include <vector>

#include "ptx/ast.h"

namespace agileos::ptx::testing {

// The tree of `text`, which the calling test expects to parse (a failure is reported with
// the parser's error, and an empty module is returned).
Module parsed(const std::string& text);

// The corpus files, sorted by name.
std::vector<std::string> corpusFiles();
std::string readFile(const std::string& path);

// Runs ptxas on `text` for the architecture its .target names (sm_75 stays sm_75, anything
// else is assembled for sm_90); returns ptxas's exit status and appends its output.
int assemble(const std::string& text, std::string* output);

// ptxas on `text` with `options` (e.g. "-arch=sm_90 -c"); returns its exit status, appends its
// output, and stores what it wrote in `object` when not null.
int runPtxas(const std::string& text, const std::string& options, std::string* output,
             std::string* object = nullptr);

}  // namespace agileos::ptx::testing
