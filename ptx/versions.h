// A PTX module's `.version`: read from its directive (or from text), compared, and written back.
// One reader for every pass that needs the version (the link of protected-module functions, the
// guard's legacy-target raise, the raise for separate compilation).
#pragma once

#include <compare>
#include <optional>
#include <string_view>

#include "ptx/ast.h"

namespace agileos::ptx {

struct Version {
  int major = 0, minor = 0;
  auto operator<=>(const Version&) const = default;
};

// "M.m": decimal digits on both sides of one dot and nothing else, at most 9 characters.
std::optional<Version> parseVersionNumber(std::string_view text);
// A `.version M.m` directive's version (its one number token).
std::optional<Version> parseVersion(const Directive& directive);
// Rewrites the number of a directive parseVersion reads.
void setVersion(Directive* directive, Version version);

}  // namespace agileos::ptx
