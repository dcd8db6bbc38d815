// The admin socket's directory (scheduler/admin_service.h): a directory of its own is tightened to
// 0750; a shared one (a configured path in /run or /tmp, say) is left as it is.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "scheduler/admin_service.h"
#include "tests/cpu/scheduler/test_support.h"

namespace agileos::scheduler {
namespace {

using testing::TempDir;

class NoBackend final : public AdminBackend {
 public:
  agileos::v1::admin::Status status() const override { return {}; }
  bool drainWorker(std::uint64_t, const std::string&, std::string*) override { return false; }
  bool endSession(std::uint64_t, const std::string&, std::string*) override { return false; }
  bool reloadModules(std::string*) override { return false; }
  std::string metricsText() const override { return ""; }
};

mode_t modeOf(const std::string& path) {
  struct stat info {};
  EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
  return info.st_mode & 07777;
}

TEST(AdminServer, ADirectoryOfItsOwnIsClosedToOthers) {
  TempDir dir;
  const std::string own = dir.file("admin");
  NoBackend backend;
  AdminServer server(AdminServerOptions{own + "/admin.sock", ::getegid(), nullptr}, backend);
  std::string error;
  ASSERT_TRUE(server.start(&error)) << error;
  EXPECT_EQ(modeOf(own) & 0777, 0750u);
  EXPECT_EQ(modeOf(own + "/admin.sock") & 0777, 0660u);
  server.stop();
}

TEST(AdminServer, ASharedDirectoryKeepsItsPermissions) {
  TempDir dir;
  const std::string shared = dir.file("shared");
  ASSERT_EQ(::mkdir(shared.c_str(), 01777), 0);
  ASSERT_EQ(::chmod(shared.c_str(), 01777), 0);
  testing::writeFile(shared + "/someone-elses-file", "x");
  NoBackend backend;
  AdminServer server(AdminServerOptions{shared + "/admin.sock", ::getegid(), nullptr}, backend);
  std::string error;
  ASSERT_TRUE(server.start(&error)) << error;
  EXPECT_EQ(modeOf(shared), 01777u) << "a directory others use is not taken from them";
  EXPECT_EQ(modeOf(shared + "/admin.sock") & 0777, 0660u) << "the socket itself is still closed";
  server.stop();
}

}  // namespace
}  // namespace agileos::scheduler
