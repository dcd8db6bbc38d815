// End to end through gRPC: a DaemonServer in this process (or agileosd as a subprocess) on a
// temporary socket, mock workers, and real gRPC clients opening Session streams.
#include <gmock/gmock.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "agileos/v1/client_api.grpc.pb.h"
#include "scheduler/child_spawn.h"
#include "scheduler/daemon_service.h"
#include "scheduler/runtime_files.h"
#include "tests/cpu/scheduler/test_support.h"

namespace agileos::scheduler {
namespace {

using agileos::v1::Daemon;
using agileos::v1::Refusal;
using agileos::v1::SessionDown;
using agileos::v1::SessionUp;
using ::testing::HasSubstr;
using testing::MockEvents;
using testing::TempDir;
using testing::waitUntil;

constexpr auto kRpcDeadline = std::chrono::seconds(60);

// One client's Session stream.
class TestClient {
 public:
  explicit TestClient(const std::string& socket_path)
      : stub_(
            Daemon::NewStub(grpc::CreateChannel("unix:" + socket_path, grpc::InsecureChannelCredentials()))) {
    context_.set_deadline(std::chrono::system_clock::now() + kRpcDeadline);
    stream_ = stub_->Session(&context_);
  }

  bool send(const SessionUp& up) { return stream_->Write(up); }

  bool sendHello(std::uint32_t version = agileos::v1::PROTOCOL_VERSION_CURRENT,
                 const std::vector<std::string>& modules = {}) {
    SessionUp up;
    up.mutable_hello()->set_protocol_version(version);
    up.mutable_hello()->set_program("e2e-test");
    up.mutable_hello()->set_pid(static_cast<std::uint32_t>(::getpid()));
    for (const std::string& name : modules) up.mutable_hello()->add_modules()->set_name(name);
    return send(up);
  }

  // The next message; nullopt when the stream has ended.
  std::optional<SessionDown> read() {
    SessionDown down;
    if (!stream_->Read(&down)) return std::nullopt;
    return down;
  }

  std::optional<SessionDown> hello(std::uint32_t version = agileos::v1::PROTOCOL_VERSION_CURRENT) {
    if (!sendHello(version)) return std::nullopt;
    return read();
  }

  // The answer to a Hello that asks for module `name` (any version).
  std::optional<SessionDown> helloAskingFor(const std::string& name) {
    if (!sendHello(agileos::v1::PROTOCOL_VERSION_CURRENT, {name})) return std::nullopt;
    return read();
  }

  // Half-closes and collects the final status.
  grpc::Status close() {
    stream_->WritesDone();
    SessionDown ignored;
    while (stream_->Read(&ignored)) {
    }
    return stream_->Finish();
  }

  // close(), as an assertion that names the status when it is not OK.
  ::testing::AssertionResult closesCleanly() {
    const grpc::Status status = close();
    if (status.ok()) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << "the session ended with status " << status.error_code() << ": " << status.error_message();
  }

  // Simulates a client that vanishes: the stream is cancelled from the client side.
  void vanish() { context_.TryCancel(); }

  grpc::Status finishWithoutClosing() {
    SessionDown ignored;
    while (stream_->Read(&ignored)) {
    }
    return stream_->Finish();
  }

 private:
  std::unique_ptr<Daemon::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<SessionUp, SessionDown>> stream_;
};

// The worker id in "unix:<dir>/worker-<id>/call.sock".
WorkerId workerIdOf(const std::string& endpoint) {
  const std::size_t dash = endpoint.rfind("worker-");
  return dash == std::string::npos ? 0 : std::stoull(endpoint.substr(dash + 7));
}

class DaemonE2ETest : public ::testing::Test {
 protected:
  DaemonServerOptions makeOptions(std::vector<std::string> mock_args = {}) {
    DaemonServerOptions options;
    options.socket_path = dir_.file("agileosd.sock");
    options.runtime_dir = dir_.file("run");
    options.pool = testing::mockPoolOptions(dir_, std::move(mock_args));
    options.pool.runtime_dir = options.runtime_dir;
    options.session.end_grace = std::chrono::milliseconds(20000);
    return options;
  }

  // makeOptions() plus the service "storage" (the test service) and the module "files" 1.0.0
  // backed by it, which clients may ask for. Tests adjust the service in services.services[0].
  DaemonServerOptions optionsWithAServiceBackedModule() {
    DaemonServerOptions options = makeOptions();
    ServiceSpec storage;
    storage.name = "storage";
    storage.executable = testing::kTestService;
    options.services.services = {storage};
    agileos::modules::ModuleEntry files;
    files.name = "files";
    files.version = {1, 0, 0};
    files.host_library_path = "/opt/m/libfiles.so";
    files.service = "storage";
    options.session.modules.pool.modules = {files};
    options.session.modules.allowed = {"files"};
    return options;
  }

  void startServer(DaemonServerOptions options) {
    server_ = std::make_unique<DaemonServer>(std::move(options));
    std::string error;
    ASSERT_TRUE(server_->start(&error)) << error;
  }

  std::string socketPath() const { return dir_.file("agileosd.sock"); }

  // One worker slot, and an admission queue of `queueWait` (0: none).
  void startOneSlotServer(std::chrono::milliseconds queueWait) {
    DaemonServerOptions options = makeOptions();
    options.pool.max_workers = 1;
    options.pool.queue_wait = queueWait;
    startServer(options);
  }

  // The client's Hello got the assignment (and so holds the one slot).
  static bool holdsTheSlot(TestClient& client) {
    const auto reply = client.hello();
    return reply.has_value() && reply->has_assignment();
  }

  bool onlyFreshSpares(std::size_t count) {
    const PoolSnapshot s = server_->pool().snapshot();
    std::size_t spares = 0;
    for (const WorkerSnapshot& w : s.workers) {
      if (w.phase == WorkerPhase::kReady && !w.has_served) ++spares;
    }
    return s.clients == 0 && s.workers.size() == count && spares == count;
  }

  TempDir dir_;
  MockEvents events_{dir_.file("events.log")};
  std::unique_ptr<DaemonServer> server_;
};

TEST_F(DaemonE2ETest, AssignmentCarriesTheWorkerEndpointTokenAndClientId) {
  startServer(makeOptions());
  TestClient client(socketPath());
  const auto reply = client.hello();
  ASSERT_TRUE(reply.has_value());
  ASSERT_TRUE(reply->has_assignment()) << reply->DebugString();
  const agileos::v1::Assignment& a = reply->assignment();
  EXPECT_EQ(a.protocol_version(), static_cast<std::uint32_t>(agileos::v1::PROTOCOL_VERSION_CURRENT));
  EXPECT_EQ(a.worker_endpoint(), "unix:" + dir_.file("run/worker-1/call.sock"));
  EXPECT_EQ(a.session_token().size(), 32u);
  EXPECT_GE(a.client_id(), 1u);
  // The worker was attached with exactly this client id and token before the reply.
  EXPECT_EQ(events_.count({"worker=1", "attach client=" + std::to_string(a.client_id()) +
                                           " token=" + testing::hex(a.session_token())}),
            1u);
  EXPECT_TRUE(client.closesCleanly());
}

// Issue 14: the daemon accepts its connections itself and knows each client by SO_PEERCRED;
// the uid goes to the worker (which gives its endpoints to that uid alone).
TEST_F(DaemonE2ETest, TheWorkerLearnsTheClientsUidFromTheKernelNotFromTheHello) {
  startServer(makeOptions());
  TestClient client(socketPath());
  const auto reply = client.hello();
  ASSERT_TRUE(reply.has_value() && reply->has_assignment());
  EXPECT_EQ(events_.count({"attach client=" + std::to_string(reply->assignment().client_id()),
                           "uid=" + std::to_string(::getuid())}),
            1u);
  EXPECT_TRUE(client.closesCleanly());
}

TEST_F(DaemonE2ETest, OneUidHoldsAtMostMaxClientsPerUidSessions) {
  DaemonServerOptions options = makeOptions();
  options.pool.max_workers = 3;
  options.session.max_clients_per_uid = 1;
  startServer(options);
  TestClient first(socketPath());
  ASSERT_TRUE(holdsTheSlot(first));
  TestClient second(socketPath());
  const auto refused = second.hello();
  ASSERT_TRUE(refused.has_value() && refused->has_refusal());
  EXPECT_EQ(refused->refusal().reason(), agileos::v1::Refusal::BUSY);
  EXPECT_THAT(refused->refusal().message(),
              HasSubstr("uid " + std::to_string(::getuid()) +
                        " already holds 1 sessions (worker.max_clients_per_uid)"));
  EXPECT_TRUE(first.closesCleanly());
  // The place is given back with the session.
  bool served = false;
  for (int attempt = 0; attempt < 100 && !served; ++attempt) {
    TestClient third(socketPath());
    const auto reply = third.hello();
    served = reply.has_value() && reply->has_assignment();
    if (served) {
      EXPECT_TRUE(third.closesCleanly());
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  EXPECT_TRUE(served) << "the uid's place came back when its session ended";
}

// The audit trail (config audit_log): one JSON line per session start, refusal and end, with the
// peer's identity from the kernel.
TEST_F(DaemonE2ETest, TheAuditTrailRecordsSessionsAndRefusalsWithTheKernelsIdentity) {
  DaemonServerOptions options = makeOptions();
  options.audit_log = dir_.file("audit.jsonl");
  startServer(options);
  std::uint64_t clientId = 0;
  {
    TestClient client(socketPath());
    const auto reply = client.hello();
    ASSERT_TRUE(reply.has_value() && reply->has_assignment());
    clientId = reply->assignment().client_id();
    EXPECT_TRUE(client.closesCleanly());
  }
  {
    TestClient client(socketPath());
    const auto reply = client.hello(2u);
    ASSERT_TRUE(reply.has_value() && reply->has_refusal());
  }
  std::vector<nlohmann::json> lines;
  ASSERT_TRUE(waitUntil([&] {
    lines.clear();
    std::ifstream in(dir_.file("audit.jsonl"));
    for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
    return lines.size() >= 3;
  }));
  ASSERT_EQ(lines.size(), 3u);
  const auto find = [&](const std::string& event) {
    for (const nlohmann::json& line : lines) {
      if (line.value("event", "") == event) return line;
    }
    return nlohmann::json();
  };
  const nlohmann::json start = find("session_start"), end = find("session_end"),
                       refused = find("session_refused");
  ASSERT_FALSE(start.is_null());
  EXPECT_EQ(start["client"], clientId);
  EXPECT_EQ(start["uid"], ::getuid());
  EXPECT_EQ(start["pid"], ::getpid()) << "the kernel's pid of the peer, not the Hello's claim";
  EXPECT_TRUE(start.contains("time") && start.contains("program") && start.contains("worker"));
  ASSERT_FALSE(end.is_null());
  EXPECT_EQ(end["client"], clientId);
  ASSERT_FALSE(refused.is_null());
  EXPECT_EQ(refused["refusal"], "VERSION_MISMATCH");
  EXPECT_THAT(refused["reason"].get<std::string>(), HasSubstr("protocol version 2"));
  EXPECT_EQ(refused["uid"], ::getuid());
}

TEST_F(DaemonE2ETest, ADaemonThatCannotOpenItsAuditTrailDoesNotStart) {
  DaemonServerOptions options = makeOptions();
  options.audit_log = dir_.file("no-such-directory/audit.jsonl");
  DaemonServer server(std::move(options));
  std::string error;
  EXPECT_FALSE(server.start(&error));
  EXPECT_THAT(error, HasSubstr("audit_log"));
}

TEST_F(DaemonE2ETest, ProtocolVersionMismatchIsRefused) {
  startServer(makeOptions());
  for (std::uint32_t version : {0u, 2u}) {
    TestClient client(socketPath());
    const auto reply = client.hello(version);
    ASSERT_TRUE(reply.has_value());
    ASSERT_TRUE(reply->has_refusal()) << reply->DebugString();
    EXPECT_EQ(reply->refusal().reason(), Refusal::VERSION_MISMATCH);
    EXPECT_THAT(reply->refusal().message(), HasSubstr("protocol version " + std::to_string(version)));
    EXPECT_FALSE(client.read().has_value()) << "exactly one answer, then the stream ends";
    EXPECT_TRUE(client.finishWithoutClosing().ok());
  }
  EXPECT_TRUE(waitUntil([&] { return onlyFreshSpares(1); }));
  EXPECT_EQ(events_.count({"attach"}), 0u);
}

TEST_F(DaemonE2ETest, FirstMessageOtherThanHelloIsRefused) {
  startServer(makeOptions());
  TestClient client(socketPath());
  ASSERT_TRUE(client.send(SessionUp{}));
  const auto reply = client.read();
  ASSERT_TRUE(reply.has_value());
  ASSERT_TRUE(reply->has_refusal());
  EXPECT_EQ(reply->refusal().reason(), Refusal::BAD_REQUEST);
  EXPECT_TRUE(client.finishWithoutClosing().ok());
  EXPECT_TRUE(waitUntil([&] { return onlyFreshSpares(1); }));
  EXPECT_EQ(events_.count({"attach"}), 0u);
}

TEST_F(DaemonE2ETest, StreamEndingBeforeHelloCostsNothing) {
  startServer(makeOptions());
  ASSERT_TRUE(waitUntil([&] { return onlyFreshSpares(1); }));
  for (int i = 0; i < 5; ++i) {
    TestClient client(socketPath());
    EXPECT_TRUE(client.closesCleanly());
  }
  for (int i = 0; i < 5; ++i) {
    TestClient client(socketPath());
    client.vanish();
    client.finishWithoutClosing();
  }
  EXPECT_TRUE(onlyFreshSpares(1));
  EXPECT_EQ(events_.count({"attach"}), 0u);
  // And the daemon still serves.
  TestClient client(socketPath());
  const auto reply = client.hello();
  ASSERT_TRUE(reply.has_value());
  EXPECT_TRUE(reply->has_assignment());
  EXPECT_TRUE(client.closesCleanly());
}

// Raw bytes on the Session method: what an attacker speaking HTTP/2 could send.
grpc::Status sendRawSessionBytes(const std::string& socket_path, const std::string& bytes) {
  grpc::GenericStub stub(grpc::CreateChannel("unix:" + socket_path, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kRpcDeadline);
  grpc::CompletionQueue cq;
  void* tag = nullptr;
  bool ok = false;
  auto next = [&](void* expected) {
    EXPECT_TRUE(cq.Next(&tag, &ok));
    EXPECT_EQ(tag, expected);
    return ok;
  };
  auto call = stub.PrepareCall(&context, "/agileos.v1.Daemon/Session", &cq);
  call->StartCall(reinterpret_cast<void*>(1));
  next(reinterpret_cast<void*>(1));
  grpc::Slice slice(bytes);
  grpc::ByteBuffer buffer(&slice, 1);
  call->Write(buffer, reinterpret_cast<void*>(2));
  next(reinterpret_cast<void*>(2));
  call->WritesDone(reinterpret_cast<void*>(3));
  next(reinterpret_cast<void*>(3));
  grpc::ByteBuffer reply;
  call->Read(&reply, reinterpret_cast<void*>(4));
  next(reinterpret_cast<void*>(4));
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(5));
  next(reinterpret_cast<void*>(5));
  return status;
}

TEST_F(DaemonE2ETest, GarbageAndOversizedMessagesLeakNothing) {
  startServer(makeOptions());
  ASSERT_TRUE(waitUntil([&] { return onlyFreshSpares(1); }));
  sendRawSessionBytes(socketPath(), std::string("\xff\xff\xff\xff\x0f garbage", 13));
  sendRawSessionBytes(socketPath(), std::string(200 * 1024, 'x'));  // above the 64 KiB message limit
  TestClient oversized(socketPath());
  SessionUp big;
  big.mutable_hello()->set_protocol_version(agileos::v1::PROTOCOL_VERSION_CURRENT);
  big.mutable_hello()->set_program(std::string(100 * 1024, 'p'));
  oversized.send(big);
  EXPECT_FALSE(oversized.finishWithoutClosing().ok());
  EXPECT_TRUE(onlyFreshSpares(1));
  EXPECT_EQ(events_.count({"attach"}), 0u);

  TestClient client(socketPath());
  const auto reply = client.hello();
  ASSERT_TRUE(reply.has_value());
  EXPECT_TRUE(reply->has_assignment());
  EXPECT_TRUE(client.closesCleanly());
}

TEST_F(DaemonE2ETest, ClientDisconnectReleasesAndRetiresItsWorker) {
  startServer(makeOptions());
  for (bool graceful : {true, false}) {
    TestClient client(socketPath());
    const auto reply = client.hello();
    ASSERT_TRUE(reply.has_value() && reply->has_assignment());
    const std::string worker =
        "worker=" + std::to_string(workerIdOf(reply->assignment().worker_endpoint())) + " ";
    if (graceful) {
      EXPECT_TRUE(client.closesCleanly());
    } else {
      client.vanish();  // as if the client process crashed
    }
    EXPECT_TRUE(
        events_.waitFor({worker, "release client=" + std::to_string(reply->assignment().client_id())}));
    EXPECT_TRUE(events_.waitFor({worker, "shutdown"}));
  }
  EXPECT_TRUE(waitUntil([&] { return onlyFreshSpares(1); }));
}

TEST_F(DaemonE2ETest, ConcurrentClientsGetDifferentWorkersAndTokens) {
  DaemonServerOptions options = makeOptions();
  options.pool.max_workers = 3;
  startServer(options);
  TestClient a(socketPath());
  TestClient b(socketPath());
  ASSERT_TRUE(a.sendHello());
  ASSERT_TRUE(b.sendHello());
  const auto ra = a.read();
  const auto rb = b.read();
  ASSERT_TRUE(ra.has_value() && ra->has_assignment());
  ASSERT_TRUE(rb.has_value() && rb->has_assignment());
  EXPECT_NE(ra->assignment().worker_endpoint(), rb->assignment().worker_endpoint());
  EXPECT_NE(ra->assignment().session_token(), rb->assignment().session_token());
  EXPECT_NE(ra->assignment().client_id(), rb->assignment().client_id());
  EXPECT_TRUE(a.close().ok());
  EXPECT_TRUE(b.close().ok());
}

TEST_F(DaemonE2ETest, ClientsBeyondMaxWorkersAreRefusedBusyWithoutAnAdmissionQueue) {
  startOneSlotServer(std::chrono::milliseconds(0));
  TestClient first(socketPath());
  ASSERT_TRUE(holdsTheSlot(first));
  TestClient second(socketPath());
  const auto refused = second.hello();
  ASSERT_TRUE(refused.has_value());
  ASSERT_TRUE(refused->has_refusal());
  EXPECT_EQ(refused->refusal().reason(), Refusal::BUSY);
  EXPECT_THAT(refused->refusal().message(), HasSubstr("max_workers"));
  EXPECT_TRUE(second.finishWithoutClosing().ok());
  EXPECT_TRUE(first.close().ok());
}

// Issue 14: the admission queue. The second client's Hello is answered once the first has
// gone and a fresh worker holds the slot.
TEST_F(DaemonE2ETest, AClientBeyondMaxWorkersWaitsAndIsServedWhenTheSlotFrees) {
  startOneSlotServer(std::chrono::milliseconds(20000));
  TestClient first(socketPath());
  ASSERT_TRUE(holdsTheSlot(first));
  TestClient second(socketPath());
  decltype(second.hello()) queued;
  std::thread waiting([&] { queued = second.hello(); });
  EXPECT_TRUE(first.close().ok());
  waiting.join();
  ASSERT_TRUE(queued.has_value());
  ASSERT_TRUE(queued->has_assignment()) << queued->DebugString();
  EXPECT_TRUE(second.close().ok());
}

TEST_F(DaemonE2ETest, AClientThatLeavesTheAdmissionQueueLeavesNoTrace) {
  startOneSlotServer(std::chrono::milliseconds(20000));
  TestClient first(socketPath());
  ASSERT_TRUE(holdsTheSlot(first));
  TestClient second(socketPath());
  std::thread waiting([&] { (void)second.hello(); });
  ASSERT_TRUE(waitUntil([&] { return server_->pool().snapshot().clients == 2; }))
      << "the second client queued";
  second.vanish();
  waiting.join();
  EXPECT_TRUE(waitUntil([&] { return server_->pool().snapshot().clients == 1; }))
      << "the queued client's place is gone with it";
  EXPECT_TRUE(first.close().ok());
}

TEST_F(DaemonE2ETest, WorkerDeathEndsTheSessionWithAReason) {
  startServer(makeOptions());
  TestClient client(socketPath());
  const auto reply = client.hello();
  ASSERT_TRUE(reply.has_value() && reply->has_assignment());
  const pid_t worker_pid = events_.pidOf(workerIdOf(reply->assignment().worker_endpoint()));
  ASSERT_NE(worker_pid, 0);
  ::kill(worker_pid, SIGKILL);
  const auto ended = client.read();
  ASSERT_TRUE(ended.has_value());
  ASSERT_TRUE(ended->has_ended()) << ended->DebugString();
  EXPECT_THAT(ended->ended().reason(), HasSubstr("killed by signal 9"));
  EXPECT_TRUE(client.closesCleanly());
  EXPECT_TRUE(waitUntil([&] { return onlyFreshSpares(1); }));
}

TEST_F(DaemonE2ETest, ClientThatIgnoresSessionEndedIsCancelled) {
  DaemonServerOptions options = makeOptions();
  options.session.end_grace = std::chrono::milliseconds(100);
  startServer(options);
  TestClient client(socketPath());
  const auto reply = client.hello();
  ASSERT_TRUE(reply.has_value() && reply->has_assignment());
  ::kill(events_.pidOf(workerIdOf(reply->assignment().worker_endpoint())), SIGKILL);
  const auto ended = client.read();
  ASSERT_TRUE(ended.has_value() && ended->has_ended());
  // The client keeps its side open; the daemon cancels the stream after the grace period.
  EXPECT_FALSE(client.read().has_value());
  EXPECT_EQ(client.finishWithoutClosing().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(waitUntil([&] { return onlyFreshSpares(1); }));
}

TEST_F(DaemonE2ETest, MessageAfterHelloEndsTheSession) {
  startServer(makeOptions());
  TestClient client(socketPath());
  const auto reply = client.hello();
  ASSERT_TRUE(reply.has_value() && reply->has_assignment());
  client.sendHello();
  EXPECT_FALSE(client.read().has_value());
  EXPECT_FALSE(client.finishWithoutClosing().ok());
  EXPECT_TRUE(events_.waitFor({"release client=" + std::to_string(reply->assignment().client_id())}));
  EXPECT_TRUE(waitUntil([&] { return onlyFreshSpares(1); }));
}

TEST_F(DaemonE2ETest, StopEndsSessionsShutsWorkersDownAndRemovesTheSocket) {
  startServer(makeOptions());
  TestClient client(socketPath());
  const auto reply = client.hello();
  ASSERT_TRUE(reply.has_value() && reply->has_assignment());
  const pid_t worker_pid = events_.pidOf(workerIdOf(reply->assignment().worker_endpoint()));
  std::thread stopper([&] { server_->stop(); });
  const auto ended = client.read();
  ASSERT_TRUE(ended.has_value() && ended->has_ended());
  EXPECT_EQ(ended->ended().reason(), "daemon shutting down");
  EXPECT_TRUE(client.closesCleanly());
  stopper.join();
  EXPECT_FALSE(std::filesystem::exists(socketPath()));
  EXPECT_TRUE(testing::processGone(worker_pid));
}

// A client whose session has closed but which keeps its connection (the channel) open: stop()
// still returns, since its gRPC shutdown is bounded by rpc_status_flush rather than waiting for
// every connection to go. The ctest timeout is the bound checked here.
TEST_F(DaemonE2ETest, StopReturnsWhileAFinishedClientKeepsItsConnection) {
  startServer(makeOptions());
  TestClient client(socketPath());
  const auto reply = client.hello();
  ASSERT_TRUE(reply.has_value() && reply->has_assignment());
  ASSERT_TRUE(client.closesCleanly());
  server_->stop();
  EXPECT_FALSE(std::filesystem::exists(socketPath()));
}

TEST_F(DaemonE2ETest, SocketIsWorldConnectableAndRuntimeDirIsCreated) {
  startServer(makeOptions());
  struct stat info {};
  ASSERT_EQ(::stat(socketPath().c_str(), &info), 0);
  EXPECT_TRUE(S_ISSOCK(info.st_mode));
  EXPECT_EQ(info.st_mode & 0777, 0666u);
  ASSERT_EQ(::stat(dir_.file("run").c_str(), &info), 0);
  EXPECT_TRUE(S_ISDIR(info.st_mode));
  EXPECT_EQ(info.st_mode & 0777, 0755u);
}

TEST_F(DaemonE2ETest, StaleSocketFileIsReplaced) {
  // A socket file nobody listens on, as a crashed daemon leaves behind.
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, socketPath().c_str(), sizeof address.sun_path - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ::close(fd);
  startServer(makeOptions());
  TestClient client(socketPath());
  const auto reply = client.hello();
  ASSERT_TRUE(reply.has_value() && reply->has_assignment());
  EXPECT_TRUE(client.closesCleanly());
}

TEST_F(DaemonE2ETest, RefusesToStartOverARegularFileOrALiveDaemon) {
  testing::writeFile(socketPath(), "precious");
  {
    DaemonServer server(makeOptions());
    std::string error;
    EXPECT_FALSE(server.start(&error));
    EXPECT_THAT(error, HasSubstr("exists and is not a socket"));
  }
  EXPECT_EQ(testing::readLines(socketPath()), std::vector<std::string>{"precious"});
  std::filesystem::remove(socketPath());

  startServer(makeOptions());
  DaemonServer second(makeOptions());
  std::string error;
  EXPECT_FALSE(second.start(&error));
  EXPECT_THAT(error, HasSubstr("already serving"));
  TestClient client(socketPath());  // the first daemon is unharmed
  const auto reply = client.hello();
  ASSERT_TRUE(reply.has_value() && reply->has_assignment());
  EXPECT_TRUE(client.closesCleanly());
}

TEST_F(DaemonE2ETest, ServicesRunWithTheDaemonAndWorkersGetTheirSocket) {
  startServer(optionsWithAServiceBackedModule());

  const std::string socket = dir_.file("run") + "-services/service-storage.sock";
  ASSERT_EQ(server_->services().socketPath("storage"), socket);
  EXPECT_TRUE(unixSocketAccepts(socket)) << "running before the daemon serves clients";
  const pid_t service_pid = server_->services().status("storage")->pid;

  TestClient client(socketPath());
  const auto reply = client.helloAskingFor("files");
  ASSERT_TRUE(reply.has_value() && reply->has_assignment()) << (reply ? reply->DebugString() : "no reply");
  EXPECT_TRUE(events_.waitFor({"attach client=" + std::to_string(reply->assignment().client_id()),
                               " modules=files@1.0.0(|/opt/m/libfiles.so|" + socket + ")"}));
  EXPECT_TRUE(client.closesCleanly());

  server_->stop();
  EXPECT_TRUE(testing::processGone(service_pid));
  EXPECT_FALSE(std::filesystem::exists(socket));
}

// A service that has failed for good: a client asking for a module backed by it is refused at
// once, naming the service, instead of being placed and failing at its worker's connect.
TEST_F(DaemonE2ETest, AClientWhoseModuleNeedsAFailedServiceIsRefusedUnavailable) {
  DaemonServerOptions options = optionsWithAServiceBackedModule();
  ServiceSpec& storage = options.services.services[0];
  storage.args = {"--exit-after-ms", "300"};  // ready, then exits with status 3, every time
  storage.max_restarts = 1;
  startServer(std::move(options));
  ASSERT_TRUE(
      waitUntil([&] { return server_->services().status("storage")->state == ServiceState::kFailed; }));

  TestClient client(socketPath());
  const auto reply = client.helloAskingFor("files");
  ASSERT_TRUE(reply.has_value() && reply->has_refusal()) << (reply ? reply->DebugString() : "no reply");
  EXPECT_EQ(reply->refusal().reason(), Refusal::UNAVAILABLE);
  EXPECT_EQ(
      reply->refusal().message(),
      "module 'files' cannot be served: service 'storage' is down (failed; last: exited with status 3)");
  EXPECT_EQ(events_.count({"attach"}), 0u);

  TestClient plain(socketPath());  // clients without the module are served as before
  const auto assigned = plain.hello();
  ASSERT_TRUE(assigned.has_value() && assigned->has_assignment());
  EXPECT_TRUE(plain.closesCleanly());
}

TEST_F(DaemonE2ETest, RefusesToStartWhenAServiceCannotStart) {
  DaemonServerOptions options = makeOptions();
  ServiceSpec lazy;
  lazy.name = "lazy";
  lazy.executable = testing::kTestService;
  lazy.args = {"--never-listen"};
  lazy.start_timeout = std::chrono::milliseconds(200);
  options.services.services = {lazy};
  DaemonServer server(std::move(options));
  std::string error;
  EXPECT_FALSE(server.start(&error));
  EXPECT_THAT(error, HasSubstr("service 'lazy': did not accept connections"));
  EXPECT_FALSE(std::filesystem::exists(socketPath())) << "it never listened";
  EXPECT_EQ(events_.count({"ready"}), 0u) << "and started no worker";
}

// The compiled-module cache's key: made by the daemon at start, the first control message to each
// worker, never on a worker's command line or in its environment; a new daemon run makes a new one.
std::string procFile(pid_t pid, const char* name) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/" + name, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string loggedCacheKey(const MockEvents& events, std::uint64_t worker) {
  const std::vector<std::string> lines =
      events.matching({"worker=" + std::to_string(worker) + " ", "module-cache-key key="});
  if (lines.size() != 1) return {};
  return lines[0].substr(lines[0].find("key=") + 4);
}

TEST_F(DaemonE2ETest, TheModuleCacheKeyReachesEachWorkerOverItsControlChannelOnly) {
  DaemonConfig config;
  config.guard.cache_dir = dir_.file("cache");
  EXPECT_TRUE(serverOptionsFromConfig(config, "/").module_cache);
  config.guard.cache_dir.clear();
  EXPECT_FALSE(serverOptionsFromConfig(config, "/").module_cache) << "no cache, no key";

  DaemonServerOptions options = makeOptions();
  options.module_cache = true;
  options.pool.worker_args.push_back("--module-cache-dir=" + dir_.file("cache"));
  startServer(options);
  ASSERT_TRUE(events_.waitFor({"worker=1", "module-cache-key key="}));
  const std::string key = loggedCacheKey(events_, 1);
  ASSERT_EQ(key.size(), 64u) << "32 bytes, hex in the mock's log";
  const pid_t worker = events_.pidOf(1);
  ASSERT_GT(worker, 0);
  const std::string commandLine = procFile(worker, "cmdline");
  const std::string environment = procFile(worker, "environ");
  ASSERT_THAT(commandLine, HasSubstr("--module-cache-dir="));
  std::string raw;
  for (std::size_t i = 0; i < key.size(); i += 2)
    raw += static_cast<char>(std::stoi(key.substr(i, 2), nullptr, 16));
  for (const std::string& where : {commandLine, environment}) {
    EXPECT_EQ(where.find(key), std::string::npos);
    EXPECT_EQ(where.find(raw), std::string::npos);
  }
  // The next worker gets the same key; a new daemon run makes a new one.
  TestClient client(socketPath());
  ASSERT_TRUE(client.hello().has_value());
  ASSERT_TRUE(events_.waitFor({"worker=2", "module-cache-key key="}));
  EXPECT_EQ(loggedCacheKey(events_, 2), key);
  EXPECT_TRUE(client.closesCleanly());
  server_->stop();
  server_.reset();
  startServer(options);
  ASSERT_TRUE(waitUntil([&] { return events_.count({"module-cache-key key="}) >= 3; }));
  std::set<std::string> keys;
  for (const std::string& line : events_.matching({"module-cache-key key="}))
    keys.insert(line.substr(line.find("key=") + 4));
  EXPECT_GE(keys.size(), 2u) << "each daemon run has its own key";
}

// ------------------------------------------------------------------ agileosd as a subprocess

class AgileosdProcessTest : public ::testing::Test {
 protected:
  // `separate_privileges`: the workers run as uids of their own (needs root; the test directory
  // and event log are opened to them).
  pid_t startDaemon(bool separate_privileges = false) {
    if (separate_privileges) {
      ::chmod(dir_.path().c_str(), 0755);
      testing::writeFile(dir_.file("events.log"), "");
      ::chmod(dir_.file("events.log").c_str(), 0666);
    }
    const std::string config = R"({
      "socket_path": ")" + dir_.file("d.sock") +
                               R"(",
      "runtime_dir": ")" + dir_.file("run") +
                               R"(",
      "log_level": "debug",
      "privileges": {"enabled": )" +
                               (separate_privileges ? "true" : "false") + R"(},
      "worker": {
        "executable": ")" + testing::kMockWorker +
                               R"(",
        "prestart": 1,
        "max_workers": 2,
        "args": ["--event-log=)" +
                               dir_.file("events.log") + R"("]
      }
    })";
    testing::writeFile(dir_.file("agileosd.json"), config);
    const pid_t pid = testing::startProcess({testing::kAgileosd, "--config", dir_.file("agileosd.json")},
                                            dir_.file("agileosd.log"));
    EXPECT_TRUE(events_.waitFor({"worker=1", "ready"})) << log();
    return pid;
  }

  std::string log() const {
    std::ifstream in(dir_.file("agileosd.log"));
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }

  TempDir dir_;
  MockEvents events_{dir_.file("events.log")};
};

TEST_F(AgileosdProcessTest, SigtermEndsSessionsStopsWorkersAndExitsZero) {
  const pid_t daemon = startDaemon();
  const pid_t spare_pid = events_.pidOf(1);
  TestClient client(dir_.file("d.sock"));
  const auto reply = client.hello();
  ASSERT_TRUE(reply.has_value() && reply->has_assignment()) << log();
  ASSERT_TRUE(events_.waitFor({"worker=2", "ready"}));  // the replacement spare
  const pid_t replacement_pid = events_.pidOf(2);

  ASSERT_EQ(::kill(daemon, SIGTERM), 0);
  const auto ended = client.read();
  ASSERT_TRUE(ended.has_value() && ended->has_ended()) << log();
  EXPECT_EQ(ended->ended().reason(), "daemon shutting down");
  EXPECT_TRUE(client.closesCleanly());
  EXPECT_EQ(testing::waitForExit(daemon), 0) << log();
  EXPECT_FALSE(std::filesystem::exists(dir_.file("d.sock")));
  EXPECT_TRUE(testing::processGone(spare_pid));
  EXPECT_TRUE(testing::processGone(replacement_pid));
  EXPECT_THAT(log(), HasSubstr("received SIGTERM"));
}

// The uid and groups of process `pid` from /proc ("Uid:" and "Groups:" lines), or "".
std::string procStatusLine(pid_t pid, const std::string& key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return line;
  }
  return "";
}

TEST_F(AgileosdProcessTest, WorkersRunAsUidsOfTheirOwnAndTheDaemonGivesTheirSocketsAway) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: the daemon drops the workers' privileges only as root";
  constexpr uid_t kFirstWorkerUid = 199100;  // PrivilegesSection defaults
  constexpr gid_t kSharedGid = 199099;
  {
    // The build tree must be reachable by that uid (a checkout under a private home is not).
    const ProcessCredentials probe{kFirstWorkerUid, kFirstWorkerUid, {}};
    std::string error;
    const pid_t pid = spawnChild({"/bin/sh", "-c", std::string("test -x ") + testing::kMockWorker},
                                 PassedDescriptor{}, &error, &probe);
    int status = 1;
    if (pid > 0) ::waitpid(pid, &status, 0);
    if (pid <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      GTEST_SKIP() << testing::kMockWorker << " cannot be executed by uid " << kFirstWorkerUid;
    }
  }
  const pid_t daemon = startDaemon(/*separate_privileges=*/true);
  const pid_t worker = events_.pidOf(1);
  // The first uid of the range that no other daemon on this host has leased: another test's daemon
  // running at the same time (ctest -j) holds the first ones.
  const std::string uidLine = procStatusLine(worker, "Uid:");
  ASSERT_GT(uidLine.size(), 5u) << log();
  const uid_t workerUid = static_cast<uid_t>(std::stoul(uidLine.substr(5)));
  ASSERT_GE(workerUid, kFirstWorkerUid);
  ASSERT_LT(workerUid, kFirstWorkerUid + 128);  // PrivilegesSection's worker_uid_count
  const std::string id = std::to_string(workerUid);
  EXPECT_EQ(uidLine, "Uid:\t" + id + "\t" + id + "\t" + id + "\t" + id) << log();
  EXPECT_EQ(procStatusLine(worker, "Gid:"), "Gid:\t" + id + "\t" + id + "\t" + id + "\t" + id);
  EXPECT_THAT(procStatusLine(worker, "Groups:"), HasSubstr(std::to_string(kSharedGid)));
  EXPECT_THAT(procStatusLine(worker, "CapEff:"), HasSubstr("0000000000000000"));

  const std::string socket_dir = dir_.file("run") + "/worker-1";
  struct stat status {};
  ASSERT_EQ(::stat(socket_dir.c_str(), &status), 0) << log();
  EXPECT_EQ(status.st_uid, 0u);
  EXPECT_EQ(status.st_gid, workerUid) << "the worker's group may create its sockets there";
  EXPECT_EQ(status.st_mode & 07777, 0731u);
  const std::string socket = socket_dir + "/call.sock";
  ASSERT_EQ(::stat(socket.c_str(), &status), 0);
  EXPECT_EQ(status.st_uid, workerUid) << "the worker's own until a client is attached";

  TestClient client(dir_.file("d.sock"));
  const auto reply = client.hello();
  ASSERT_TRUE(reply.has_value() && reply->has_assignment()) << log();
  EXPECT_EQ(reply->assignment().worker_endpoint(), "unix:" + socket);
  ASSERT_EQ(::stat(socket.c_str(), &status), 0);
  EXPECT_EQ(status.st_uid, ::geteuid()) << "given to the client's uid (SO_PEERCRED)";
  EXPECT_EQ(status.st_mode & 0777, 0600u);

  ASSERT_EQ(::kill(daemon, SIGTERM), 0);
  EXPECT_EQ(testing::waitForExit(daemon), 0) << log();
  EXPECT_TRUE(testing::processGone(worker));
  EXPECT_FALSE(std::filesystem::exists(socket_dir)) << "removed with its worker";
}

TEST_F(AgileosdProcessTest, ExitsOneNamingAServiceThatCannotStart) {
  testing::writeFile(dir_.file("agileosd.json"), R"({
    "socket_path": ")" + dir_.file("d.sock") + R"(",
    "runtime_dir": ")" + dir_.file("run") + R"(",
    "worker": {"executable": ")" + testing::kMockWorker +
                                                     R"(", "prestart": 0},
    "services": [{"name": "lazy", "executable": ")" + testing::kTestService +
                                                     R"(", "args": ["--never-listen"],
                  "start_timeout_ms": 200}]
  })");
  const testing::ProcessResult result =
      testing::runProcess({testing::kAgileosd, "--config", dir_.file("agileosd.json")});
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("cannot start: service 'lazy': did not accept connections on " +
                                       dir_.file("run") + "-services/service-lazy.sock within 200 ms"));
}

TEST_F(AgileosdProcessTest, WorkersDoNotOutliveAKilledDaemon) {
  const pid_t daemon = startDaemon();
  const pid_t worker_pid = events_.pidOf(1);
  ASSERT_NE(worker_pid, 0);
  ASSERT_EQ(::kill(daemon, SIGKILL), 0);
  EXPECT_EQ(testing::waitForExit(daemon), -1);
  EXPECT_TRUE(waitUntil([&] { return testing::processGone(worker_pid); })) << "PR_SET_PDEATHSIG";
}

}  // namespace
}  // namespace agileos::scheduler
