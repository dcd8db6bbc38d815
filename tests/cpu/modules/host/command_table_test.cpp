// copyCommandTable: the checks on a plugin's command table at load.
#include "modules/host/command_table.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace agileos::modules {
namespace {

std::string problemOf(const std::vector<agileos_module_command>& table) {
  std::string problem;
  EXPECT_FALSE(copyCommandTable(table.data(), static_cast<std::uint32_t>(table.size()), &problem));
  return problem;
}

TEST(CommandTable, CopiesAValidTable) {
  const std::vector<agileos_module_command> table = {{7, "echo", 0, 4096, 4096}, {9, "add", 8, 8, 8}};
  std::string problem;
  auto copied = copyCommandTable(table.data(), 2, &problem);
  ASSERT_TRUE(copied) << problem;
  ASSERT_EQ(copied->size(), 2u);
  EXPECT_EQ((*copied)[0].name, "echo");
  EXPECT_EQ((*copied)[1].min_request_bytes, 8u);
  EXPECT_EQ(findCommand(*copied, 9)->name, "add");
  EXPECT_EQ(findCommand(*copied, 8), nullptr);
}

TEST(CommandTable, AcceptsTheLimits) {
  const std::string longest(AGILEOS_MODULE_MAX_COMMAND_NAME, 'x');
  std::vector<agileos_module_command> table;
  for (std::uint32_t i = 0; i < AGILEOS_MODULE_MAX_COMMANDS; ++i) {
    table.push_back(
        {i, longest.c_str(), 0, AGILEOS_MODULE_MAX_PAYLOAD_BYTES, AGILEOS_MODULE_MAX_PAYLOAD_BYTES});
  }
  std::string problem;
  EXPECT_TRUE(copyCommandTable(table.data(), static_cast<std::uint32_t>(table.size()), &problem)) << problem;
}

TEST(CommandTable, RefusesANullTable) {
  std::string problem;
  EXPECT_FALSE(copyCommandTable(nullptr, 0, &problem));
  EXPECT_NE(problem.find("null command table"), std::string::npos) << problem;
}

TEST(CommandTable, RefusesTooManyCommands) {
  std::vector<agileos_module_command> table;
  for (std::uint32_t i = 0; i <= AGILEOS_MODULE_MAX_COMMANDS; ++i) table.push_back({i, "c", 0, 0, 0});
  EXPECT_NE(problemOf(table).find("257 commands"), std::string::npos);
}

TEST(CommandTable, RefusesDuplicateIds) {
  EXPECT_NE(problemOf({{1, "a", 0, 0, 0}, {1, "b", 0, 0, 0}}).find("repeats an id"), std::string::npos);
}

TEST(CommandTable, RefusesBadNames) {
  EXPECT_NE(problemOf({{1, nullptr, 0, 0, 0}}).find("no name"), std::string::npos);
  EXPECT_NE(problemOf({{1, "", 0, 0, 0}}).find("empty name"), std::string::npos);
  const std::string too_long(AGILEOS_MODULE_MAX_COMMAND_NAME + 1, 'x');
  EXPECT_NE(problemOf({{1, too_long.c_str(), 0, 0, 0}}).find("longer than 63"), std::string::npos);
}

TEST(CommandTable, RefusesBadSizes) {
  EXPECT_NE(problemOf({{1, "a", 9, 8, 0}}).find("min_request_bytes 9 above"), std::string::npos);
  EXPECT_NE(problemOf({{1, "a", 0, AGILEOS_MODULE_MAX_PAYLOAD_BYTES + 1, 0}}).find("max_request_bytes"),
            std::string::npos);
  EXPECT_NE(problemOf({{1, "a", 0, 0, AGILEOS_MODULE_MAX_PAYLOAD_BYTES + 1}}).find("max_response_bytes"),
            std::string::npos);
}

}  // namespace
}  // namespace agileos::modules
