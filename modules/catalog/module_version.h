// Module versions and version requirements (the `version` of a pool entry, of a dependency and of
// a client's module request).
//
// A version is MAJOR.MINOR.PATCH: three non-negative decimal integers, no leading zeros (as in
// SemVer 2.0), each at most 2^31 - 1 so that "one more" (the upper bound of ^ and ~) never
// overflows. Pre-release ("-beta") and build metadata ("+build") are refused, not ignored: two
// builds that differ only there would otherwise compare equal.
//
// A requirement is a comma-separated list of clauses, all of which must hold:
//   =1.2.3  >=1.2  >1.2.3  <=2  <2.0.0   the comparison (missing MINOR/PATCH are 0)
//   1.2.3                                 the same as =1.2.3
//   ^1.2                                  >=1.2.0, <2.0.0; ^0.y.z is >=0.y.z, <0.(y+1).0
//   ~1.2                                  >=1.2.0, <1.3.0
//   *                                     any version
// Spaces around a clause and between its operator and version are allowed. Unlike Cargo, a
// missing part is always 0 (so ^0 is ^0.0.0, ~1 is ~1.0.0 = >=1.0.0, <1.1.0), and ^0.0.z is
// >=0.0.z, <0.1.0: the rule above, with no special case for 0.0.
//
// Requirement strings may come from untrusted clients: parsing never throws, and every error
// quotes input through quoteText (bounded, printable).
//
// Thread-safety: plain values and functions; no shared state.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agileos::modules {

// Largest value of one version part.
inline constexpr std::uint32_t kMaxVersionPart = 0x7fffffff;

struct Version {
  std::uint32_t major = 0;
  std::uint32_t minor = 0;
  std::uint32_t patch = 0;

  // Lexicographic on (major, minor, patch): the SemVer precedence without pre-releases.
  friend auto operator<=>(const Version&, const Version&) = default;

  std::string toString() const;  // "1.2.3"
};

// A full MAJOR.MINOR.PATCH, or nullopt with the problem in *error (if not null).
std::optional<Version> parseVersion(std::string_view text, std::string* error = nullptr);

enum class CompareOp : std::uint8_t { kEqual, kGreaterEqual, kGreater, kLessEqual, kLess };

struct Comparator {
  CompareOp op = CompareOp::kGreaterEqual;
  Version version;

  bool matches(const Version& candidate) const;
};

// A parsed requirement: the conjunction of `comparators` (^ and ~ each contribute two, * none).
// The default-constructed requirement is "*".
struct Requirement {
  std::string text = "*";  // as written (trimmed), for messages
  std::vector<Comparator> comparators;

  bool matches(const Version& candidate) const;
  bool isAny() const { return comparators.empty(); }
};

// Parses `text`, or returns nullopt with an error naming the bad clause (by position and text),
// e.g. "clause 2 '>=x': part 1 'x' is not a non-negative integer".
std::optional<Requirement> parseRequirement(std::string_view text, std::string* error = nullptr);

// True unless no version can satisfy both `a` and `b` (e.g. "=1.0.0" and ">=2"). Both are
// treated as intervals over versions: a gap between adjacent versions (">1.2.3" with "<1.2.4")
// counts as satisfiable; matches() still refuses every version there.
bool satisfiableTogether(const Requirement& a, const Requirement& b);

}  // namespace agileos::modules
