// The strict JSON object reader that the daemon config and its module pool are read with: what
// each read accepts, what it reports, and that finish() catches every member nobody read.
#include "modules/catalog/json_object_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace agileos::modules {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::string refuseX(std::string_view value) { return value == "x" ? "x is refused" : ""; }

TEST(DescribeJson, NamesTheTypeAndShowsTheValueBoundedAndQuoted) {
  EXPECT_EQ(describeJson(json("kv")), "'kv' (a string)");
  EXPECT_EQ(describeJson(json(2)), "2 (a number)");
  EXPECT_EQ(describeJson(json(2.5)), "2.5 (a number)");
  EXPECT_EQ(describeJson(json(true)), "true (a boolean)");
  EXPECT_EQ(describeJson(json(nullptr)), "null");
  EXPECT_EQ(describeJson(json::object()), "an object");
  EXPECT_EQ(describeJson(json::array()), "an array");
  // A value cannot forge a log line, and a long one is cut.
  EXPECT_EQ(describeJson(json("a\nb")), "'a\\x0ab' (a string)");
  EXPECT_EQ(describeJson(json(std::string(100, 'z'))), "'" + std::string(40, 'z') + "'... (a string)");
}

TEST(JoinJsonPath, TheRootHasNoLeadingDot) {
  EXPECT_EQ(joinJsonPath("", "worker"), "worker");
  EXPECT_EQ(joinJsonPath("worker", "args"), "worker.args");
}

TEST(JsonObjectReader, ReadsEachTypeAndReportsNothingForAValidObject) {
  const json object = {{"name", "kv"}, {"count", 3}, {"args", {"a", "b"}}, {"nested", json::object()}};
  std::vector<std::string> errors;
  JsonObjectReader reader(object, "top", &errors);
  std::string name;
  int count = 0;
  std::vector<std::string> args;
  EXPECT_TRUE(reader.readRequiredString("name", &name));
  EXPECT_TRUE(reader.readInteger("count", 1, 10, &count));
  EXPECT_TRUE(reader.readStringArray("args", &args));
  EXPECT_NE(reader.readObject("nested"), nullptr);
  reader.finish();
  EXPECT_THAT(errors, IsEmpty());
  EXPECT_EQ(name, "kv");
  EXPECT_EQ(count, 3);
  EXPECT_THAT(args, ElementsAre("a", "b"));
}

TEST(JsonObjectReader, AbsentMembersAreAnErrorOnlyWhenRequired) {
  const json object = json::object();
  std::vector<std::string> errors;
  JsonObjectReader reader(object, "top", &errors);
  std::string value = "default";
  EXPECT_FALSE(reader.readString("optional", &value));
  EXPECT_FALSE(reader.readRequiredString("required", &value));
  EXPECT_EQ(value, "default");
  EXPECT_EQ(reader.readObject("nested"), nullptr);
  EXPECT_EQ(reader.readArray("list"), nullptr);
  EXPECT_THAT(errors, ElementsAre("top.required: missing (required)"));
}

TEST(JsonObjectReader, WrongTypesAndRefusedValuesLeaveTheOutputAlone) {
  const json object = {{"s", 1}, {"checked", "x"}, {"n", "1"}, {"o", {1}}, {"a", "no"}};
  std::vector<std::string> errors;
  JsonObjectReader reader(object, "", &errors);
  std::string text = "kept";
  int number = 7;
  EXPECT_FALSE(reader.readString("s", &text));
  EXPECT_FALSE(reader.readString("checked", &text, refuseX));
  EXPECT_FALSE(reader.readInteger("n", 0, 9, &number));
  EXPECT_EQ(reader.readObject("o"), nullptr);
  EXPECT_EQ(reader.readArray("a"), nullptr);
  EXPECT_EQ(text, "kept");
  EXPECT_EQ(number, 7);
  EXPECT_THAT(errors, ElementsAre("s: expected a string, got 1 (a number)", "checked: x is refused",
                                  "n: expected an integer in [0, 9], got '1' (a string)",
                                  "o: expected an object, got an array",
                                  "a: expected an array, got 'no' (a string)"));
}

TEST(JsonObjectReader, IntegersOutsideTheRangeAreRefusedUnsignedOnesIncluded) {
  const json object = {{"low", -1}, {"high", 10}, {"huge", std::uint64_t{1} << 63}, {"fraction", 1.5}};
  std::vector<std::string> errors;
  JsonObjectReader reader(object, "w", &errors);
  std::int64_t number = 5;
  EXPECT_FALSE(reader.readInteger("low", 0, 9, &number));
  EXPECT_FALSE(reader.readInteger("high", 0, 9, &number));
  EXPECT_FALSE(reader.readInteger("huge", 0, std::numeric_limits<std::int64_t>::max(), &number));
  EXPECT_FALSE(reader.readInteger("fraction", 0, 9, &number));
  EXPECT_EQ(number, 5);
  EXPECT_THAT(errors,
              ElementsAre("w.low: expected an integer in [0, 9], got -1",
                          "w.high: expected an integer in [0, 9], got 10",
                          "w.huge: expected an integer in [0, 9223372036854775807], got 9223372036854775808",
                          "w.fraction: expected an integer in [0, 9], got 1.5 (a number)"));
}

TEST(JsonObjectReader, OneRefusedArrayItemKeepsTheWholeArrayOutAndNamesEachBadItem) {
  const json object = {{"args", {"ok", 3, "x"}}};
  std::vector<std::string> errors;
  JsonObjectReader reader(object, "worker", &errors);
  std::vector<std::string> args = {"previous"};
  EXPECT_FALSE(reader.readStringArray("args", &args, refuseX));
  EXPECT_THAT(args, ElementsAre("previous"));
  EXPECT_THAT(errors, ElementsAre("worker.args[1]: expected a string, got 3 (a number)",
                                  "worker.args[2]: x is refused"));
}

TEST(JsonObjectReader, FinishReportsEveryMemberNobodyReadNamingTheExpectedKeys) {
  const json object = {{"name", "kv"}, {"nmae", "typo"}, {"extra", 1}};
  std::vector<std::string> errors;
  JsonObjectReader reader(object, "modules[0]", &errors);
  std::string name;
  reader.readRequiredString("name", &name);
  reader.readString("version", &name);
  reader.finish();
  EXPECT_THAT(errors, ElementsAre("modules[0].extra: unknown key (expected one of: name, version)",
                                  "modules[0].nmae: unknown key (expected one of: name, version)"));
}

TEST(JsonObjectReader, ReadValueClaimsAMemberOfAnyType) {
  const json object = {{"anything", {{"x", 1}}}};
  std::vector<std::string> errors;
  JsonObjectReader reader(object, "top", &errors);
  const json* value = reader.readValue("anything");
  ASSERT_NE(value, nullptr);
  EXPECT_TRUE(value->is_object());
  EXPECT_EQ(reader.readValue("absent"), nullptr);
  reader.finish();
  EXPECT_THAT(errors, IsEmpty());
  EXPECT_EQ(reader.childPath("anything"), "top.anything");
}

}  // namespace
}  // namespace agileos::modules
