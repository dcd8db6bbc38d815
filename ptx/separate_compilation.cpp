#include "ptx/separate_compilation.h"

#include <cctype>

namespace agileos::ptx {
namespace {

// Skips whitespace and comments (// to the end of the line, /* to */) from `at`.
std::size_t skipSpaceAndComments(std::string_view text, std::size_t at) {
  while (at < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[at]);
    if (std::isspace(c) != 0) {
      ++at;
    } else if (text.substr(at, 2) == "//") {
      const std::size_t eol = text.find('\n', at);
      at = eol == std::string_view::npos ? text.size() : eol + 1;
    } else if (text.substr(at, 2) == "/*") {
      const std::size_t close = text.find("*/", at + 2);
      at = close == std::string_view::npos ? text.size() : close + 2;
    } else {
      break;
    }
  }
  return at;
}

bool below(Version version) { return version < kSeparateCompilationVersion; }

}  // namespace

std::optional<Version> leadingVersion(std::string_view text) {
  std::size_t at = skipSpaceAndComments(text, 0);
  constexpr std::string_view kDirective = ".version";
  if (text.substr(at, kDirective.size()) != kDirective) return std::nullopt;
  at += kDirective.size();
  if (at >= text.size() || (text[at] != ' ' && text[at] != '\t')) return std::nullopt;
  at = skipSpaceAndComments(text, at);
  std::size_t end = at;
  while (end < text.size() && (std::isdigit(static_cast<unsigned char>(text[end])) != 0 || text[end] == '.'))
    ++end;
  return parseVersionNumber(text.substr(at, end - at));
}

bool needsVersionRaise(std::string_view text) {
  const std::optional<Version> version = leadingVersion(text);
  return version && below(*version);
}

bool raiseVersionForSeparateCompilation(Module* module) {
  for (TopLevel& item : module->items) {
    if (item.kind != TopLevel::Kind::kDirective || item.directive.name != ".version") continue;
    // Only the first .version counts, as for ptxas.
    const std::optional<Version> version = parseVersion(item.directive);
    if (!version || !below(*version)) return false;
    setVersion(&item.directive, kSeparateCompilationVersion);
    return true;
  }
  return false;
}

}  // namespace agileos::ptx
