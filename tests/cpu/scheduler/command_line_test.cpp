#include "scheduler/command_line.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "scheduler/runtime_files.h"
#include "tests/cpu/scheduler/test_support.h"

namespace agileos::scheduler {
namespace {

using ::testing::HasSubstr;

TEST(CommandLine, ParsesBothOptionForms) {
  CommandLine cl;
  std::string error;
  ASSERT_TRUE(parseCommandLine(
      {"--config", "/etc/a.json", "--socket=/tmp/s.sock", "--log-level", "debug", "--check-config"}, &cl,
      &error))
      << error;
  EXPECT_EQ(cl.config_path, "/etc/a.json");
  EXPECT_EQ(cl.socket_path, "/tmp/s.sock");
  EXPECT_EQ(cl.log_level, "debug");
  EXPECT_TRUE(cl.check_config);
  EXPECT_FALSE(cl.help);
}

TEST(CommandLine, NoArgumentsMeansDefaults) {
  CommandLine cl;
  std::string error;
  ASSERT_TRUE(parseCommandLine({}, &cl, &error));
  EXPECT_FALSE(cl.config_path.has_value());
  EXPECT_FALSE(cl.check_config);
}

TEST(CommandLine, RejectsBadArguments) {
  CommandLine cl;
  std::string error;
  EXPECT_FALSE(parseCommandLine({"--verbose"}, &cl, &error));
  EXPECT_THAT(error, HasSubstr("unknown option '--verbose'"));
  EXPECT_FALSE(parseCommandLine({"--config"}, &cl, &error));
  EXPECT_THAT(error, HasSubstr("--config needs a value"));
  EXPECT_FALSE(parseCommandLine({"--socket=/a", "--socket", "/b"}, &cl, &error));
  EXPECT_THAT(error, HasSubstr("--socket given more than once"));
  EXPECT_FALSE(parseCommandLine({"--check-config=yes"}, &cl, &error));
  EXPECT_THAT(error, HasSubstr("--check-config takes no value"));
}

TEST(CommandLine, OverridesWinOverTheConfigFile) {
  const ConfigResult file = parseDaemonConfig(R"({"socket_path": "/a/file.sock", "log_level": "warn"})");
  ASSERT_TRUE(file.ok());
  DaemonConfig config = *file.config;
  CommandLine cl;
  std::string error;
  ASSERT_TRUE(parseCommandLine({"--socket", "/b/cli.sock", "--log-level=trace"}, &cl, &error));
  EXPECT_TRUE(applyOverrides(cl, &config).empty());
  EXPECT_EQ(config.socket_path, "/b/cli.sock");
  EXPECT_EQ(config.log_level, "trace");
}

TEST(CommandLine, OverridesAreValidated) {
  DaemonConfig config;
  CommandLine cl;
  std::string error;
  ASSERT_TRUE(parseCommandLine({"--socket", "relative.sock", "--log-level=loud"}, &cl, &error));
  const std::vector<std::string> errors = applyOverrides(cl, &config);
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_THAT(errors[0], HasSubstr("--socket: expected an absolute path"));
  EXPECT_THAT(errors[1], HasSubstr("--log-level: expected one of trace|debug|info|warn|error"));
  EXPECT_EQ(config.socket_path, DaemonConfig{}.socket_path);
}

TEST(RuntimeFiles, RelativeWorkerExecutableIsFoundNextToTheDaemon) {
  EXPECT_EQ(resolveExecutable("agileos-worker", "/opt/agileos/bin"), "/opt/agileos/bin/agileos-worker");
  EXPECT_EQ(resolveExecutable("../libexec/w", "/opt/agileos/bin"), "/opt/agileos/libexec/w");
  EXPECT_EQ(resolveExecutable("/usr/bin/w", "/opt/agileos/bin"), "/usr/bin/w");
}

// agileosd itself, as a subprocess: --check-config exits 0 or 1 with the errors on stderr.
TEST(AgileosdCheckConfig, AcceptsAValidConfigAndPrintsTheEffectiveOne) {
  testing::TempDir dir;
  testing::writeFile(dir.file("ok.json"), std::string(R"({"worker": {"executable": ")") +
                                              testing::kMockWorker + R"(", "max_workers": 3}})");
  const testing::ProcessResult run = testing::runProcess(
      {testing::kAgileosd, "--config", dir.file("ok.json"), "--log-level", "debug", "--check-config"});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("\"max_workers\": 3"));
  EXPECT_THAT(run.output, HasSubstr("\"log_level\": \"debug\""));  // the override shows
  EXPECT_THAT(run.output, HasSubstr("config OK"));
}

TEST(AgileosdCheckConfig, RejectsAnInvalidConfigNamingTheKey) {
  testing::TempDir dir;
  testing::writeFile(dir.file("bad.json"), R"({"worker": {"max_workers": "four"}})");
  const testing::ProcessResult run =
      testing::runProcess({testing::kAgileosd, "--config", dir.file("bad.json"), "--check-config"});
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output,
              HasSubstr("worker.max_workers: expected an integer in [1, 1024], got 'four' (a string)"));
}

TEST(AgileosdCheckConfig, RejectsAMissingWorkerBinary) {
  testing::TempDir dir;
  testing::writeFile(dir.file("c.json"), R"({"worker": {"executable": "/nonexistent/agileos-worker"}})");
  const testing::ProcessResult run =
      testing::runProcess({testing::kAgileosd, "--config", dir.file("c.json"), "--check-config"});
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output,
              HasSubstr("worker.executable: /nonexistent/agileos-worker is not an executable file"));
}

TEST(AgileosdCheckConfig, BadCommandLineExitsTwo) {
  const testing::ProcessResult run = testing::runProcess({testing::kAgileosd, "--frobnicate"});
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_THAT(run.output, HasSubstr("unknown option '--frobnicate'"));
  EXPECT_THAT(run.output, HasSubstr("usage: agileosd"));
}

}  // namespace
}  // namespace agileos::scheduler
