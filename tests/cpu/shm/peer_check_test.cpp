// Issue 14: who may connect to a worker's endpoints. The shared-memory socket is created 0600
// (the worker's), the daemon gives it to the client's uid at attach, and the server closes a
// connection from any uid but root and the attached clients' before reading a byte of it.
//
// A connection from another uid is made in a forked child that takes that uid and uses only
// async-signal-safe calls (the test process has threads). Needs root; otherwise skipped.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "tests/cpu/shm/shm_fixture.h"

namespace agileos::worker::testing {
namespace {

constexpr uid_t kClientUid = 4242;
constexpr uid_t kOtherUid = 4343;

// The child's exit codes.
enum ChildOutcome : int {
  kConnectRefused = 10,  // connect() failed with EACCES
  kClosedUnread = 11,    // connected, and the server closed it without a word
  kKeptOpen = 12,        // connected and still open after 1 s
  kSetupFailed = 13,
};

// Connects to `path` as `uid` in a child process; returns the child's outcome.
int connectAs(uid_t uid, const std::string& path) {
  const pid_t child = ::fork();
  if (child == 0) {
    if (::setgid(uid) != 0 || ::setuid(uid) != 0) ::_exit(kSetupFailed);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
      ::_exit(errno == EACCES ? kConnectRefused : kSetupFailed);
    }
    pollfd readable{fd, POLLIN, 0};
    if (::poll(&readable, 1, 1000) == 0) ::_exit(kKeptOpen);  // the server waits 2 s for a handshake
    char byte;
    ::_exit(::read(fd, &byte, 1) == 0 ? kClosedUnread : kSetupFailed);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class PeerCheck : public ShmServerFixture {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root (to connect as other uids)";
    ShmServerFixture::SetUp();
  }
};

TEST_F(PeerCheck, TheSocketIsRootsAloneUntilAnAttachGivesItAway) {
  struct stat status {};
  ASSERT_EQ(::stat(path_.c_str(), &status), 0);
  EXPECT_EQ(status.st_mode & 0777, 0600u);
  EXPECT_EQ(status.st_uid, 0u);
  EXPECT_EQ(connectAs(kClientUid, path_), kConnectRefused);

  // What the daemon does at attach (scheduler/endpoint_owner.h): the file becomes the client's.
  ASSERT_EQ(::chown(path_.c_str(), kClientUid, static_cast<gid_t>(-1)), 0) << std::strerror(errno);
  ASSERT_EQ(::stat(path_.c_str(), &status), 0);
  EXPECT_EQ(status.st_uid, kClientUid);
  EXPECT_EQ(status.st_mode & 0777, 0600u);
  EXPECT_EQ(connectAs(kOtherUid, path_), kConnectRefused) << "another tenant's uid cannot even connect";
}

TEST_F(PeerCheck, AConnectionFromAUidThatIsNoAttachedClientsIsClosedUnread) {
  harness_.attach(1);
  harness_.runtime().setPeerUid(1, kClientUid);
  // The file check is bypassed here (world-writable), so the server's own check is what stops it.
  ASSERT_EQ(::chmod(path_.c_str(), 0666), 0);
  EXPECT_EQ(connectAs(kOtherUid, path_), kClosedUnread);
  EXPECT_EQ(server_->connectionCount(), 0u) << "no slot was taken";
  // The attached client's uid gets its connection (it then waits for the handshake).
  EXPECT_EQ(connectAs(kClientUid, path_), kKeptOpen);
  harness_.runtime().release(1);
  EXPECT_EQ(connectAs(kClientUid, path_), kClosedUnread) << "after its release the uid is a stranger";
}

}  // namespace
}  // namespace agileos::worker::testing
