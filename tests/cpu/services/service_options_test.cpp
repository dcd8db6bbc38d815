// agileos-storage-service's command line (services/storage/service_options.h).
#include "services/storage/service_options.h"

#include <gtest/gtest.h>

namespace agileos::services::storage {
namespace {

bool parse(const std::vector<std::string>& args, ServiceOptions* options, std::string* error) {
  return parseServiceOptions(args, options, error);
}

TEST(StorageServiceOptionsTest, Defaults) {
  ServiceOptions options;
  std::string error;
  ASSERT_TRUE(parse({"--socket", "/run/s.sock", "--root", "/data"}, &options, &error)) << error;
  EXPECT_EQ(options.socket_path, "/run/s.sock");
  EXPECT_EQ(options.root, "/data");
  EXPECT_EQ(options.threads, 4u);
  EXPECT_EQ(options.device, 0);
  EXPECT_EQ(options.buffer_backend, "cuda");
  EXPECT_EQ(options.log_level, "info");
}

TEST(StorageServiceOptionsTest, EveryOptionInBothForms) {
  ServiceOptions options;
  std::string error;
  ASSERT_TRUE(parse({"--socket=/s", "--root", "/r", "--threads=8", "--device", "3", "--buffer-backend=host",
                     "--log-level", "debug"},
                    &options, &error))
      << error;
  EXPECT_EQ(options.threads, 8u);
  EXPECT_EQ(options.device, 3);
  EXPECT_EQ(options.buffer_backend, "host");
  EXPECT_EQ(options.log_level, "debug");
}

TEST(StorageServiceOptionsTest, RefusesBadCommandLines) {
  const std::vector<std::vector<std::string>> bad = {
      {},
      {"--socket", "/s"},
      {"--root", "/r"},
      {"--socket", "/s", "--root"},
      {"--socket", "/s", "--root", "/r", "--threads", "0"},
      {"--socket", "/s", "--root", "/r", "--threads", "65"},
      {"--socket", "/s", "--root", "/r", "--threads", "4x"},
      {"--socket", "/s", "--root", "/r", "--threads", "-1"},
      {"--socket", "/s", "--root", "/r", "--device", "-1"},
      {"--socket", "/s", "--root", "/r", "--buffer-backend", "gpu"},
      {"--socket", "/s", "--root", "/r", "--log-level", "loud"},
      {"--socket", "/s", "--root", "/r", "--socket", "/t"},
      {"--socket", "/s", "--root", "/r", "--bogus"},
      {"--socket", "/s", "--root", "/r", "extra"},
  };
  for (const auto& args : bad) {
    ServiceOptions options;
    std::string error;
    EXPECT_FALSE(parse(args, &options, &error)) << ::testing::PrintToString(args);
    EXPECT_FALSE(error.empty());
  }
}

TEST(StorageServiceOptionsTest, HelpNeedsNothingElse) {
  ServiceOptions options;
  std::string error;
  ASSERT_TRUE(parse({"--help"}, &options, &error)) << error;
  EXPECT_TRUE(options.help);
}

}  // namespace
}  // namespace agileos::services::storage
