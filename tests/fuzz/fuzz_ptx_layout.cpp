// libFuzzer target: the guard's front end against ptxas's (issue 13), on layout and
// statement-level variants of valid PTX.
//
// Seeded with the nvcc corpus (tests/cpu/ptx), its custom mutator rewrites an input the
// way tests/cpu/ptx/layout_mutations.h does: line breaks removed or added anywhere,
// comments, spacing, line directives with code on their line, .loc/.pragma placements,
// empty statements; duplicated, deleted or swapped statements, changed state spaces,
// moved directives; and now and then libFuzzer's own byte-level mutation. Every input
// must be refused by the guard (a parse or guard error), or guarded so that the printed
// rewrite parses again to the same tree with no unguarded access (aborts otherwise).
//
// ptxas per input would stall the fuzzer, so the differential check against ptxas
// (tests/cpu/ptx/sass_memory_count.h: ptxas must compile no more global/generic memory
// instructions from the text, or from the printed rewrite, than the guard accounts for)
// runs on one accepted input in AGILEOS_FUZZ_PTXAS_EVERY (an environment variable; unset
// or 0: never). tests/fuzz/run_long_fuzz.sh sets it for long runs.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "ptx/guard.h"
#include "ptx/parser.h"
#include "ptx/printer.h"
#include "tests/cpu/ptx/guard_test_options.h"
#include "tests/cpu/ptx/layout_mutations.h"
#include "tests/cpu/ptx/sass_memory_count.h"

extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t maxSize);

namespace {

using agileos::ptx::GuardOptions;
using agileos::ptx::GuardPolicy;
using agileos::ptx::GuardResult;
using agileos::ptx::ParseResult;

void require(bool condition, const char* what, std::string_view text) {
  if (condition) return;
  std::fprintf(stderr, "fuzz_ptx_layout: %s\n--- input ---\n%.*s\n---\n", what, static_cast<int>(text.size()),
               text.data());
  std::abort();
}

// The checker's findings, named on stderr before the abort (so a crash report says what).
void requireNoFindings(const std::vector<std::string>& findings, const char* what, std::string_view text) {
  for (const std::string& finding : findings) std::fprintf(stderr, "finding: %s\n", finding.c_str());
  require(findings.empty(), what, text);
}

GuardOptions optionsFor(GuardPolicy policy) { return agileos::ptx::testing::guardOptions(policy); }

std::uint64_t fnv1a(std::string_view text) {
  std::uint64_t h = 0xCBF29CE484222325ull;
  for (const char c : text) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001B3ull;
  return h;
}

std::size_t ptxasEvery() {
  static const std::size_t every = [] {
    const char* value = std::getenv("AGILEOS_FUZZ_PTXAS_EVERY");
    return value == nullptr ? std::size_t{0} : static_cast<std::size_t>(std::strtoull(value, nullptr, 10));
  }();
  return every;
}

}  // namespace

extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size, std::size_t maxSize,
                                               unsigned int seed) {
  namespace t = agileos::ptx::testing;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const unsigned choice = seed % 16;
  const std::uint64_t variant = seed / 16;
  std::string out;
  if (choice < 9) {
    out = t::mutateLayout(text, static_cast<t::LayoutMutation>(variant % t::kLayoutMutationCount), variant);
  } else if (choice < 14) {
    out = t::mutateStatements(text, static_cast<t::StatementMutation>(variant % t::kStatementMutationCount),
                              variant);
  }
  if (out.empty() || out.size() > maxSize) return LLVMFuzzerMutate(data, size, maxSize);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const ParseResult first = agileos::ptx::parse(text);
  if (!first.ok) return 0;

  const std::uint64_t hash = fnv1a(text);
  const GuardPolicy policy = agileos::ptx::testing::kAllPolicies[hash % 5];
  GuardOptions options = optionsFor(policy);
  // Half of the inputs also get the opt-in frame confinement (ptx/frame_confinement.h).
  options.confineFrameWrites = (hash / 5) % 2 == 0;
  require(agileos::ptx::validate(options).empty(), "invalid options", text);
  const GuardResult guarded = agileos::ptx::guardModule(first.module, options);
  if (!guarded.ok) return 0;
  requireNoFindings(agileos::ptx::findUnguardedAccesses(guarded.module, options, guarded.registerPrefix),
                    "the rewrite has an unguarded access", text);
  const std::string printed = agileos::ptx::print(guarded.module);
  const ParseResult reparsed = agileos::ptx::parse(printed);
  require(reparsed.ok, "the printed rewrite does not parse", text);
  require(reparsed.module == guarded.module, "the printed rewrite parses to another tree", text);
  requireNoFindings(agileos::ptx::findUnguardedAccesses(reparsed.module, options, guarded.registerPrefix),
                    "the printed rewrite has an unguarded access", text);

  // The differential check against ptxas, on one accepted input in ptxasEvery().
  static std::size_t accepted = 0;
  if (ptxasEvery() == 0 || accepted++ % ptxasEvery() != 0) return 0;
  require(agileos::ptx::testing::calibration().ok, "the SASS oracle does not calibrate", text);
  // The trap rewrite: its bound has no counter updates.
  const GuardResult trap =
      policy == GuardPolicy::kTrap ? guarded : agileos::ptx::guardModule(first.module, [&] {
        GuardOptions trapOptions = optionsFor(GuardPolicy::kTrap);
        trapOptions.confineFrameWrites = options.confineFrameWrites;
        return trapOptions;
      }());
  if (!trap.ok) return 0;
  bool rawAssembled = false;
  const std::vector<std::string> problems =
      agileos::ptx::testing::compareWithPtxas(std::string(text), first.module, trap, false, &rawAssembled);
  for (const std::string& problem : problems)
    std::fprintf(stderr, "fuzz_ptx_layout: ptxas: %s\n", problem.c_str());
  require(problems.empty(), "ptxas and the guard disagree", text);
  // Progress, for run_long_fuzz.sh's summary.
  static std::size_t compared = 0, assembled = 0;
  ++compared;
  assembled += rawAssembled ? 1 : 0;
  if (compared % 20 == 0)
    std::fprintf(stderr, "ptxas oracle: %zu comparisons, %zu raw texts assembled\n", compared, assembled);
  return 0;
}
