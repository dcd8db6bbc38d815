// The client library (services/storage/storage_client.h) against a hand-driven peer on a
// socketpair: what goes out, what comes back, timeouts and broken peers.
#include "services/storage/storage_client.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "services/storage/unique_fd.h"
#include "tests/cpu/services/storage_test_support.h"

namespace agileos::services::storage {
namespace {

class StorageClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int fds[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds), 0);
    client_.reset(fds[0]);
    peer_.reset(fds[1]);
  }

  // Receives one message on the peer side: its bytes and descriptors.
  std::vector<char> receiveOnPeer(std::vector<UniqueFd>* fds) {
    std::vector<char> bytes(1024);
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 8)];
    iovec io{bytes.data(), bytes.size()};
    msghdr message{};
    message.msg_iov = &io;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
    const ssize_t received = ::recvmsg(peer_.get(), &message, MSG_CMSG_CLOEXEC);
    EXPECT_GE(received, 0);
    bytes.resize(received < 0 ? 0 : static_cast<std::size_t>(received));
    for (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c)) {
      const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (std::size_t i = 0; i < count; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        fds->emplace_back(fd);
      }
    }
    return bytes;
  }

  UniqueFd client_;
  UniqueFd peer_;
};

TEST_F(StorageClientTest, MakeStorageRequestFillsOpAndVersionOnly) {
  const agileos_storage_request request = makeStorageRequest(AGILEOS_STORAGE_OPEN);
  EXPECT_EQ(request.op, AGILEOS_STORAGE_OPEN);
  EXPECT_EQ(request.version, AGILEOS_STORAGE_PROTOCOL_VERSION);
  EXPECT_EQ(request.path_bytes, 0u);
  EXPECT_EQ(request.client_id, 0u);
}

TEST_F(StorageClientTest, ACallSendsTheRequestAndItsDescriptorsAndReturnsTheReply) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  UniqueFd read_end(pipe_fds[0]), write_end(pipe_fds[1]);
  agileos_storage_request request = makeStorageRequest(AGILEOS_STORAGE_ATTACH);
  request.client_id = 42;
  std::thread peer([&] {
    std::vector<UniqueFd> fds;
    const std::vector<char> bytes = receiveOnPeer(&fds);
    ASSERT_EQ(bytes.size(), sizeof(agileos_storage_request));
    agileos_storage_request received;
    std::memcpy(&received, bytes.data(), sizeof(received));
    EXPECT_EQ(received.op, AGILEOS_STORAGE_ATTACH);
    EXPECT_EQ(received.client_id, 42u);
    ASSERT_EQ(fds.size(), 2u);
    EXPECT_EQ(::write(fds[1].get(), "x", 1), 1);  // the pipe's write end, as sent
    agileos_storage_reply reply{};
    reply.status = -EBUSY;
    reply.file_bytes = 1234;
    EXPECT_EQ(::send(peer_.get(), &reply, sizeof(reply), 0), static_cast<ssize_t>(sizeof(reply)));
  });
  const int fds[2] = {read_end.get(), write_end.get()};
  agileos_storage_reply reply{};
  EXPECT_EQ(storageCall(client_.get(), request, fds, 2, &reply, 5000), 0);
  peer.join();
  EXPECT_EQ(reply.status, -EBUSY);
  EXPECT_EQ(reply.file_bytes, 1234u);
  char byte = 0;
  EXPECT_EQ(::read(read_end.get(), &byte, 1), 1);
  EXPECT_EQ(byte, 'x');
}

TEST_F(StorageClientTest, TooManyDescriptorsAreRefusedBeforeSending) {
  const int fds[3] = {0, 1, 2};
  agileos_storage_reply reply{};
  EXPECT_EQ(storageCall(client_.get(), makeStorageRequest(AGILEOS_STORAGE_HELLO), fds, 3, &reply, 100),
            -EINVAL);
  EXPECT_EQ(storageSend(client_.get(), makeStorageRequest(AGILEOS_STORAGE_HELLO), nullptr, 1, 100), -EINVAL);
}

TEST_F(StorageClientTest, NoReplyTimesOut) {
  agileos_storage_reply reply{};
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(storageCall(client_.get(), makeStorageRequest(AGILEOS_STORAGE_HELLO), nullptr, 0, &reply, 100),
            -ETIMEDOUT);
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, std::chrono::milliseconds(90));
  EXPECT_LT(waited, std::chrono::seconds(5));
  EXPECT_EQ(storageReceive(client_.get(), &reply, 0), -ETIMEDOUT);
}

TEST_F(StorageClientTest, AClosedPeerIsReported) {
  peer_.reset();
  agileos_storage_reply reply{};
  EXPECT_EQ(storageReceive(client_.get(), &reply, 1000), -ECONNRESET);
  // No SIGPIPE: the test process would die of it.
  EXPECT_EQ(storageSend(client_.get(), makeStorageRequest(AGILEOS_STORAGE_HELLO), nullptr, 0, 1000), -EPIPE);
}

TEST_F(StorageClientTest, AMessageThatIsNotAReplyIsAProtocolError) {
  agileos_storage_reply reply{};
  char shorter[sizeof(agileos_storage_reply) - 1] = {};
  ASSERT_EQ(::send(peer_.get(), shorter, sizeof(shorter), 0), static_cast<ssize_t>(sizeof(shorter)));
  EXPECT_EQ(storageReceive(client_.get(), &reply, 1000), -EPROTO);
  char longer[sizeof(agileos_storage_reply) + 8] = {};
  ASSERT_EQ(::send(peer_.get(), longer, sizeof(longer), 0), static_cast<ssize_t>(sizeof(longer)));
  EXPECT_EQ(storageReceive(client_.get(), &reply, 1000), -EPROTO);
}

TEST_F(StorageClientTest, DescriptorsInAReplyAreClosed) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  UniqueFd read_end(pipe_fds[0]), write_end(pipe_fds[1]);
  agileos_storage_reply sent{};
  ASSERT_TRUE(testing::sendRaw(peer_.get(), &sent, sizeof(sent), {write_end.get()}));
  write_end.reset();
  agileos_storage_reply reply{};
  EXPECT_EQ(storageReceive(client_.get(), &reply, 1000), -EPROTO);
  EXPECT_TRUE(testing::seesEndOfFile(read_end.get())) << "the client kept the descriptor";
}

TEST_F(StorageClientTest, ConnectFailsCleanly) {
  int fd = -1;
  EXPECT_EQ(storageConnect("/nonexistent/agileos/storage.sock", &fd), -ENOENT);
  EXPECT_EQ(fd, -1);
  EXPECT_EQ(storageConnect(std::string(200, 'x').c_str(), &fd), -ENAMETOOLONG);
  EXPECT_EQ(storageConnect("", &fd), -ENAMETOOLONG);
}

}  // namespace
}  // namespace agileos::services::storage
