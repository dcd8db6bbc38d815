// The service process itself: its socket, its start-up refusals, and the cuda backend where
// there is no GPU (refused ATTACHes, a service that carries on).
#include <grp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "tests/cpu/services/storage_service_fixture.h"

namespace agileos::services::storage::testing {
namespace {

using namespace std::chrono_literals;

int exitStatusOf(ServiceProcess& process) {
  EXPECT_TRUE(eventually([&] { return !process.running(); })) << "still running";
  const int status = process.stop();
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class StorageProcessTest : public StorageServiceTest {};

TEST_F(StorageProcessTest, TheSocketIsTheOwnersAndItsGroupsOnly) {
  struct stat status;
  ASSERT_EQ(::stat(socket_.c_str(), &status), 0);
  EXPECT_TRUE(S_ISSOCK(status.st_mode));
  EXPECT_EQ(status.st_mode & 0777, 0660u);
}

// What a process of `uid` with supplementary `groups` sees after connecting to `socket`: 0 when
// the service keeps the connection (waits for a request), 1 when it closes it unanswered,
// 3 and 4 when the child could not take the ids or connect. Runs in a forked child.
int connectionFateAs(const std::string& socket, uid_t uid, std::vector<gid_t> groups) {
  const pid_t child = ::fork();
  if (child == 0) {
    if (::setgroups(groups.size(), groups.data()) != 0 || ::setgid(uid) != 0 || ::setuid(uid) != 0)
      ::_exit(3);
    const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, socket.c_str(), socket.size() + 1);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) ::_exit(4);
    pollfd closed{fd, POLLIN, 0};
    ::_exit(::poll(&closed, 1, 1000) == 0 ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Issue 14, privilege separation: the daemon's socket directory is setgid to the workers' shared
// group, so the socket is that group's (0660) and a worker, a uid of its own in that group, is
// served; a uid outside the group is not, even with the file's mode opened up.
TEST_F(StorageProcessTest, AMemberOfTheSocketsSharedGroupIsServedAndNoOneElse) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (to connect as other uids)";
  constexpr gid_t kSharedGid = 4350;
  const std::string shared_dir = dir_.path() + "/services";
  ASSERT_EQ(::mkdir(shared_dir.c_str(), 0700), 0);
  ASSERT_EQ(::chown(shared_dir.c_str(), 0, kSharedGid), 0);
  ASSERT_EQ(::chmod(shared_dir.c_str(), 02770), 0);
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0755), 0);
  const std::string socket = shared_dir + "/service-storage.sock";
  ServiceProcess service(socket, root_);
  ASSERT_TRUE(service.waitUntilListening(std::chrono::seconds(10)));
  struct stat status {};
  ASSERT_EQ(::stat(socket.c_str(), &status), 0);
  EXPECT_EQ(status.st_gid, kSharedGid) << "the directory's group";
  EXPECT_EQ(connectionFateAs(socket, 4343, {kSharedGid}), 0) << "a worker of the shared group is served";
  EXPECT_EQ(connectionFateAs(socket, 4344, {}), 4) << "no one else may even connect";
  ASSERT_EQ(::chmod(shared_dir.c_str(), 02777), 0);
  ASSERT_EQ(::chmod(socket.c_str(), 0666), 0);
  EXPECT_EQ(connectionFateAs(socket, 4344, {}), 1) << "with the modes opened, the peer check refuses it";
  EXPECT_EQ(connectionFateAs(socket, 4344, {4351}), 1) << "another group does not help";
  const int stopped = service.stop();
  EXPECT_TRUE(WIFEXITED(stopped) && WEXITSTATUS(stopped) == 0);
}

// Issue 14: the service checks its peer. With the file's mode opened up on purpose, a process of
// another uid connects, and the service closes the connection without answering.
TEST_F(StorageProcessTest, AConnectionFromAnotherUidIsClosedUnanswered) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (to connect as another uid)";
  ASSERT_EQ(::chmod(socket_.c_str(), 0666), 0);
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0755), 0);  // let the other uid reach the socket
  const pid_t child = ::fork();
  if (child == 0) {
    if (::setgid(4343) != 0 || ::setuid(4343) != 0) ::_exit(3);
    const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, socket_.c_str(), socket_.size() + 1);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) ::_exit(4);
    pollfd closed{fd, POLLIN, 0};
    if (::poll(&closed, 1, 2000) == 0) ::_exit(5);  // kept open: the service would serve it
    char byte;
    ::_exit(::read(fd, &byte, 1) == 0 ? 0 : 5);  // 0: closed without a word
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "3: setuid failed, 4: connect failed, 5: the service kept the connection or answered";
  UniqueFd fd = connect();
  EXPECT_EQ(hello(fd.get()).status, 0) << "the service's own uid is still served";
}

TEST_F(StorageProcessTest, ASecondServiceDoesNotTakeALiveSocketOver) {
  ServiceProcess second(socket_, root_);
  EXPECT_EQ(exitStatusOf(second), 1);
  UniqueFd fd = connect();
  EXPECT_EQ(hello(fd.get()).status, 0);
}

TEST(StorageProcessStartTest, AStaleSocketIsReplaced) {
  TempDir dir;
  const std::string socket = dir.path() + "/s.sock";
  {
    UniqueFd stale(::socket(AF_UNIX, SOCK_SEQPACKET, 0));
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strcpy(address.sun_path, socket.c_str());
    ASSERT_EQ(::bind(stale.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  }  // closed without unlinking: what a crash leaves
  ServiceProcess service(socket, dir.path());
  ASSERT_TRUE(service.waitUntilListening(10s));
  UniqueFd fd = connectTo(socket);
  EXPECT_EQ(hello(fd.get()).status, 0);
  const int status = service.stop();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(StorageProcessStartTest, RefusesToStartWithoutItsRootOrOnAFile) {
  TempDir dir;
  ServiceProcess no_root(dir.path() + "/s.sock", dir.path() + "/missing");
  EXPECT_EQ(exitStatusOf(no_root), 1);
  writeFile(dir.path() + "/file", {});
  ServiceProcess on_a_file(dir.path() + "/file", dir.path());
  EXPECT_EQ(exitStatusOf(on_a_file), 1);
  ServiceProcess bad_arguments(dir.path() + "/s.sock", dir.path(), {"--threads", "0"});
  EXPECT_EQ(exitStatusOf(bad_arguments), 2);
}

// The default backend. Without a driver (CI) the ATTACH is refused with -ENODEV; with one, the
// memfd is no CUDA handle and is refused too. Either way the service carries on.
class StorageCudaBackendTest : public StorageServiceTest {
 protected:
  std::vector<std::string> serviceArguments() const override { return {"--buffer-backend", "cuda"}; }
};

TEST_F(StorageCudaBackendTest, AnUnimportableBufferIsRefused) {
  UniqueFd fd = connect();
  DeviceQueue queue(2, 1 << 20);
  for (int attempt = 0; attempt < 2; ++attempt) {
    const agileos_storage_reply reply = queue.attach(fd.get());
    EXPECT_LT(reply.status, 0);
    EXPECT_NE(reply.status, INT32_MIN) << "no reply";
  }
  EXPECT_EQ(stats(fd.get()).active_leases, 0u);
  EXPECT_EQ(mappingsMentioning(service_->pid(), "memfd:agileos-test"), 0);
  EXPECT_EQ(hello(fd.get()).status, 0);
}

}  // namespace
}  // namespace agileos::services::storage::testing
