// The CDI spec agileosd prints (scheduler/cdi_spec.h): what it adds to a container and what it
// must never add (device nodes, hooks, the library path), and the command line around it.
#include "scheduler/cdi_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "scheduler/command_line.h"
#include "tests/cpu/support/temp_dir.h"

namespace agileos::scheduler {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Json = nlohmann::json;
using agileos::test_support::TempDir;

void touch(const std::string& path) { std::ofstream(path) << "x"; }

// A shim directory with the given files.
void makeShims(const TempDir& dir, std::initializer_list<const char*> names) {
  for (const char* name : names) touch(dir.file(name));
}

CdiSpecInputs defaultInputs() {
  return {"/usr/lib/agileos/shim",
          {"libagileos_cudart.so", "libagileos_cuda.so", "libagileos_cufft.so"},
          "/run/agileos/agileosd.sock",
          "/run/agileos"};
}

TEST(CdiShims, RuntimeAndDriverShimFirstThenTheLibraryShimsPresent) {
  TempDir dir("agileos-cdi");
  makeShims(dir,
            {"libagileos_nvrtc.so", "libagileos_cuda.so", "libagileos_client.so", "libagileos_cudart.so"});
  std::vector<std::string> names;
  std::string error;
  ASSERT_TRUE(findPreloadedShims(dir.path(), &names, &error)) << error;
  EXPECT_THAT(names, ElementsAre("libagileos_cudart.so", "libagileos_cuda.so", "libagileos_nvrtc.so"));
  touch(dir.file("libagileos_cufft.so"));
  ASSERT_TRUE(findPreloadedShims(dir.path(), &names, &error)) << error;
  EXPECT_THAT(names, ElementsAre("libagileos_cudart.so", "libagileos_cuda.so", "libagileos_cufft.so",
                                 "libagileos_nvrtc.so"));
}

TEST(CdiShims, RefusesADirectoryWithoutTheRequiredShimsOrTheSessionLibrary) {
  std::vector<std::string> names;
  std::string error;
  TempDir no_driver("agileos-cdi");
  makeShims(no_driver, {"libagileos_cudart.so", "libagileos_client.so"});
  EXPECT_FALSE(findPreloadedShims(no_driver.path(), &names, &error));
  EXPECT_THAT(error, HasSubstr("libagileos_cuda.so is missing"));
  TempDir no_session("agileos-cdi");
  makeShims(no_session, {"libagileos_cudart.so", "libagileos_cuda.so"});
  EXPECT_FALSE(findPreloadedShims(no_session.path(), &names, &error));
  EXPECT_THAT(error, HasSubstr("libagileos_client.so is missing"));
}

TEST(CdiSocketDirectories, OneMountWhereOneDirectoryHoldsTheOther) {
  EXPECT_THAT(cdiSocketDirectories("/run/agileos/agileosd.sock", "/run/agileos"),
              ElementsAre("/run/agileos"));
  EXPECT_THAT(cdiSocketDirectories("/run/agileos/agileosd.sock", "/run/agileos/"),
              ElementsAre("/run/agileos"));
  EXPECT_THAT(cdiSocketDirectories("/run/agileos/agileosd.sock", "/run/agileos/workers"),
              ElementsAre("/run/agileos"));
  EXPECT_THAT(cdiSocketDirectories("/run/agileos/client/agileosd.sock", "/run/agileos"),
              ElementsAre("/run/agileos"));
  // A common prefix is not containment.
  EXPECT_THAT(cdiSocketDirectories("/run/agileos/agileosd.sock", "/run/agileos-workers"),
              ElementsAre("/run/agileos", "/run/agileos-workers"));
}

TEST(CdiSpec, KindVersionAndDevices) {
  const Json spec = Json::parse(cdiSpecText(defaultInputs()));
  EXPECT_EQ(spec.at("cdiVersion"), "0.5.0");
  EXPECT_EQ(spec.at("kind"), "agileos.io/gpu");
  // The CDI kind is vendor/class: a domain-like vendor and a simple class.
  // (gtest's POSIX regular expressions: std::regex trips GCC 12's maybe-uninitialized under ASan.)
  EXPECT_THAT(spec.at("kind").get<std::string>(),
              ::testing::MatchesRegex("[a-z0-9]([a-z0-9.-]*[a-z0-9])?/[a-zA-Z0-9][a-zA-Z0-9_.-]*"));
  std::vector<std::string> names;
  for (const Json& device : spec.at("devices")) names.push_back(device.at("name"));
  EXPECT_THAT(names, ElementsAre("0", "all"));
}

TEST(CdiSpec, EveryDeviceSetsThePreloadAndTheSocketAndNothingElse) {
  const Json spec = Json::parse(cdiSpecText(defaultInputs()));
  for (const Json& device : spec.at("devices")) {
    const Json& edits = device.at("containerEdits");
    EXPECT_EQ(edits.size(), 1u) << edits.dump();  // env only: no device nodes, mounts or hooks
    EXPECT_THAT(edits.at("env").get<std::vector<std::string>>(),
                ElementsAre("LD_PRELOAD=/opt/agileos/shim/libagileos_cudart.so:/opt/agileos/shim/"
                            "libagileos_cuda.so:/opt/agileos/shim/libagileos_cufft.so",
                            "AGILEOS_SOCKET=/run/agileos/agileosd.sock"));
  }
}

TEST(CdiSpec, MountsTheShimsAndTheSocketsReadOnlyOnce) {
  CdiSpecInputs inputs = defaultInputs();
  inputs.runtime_dir = "/run/agileos-workers";
  const Json spec = Json::parse(cdiSpecText(inputs));
  const Json& edits = spec.at("containerEdits");
  EXPECT_EQ(edits.size(), 1u) << edits.dump();  // mounts only
  const Json& mounts = edits.at("mounts");
  ASSERT_EQ(mounts.size(), 3u) << mounts.dump();
  EXPECT_EQ(mounts[0].at("hostPath"), "/usr/lib/agileos/shim");
  EXPECT_EQ(mounts[0].at("containerPath"), "/opt/agileos/shim");
  EXPECT_EQ(mounts[1].at("hostPath"), "/run/agileos");
  EXPECT_EQ(mounts[1].at("containerPath"), "/run/agileos");
  EXPECT_EQ(mounts[2].at("hostPath"), "/run/agileos-workers");
  EXPECT_EQ(mounts[2].at("containerPath"), "/run/agileos-workers");
  for (const Json& mount : mounts) {
    EXPECT_EQ(mount.at("type"), "bind");
    const auto options = mount.at("options").get<std::vector<std::string>>();
    EXPECT_THAT(options, ::testing::IsSupersetOf({"ro", "nosuid", "nodev", "rbind"}));
    // The shims must stay executable (the loader maps them so); the sockets need not.
    const bool is_shims = mount.at("containerPath") == "/opt/agileos/shim";
    EXPECT_EQ(std::count(options.begin(), options.end(), "noexec"), is_shims ? 0 : 1) << mount.dump();
  }
}

TEST(CdiSpec, NeverANodeAHookOrALibraryPath) {
  const std::string text = cdiSpecText(defaultInputs());
  EXPECT_THAT(text, ::testing::Not(HasSubstr("deviceNodes")));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("hooks")));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("/dev/")));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("LD_LIBRARY_PATH")));
  EXPECT_EQ(text.back(), '\n');
}

TEST(CdiSpec, InstalledShimDirIsBesideBindir) {
  const std::string dir = installedShimDir("/opt/agileos/bin");
  EXPECT_EQ(dir.rfind("/opt/agileos/", 0), 0u) << dir;
  EXPECT_THAT(dir, ::testing::EndsWith("/agileos/shim"));
  EXPECT_THAT(dir, ::testing::Not(HasSubstr("..")));
}

TEST(CdiCommandLine, ParsesTheSpecOptions) {
  CommandLine cl;
  std::string error;
  ASSERT_TRUE(parseCommandLine({"--cdi-spec", "--cdi-shim-dir=/x/shim"}, &cl, &error)) << error;
  EXPECT_TRUE(cl.cdi_spec);
  EXPECT_EQ(cl.cdi_shim_dir, "/x/shim");
  EXPECT_FALSE(parseCommandLine({"--cdi-shim-dir", "/x"}, &cl, &error));
  EXPECT_THAT(error, HasSubstr("needs --cdi-spec"));
  EXPECT_FALSE(parseCommandLine({"--cdi-spec", "--check-config"}, &cl, &error));
  EXPECT_FALSE(parseCommandLine({"--cdi-spec=yes"}, &cl, &error));
  EXPECT_THAT(error, HasSubstr("takes no value"));
}

// Runs agileosd with `args`; its stdout, and its exit status in *status.
std::string runAgileosd(const std::string& args, int* status) {
  const std::string command = std::string(AGILEOSD_BINARY) + " " + args + " 2>/dev/null";
  FILE* pipe = ::popen(command.c_str(), "r");
  std::string out;
  std::array<char, 4096> buffer{};
  for (std::size_t n; (n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0;)
    out.append(buffer.data(), n);
  const int wait_status = ::pclose(pipe);
  *status = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
  return out;
}

TEST(CdiCommandLine, AgileosdPrintsTheSpecForItsConfiguration) {
  TempDir dir("agileos-cdi");
  std::filesystem::create_directory(dir.file("shim"));
  for (const char* name : {"libagileos_cudart.so", "libagileos_cuda.so", "libagileos_client.so"}) {
    touch(dir.file("shim/") + name);
  }
  std::ofstream(dir.file("config.json"))
      << R"({"socket_path": "/srv/agileos/s.sock", "runtime_dir": "/srv/w"})";
  int status = 0;
  const std::string out = runAgileosd(
      "--config " + dir.file("config.json") + " --cdi-spec --cdi-shim-dir " + dir.file("shim/../shim"),
      &status);
  ASSERT_EQ(status, 0) << out;
  const Json spec = Json::parse(out);
  const Json& mounts = spec.at("containerEdits").at("mounts");
  ASSERT_EQ(mounts.size(), 3u);
  EXPECT_EQ(mounts[0].at("hostPath"), dir.file("shim"));  // resolved
  EXPECT_EQ(mounts[1].at("hostPath"), "/srv/agileos");
  EXPECT_EQ(mounts[2].at("hostPath"), "/srv/w");
  EXPECT_THAT(spec.at("devices")[0].at("containerEdits").at("env")[1], "AGILEOS_SOCKET=/srv/agileos/s.sock");
  // --socket overrides the configuration here too.
  const Json overridden =
      Json::parse(runAgileosd("--config " + dir.file("config.json") +
                                  " --socket /tmp/o.sock --cdi-spec --cdi-shim-dir " + dir.file("shim"),
                              &status));
  EXPECT_EQ(overridden.at("devices")[0].at("containerEdits").at("env")[1], "AGILEOS_SOCKET=/tmp/o.sock");

  runAgileosd("--cdi-spec --cdi-shim-dir " + dir.file("missing"), &status);
  EXPECT_EQ(status, 1);
  std::filesystem::remove(dir.file("shim/libagileos_cuda.so"));
  runAgileosd("--cdi-spec --cdi-shim-dir " + dir.file("shim"), &status);
  EXPECT_EQ(status, 1);
}

}  // namespace
}  // namespace agileos::scheduler
