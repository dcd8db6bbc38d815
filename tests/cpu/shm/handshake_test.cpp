// The shared-memory handshake against a real ShmCallServer: a token the runtime does not
// know gets nothing; a known one gets a region fd that maps to a valid region.
#include "proto/shm/handshake.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <cstring>

#include "tests/cpu/shm/shm_fixture.h"

namespace agileos::worker::testing {
namespace {

using namespace std::chrono_literals;

using ShmHandshake = ShmServerFixture;

// Issue 14: the socket is root's until an attach gives it to the client's uid
// (peer_check_test.cpp); other tenants cannot connect at all.
TEST_F(ShmHandshake, SocketIsOwnerOnly) {
  struct stat st {};
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(ShmHandshake, UnknownTokenIsRefused) {
  harness_.attach(1);
  int socketFd = -1, regionFd = -1;
  std::string error;
  EXPECT_FALSE(shm::clientHandshake(path_, "not-a-session-token", 2s, &socketFd, &regionFd, &error));
  EXPECT_NE(error.find("refused"), std::string::npos) << error;
  EXPECT_EQ(regionFd, -1);
  EXPECT_TRUE(awaitConnections(0));
}

TEST_F(ShmHandshake, AttachedTokenGetsARegion) {
  TestClient client = harness_.attach(1);
  int socketFd = -1, regionFd = -1;
  std::string error;
  ASSERT_TRUE(shm::clientHandshake(path_, client.token(), 2s, &socketFd, &regionFd, &error)) << error;
  auto region = shm::MappedRegion::attach(regionFd, &error);
  ASSERT_NE(region, nullptr) << error;
  EXPECT_EQ(region->geometry().slotCount, shm::testing::smallRegionSizes().slotCount);
  EXPECT_TRUE(awaitConnections(1));
  ::close(socketFd);  // the client goes away: the worker ends the connection
  EXPECT_TRUE(awaitConnections(0));
}

TEST_F(ShmHandshake, ReleasedTokenIsRefused) {
  TestClient client = harness_.attach(1);
  ASSERT_TRUE(harness_.runtime().release(client.id()));
  int socketFd = -1, regionFd = -1;
  std::string error;
  EXPECT_FALSE(shm::clientHandshake(path_, client.token(), 2s, &socketFd, &regionFd, &error));
}

// A raw connection, for frames the real client never sends.
int connectRaw(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  return fd;
}

TEST_F(ShmHandshake, OversizedTokenFrameIsClosedWithoutReadingIt) {
  const int fd = connectRaw(path_);
  const std::uint8_t prefix[4] = {0xff, 0xff, 0xff, 0x7f};  // ~2 GiB "token"
  ASSERT_EQ(::send(fd, prefix, sizeof prefix, MSG_NOSIGNAL), 4);
  char byte;
  EXPECT_EQ(::recv(fd, &byte, 1, 0), 0);  // closed, nothing sent
  ::close(fd);
  EXPECT_TRUE(awaitConnections(0));
}

TEST_F(ShmHandshake, SilentClientIsDroppedAfterTheTimeout) {
  const int fd = connectRaw(path_);
  EXPECT_TRUE(awaitConnections(1));
  char byte;
  EXPECT_EQ(::recv(fd, &byte, 1, 0), 0);  // the worker gives up (kHandshakeTimeout) and closes
  ::close(fd);
  EXPECT_TRUE(awaitConnections(0));
}

}  // namespace
}  // namespace agileos::worker::testing
