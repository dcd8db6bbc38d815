// The worker's end of the daemon <-> worker control channel, over a real socketpair.
#include "worker/control_channel.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>

#include "proto/framing.h"
#include "tests/cpu/worker/support/worker_harness.h"

namespace agileos::worker::testing {
namespace {

using v1::internal::DaemonToWorker;
using v1::internal::WorkerToDaemon;

class ControlChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds_), 0);
    channel_ = std::make_unique<ControlChannel>(fds_[0]);
  }

  void TearDown() override {
    closeDaemonEnd();  // makes a still running serve() return
    if (serving_.valid()) serving_.wait();
    ::close(fds_[0]);
  }

  void startServing() {
    serving_ = std::async(std::launch::async, [this] { channel_->serve(worker_.runtime()); });
  }

  bool serveReturnsWithin(std::chrono::milliseconds limit) {
    return serving_.wait_for(limit) == std::future_status::ready;
  }

  void send(const DaemonToWorker& message) {
    ASSERT_EQ(wire::writeFrame(fds_[1], message), wire::FrameStatus::kOk);
  }

  // The worker's next message, or nullopt if none arrives within `limit`.
  std::optional<WorkerToDaemon> receive(std::chrono::milliseconds limit = std::chrono::seconds(5)) {
    pollfd readable{fds_[1], POLLIN, 0};
    if (::poll(&readable, 1, static_cast<int>(limit.count())) != 1) return std::nullopt;
    WorkerToDaemon message;
    if (wire::readFrame(fds_[1], &message) != wire::FrameStatus::kOk) return std::nullopt;
    return message;
  }

  void closeDaemonEnd() {
    if (fds_[1] >= 0) ::close(fds_[1]);
    fds_[1] = -1;
  }

  static DaemonToWorker attach(ClientId id, const std::string& token, const std::string& guard = "trap") {
    DaemonToWorker message;
    message.mutable_attach()->set_client_id(id);
    message.mutable_attach()->set_session_token(token);
    message.mutable_attach()->set_guard_policy(guard);
    return message;
  }
  static DaemonToWorker release(ClientId id) {
    DaemonToWorker message;
    message.mutable_release()->set_client_id(id);
    return message;
  }

  int fds_[2] = {-1, -1};
  WorkerHarness worker_;
  std::unique_ptr<ControlChannel> channel_;
  std::future<void> serving_;
};

TEST_F(ControlChannelTest, AttachAndReleaseAreAcknowledgedAndTakeEffect) {
  startServing();
  send(attach(7, "secret-token"));
  auto reply = receive();
  ASSERT_TRUE(reply.has_value());
  ASSERT_TRUE(reply->has_attached());
  EXPECT_EQ(reply->attached().client_id(), 7u);
  TestClient client(worker_.runtime(), 7, "secret-token");
  client.malloc(4096);
  EXPECT_GT(worker_.memory().bytesInUse(7), 0u);

  send(release(7));
  // The client's last usage comes first, while it still holds its memory.
  reply = receive();
  ASSERT_TRUE(reply.has_value());
  ASSERT_TRUE(reply->has_usage());
  ASSERT_EQ(reply->usage().clients_size(), 1);
  EXPECT_EQ(reply->usage().clients(0).client_id(), 7u);
  EXPECT_GE(reply->usage().clients(0).device_memory_bytes(), 4096u);
  EXPECT_EQ(reply->usage().clients(0).calls(), 1u);
  reply = receive();
  ASSERT_TRUE(reply.has_value());
  ASSERT_TRUE(reply->has_released());
  EXPECT_EQ(reply->released().client_id(), 7u);
  EXPECT_EQ(client.callStatus(requests::deviceSynchronize()), WorkerRuntime::CallStatus::kUnauthenticated);
  EXPECT_EQ(worker_.memory().bytesInUse(7), 0u);
  EXPECT_EQ(worker_.runtime().clientCount(), 0u);
}

TEST_F(ControlChannelTest, WhileClientsAreAttachedUsageIsReportedEveryInterval) {
  channel_->setUsageInterval(std::chrono::milliseconds(50));
  startServing();
  EXPECT_FALSE(receive(std::chrono::milliseconds(300)).has_value()) << "no client, no report";
  send(attach(7, "secret-token"));
  ASSERT_TRUE(receive().has_value());  // attached
  TestClient client(worker_.runtime(), 7, "secret-token");
  const auto pointer = client.malloc(1 << 16);
  client.write(pointer, std::string(1 << 16, '\x42'));
  std::optional<WorkerToDaemon> report;
  for (int i = 0; i < 20 && !(report && report->has_usage() && report->usage().bytes_host_to_device() != 0);
       ++i)
    report = receive();
  ASSERT_TRUE(report && report->has_usage());
  EXPECT_EQ(report->usage().bytes_host_to_device(), 1u << 16);
  ASSERT_EQ(report->usage().clients_size(), 1);
  EXPECT_GE(report->usage().clients(0).device_memory_bytes(), 1u << 16);
  bool sawAlloc = false;
  for (const auto& operation : report->usage().operations()) {
    if (operation.operation() != "mem_alloc") continue;
    sawAlloc = true;
    EXPECT_EQ(operation.calls(), 1u);
    std::uint64_t bucketed = 0;
    for (std::uint64_t n : operation.latency_buckets()) bucketed += n;
    EXPECT_EQ(bucketed, 1u) << "every call lands in exactly one bucket";
  }
  EXPECT_TRUE(sawAlloc);
}

TEST_F(ControlChannelTest, DuplicateAttachIsNotAcknowledged) {
  startServing();
  send(attach(7, "token-a"));
  ASSERT_TRUE(receive().has_value());
  send(attach(7, "token-b"));
  send(attach(8, "token-a"));
  EXPECT_FALSE(receive(std::chrono::milliseconds(200)).has_value());
  EXPECT_EQ(worker_.runtime().clientCount(), 1u);
}

TEST_F(ControlChannelTest, AnAttachWithoutAKnownGuardPolicyIsNotAcknowledged) {
  startServing();
  send(attach(7, "token-a", ""));
  send(attach(8, "token-b", "trapp"));
  EXPECT_FALSE(receive(std::chrono::milliseconds(200)).has_value());
  EXPECT_EQ(worker_.runtime().clientCount(), 0u);
  send(attach(9, "token-c", "poison"));
  EXPECT_TRUE(receive().has_value());
}

TEST_F(ControlChannelTest, ShutdownReturnsFromServe) {
  startServing();
  DaemonToWorker shutdown;
  shutdown.mutable_shutdown();
  send(shutdown);
  EXPECT_TRUE(serveReturnsWithin(std::chrono::seconds(5)));
}

TEST_F(ControlChannelTest, EndOfFileReturnsFromServe) {
  startServing();
  send(attach(7, "token"));
  ASSERT_TRUE(receive().has_value());
  closeDaemonEnd();
  EXPECT_TRUE(serveReturnsWithin(std::chrono::seconds(5)));
}

TEST_F(ControlChannelTest, MalformedFrameReturnsFromServe) {
  startServing();
  const char garbage[] = {5, 0, 0, 0, '\xff', '\xff', '\xff', '\xff', '\xff'};
  ASSERT_EQ(::write(fds_[1], garbage, sizeof garbage), static_cast<ssize_t>(sizeof garbage));
  EXPECT_TRUE(serveReturnsWithin(std::chrono::seconds(5)));
}

TEST_F(ControlChannelTest, ReadyFailedAndTaintReachTheDaemonTaintOnlyOnce) {
  ASSERT_TRUE(channel_->sendReady("unix:/tmp/w.sock", 0, "AgileOS Fake GPU"));
  auto message = receive();
  ASSERT_TRUE(message.has_value() && message->has_ready());
  EXPECT_EQ(message->ready().endpoint(), "unix:/tmp/w.sock");
  EXPECT_EQ(message->ready().device_name(), "AgileOS Fake GPU");

  ASSERT_TRUE(channel_->sendFailed("no device"));
  message = receive();
  ASSERT_TRUE(message.has_value() && message->has_failed());
  EXPECT_EQ(message->failed().reason(), "no device");

  channel_->contextTainted(7, "illegal address");
  channel_->contextTainted(8, "again");
  message = receive();
  ASSERT_TRUE(message.has_value() && message->has_tainted());
  EXPECT_EQ(message->tainted().client_id(), 7u);
  EXPECT_FALSE(receive(std::chrono::milliseconds(100)).has_value()) << "taint reported twice";
}

TEST_F(ControlChannelTest, TheModuleCacheKeyIsTheFirstMessageOrThereIsNone) {
  std::string error;
  DaemonToWorker key;
  key.mutable_module_cache_key()->set_key(std::string(32, '\x7e'));
  send(key);
  EXPECT_EQ(channel_->receiveModuleCacheKey(std::chrono::seconds(5), &error), std::string(32, '\x7e'))
      << error;

  EXPECT_FALSE(channel_->receiveModuleCacheKey(std::chrono::milliseconds(50), &error).has_value());
  EXPECT_NE(error.find("in time"), std::string::npos) << error;

  key.mutable_module_cache_key()->set_key(std::string(31, 'k'));
  send(key);
  EXPECT_FALSE(channel_->receiveModuleCacheKey(std::chrono::seconds(5), &error).has_value()) << "a short key";
  EXPECT_NE(error.find("31 bytes"), std::string::npos) << error;

  send(attach(1, "token"));
  EXPECT_FALSE(channel_->receiveModuleCacheKey(std::chrono::seconds(5), &error).has_value());
  EXPECT_NE(error.find("not the module cache key"), std::string::npos) << error;
}

TEST_F(ControlChannelTest, ALateModuleCacheKeyIsIgnoredByServe) {
  startServing();
  DaemonToWorker key;
  key.mutable_module_cache_key()->set_key(std::string(32, 'k'));
  send(key);
  send(attach(1, "token"));
  auto message = receive();
  ASSERT_TRUE(message.has_value() && message->has_attached()) << "serve goes on after the key";
}

}  // namespace
}  // namespace agileos::worker::testing
