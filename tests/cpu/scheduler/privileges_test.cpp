// Issue 14, privilege separation: the ids a child takes (spawnChild with credentials), the sweep
// before a uid is handed out again, the uid range, the GPU device nodes' groups, and the
// daemon's change of a worker socket's owner (endpoint_owner.h), which must touch the recorded
// inode only. Tests that change ids or owners need root and are skipped otherwise.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

#include "scheduler/child_spawn.h"
#include "scheduler/daemon_service.h"
#include "scheduler/endpoint_owner.h"
#include "scheduler/process_credentials.h"
#include "tests/cpu/scheduler/test_support.h"

namespace agileos::scheduler {
namespace {

using agileos::test_support::TempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr uid_t kWorkerUid = 199971;  // no passwd entry needed
constexpr gid_t kSharedGid = 199970;
constexpr gid_t kDeviceGid = 199969;

#define REQUIRE_ROOT() \
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (changes ids and owners)"

// What `command` (run by /bin/sh as a child with `credentials`) wrote to its descriptor 3.
std::string outputOfChild(const std::string& command, const ProcessCredentials* credentials) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return "pipe failed";
  std::string error;
  const pid_t pid =
      spawnChild({"/bin/sh", "-c", command}, PassedDescriptor{pipe_fds[1], 3}, &error, credentials);
  ::close(pipe_fds[1]);
  if (pid < 0) {
    ::close(pipe_fds[0]);
    return "spawn failed: " + error;
  }
  std::string out;
  char buffer[256];
  ssize_t got;
  while ((got = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0)
    out.append(buffer, static_cast<std::size_t>(got));
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return out;
}

TEST(Privileges, AChildTakesItsIdsAndGroupsAndNoneOfRoots) {
  REQUIRE_ROOT();
  const ProcessCredentials credentials{kWorkerUid, kWorkerUid, {kSharedGid, kDeviceGid}};
  const std::string out = outputOfChild(
      "echo $(id -u) $(id -ru) $(id -g) $(id -rg); id -G | tr ' ' '\\n' | sort -n | tr '\\n' ' ' >&3; "
      "grep CapEff /proc/self/status >&3",
      &credentials);
  // id's first line went to stdout; check descriptor 3: the sorted groups and no capability.
  EXPECT_THAT(out, HasSubstr(std::to_string(kDeviceGid) + " " + std::to_string(kSharedGid) + " " +
                             std::to_string(kWorkerUid) + " "))
      << out;
  EXPECT_THAT(out, HasSubstr("CapEff:\t0000000000000000")) << out;
  EXPECT_EQ(outputOfChild("id -u >&3", &credentials), std::to_string(kWorkerUid) + "\n");
  EXPECT_EQ(outputOfChild("id -ru >&3", &credentials), std::to_string(kWorkerUid) + "\n");
  EXPECT_EQ(outputOfChild("id -g >&3", &credentials), std::to_string(kWorkerUid) + "\n");
}

TEST(Privileges, AChildWithoutCredentialsRunsAsTheDaemon) {
  EXPECT_EQ(outputOfChild("id -u >&3", nullptr), std::to_string(::geteuid()) + "\n");
}

TEST(Privileges, TheDeathSignalSurvivesTheChangeOfIds) {
  REQUIRE_ROOT();
  // A change of ids clears PR_SET_PDEATHSIG, so it must be armed after them: a child spawned
  // from a thread that then ends gets SIGKILL (the signal follows the forking thread).
  const ProcessCredentials credentials{kWorkerUid, kWorkerUid, {}};
  pid_t pid = -1;
  std::string error;
  std::thread([&] {
    pid = spawnChild({"/bin/sleep", "300"}, PassedDescriptor{}, &error, &credentials);
  }).join();
  ASSERT_GT(pid, 0) << error;
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  pid_t got = 0;
  while ((got = ::waitpid(pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (got == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    FAIL() << "the child outlived the thread that spawned it";
  }
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

TEST(Privileges, KillingAUidsProcessesReachesOnesThatLeftTheirGroup) {
  REQUIRE_ROOT();
  const ProcessCredentials credentials{kWorkerUid, kWorkerUid, {}};
  // The child starts a grandchild in a session of its own (out of the process group the pool
  // kills), reports its pid and exits.
  const std::string out = outputOfChild("setsid sleep 300 >/dev/null 2>&1 3>&- & echo $! >&3", &credentials);
  const pid_t straggler = static_cast<pid_t>(std::stol(out));
  ASSERT_GT(straggler, 0);
  ASSERT_EQ(::kill(straggler, 0), 0) << "the straggler runs";
  std::string error;
  ASSERT_TRUE(killProcessesOf(kWorkerUid, &error)) << error;
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    std::ifstream status("/proc/" + std::to_string(straggler) + "/status");
    std::string line;
    gone = true;
    while (std::getline(status, line)) {
      if (line.rfind("State:", 0) == 0 && line.find('Z') == std::string::npos) gone = false;
    }
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(gone) << "a process left running as the uid is killed before the uid is reused";
  EXPECT_FALSE(killProcessesOf(0, &error)) << "never root's";
}

TEST(Privileges, UidRangeHandsOutTheLowestFreeUidOnce) {
  UidRange range(1000, 3);
  EXPECT_EQ(range.acquire(), 1000u);
  EXPECT_EQ(range.acquire(), 1001u);
  EXPECT_EQ(range.acquire(), 1002u);
  EXPECT_EQ(range.acquire(), std::nullopt) << "never two live workers on one uid";
  range.release(1001);
  EXPECT_EQ(range.acquire(), 1001u);
  range.release(5);  // not held: ignored
  EXPECT_EQ(range.held(), 3u);
}

TEST(Privileges, AUidLeasedByAnotherRangeIsSkipped) {
  TempDir leases("agileos-leases");
  UidRange first(2000, 3, leases.path());
  UidRange second(2000, 3, leases.path());  // another daemon with the same range
  EXPECT_EQ(first.acquire(), 2000u);
  EXPECT_EQ(second.acquire(), 2001u) << "2000 is leased by the first";
  EXPECT_EQ(first.acquire(), 2002u);
  EXPECT_EQ(second.acquire(), std::nullopt);
  first.release(2000);
  EXPECT_EQ(second.acquire(), 2000u) << "a released lease can be taken";
}

TEST(Privileges, DeviceGroupsAreThoseOfNodesClosedToOthers) {
  REQUIRE_ROOT();
  TempDir dev("agileos-dev");
  if (::mknod((dev.path() + "/probe").c_str(), S_IFCHR | 0600, makedev(1, 3)) != 0) {
    GTEST_SKIP() << "cannot make device nodes here: "
                 << std::strerror(errno);  // a container without CAP_MKNOD
  }
  ::unlink((dev.path() + "/probe").c_str());
  auto node = [&](const std::string& name, mode_t mode, gid_t group) {
    const std::string path = dev.path() + "/" + name;
    ASSERT_EQ(::mknod(path.c_str(), S_IFCHR | mode, makedev(1, 3)), 0) << std::strerror(errno);
    ASSERT_EQ(::chown(path.c_str(), 0, group), 0);
    ASSERT_EQ(::chmod(path.c_str(), mode), 0);
  };
  node("nvidia0", 0660, kDeviceGid);
  node("nvidiactl", 0666, kSharedGid);  // open to everyone: no group needed
  node("nvidia-uvm", 0660, kDeviceGid);
  node("tty9", 0660, 5);            // not a GPU node
  node("nvidia-modeset", 0600, 7);  // root's alone: no group helps
  ASSERT_EQ(::mkdir((dev.path() + "/nvidia-caps").c_str(), 0755), 0);
  node("nvidia-caps/nvidia-cap1", 0660, kSharedGid);
  EXPECT_THAT(deviceNodeGroups(dev.path()), ElementsAre(kDeviceGid, kSharedGid));
}

TEST(Privileges, OnlyARootDaemonWithPrivilegesEnabledGivesIds) {
  DaemonServerOptions options;
  options.services.services.push_back(ServiceSpec{"storage", "/bin/true", {}, {}, 5, {}, std::nullopt});
  PrivilegesSection privileges;
  applyPrivileges(privileges, /*daemon_is_root=*/false, &options);
  EXPECT_FALSE(options.pool.identities.has_value()) << "a daemon that is not root cannot switch ids";
  privileges.enabled = false;
  applyPrivileges(privileges, /*daemon_is_root=*/true, &options);
  EXPECT_FALSE(options.pool.identities.has_value());
  privileges.enabled = true;
  applyPrivileges(privileges, /*daemon_is_root=*/true, &options);
  ASSERT_TRUE(options.pool.identities.has_value());
  EXPECT_EQ(options.pool.identities->uid_base, privileges.worker_uid_base);
  EXPECT_EQ(options.pool.identities->groups.front(), privileges.shared_gid);
  ASSERT_TRUE(options.services.services[0].credentials.has_value());
  EXPECT_EQ(options.services.services[0].credentials->uid, privileges.service_uid_base);
  EXPECT_EQ(options.services.socket_group, privileges.shared_gid);
  EXPECT_EQ(options.shared_gid, privileges.shared_gid);
}

// A listening unix socket at `path` (mode 0600), or -1.
int listenAt(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
  const mode_t previous = ::umask(0177);
  const bool ok =
      ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 && ::listen(fd, 4) == 0;
  ::umask(previous);
  if (!ok) ::close(fd);
  return ok ? fd : -1;
}

// A worker's socket, listening, mode 0600, the test's own.
class EndpointOwner : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_GE(listener_, 0); }
  void TearDown() override {
    if (listener_ >= 0) ::close(listener_);
  }

  TempDir dir_{"agileos-endpoint"};
  const std::string path_ = dir_.path() + "/call.sock";
  const int listener_ = listenAt(path_);
  EndpointFile file_;
  std::string error_;
};

TEST_F(EndpointOwner, GivesTheRecordedSocketAndOnlyIt) {
  REQUIRE_ROOT();
  ASSERT_TRUE(recordEndpoint(path_, ::geteuid(), &file_, &error_)) << error_;
  ASSERT_TRUE(giveEndpoint(file_, kWorkerUid, &error_)) << error_;
  struct stat status {};
  ASSERT_EQ(::stat(path_.c_str(), &status), 0);
  EXPECT_EQ(status.st_uid, kWorkerUid);
  EXPECT_EQ(status.st_mode & 0777, 0600u);

  // The worker swaps its socket for a link to a file of the host, then for another file.
  const std::string victim = dir_.path() + "/shadow";
  std::ofstream(victim) << "secret";
  ASSERT_EQ(::unlink(path_.c_str()), 0);
  ASSERT_EQ(::symlink(victim.c_str(), path_.c_str()), 0);
  EXPECT_FALSE(giveEndpoint(file_, kWorkerUid, &error_));
  ASSERT_EQ(::unlink(path_.c_str()), 0);
  ASSERT_EQ(::link(victim.c_str(), path_.c_str()), 0);
  EXPECT_FALSE(giveEndpoint(file_, kWorkerUid, &error_));
  EXPECT_THAT(error_, HasSubstr("no longer the socket"));
  ASSERT_EQ(::stat(victim.c_str(), &status), 0);
  EXPECT_EQ(status.st_uid, 0u) << "the host's file kept its owner";
}

TEST_F(EndpointOwner, ASocketItsOwnerOpenedUpIsNotHandedOn) {
  REQUIRE_ROOT();
  ASSERT_TRUE(recordEndpoint(path_, ::geteuid(), &file_, &error_)) << error_;
  ASSERT_TRUE(giveEndpoint(file_, kWorkerUid, &error_)) << error_;
  // The client it was given to makes it anyone's; at the release it must not go on like that.
  ASSERT_EQ(::chmod(path_.c_str(), 0666), 0);
  EXPECT_FALSE(giveEndpoint(file_, ::geteuid(), &error_));
  EXPECT_THAT(error_, HasSubstr("open to group or others"));
  struct stat status {};
  ASSERT_EQ(::stat(path_.c_str(), &status), 0);
  EXPECT_EQ(status.st_uid, kWorkerUid) << "nothing changed";
}

TEST_F(EndpointOwner, RecordsOnlyASocketOfTheWorkerClosedToOthers) {
  EXPECT_FALSE(recordEndpoint(path_, ::geteuid() + 1, &file_, &error_)) << "another uid's socket";
  EXPECT_THAT(error_, HasSubstr("owned by uid"));
  ASSERT_EQ(::chmod(path_.c_str(), 0666), 0);
  EXPECT_FALSE(recordEndpoint(path_, ::geteuid(), &file_, &error_)) << "a socket anyone may connect to";
  const std::string plain = dir_.path() + "/plain";
  std::ofstream(plain) << "x";
  EXPECT_FALSE(recordEndpoint(plain, ::geteuid(), &file_, &error_));
  EXPECT_THAT(error_, HasSubstr("not a socket"));
  const std::string link = dir_.path() + "/link.sock";
  ASSERT_EQ(::symlink(path_.c_str(), link.c_str()), 0);
  EXPECT_FALSE(recordEndpoint(link, ::geteuid(), &file_, &error_)) << "a link is not followed";
  EXPECT_FALSE(recordEndpoint(dir_.path() + "/missing.sock", ::geteuid(), &file_, &error_));
  EXPECT_THAT(error_, HasSubstr("missing.sock"));
}

}  // namespace
}  // namespace agileos::scheduler
