// libFuzzer target: the PTX front end (ptx/) on arbitrary text.
//
// Besides the sanitizers' own checks it aborts when the parser breaks its contract:
// a failure carries an error naming a line; a success prints to text that parses
// again to the same tree, and printing that tree gives the same text (the guard's
// cache relies on the printer being deterministic).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "ptx/parser.h"
#include "ptx/printer.h"

namespace {

void require(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
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
  return 0;
}
