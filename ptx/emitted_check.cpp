#include "ptx/emitted_check.h"

#include "ptx/parser.h"

namespace agileos::ptx {

std::string checkEmittedText(std::string_view text, const Module& checked, const GuardOptions& options,
                             const std::string& registerPrefix) {
  // The driver reads PTX as a C string: whatever follows a NUL is not part of the text.
  const std::string_view visible = text.substr(0, text.find('\0'));
  if (visible.size() != text.size() && text.find_first_not_of('\0', visible.size()) != std::string_view::npos)
    return "the emitted text has bytes after a NUL";
  const ParseResult fresh = parse(visible);
  if (!fresh.ok) return "the emitted text does not parse again: " + fresh.error;
  if (!(fresh.module == checked))
    return "the emitted text does not read back as the module the guard checked";
  const std::vector<std::string> unguarded = findUnguardedAccesses(fresh.module, options, registerPrefix);
  if (!unguarded.empty()) {
    return "the independent checker finds " + std::to_string(unguarded.size()) +
           " unguarded access(es) in the emitted text, the first at " + unguarded.front();
  }
  return {};
}

}  // namespace agileos::ptx
