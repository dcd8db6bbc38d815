// Differential tests of the guard's front end against ptxas (issue 13): layout variants
// of every corpus file (layout_mutations.h) and hand-written attack texts.
//
// For each text the guard (ptx/guard.h) either refuses it (a parse or guard error), or,
// under each of the five policies, its rewrite prints to text whose fresh parse has no
// unguarded access and is the same tree as the rewrite. A variant that changes only
// whitespace and comments parses to the original's tree (or is refused).
//
// And ptxas is asked what it saw (sass_memory_count.h). For a subset of the accepted
// texts:
//   - raw:     if ptxas assembles the variant itself, it has no more global/generic memory
//              instructions than the accesses the guard checked in it: more means the two
//              front ends read different programs from the same text;
//   - guarded: the printed trap rewrite, what the worker hands to the driver, assembles and
//              has no more than the checked accesses (on the corpus as nvcc wrote it, the
//              report rewrite too, with one hit-counter update per access).
// Both bounds allow two instructions more per atomic on a generic address, which ptxas
// compiles with a local-memory path (sass_memory_count.h: memoryInstructionBound).
// PtxSassOracle shows that the oracle calibrates and can fail.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "ptx/guard.h"
#include "ptx/parser.h"
#include "ptx/printer.h"
#include "tests/cpu/ptx/guard_test_options.h"
#include "tests/cpu/ptx/layout_mutations.h"
#include "tests/cpu/ptx/ptx_corpus.h"
#include "tests/cpu/ptx/sass_memory_count.h"

namespace agileos::ptx {
namespace {

using testing::calibration;
using testing::compareWithPtxas;
using testing::corpusFiles;
using testing::countGlobalMemoryInstructions;
using testing::keepsTokens;
using testing::LayoutMutation;
using testing::memoryInstructionBound;
using testing::mutateLayout;
using testing::mutateStatements;
using testing::readFile;
using testing::SassCount;
using testing::StatementMutation;

using testing::kAllPolicies;

GuardOptions optionsFor(GuardPolicy policy) { return testing::guardOptions(policy); }

// The SASS bound of a rewrite: one counter update per access under the policies that count.
std::size_t guardedBound(const GuardResult& guarded, GuardPolicy policy) {
  return memoryInstructionBound(guarded.module, guarded.checkedAccesses,
                                policy == GuardPolicy::kTrap ? 0 : guarded.checkedAccesses);
}

struct Outcome {
  bool parsed = false;
  Module module;                           // the variant's parse, when parsed
  std::vector<std::string> problems;       // broken properties (empty: fine)
  std::optional<GuardResult> accepted[5];  // per policy of kAllPolicies, when accepted
  std::size_t acceptedCount = 0;
};

// Refused, or guarded under every policy with a clean, equal fresh parse.
Outcome check(const std::string& text) {
  Outcome outcome;
  const ParseResult first = parse(text);
  if (!first.ok) return outcome;
  outcome.parsed = true;
  outcome.module = first.module;
  for (std::size_t k = 0; k < std::size(kAllPolicies); ++k) {
    const GuardOptions options = optionsFor(kAllPolicies[k]);
    GuardResult guarded = guardModule(first.module, options);
    if (!guarded.ok) continue;
    const std::string policy = toString(kAllPolicies[k]);
    const std::string printed = print(guarded.module);
    const ParseResult reparsed = parse(printed);
    if (!reparsed.ok) {
      outcome.problems.push_back(policy + ": the printed rewrite does not parse: " + reparsed.error);
      continue;
    }
    for (const std::string& access : findUnguardedAccesses(reparsed.module, options, guarded.registerPrefix))
      outcome.problems.push_back(policy + ": unguarded after print and parse: " + access);
    if (!(reparsed.module == guarded.module))
      outcome.problems.push_back(policy +
                                 ": the fresh parse of the printed rewrite differs from the rewrite");
    outcome.accepted[k] = std::move(guarded);
    ++outcome.acceptedCount;
  }
  return outcome;
}

// ptxas's view (compareWithPtxas) of a text the guard accepted under trap.
void differential(const std::string& text, const Outcome& outcome, bool rewriteMustAssemble,
                  std::vector<std::string>* problems, std::size_t* rawAssembled) {
  if (!outcome.accepted[0]) return;
  bool raw = false;
  *problems = compareWithPtxas(text, outcome.module, *outcome.accepted[0], rewriteMustAssemble, &raw);
  if (raw) ++*rawAssembled;
}

struct CorpusFile {
  std::string name;
  std::string text;
  Module module;
};

const std::vector<CorpusFile>& corpus() {
  static const std::vector<CorpusFile> files = [] {
    std::vector<CorpusFile> out;
    for (const std::string& path : corpusFiles()) {
      CorpusFile file{path.substr(path.find_last_of('/') + 1), readFile(path), {}};
      const ParseResult parsed = parse(file.text);
      if (parsed.ok) file.module = parsed.module;
      out.push_back(std::move(file));
    }
    return out;
  }();
  return files;
}

// Failures grouped by what broke, with the first example of each, so that a broken
// front end gives one readable message per kind rather than hundreds.
class Findings {
 public:
  // `byWhere`: one group per place and kind (the attacks), not per kind only.
  explicit Findings(bool byWhere = false) : byWhere_(byWhere) {}
  void add(const std::string& where, const std::string& problem, const std::string& text) {
    std::string kind;  // the problem without its numbers and details
    for (char c : problem.substr(0, 70)) {
      if (std::isdigit(static_cast<unsigned char>(c)) == 0) kind += c;
    }
    auto& entry = byKind_[byWhere_ ? where + " | " + kind : kind];
    if (entry.count++ == 0)
      entry.example =
          where + ": " + problem + "\n--- text (first 600 bytes) ---\n" + text.substr(0, 600) + "\n---";
    ++total_;
  }
  std::size_t total() const { return total_; }
  std::string report() const {
    std::ostringstream out;
    out << total_ << " broken properties\n";
    for (const auto& [kind, entry] : byKind_) out << "[" << entry.count << "x] " << entry.example << "\n";
    return out.str();
  }

 private:
  struct Entry {
    std::size_t count = 0;
    std::string example;
  };
  bool byWhere_;
  std::map<std::string, Entry> byKind_;
  std::size_t total_ = 0;
};

// Variants per corpus file and mutation; ptxas checks one accepted variant in
// kAssembleEvery, spread over the files and seeds (ptxas takes most of the test's time).
constexpr std::uint64_t kSeeds = 3;
constexpr std::uint64_t kStatementSeeds = 2;  // statement edits: the fuzzer does the bulk
constexpr std::size_t kAssembleEvery = 10;

bool assembleThisOne(std::size_t file, std::uint64_t seed, int mutation) {
  return (file * kSeeds + seed + static_cast<std::size_t>(mutation) * 7) % kAssembleEvery == 0;
}

// ---------------------------------------------------------------- the oracle itself

TEST(PtxSassOracle, CalibrationLearnsOneOpcodePerMemoryKind) {
  const testing::SassCalibration c = testing::calibrateNow();
  ASSERT_TRUE(c.ok) << c.error;
  // The cached calibration the other tests use is this one.
  ASSERT_TRUE(calibration().ok) << calibration().error;
  EXPECT_EQ(calibration().kindOpcode, c.kindOpcode);
  EXPECT_EQ(calibration().ambiguousWithoutBase, c.ambiguousWithoutBase);
  std::ostringstream learned;
  for (const auto& [kind, opcode] : c.kindOpcode) learned << kind << " = 0x" << std::hex << opcode << "\n";
  // Loads, stores (global and generic differ), atomics, reductions, async copies, cache ops.
  EXPECT_GE(c.memoryOpcodes.size(), 8u) << learned.str();
  EXPECT_NE(c.kindOpcode.at("ld.global reg"), c.kindOpcode.at("st.global reg"));
  EXPECT_NE(c.kindOpcode.at("ld generic reg"), c.kindOpcode.at("ld.global reg"));
  RecordProperty("opcodes", learned.str());
}

// The oracle can fail: a global store added to the printed rewrite behind the guard's back
// (what issue 13's front-end disagreement amounted to) is one instruction too many.
TEST(PtxSassOracle, SeesAStoreTheGuardDidNotCheck) {
  ASSERT_TRUE(calibration().ok) << calibration().error;
  const std::string text = R"(.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p)
{
	.reg .b32 %r<4>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [p];
	cvta.to.global.u64 %rd2, %rd1;
	ld.global.u32 %r1, [%rd2];
	add.u32 %r1, %r1, 1;
	st.global.u32 [%rd2+4], %r1;
	ret;
}
)";
  const Outcome outcome = check(text);
  ASSERT_TRUE(outcome.parsed);
  ASSERT_TRUE(outcome.accepted[0]);
  const GuardResult& guarded = *outcome.accepted[0];
  EXPECT_EQ(guarded.checkedAccesses, 2u);
  std::string printed = print(guarded.module);
  const SassCount clean = countGlobalMemoryInstructions(printed);
  ASSERT_TRUE(clean.assembled) << clean.log;
  EXPECT_EQ(clean.memory, 2u) << "at -O0 every checked access stays one instruction";
  const std::size_t ret = printed.rfind("ret;");
  ASSERT_NE(ret, std::string::npos);
  printed.insert(ret, "st.global.u32 [%rd2+8], %r1;\n\t");
  const SassCount smuggled = countGlobalMemoryInstructions(printed);
  ASSERT_TRUE(smuggled.assembled) << smuggled.log;
  EXPECT_GT(smuggled.memory, guardedBound(guarded, GuardPolicy::kTrap));
}

// On the corpus as nvcc wrote it: ptxas's count of the original is bounded by the accesses
// the guard checks (and is not zero where the guard checks some: the classifier sees the
// accesses), and the printed rewrites under trap (no counter) and report (a counter
// update per access) by the accesses plus the counter updates; a rewrite keeps every
// access ptxas compiled from the original.
TEST(PtxSassOracle, CorpusCountsStayWithinTheGuardsAccounting) {
  ASSERT_TRUE(calibration().ok) << calibration().error;
  Findings findings;
  for (const CorpusFile& file : corpus()) {
    const Outcome outcome = check(file.text);
    ASSERT_TRUE(outcome.parsed) << file.name;
    for (const std::string& problem : outcome.problems) findings.add(file.name, problem, file.text);
    ASSERT_TRUE(outcome.accepted[0]) << file.name << ": the guard refuses it under trap";
    const GuardResult& trap = *outcome.accepted[0];
    const SassCount raw = countGlobalMemoryInstructions(file.text);
    ASSERT_TRUE(raw.assembled) << file.name << raw.log;
    EXPECT_LE(raw.memory, memoryInstructionBound(outcome.module, trap.checkedAccesses, 0)) << file.name;
    if (trap.checkedAccesses > 0) {
      EXPECT_GT(raw.memory, 0u) << file.name;
    }
    for (std::size_t k : {std::size_t{0}, std::size_t{4}}) {  // trap, report
      if (!outcome.accepted[k]) continue;
      const SassCount guarded = countGlobalMemoryInstructions(print(outcome.accepted[k]->module));
      ASSERT_TRUE(guarded.assembled) << file.name << " " << toString(kAllPolicies[k]) << guarded.log;
      EXPECT_LE(guarded.memory, guardedBound(*outcome.accepted[k], kAllPolicies[k]))
          << file.name << " " << toString(kAllPolicies[k]);
      // The rewrite keeps every access ptxas compiled from the original.
      EXPECT_GE(guarded.memory, raw.memory) << file.name << " " << toString(kAllPolicies[k]);
    }
  }
  EXPECT_EQ(findings.total(), 0u) << findings.report();
}

// ---------------------------------------------------------------- layout variants of the corpus

class PtxLayoutVariants : public ::testing::TestWithParam<LayoutMutation> {};

TEST_P(PtxLayoutVariants, EveryCorpusFileIsRefusedOrGuardedAndCleanAndPtxasAgrees) {
  ASSERT_TRUE(calibration().ok) << calibration().error;
  const LayoutMutation mutation = GetParam();
  Findings findings;
  std::size_t variants = 0, parsed = 0, accepted = 0, assembledChecks = 0, rawAssembled = 0;
  for (std::size_t f = 0; f < corpus().size(); ++f) {
    const CorpusFile& file = corpus()[f];
    for (std::uint64_t seed = 1; seed <= kSeeds; ++seed) {
      const std::string text = mutateLayout(file.text, mutation, seed);
      const std::string where = file.name + " seed " + std::to_string(seed);
      ++variants;
      const Outcome outcome = check(text);
      for (const std::string& problem : outcome.problems) findings.add(where, problem, text);
      if (!outcome.parsed) continue;
      ++parsed;
      if (keepsTokens(mutation) && !(outcome.module == file.module))
        findings.add(where,
                     "tree: only whitespace and comments changed, but the parse differs from the original's",
                     text);
      if (outcome.acceptedCount == 0) continue;
      ++accepted;
      if (!assembleThisOne(f, seed, static_cast<int>(mutation))) continue;
      ++assembledChecks;
      std::vector<std::string> problems;
      // A variant that only moved whitespace and comments is valid PTX even where ptxas
      // refuses its layout (\v, `.version` split over two lines): its rewrite must assemble.
      differential(text, outcome, keepsTokens(mutation), &problems, &rawAssembled);
      for (const std::string& problem : problems) findings.add(where, "ptxas: " + problem, text);
    }
  }
  std::cout << toString(mutation) << ": " << variants << " variants, " << parsed << " parsed, " << accepted
            << " accepted, " << assembledChecks << " compared with ptxas (" << rawAssembled
            << " of them assembled as they are)\n";
  EXPECT_EQ(findings.total(), 0u) << findings.report();
}

INSTANTIATE_TEST_SUITE_P(Mutations, PtxLayoutVariants,
                         ::testing::Values(LayoutMutation::kOneLine, LayoutMutation::kNewlines,
                                           LayoutMutation::kBlockComments, LayoutMutation::kLineComments,
                                           LayoutMutation::kWhitespace, LayoutMutation::kJoinStatements,
                                           LayoutMutation::kJoinAfterLineDirectives,
                                           LayoutMutation::kLocBefore, LayoutMutation::kLocSameLine,
                                           LayoutMutation::kPragmaBefore, LayoutMutation::kEmptyStatements,
                                           LayoutMutation::kMixed),
                         [](const ::testing::TestParamInfo<LayoutMutation>& info) {
                           std::string name = testing::toString(info.param);
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

// Statement-level edits (duplicated, deleted, swapped statements, changed state spaces,
// moved directives): the same properties, without the tree equality.
class PtxStatementVariants : public ::testing::TestWithParam<StatementMutation> {};

TEST_P(PtxStatementVariants, EveryCorpusFileIsRefusedOrGuardedAndCleanAndPtxasAgrees) {
  ASSERT_TRUE(calibration().ok) << calibration().error;
  Findings findings;
  std::size_t rawAssembled = 0;
  for (std::size_t f = 0; f < corpus().size(); ++f) {
    const CorpusFile& file = corpus()[f];
    for (std::uint64_t seed = 1; seed <= kStatementSeeds; ++seed) {
      const std::string text = mutateStatements(file.text, GetParam(), seed);
      const std::string where = file.name + " seed " + std::to_string(seed);
      const Outcome outcome = check(text);
      for (const std::string& problem : outcome.problems) findings.add(where, problem, text);
      if (outcome.acceptedCount == 0 || !assembleThisOne(f, seed, 20 + static_cast<int>(GetParam())))
        continue;
      std::vector<std::string> problems;
      // A statement edit may make the text one ptxas refuses (a deleted declaration); the
      // rewrite of such a text cannot assemble either, and nothing loads.
      differential(text, outcome, false, &problems, &rawAssembled);
      for (const std::string& problem : problems) findings.add(where, "ptxas: " + problem, text);
    }
  }
  EXPECT_EQ(findings.total(), 0u) << findings.report();
}

INSTANTIATE_TEST_SUITE_P(Mutations, PtxStatementVariants,
                         ::testing::Values(StatementMutation::kDuplicate, StatementMutation::kDelete,
                                           StatementMutation::kSwap, StatementMutation::kStateSpace,
                                           StatementMutation::kMoveDirective),
                         [](const ::testing::TestParamInfo<StatementMutation>& info) {
                           std::string name = testing::toString(info.param);
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

// The mutations are deterministic and do what they say.
TEST(PtxLayoutMutations, AreDeterministicAndChangeTheLayout) {
  ASSERT_FALSE(corpus().empty());
  const std::string& text = corpus().front().text;
  for (int m = 0; m < testing::kLayoutMutationCount; ++m) {
    const auto mutation = static_cast<LayoutMutation>(m);
    EXPECT_EQ(mutateLayout(text, mutation, 7), mutateLayout(text, mutation, 7))
        << testing::toString(mutation);
    EXPECT_NE(mutateLayout(text, mutation, 7), text) << testing::toString(mutation);
  }
  const std::string oneLine = mutateLayout(text, LayoutMutation::kOneLine, 1);
  EXPECT_EQ(oneLine.find('\n'), oneLine.size() - 1) << "one line, and its final line break";
  for (int m = 0; m < testing::kStatementMutationCount; ++m) {
    const auto mutation = static_cast<StatementMutation>(m);
    EXPECT_EQ(mutateStatements(text, mutation, 3), mutateStatements(text, mutation, 3));
  }
}

// ---------------------------------------------------------------- hand-written attacks

constexpr char kHeader[] = ".version 8.0\n.target sm_90\n.address_size 64\n";
constexpr char kFile[] = ".file 1 \"a.cu\"\n";
constexpr char kKernelOpen[] =
    ".visible .entry k(.param .u64 p)\n{\n.reg .b32 %r<4>;\n.reg .b64 %rd<4>;\nld.param.u64 %rd1, [p];\n"
    "cvta.to.global.u64 %rd2, %rd1;\nmov.u32 %r1, 7;\n";
constexpr char kStore[] = "st.global.u32 [%rd2], %r1;";
constexpr char kKernelClose[] = "ret;\n}\n";

struct Attack {
  const char* name;
  std::string text;
};

std::vector<Attack> attacks() {
  const std::string header = kHeader, file = kFile, open = kKernelOpen, store = kStore, close = kKernelClose;
  const std::string kernel = open + store + "\n" + close;
  std::string oneLine = header + file + kernel;
  for (char& c : oneLine) {
    if (c == '\n') c = ' ';
  }
  return {
      // Module level: a whole kernel on the line of a line directive.
      {"kernel after .version", ".version 8.0 " + std::string(".target sm_90\n.address_size 64\n") + kernel},
      {"kernel after .target", ".version 8.0\n.target sm_90 .address_size 64\n" + kernel},
      {"kernel on the .address_size line", header.substr(0, header.size() - 1) + " " + kernel},
      {"kernel on the .file line", header + ".file 1 \"a.cu\" " + kernel},
      {"kernel on the .file line after an escaped quote", header + ".file 1 \"a\\\"b.cu\" " + kernel},
      {"whole module on one line", oneLine},
      {"module on one line with \\r",
       [&] {
         std::string t = header + file + kernel;
         for (char& c : t) {
           if (c == '\n') c = '\r';
         }
         return t;
       }()},
      // Body level: the store on the line of a line directive.
      {".loc then store", header + file + open + ".loc 1 2 3 " + store + "\n" + close},
      {".loc then store after \\r", header + file + open + ".loc 1 2 3\r" + store + "\n" + close},
      {".loc then store after \\f", header + file + open + ".loc 1 2 3\f" + store + "\n" + close},
      {".loc with inlined_at then store",
       header + file + open + ".loc 1 4 5\n.loc 1 2 3, function_name $L__x, inlined_at 1 4 5 " + store +
           "\n" + close},
      {".loc, comment, store", header + file + open + ".loc 1 2 3 /* c */ " + store + "\n" + close},
      {".version in a body then store", header + open + ".version 8.0 " + store + "\n" + close},
      {".target in a body then store", header + open + ".target sm_90 " + store + "\n" + close},
      {".address_size in a body then store", header + open + ".address_size 64 " + store + "\n" + close},
      {".file in a body then store", header + open + ".file 1 \"a.cu\" " + store + "\n" + close},
      {"predicated store after .loc", header + file + open +
                                          ".reg .pred %p<2>;\nsetp.eq.u32 %p1, %r1, 7;\n.loc 1 2 3 @%p1 " +
                                          store + "\n" + close},
      {"label and store after .loc", header + file + open + ".loc 1 2 3 $L1: " + store + "\n" + close},
      // Comments and strings.
      {"store between comments", header + open + "/* */ " + store + " /* */\n" + close},
      {"store after a comment that looks closed twice",
       header + open + "/* a */ /* */ " + store + "\n" + close},
      {"block comment holding */ in a line comment",
       header + open + "// */ " + store + "\n" + store + "\n" + close},
      {"line comment inside a block comment", header + open + "/* // */ " + store + "\n" + close},
      {"comment spanning lines after .loc",
       header + file + open + ".loc 1 2 3 /*\n*/ " + store + "\n" + close},
      {".pragma with an escaped quote then store",
       header + open + ".pragma \"nounroll\\\";\"; " + store + "\n" + close},
      {".pragma then store on one line", header + open + ".pragma \"nounroll\"; " + store + "\n" + close},
      {"empty statements around a store", header + open + "; " + store + " ;\n" + close},
      {".section then kernel on its line", header + ".section .debug_abbrev { .b8 1 } " + kernel},
  };
}

TEST(PtxLayoutAttacks, EveryAttackIsRefusedOrGuardedAndCleanAndPtxasAgrees) {
  ASSERT_TRUE(calibration().ok) << calibration().error;
  Findings findings(true);
  for (const Attack& attack : attacks()) {
    const Outcome outcome = check(attack.text);
    for (const std::string& problem : outcome.problems) findings.add(attack.name, problem, attack.text);
    if (outcome.acceptedCount == 0) continue;
    std::size_t rawAssembled = 0;
    std::vector<std::string> problems;
    differential(attack.text, outcome, false, &problems, &rawAssembled);
    for (const std::string& problem : problems) findings.add(attack.name, "ptxas: " + problem, attack.text);
  }
  EXPECT_EQ(findings.total(), 0u) << findings.report();
}

// The store of each attack must not go unchecked: ptxas sees exactly one store, so a guard
// that accepts the text must have checked at least one access.
TEST(PtxLayoutAttacks, NoAttackIsAcceptedWithoutItsStore) {
  for (const Attack& attack : attacks()) {
    const ParseResult parsed = parse(attack.text);
    if (!parsed.ok) continue;
    const GuardResult guarded = guardModule(parsed.module, optionsFor(GuardPolicy::kTrap));
    if (!guarded.ok) continue;
    EXPECT_GE(guarded.checkedAccesses, 1u) << attack.name << ": accepted, but the store was not checked";
  }
}

}  // namespace
}  // namespace agileos::ptx
