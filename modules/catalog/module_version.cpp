#include "modules/catalog/module_version.h"

#include <algorithm>
#include <array>
#include <cstddef>

#include "modules/catalog/message_text.h"

namespace agileos::modules {
namespace {

constexpr std::string_view kSpaces = " \t";

std::string_view trim(std::string_view text) {
  const std::size_t first = text.find_first_not_of(kSpaces);
  if (first == std::string_view::npos) return {};
  const std::size_t last = text.find_last_not_of(kSpaces);
  return text.substr(first, last - first + 1);
}

// One decimal part: digits only, no leading zero, at most kMaxVersionPart.
bool parsePart(std::string_view text, std::size_t index, std::uint32_t* out, std::string* error) {
  const std::string name = "part " + std::to_string(index + 1);
  if (text.empty()) {
    *error = name + " is empty";
    return false;
  }
  std::uint64_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') {
      *error = name + " " + quoteText(text) + " is not a non-negative integer";
      return false;
    }
    // Stop accumulating once over the limit, so no digit count can overflow `value`.
    if (value <= kMaxVersionPart) value = value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (text.size() > 1 && text.front() == '0') {
    *error = name + " " + quoteText(text) + " has a leading zero";
    return false;
  }
  if (value > kMaxVersionPart) {
    *error = name + " " + quoteText(text) + " exceeds " + std::to_string(kMaxVersionPart);
    return false;
  }
  *out = static_cast<std::uint32_t>(value);
  return true;
}

// MAJOR[.MINOR[.PATCH]] with at least `min_parts` parts; missing parts are 0. The error names
// the problem but not the whole text (callers add that context).
bool parseParts(std::string_view text, std::size_t min_parts, Version* out, std::string* error) {
  if (text.empty()) {
    *error = "empty version";
    return false;
  }
  if (text.front() < '0' || text.front() > '9') {
    *error = "a version starts with a digit, got " + quoteText(text);
    return false;
  }
  if (const std::size_t suffix = text.find_first_of("-+"); suffix != std::string_view::npos) {
    *error = std::string(text[suffix] == '-' ? "pre-release versions are" : "build metadata is") +
             " not supported (" + quoteText(text.substr(suffix)) + ")";
    return false;
  }
  std::array<std::uint32_t, 3> parts = {0, 0, 0};
  std::size_t count = 0;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = text.find('.', start);
    const std::string_view part = text.substr(start, dot == std::string_view::npos ? dot : dot - start);
    if (count == parts.size()) {
      *error = "too many parts in " + quoteText(text) + " (expected MAJOR.MINOR.PATCH)";
      return false;
    }
    if (!parsePart(part, count, &parts[count], error)) return false;
    ++count;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  if (count < min_parts) {
    *error = "expected MAJOR.MINOR.PATCH, got " + std::to_string(count) + (count == 1 ? " part" : " parts");
    return false;
  }
  *out = Version{parts[0], parts[1], parts[2]};
  return true;
}

// The operator at the start of a clause and its length; a bare version is "=".
std::pair<CompareOp, std::size_t> splitOperator(std::string_view clause, char* caret_or_tilde) {
  *caret_or_tilde = '\0';
  if (clause.starts_with(">=")) return {CompareOp::kGreaterEqual, 2};
  if (clause.starts_with("<=")) return {CompareOp::kLessEqual, 2};
  if (clause.starts_with(">")) return {CompareOp::kGreater, 1};
  if (clause.starts_with("<")) return {CompareOp::kLess, 1};
  if (clause.starts_with("=")) return {CompareOp::kEqual, 1};
  if (clause.starts_with("^") || clause.starts_with("~")) {
    *caret_or_tilde = clause.front();
    return {CompareOp::kGreaterEqual, 1};
  }
  return {CompareOp::kEqual, 0};
}

// Appends the comparators of one trimmed, non-empty clause.
bool parseClause(std::string_view clause, std::vector<Comparator>* out, std::string* error) {
  if (clause == "*") return true;
  char range = '\0';
  const auto [op, length] = splitOperator(clause, &range);
  Version version;
  if (!parseParts(trim(clause.substr(length)), 1, &version, error)) return false;
  out->push_back({op, version});
  // Parts are at most 2^31 - 1, so the increments below stay within uint32.
  if (range == '^') {
    const Version upper =
        version.major > 0 ? Version{version.major + 1, 0, 0} : Version{0, version.minor + 1, 0};
    out->push_back({CompareOp::kLess, upper});
  } else if (range == '~') {
    out->push_back({CompareOp::kLess, Version{version.major, version.minor + 1, 0}});
  }
  return true;
}

// The set of versions a requirement admits, as an interval: [lower, upper] with open ends where
// the flags say so; no upper bound when has_upper is false.
struct Interval {
  Version lower;
  bool lower_inclusive = true;
  bool has_upper = false;
  Version upper;
  bool upper_inclusive = true;

  void raiseLower(const Version& v, bool inclusive) {
    if (v > lower) {
      lower = v;
      lower_inclusive = inclusive;
    } else if (v == lower && !inclusive) {
      lower_inclusive = false;
    }
  }
  void lowerUpper(const Version& v, bool inclusive) {
    if (!has_upper || v < upper) {
      has_upper = true;
      upper = v;
      upper_inclusive = inclusive;
    } else if (v == upper && !inclusive) {
      upper_inclusive = false;
    }
  }
  void add(const Comparator& c) {
    switch (c.op) {
      case CompareOp::kEqual:
        raiseLower(c.version, true);
        lowerUpper(c.version, true);
        break;
      case CompareOp::kGreaterEqual:
        raiseLower(c.version, true);
        break;
      case CompareOp::kGreater:
        raiseLower(c.version, false);
        break;
      case CompareOp::kLessEqual:
        lowerUpper(c.version, true);
        break;
      case CompareOp::kLess:
        lowerUpper(c.version, false);
        break;
    }
  }
  bool empty() const {
    if (!has_upper) return false;
    if (lower != upper) return lower > upper;
    return !(lower_inclusive && upper_inclusive);
  }
};

}  // namespace

std::string Version::toString() const {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::optional<Version> parseVersion(std::string_view text, std::string* error) {
  Version version;
  std::string problem;
  if (!parseParts(text, 3, &version, &problem)) {
    if (error != nullptr) *error = "invalid version " + quoteText(text) + ": " + problem;
    return std::nullopt;
  }
  return version;
}

bool Comparator::matches(const Version& candidate) const {
  switch (op) {
    case CompareOp::kEqual:
      return candidate == version;
    case CompareOp::kGreaterEqual:
      return candidate >= version;
    case CompareOp::kGreater:
      return candidate > version;
    case CompareOp::kLessEqual:
      return candidate <= version;
    case CompareOp::kLess:
      return candidate < version;
  }
  return false;
}

bool Requirement::matches(const Version& candidate) const {
  return std::all_of(comparators.begin(), comparators.end(),
                     [&](const Comparator& c) { return c.matches(candidate); });
}

std::optional<Requirement> parseRequirement(std::string_view text, std::string* error) {
  Requirement requirement;
  requirement.text = std::string(trim(text));
  std::string problem;
  if (requirement.text.empty()) problem = "empty requirement";
  std::size_t start = 0;
  for (std::size_t index = 1; problem.empty(); ++index) {
    const std::size_t comma = text.find(',', start);
    const std::string_view raw = text.substr(start, comma == std::string_view::npos ? comma : comma - start);
    const std::string_view clause = trim(raw);
    std::string clause_problem;
    if (clause.empty()) {
      clause_problem = "empty clause";
    } else {
      parseClause(clause, &requirement.comparators, &clause_problem);
    }
    if (!clause_problem.empty()) {
      problem = "clause " + std::to_string(index) + " " + quoteText(clause) + ": " + clause_problem;
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (!problem.empty()) {
    if (error != nullptr) *error = std::move(problem);
    return std::nullopt;
  }
  return requirement;
}

bool satisfiableTogether(const Requirement& a, const Requirement& b) {
  Interval interval;
  for (const Comparator& c : a.comparators) interval.add(c);
  for (const Comparator& c : b.comparators) interval.add(c);
  return !interval.empty();
}

}  // namespace agileos::modules
