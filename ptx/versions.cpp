#include "ptx/versions.h"

#include <cctype>
#include <cstdlib>
#include <string>

namespace agileos::ptx {

std::optional<Version> parseVersionNumber(std::string_view v) {
  const std::size_t dot = v.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == v.size() || v.size() > 9) return std::nullopt;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i != dot && !std::isdigit(static_cast<unsigned char>(v[i]))) return std::nullopt;
  }
  return Version{std::atoi(std::string(v.substr(0, dot)).c_str()),
                 std::atoi(std::string(v.substr(dot + 1)).c_str())};
}

std::optional<Version> parseVersion(const Directive& d) {
  if (d.tokens.size() != 2 || d.tokens[1].kind != TokenKind::kNumber) return std::nullopt;
  return parseVersionNumber(d.tokens[1].text);
}

void setVersion(Directive* d, Version version) {
  d->tokens[1].text = std::to_string(version.major) + "." + std::to_string(version.minor);
}

}  // namespace agileos::ptx
