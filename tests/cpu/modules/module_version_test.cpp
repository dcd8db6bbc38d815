// Versions and requirements (modules/catalog/module_version.h): strict parsing, every operator,
// the ^0.x and ~ edges, and errors that name the bad clause.
#include "modules/catalog/module_version.h"

#include <gtest/gtest.h>

namespace agileos::modules {
namespace {

Version v(std::string_view text) {
  std::string error;
  const std::optional<Version> version = parseVersion(text, &error);
  EXPECT_TRUE(version.has_value()) << text << ": " << error;
  return version.value_or(Version{});
}

std::string versionError(std::string_view text) {
  std::string error;
  EXPECT_FALSE(parseVersion(text, &error).has_value()) << text;
  return error;
}

Requirement req(std::string_view text) {
  std::string error;
  const std::optional<Requirement> requirement = parseRequirement(text, &error);
  EXPECT_TRUE(requirement.has_value()) << text << ": " << error;
  return requirement.value_or(Requirement{});
}

std::string requirementError(std::string_view text) {
  std::string error;
  EXPECT_FALSE(parseRequirement(text, &error).has_value()) << text;
  return error;
}

TEST(ModuleVersion, ParsesFullVersions) {
  EXPECT_EQ(v("1.2.3"), (Version{1, 2, 3}));
  EXPECT_EQ(v("0.0.0"), (Version{0, 0, 0}));
  EXPECT_EQ(v("10.20.30"), (Version{10, 20, 30}));
  EXPECT_EQ(v("2147483647.0.2147483647"), (Version{kMaxVersionPart, 0, kMaxVersionPart}));
  EXPECT_EQ(v("1.2.3").toString(), "1.2.3");
}

TEST(ModuleVersion, RefusesMalformedVersions) {
  EXPECT_EQ(versionError(""), "invalid version '': empty version");
  EXPECT_EQ(versionError("1.2.x"), "invalid version '1.2.x': part 3 'x' is not a non-negative integer");
  EXPECT_EQ(versionError("01.2.3"), "invalid version '01.2.3': part 1 '01' has a leading zero");
  EXPECT_EQ(versionError("1.00.3"), "invalid version '1.00.3': part 2 '00' has a leading zero");
  EXPECT_EQ(versionError("1..2"), "invalid version '1..2': part 2 is empty");
  EXPECT_EQ(versionError("1.2."), "invalid version '1.2.': part 3 is empty");
  EXPECT_EQ(versionError("1.2"), "invalid version '1.2': expected MAJOR.MINOR.PATCH, got 2 parts");
  EXPECT_EQ(versionError("1"), "invalid version '1': expected MAJOR.MINOR.PATCH, got 1 part");
  EXPECT_EQ(versionError("1.2.3.4"),
            "invalid version '1.2.3.4': too many parts in '1.2.3.4' (expected MAJOR.MINOR.PATCH)");
  EXPECT_EQ(versionError("1.2.3-beta"),
            "invalid version '1.2.3-beta': pre-release versions are not supported ('-beta')");
  EXPECT_EQ(versionError("1.2.3+build.5"),
            "invalid version '1.2.3+build.5': build metadata is not supported ('+build.5')");
  EXPECT_EQ(versionError("+1.2.3"), "invalid version '+1.2.3': a version starts with a digit, got '+1.2.3'");
  EXPECT_EQ(versionError("-1.2.3"), "invalid version '-1.2.3': a version starts with a digit, got '-1.2.3'");
  EXPECT_EQ(versionError("v1.2.3"), "invalid version 'v1.2.3': a version starts with a digit, got 'v1.2.3'");
  EXPECT_EQ(versionError(" 1.2.3"), "invalid version ' 1.2.3': a version starts with a digit, got ' 1.2.3'");
  EXPECT_EQ(versionError("1.2.3 "), "invalid version '1.2.3 ': part 3 '3 ' is not a non-negative integer");
  EXPECT_EQ(versionError("2147483648.0.0"),
            "invalid version '2147483648.0.0': part 1 '2147483648' exceeds 2147483647");
  EXPECT_EQ(versionError("1.2.99999999999999999999999999"),
            "invalid version '1.2.99999999999999999999999999': part 3 '99999999999999999999999999' exceeds "
            "2147483647");
  // Control bytes are quoted, never copied into the message.
  EXPECT_EQ(versionError(std::string_view("1.\n\0.3", 6)),
            "invalid version '1.\\x0a\\x00.3': part 2 '\\x0a\\x00' is not a non-negative integer");
}

TEST(ModuleVersion, ComparesLexicographically) {
  EXPECT_LT(v("1.2.3"), v("1.2.4"));
  EXPECT_LT(v("1.2.9"), v("1.10.0"));
  EXPECT_LT(v("1.99.99"), v("2.0.0"));
  EXPECT_EQ(v("3.0.0"), v("3.0.0"));
  EXPECT_GT(v("0.10.0"), v("0.9.9"));
}

TEST(ModuleVersion, ComparisonOperators) {
  EXPECT_TRUE(req("=1.2.3").matches(v("1.2.3")));
  EXPECT_FALSE(req("=1.2.3").matches(v("1.2.4")));
  EXPECT_TRUE(req("1.2.3").matches(v("1.2.3")));  // bare = "="
  EXPECT_FALSE(req("1.2.3").matches(v("1.2.2")));
  EXPECT_TRUE(req("=1.2").matches(v("1.2.0")));  // missing parts are 0
  EXPECT_FALSE(req("=1.2").matches(v("1.2.1")));

  EXPECT_TRUE(req(">=1.2").matches(v("1.2.0")));
  EXPECT_TRUE(req(">=1.2").matches(v("7.0.0")));
  EXPECT_FALSE(req(">=1.2").matches(v("1.1.99")));

  EXPECT_TRUE(req(">1.2.3").matches(v("1.2.4")));
  EXPECT_FALSE(req(">1.2.3").matches(v("1.2.3")));

  EXPECT_TRUE(req("<=2").matches(v("2.0.0")));
  EXPECT_FALSE(req("<=2").matches(v("2.0.1")));

  EXPECT_TRUE(req("<2.0.0").matches(v("1.999.999")));
  EXPECT_FALSE(req("<2.0.0").matches(v("2.0.0")));

  EXPECT_TRUE(req("*").matches(v("0.0.0")));
  EXPECT_TRUE(req("*").matches(v("2147483647.2147483647.2147483647")));
  EXPECT_TRUE(req("*").isAny());
  EXPECT_TRUE(Requirement{}.matches(v("5.6.7")));
}

TEST(ModuleVersion, CaretAndTilde) {
  const Requirement caret = req("^1.2");  // >=1.2.0 <2.0.0
  EXPECT_FALSE(caret.matches(v("1.1.9")));
  EXPECT_TRUE(caret.matches(v("1.2.0")));
  EXPECT_TRUE(caret.matches(v("1.99.0")));
  EXPECT_FALSE(caret.matches(v("2.0.0")));

  const Requirement caret_zero = req("^0.3.1");  // >=0.3.1 <0.4.0
  EXPECT_FALSE(caret_zero.matches(v("0.3.0")));
  EXPECT_TRUE(caret_zero.matches(v("0.3.1")));
  EXPECT_TRUE(caret_zero.matches(v("0.3.99")));
  EXPECT_FALSE(caret_zero.matches(v("0.4.0")));
  EXPECT_FALSE(caret_zero.matches(v("1.0.0")));

  const Requirement caret_zero_zero = req("^0.0.3");  // the ^0.y.z rule with y = 0: <0.1.0
  EXPECT_FALSE(caret_zero_zero.matches(v("0.0.2")));
  EXPECT_TRUE(caret_zero_zero.matches(v("0.0.9")));
  EXPECT_FALSE(caret_zero_zero.matches(v("0.1.0")));

  EXPECT_TRUE(req("^0").matches(v("0.0.5")));  // ^0.0.0
  EXPECT_FALSE(req("^0").matches(v("0.1.0")));

  const Requirement tilde = req("~1.2");  // >=1.2.0 <1.3.0
  EXPECT_FALSE(tilde.matches(v("1.1.9")));
  EXPECT_TRUE(tilde.matches(v("1.2.0")));
  EXPECT_TRUE(tilde.matches(v("1.2.77")));
  EXPECT_FALSE(tilde.matches(v("1.3.0")));

  const Requirement tilde_patch = req("~1.2.3");  // >=1.2.3 <1.3.0
  EXPECT_FALSE(tilde_patch.matches(v("1.2.2")));
  EXPECT_TRUE(tilde_patch.matches(v("1.2.3")));
  EXPECT_FALSE(tilde_patch.matches(v("1.3.0")));

  EXPECT_TRUE(req("~1").matches(v("1.0.9")));  // ~1.0.0
  EXPECT_FALSE(req("~1").matches(v("1.1.0")));
  EXPECT_TRUE(req("~0.0").matches(v("0.0.4")));
  EXPECT_FALSE(req("~0.0").matches(v("0.1.0")));

  // The upper bound of the largest versions does not overflow.
  EXPECT_TRUE(req("^2147483647").matches(v("2147483647.5.0")));
  EXPECT_TRUE(req("~0.2147483647").matches(v("0.2147483647.2147483647")));
  EXPECT_TRUE(req("^0.2147483647").matches(v("0.2147483647.1")));
}

TEST(ModuleVersion, ClausesCombineWithCommasAndSpaces) {
  const Requirement range = req(" >= 1.2 , < 1.5.0 ");
  EXPECT_EQ(range.text, ">= 1.2 , < 1.5.0");
  EXPECT_FALSE(range.matches(v("1.1.0")));
  EXPECT_TRUE(range.matches(v("1.4.9")));
  EXPECT_FALSE(range.matches(v("1.5.0")));
  EXPECT_TRUE(req("*, >=1").matches(v("1.0.0")));
  EXPECT_FALSE(req("*, >=1").matches(v("0.9.0")));
}

TEST(ModuleVersion, RequirementErrorsNameTheClause) {
  EXPECT_EQ(requirementError(""), "empty requirement");
  EXPECT_EQ(requirementError("   "), "empty requirement");
  EXPECT_EQ(requirementError(">=x"), "clause 1 '>=x': a version starts with a digit, got 'x'");
  EXPECT_EQ(requirementError(">=1.0, <2.x"), "clause 2 '<2.x': part 2 'x' is not a non-negative integer");
  EXPECT_EQ(requirementError(">=1,,<2"), "clause 2 '': empty clause");
  EXPECT_EQ(requirementError(">=1,"), "clause 2 '': empty clause");
  EXPECT_EQ(requirementError("!=1.2"), "clause 1 '!=1.2': a version starts with a digit, got '!=1.2'");
  EXPECT_EQ(requirementError("==1.2"), "clause 1 '==1.2': a version starts with a digit, got '=1.2'");
  EXPECT_EQ(requirementError("~>1.2"), "clause 1 '~>1.2': a version starts with a digit, got '>1.2'");
  EXPECT_EQ(requirementError("^"), "clause 1 '^': empty version");
  EXPECT_EQ(requirementError("1.*"), "clause 1 '1.*': part 2 '*' is not a non-negative integer");
  EXPECT_EQ(requirementError(">=1.2.3-rc1"),
            "clause 1 '>=1.2.3-rc1': pre-release versions are not supported ('-rc1')");
  EXPECT_EQ(requirementError("^01.2"), "clause 1 '^01.2': part 1 '01' has a leading zero");
  EXPECT_EQ(requirementError("<1.2.3.4"),
            "clause 1 '<1.2.3.4': too many parts in '1.2.3.4' (expected MAJOR.MINOR.PATCH)");
  EXPECT_EQ(requirementError("^2147483648"),
            "clause 1 '^2147483648': part 1 '2147483648' exceeds 2147483647");
}

TEST(ModuleVersion, SatisfiableTogether) {
  EXPECT_TRUE(satisfiableTogether(req("^1.2"), req(">=1.4")));
  EXPECT_TRUE(satisfiableTogether(req("*"), req("=3.0.0")));
  EXPECT_TRUE(satisfiableTogether(req("<=2"), req(">=2")));  // exactly 2.0.0
  EXPECT_FALSE(satisfiableTogether(req("<2"), req(">=2")));
  EXPECT_FALSE(satisfiableTogether(req("<=2"), req(">2")));
  EXPECT_FALSE(satisfiableTogether(req("=1.0.0"), req("=2.0.0")));
  EXPECT_FALSE(satisfiableTogether(req("^1"), req("^2")));
  EXPECT_FALSE(satisfiableTogether(req("~1.2"), req(">=1.3")));
  EXPECT_FALSE(satisfiableTogether(req("<0.0.0"), req("*")));
  EXPECT_TRUE(satisfiableTogether(req("=1.2.3"), req("1.2.3")));
}

}  // namespace
}  // namespace agileos::modules
