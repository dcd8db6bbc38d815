#include "ptx/separate_compilation.h"

#include <cctype>
#include <charconv>
#include <string>

namespace agileos::ptx {
namespace {

// "M.m" with decimal digits on both sides of one dot, nothing else.
std::optional<std::pair<int, int>> readVersionNumber(std::string_view text) {
  const std::size_t dot = text.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == text.size()) return std::nullopt;
  int major = 0, minor = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  auto first = std::from_chars(begin, begin + dot, major);
  if (first.ec != std::errc{} || first.ptr != begin + dot) return std::nullopt;
  auto second = std::from_chars(begin + dot + 1, end, minor);
  if (second.ec != std::errc{} || second.ptr != end) return std::nullopt;
  return std::pair{major, minor};
}

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

bool below(std::pair<int, int> version) { return version < kSeparateCompilationVersion; }

}  // namespace

std::optional<std::pair<int, int>> leadingVersion(std::string_view text) {
  std::size_t at = skipSpaceAndComments(text, 0);
  constexpr std::string_view kDirective = ".version";
  if (text.substr(at, kDirective.size()) != kDirective) return std::nullopt;
  at += kDirective.size();
  if (at >= text.size() || (text[at] != ' ' && text[at] != '\t')) return std::nullopt;
  at = skipSpaceAndComments(text, at);
  std::size_t end = at;
  while (end < text.size() && (std::isdigit(static_cast<unsigned char>(text[end])) != 0 || text[end] == '.'))
    ++end;
  return readVersionNumber(text.substr(at, end - at));
}

bool needsVersionRaise(std::string_view text) {
  const std::optional<std::pair<int, int>> version = leadingVersion(text);
  return version && below(*version);
}

bool raiseVersionForSeparateCompilation(Module* module) {
  for (TopLevel& item : module->items) {
    if (item.kind != TopLevel::Kind::kDirective || item.directive.name != ".version") continue;
    for (Token& token : item.directive.tokens) {
      if (token.kind != TokenKind::kNumber) continue;
      const std::optional<std::pair<int, int>> version = readVersionNumber(token.text);
      if (!version || !below(*version)) return false;
      token.text = std::to_string(kSeparateCompilationVersion.first) + "." +
                   std::to_string(kSeparateCompilationVersion.second);
      return true;
    }
    return false;  // only the first .version counts, as for ptxas
  }
  return false;
}

}  // namespace agileos::ptx
