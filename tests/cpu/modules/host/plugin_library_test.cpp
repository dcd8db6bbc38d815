// PluginLibrary::open with real shared libraries built next to this test: the good plugin
// loads, each broken one is refused with a reason naming its path and its problem.
#include "modules/host/plugin_library.h"

#include <gtest/gtest.h>

#include <string>

namespace agileos::modules {
namespace {

std::string refusalOf(const std::string& path) {
  std::string error;
  auto library = PluginLibrary::open(path, &error);
  EXPECT_EQ(library, nullptr);
  EXPECT_NE(error.find("'" + path + "'"), std::string::npos) << error;
  return error;
}

TEST(PluginLibrary, LoadsAWellFormedPlugin) {
  std::string error;
  auto library = PluginLibrary::open(AGILEOS_TEST_COUNTER_PLUGIN, &error);
  ASSERT_NE(library, nullptr) << error;
  EXPECT_EQ(library->path(), AGILEOS_TEST_COUNTER_PLUGIN);
  ASSERT_EQ(library->commands().size(), 8u);
  ASSERT_NE(library->findCommand(2), nullptr);
  EXPECT_EQ(library->findCommand(2)->name, "add");
  EXPECT_EQ(library->findCommand(2)->min_request_bytes, 8u);
  EXPECT_EQ(library->findCommand(1)->max_request_bytes, 4096u);
  EXPECT_EQ(library->findCommand(99), nullptr);
}

TEST(PluginLibrary, RefusesAnotherAbiVersion) {
  EXPECT_NE(refusalOf(AGILEOS_TEST_BAD_ABI_PLUGIN).find("module ABI version 2"), std::string::npos);
}

TEST(PluginLibrary, RefusesAMissingExport) {
  EXPECT_NE(refusalOf(AGILEOS_TEST_NO_CONTROL_PLUGIN).find("does not export host_module_control"),
            std::string::npos);
}

TEST(PluginLibrary, RefusesAMalformedCommandTable) {
  EXPECT_NE(refusalOf(AGILEOS_TEST_DUPLICATE_IDS_PLUGIN).find("repeats an id"), std::string::npos);
}

TEST(PluginLibrary, RefusesAPathThatIsNoLibrary) {
  EXPECT_NE(refusalOf("/nonexistent/agileos-module.so").find("dlopen failed"), std::string::npos);
}

}  // namespace
}  // namespace agileos::modules
