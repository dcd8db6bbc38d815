// Layout and statement mutations of PTX text, for the guard's differential tests
// (layout_variants_test.cpp, tests/fuzz/fuzz_ptx_layout.cpp).
//
// ptxas reads a newline as ordinary whitespace and comments as whitespace; a front end
// that gives line breaks, comments or spacing any other meaning (issue 13: directives
// that ended at the end of their line and swallowed what followed) sees a different
// program from the one ptxas compiles. These mutations produce, from valid PTX (the nvcc
// corpus), texts that differ from it only in such presentation, or by small
// statement-level edits, so that every such disagreement has a chance to show.
//
// The text is split by a tokenizer of its own (words, strings, punctuation; comments
// and whitespace are the gaps between tokens), not by ptx/lexer, which is what is under
// test. Statements are found by the PTX grammar's structure (line directives by their
// arguments, not by line breaks), so mutations compose: a one-line text still has its
// statements. Every function is total and deterministic: the same text, mutation and
// seed give the same variant, whatever the text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace agileos::ptx::testing {

enum class LayoutMutation : std::uint8_t {
  kOneLine,                  // every line break becomes a space: the whole module on one line
  kNewlines,                 // line breaks inserted between arbitrary tokens (and some removed)
  kBlockComments,            // /* */ comments between tokens (some holding code, quotes, `//`)
  kLineComments,             // `//` comments (some holding code or `/*`) ended by a line break
  kWhitespace,               // tabs, \r, \r\n, \f, \v, runs of spaces and blank lines
  kJoinStatements,           // statements joined onto one line
  kJoinAfterLineDirectives,  // the next statement on the line of .version/.target/.loc...
  kLocBefore,                // `.loc F L C` on a line of its own before statements
  kLocSameLine,              // `.loc F L C` followed by the statement on the same line
  kPragmaBefore,             // `.pragma "nounroll";` before statements (same line or not)
  kEmptyStatements,          // `;` between statements
  kMixed,                    // two or three of the above in turn
};
inline constexpr int kLayoutMutationCount = 12;

const char* toString(LayoutMutation mutation);
// Whether the mutation changes only whitespace and comments (the token sequence stays):
// a front end for which whitespace is whitespace parses the variant to the original's
// tree, or refuses it (e.g. \v, which ptxas does not take as whitespace).
bool keepsTokens(LayoutMutation mutation);

std::string mutateLayout(std::string_view ptx, LayoutMutation mutation, std::uint64_t seed);

enum class StatementMutation : std::uint8_t {
  kDuplicate,      // a statement of a body twice
  kDelete,         // a statement of a body removed
  kSwap,           // two neighbouring statements of a body swapped
  kStateSpace,     // the state space of a memory instruction changed, removed or added
  kMoveDirective,  // a directive moved elsewhere, possibly onto another statement's line
};
inline constexpr int kStatementMutationCount = 5;

const char* toString(StatementMutation mutation);
std::string mutateStatements(std::string_view ptx, StatementMutation mutation, std::uint64_t seed);

}  // namespace agileos::ptx::testing
