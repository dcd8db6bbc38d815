// Shared assertions of the guard tests (control_flow_test.cpp, frame_confinement_test.cpp).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "ptx/emitted_check.h"
#include "ptx/guard.h"
#include "ptx/parser.h"
#include "ptx/printer.h"
#include "tests/cpu/ptx/ptx_corpus.h"

namespace agileos::ptx::testing {

// The guarded module, which the checker finds clean, ptxas assembles and the worker's last
// gate (checkEmittedText) reads back the same and finds clean.
inline GuardResult guardedAndClean(const Module& module, const GuardOptions& o) {
  GuardResult guarded = guardModule(module, o);
  EXPECT_TRUE(guarded.ok) << guarded.error;
  if (!guarded.ok) return guarded;
  const std::vector<std::string> unchecked = findUnguardedAccesses(guarded.module, o, guarded.registerPrefix);
  EXPECT_TRUE(unchecked.empty()) << unchecked.front();
  std::string output;
  EXPECT_EQ(assemble(print(guarded.module), &output), 0) << output << print(guarded.module);
  EXPECT_EQ(checkEmittedText(print(guarded.module), guarded.module, o, guarded.registerPrefix), "")
      << "the worker's last gate reads the text back the same and finds it clean";
  return guarded;
}

// How often `what` occurs in `text`.
inline std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Each edit (from -> to) of the printed, guarded `text` must leave a module the independent
// checker flags.
inline void expectEveryEditFlagged(const std::string& text,
                                   const std::vector<std::pair<std::string, std::string>>& edits,
                                   const GuardOptions& o, const std::string& registerPrefix) {
  for (const auto& [from, to] : edits) {
    SCOPED_TRACE(from);
    std::string altered = text;
    const std::size_t at = altered.find(from);
    ASSERT_NE(at, std::string::npos) << text;
    altered.replace(at, from.size(), to);
    const ParseResult reparsed = parse(altered);
    ASSERT_TRUE(reparsed.ok) << reparsed.error;
    EXPECT_FALSE(findUnguardedAccesses(reparsed.module, o, registerPrefix).empty()) << altered;
  }
}

}  // namespace agileos::ptx::testing
