// libFuzzer target: the PTX front end and the guard (ptx/) on arbitrary text.
//
// Besides the sanitizers' own checks it aborts when a contract breaks: a parse failure
// carries an error naming a line; a success prints to text that parses again to the
// same tree, and printing that tree gives the same text (the guard's cache relies on
// the printer being deterministic); a module the guard accepts has no unguarded access,
// and its printed form parses and still has none; a refusal names a line. The object merge
// (ptx/object_merge.h) gives one module back unchanged, and a merge of the module with itself
// either refuses with a reason or prints to text that parses.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "ptx/guard.h"
#include "ptx/object_merge.h"
#include "ptx/parser.h"
#include "ptx/printer.h"
#include "ptx/system_atomics.h"
#include "tests/cpu/ptx/guard_test_options.h"

namespace {

void require(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // The worker reads every module's PTX for system-scope atomics, parsed or not: any text ends
  // (kernel names or nullopt) without reading out of bounds.
  if (const auto kernels = agileos::ptx::kernelsWithSystemAtomics(text)) require(kernels->size() <= size);
  const agileos::ptx::ParseResult first = agileos::ptx::parse(text);
  if (!first.ok) {
    require(first.error.rfind("line ", 0) == 0);
    return 0;
  }
  const std::string printed = agileos::ptx::print(first.module);
  const agileos::ptx::ParseResult second = agileos::ptx::parse(printed);
  require(second.ok);
  require(second.module == first.module);
  require(agileos::ptx::print(second.module) == printed);

  const agileos::ptx::MergeResult alone = agileos::ptx::mergeObjects({first.module});
  require(alone.ok && alone.module == first.module);
  const agileos::ptx::MergeResult twice = agileos::ptx::mergeObjects({first.module, first.module});
  require(twice.ok ? agileos::ptx::parse(agileos::ptx::print(twice.module)).ok : !twice.error.empty());

  // The policy varies with the input, so that every policy's rewrite is checked.
  const agileos::ptx::GuardOptions options =
      agileos::ptx::testing::guardOptions(agileos::ptx::testing::kAllPolicies[size % 5]);
  require(agileos::ptx::validate(options).empty());
  const agileos::ptx::GuardResult guarded = agileos::ptx::guardModule(first.module, options);
  if (!guarded.ok) {
    require(guarded.error.rfind("line ", 0) == 0);
    return 0;
  }
  require(agileos::ptx::findUnguardedAccesses(guarded.module, options, guarded.registerPrefix).empty());
  const agileos::ptx::ParseResult reparsed = agileos::ptx::parse(agileos::ptx::print(guarded.module));
  require(reparsed.ok);
  require(agileos::ptx::findUnguardedAccesses(reparsed.module, options, guarded.registerPrefix).empty());
  return 0;
}
