// SessionRunner over a fake transport (no gRPC), with a real WorkerPool and mock workers.
// This is the session logic's own test; the gRPC shim is covered end to end elsewhere.
#include "scheduler/client_session.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "modules/catalog/module_manifest.h"
#include "scheduler/dedicated_placement.h"
#include "tests/cpu/scheduler/test_support.h"

namespace agileos::scheduler {
namespace {

using agileos::v1::Refusal;
using agileos::v1::SessionDown;
using agileos::v1::SessionUp;
using ::testing::HasSubstr;
using testing::waitUntil;

// The client's end is driven by the test; the daemon's end is what SessionRunner sees.
class FakeSessionStream final : public SessionStream {
 public:
  // --- client side
  void send(const SessionUp& message) {
    std::lock_guard lock(mu_);
    incoming_.push_back(message);
    cv_.notify_all();
  }
  void sendHello(std::uint32_t version = agileos::v1::PROTOCOL_VERSION_CURRENT,
                 const std::string& guard = "") {
    SessionUp up;
    up.mutable_hello()->set_protocol_version(version);
    up.mutable_hello()->set_guard_policy(guard);
    up.mutable_hello()->set_program("fake\nclient\x01");  // control characters must not reach the log raw
    send(up);
  }
  // A Hello asking for `modules`, each {name, version requirement}.
  void sendHelloWithModules(const std::vector<std::pair<std::string, std::string>>& modules) {
    SessionUp up;
    up.mutable_hello()->set_protocol_version(agileos::v1::PROTOCOL_VERSION_CURRENT);
    for (const auto& [name, version] : modules) {
      agileos::v1::ModuleRequest* request = up.mutable_hello()->add_modules();
      request->set_name(name);
      request->set_version(version);
    }
    send(up);
  }
  void closeFromClient() {
    std::lock_guard lock(mu_);
    client_closed_ = true;
    cv_.notify_all();
  }
  bool gone() const override {
    std::lock_guard lock(mu_);
    return client_closed_;
  }
  // The daemon's index-th message, once written (nullopt if it never comes).
  std::optional<SessionDown> written(std::size_t index) {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, testing::kGenerousTimeout, [&] { return writes_.size() > index; }))
      return std::nullopt;
    return writes_[index];
  }
  std::size_t writeCount() {
    std::lock_guard lock(mu_);
    return writes_.size();
  }
  // The daemon wrote exactly one message, a refusal for `reason`; *refusal gets it.
  ::testing::AssertionResult onlyRefusal(Refusal::Reason reason, Refusal* refusal) {
    if (const std::size_t count = writeCount(); count != 1) {
      return ::testing::AssertionFailure() << "the daemon wrote " << count << " messages, not 1";
    }
    const SessionDown reply = *written(0);
    if (!reply.has_refusal())
      return ::testing::AssertionFailure() << "not a refusal: " << reply.DebugString();
    if (reply.refusal().reason() != reason) {
      return ::testing::AssertionFailure()
             << "refused " << Refusal::Reason_Name(reply.refusal().reason()) << ", not "
             << Refusal::Reason_Name(reason) << ": " << reply.refusal().message();
    }
    *refusal = reply.refusal();
    return ::testing::AssertionSuccess();
  }
  bool cancelled() {
    std::lock_guard lock(mu_);
    return cancelled_;
  }

  // --- daemon side (SessionStream)
  bool read(SessionUp* message) override {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return cancelled_ || client_closed_ || !incoming_.empty(); });
    if (cancelled_ || incoming_.empty()) return false;
    *message = incoming_.front();
    incoming_.pop_front();
    return true;
  }
  bool write(const SessionDown& message) override {
    std::lock_guard lock(mu_);
    if (cancelled_) return false;
    writes_.push_back(message);
    cv_.notify_all();
    return true;
  }
  void cancel() override {
    std::lock_guard lock(mu_);
    cancelled_ = true;
    cv_.notify_all();
  }
  std::string peer() const override { return "fake"; }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<SessionUp> incoming_;
  std::vector<SessionDown> writes_;
  bool client_closed_ = false;
  bool cancelled_ = false;
};

class ClientSessionTest : public ::testing::Test {
 protected:
  // Each test starts exactly one pool: worker ids (and so the mock event log's worker=<id>
  // lines) restart with every pool.
  void startPool(PoolOptions options) {
    pool_ = std::make_unique<WorkerPool>(std::move(options), std::make_unique<DedicatedPlacement>());
    pool_->start();
    runner_ = std::make_unique<SessionRunner>(*pool_, session_options_);
  }

  // Runs the session on its own thread, as the transport would.
  void startPool() { startPool(testing::mockPoolOptions(dir_)); }

  std::thread serve(FakeSessionStream& stream) {
    return std::thread([this, &stream] { runner_->run(stream); });
  }

  testing::TempDir dir_;
  testing::MockEvents events_{dir_.file("events.log")};
  SessionOptions session_options_;
  std::unique_ptr<WorkerPool> pool_;
  std::unique_ptr<SessionRunner> runner_;
};

TEST_F(ClientSessionTest, StreamThatEndsBeforeHelloGetsNothingAndCostsNothing) {
  startPool();
  FakeSessionStream stream;
  stream.closeFromClient();
  serve(stream).join();
  EXPECT_EQ(stream.writeCount(), 0u);
  EXPECT_EQ(pool_->snapshot().clients, 0u);
  EXPECT_EQ(events_.count({"attach"}), 0u);
}

// A stream that never says Hello must not hold a daemon thread: it is cancelled
// after hello_timeout (run() returning at all is what this test waits for).
TEST_F(ClientSessionTest, SilentStreamIsCancelledAfterTheHelloTimeout) {
  session_options_.hello_timeout = std::chrono::milliseconds(200);
  startPool();
  FakeSessionStream stream;
  serve(stream).join();
  EXPECT_TRUE(stream.cancelled());
  EXPECT_EQ(stream.writeCount(), 0u);
  EXPECT_EQ(pool_->snapshot().clients, 0u);
  EXPECT_EQ(events_.count({"attach"}), 0u);
}

TEST_F(ClientSessionTest, FirstMessageMustBeHello) {
  startPool();
  FakeSessionStream stream;
  stream.send(SessionUp{});
  serve(stream).join();
  Refusal refusal;
  ASSERT_TRUE(stream.onlyRefusal(Refusal::BAD_REQUEST, &refusal));
  EXPECT_EQ(pool_->snapshot().clients, 0u);
}

TEST_F(ClientSessionTest, OtherProtocolVersionsAreRefused) {
  startPool();
  FakeSessionStream stream;
  stream.sendHello(7);
  serve(stream).join();
  Refusal refusal;
  ASSERT_TRUE(stream.onlyRefusal(Refusal::VERSION_MISMATCH, &refusal));
  EXPECT_THAT(refusal.message(), HasSubstr("client speaks protocol version 7; this daemon speaks version 1"));
}

TEST_F(ClientSessionTest, TheGuardPolicyIsTheDefaultOrAnAllowedChoiceAndReachesTheWorker) {
  session_options_.guard.policy = "trap";
  session_options_.guard.allowed_policies = {"poison"};
  session_options_.guard.sass_only = "refuse";
  session_options_.guard.require = "always";
  startPool();
  for (const char* asked : {"sink", "off", "nonsense"}) {
    FakeSessionStream stream;
    stream.sendHello(agileos::v1::PROTOCOL_VERSION_CURRENT, asked);
    serve(stream).join();
    Refusal refusal;
    ASSERT_TRUE(stream.onlyRefusal(Refusal::BAD_REQUEST, &refusal)) << asked;
    EXPECT_THAT(refusal.message(), HasSubstr("guard policy")) << asked;
  }
  EXPECT_EQ(events_.count({"attach"}), 0u) << "a refused policy never reaches a worker";
  for (const auto& [asked, given] : {std::pair{"", "trap"}, std::pair{"poison", "poison"}}) {
    FakeSessionStream stream;
    stream.sendHello(agileos::v1::PROTOCOL_VERSION_CURRENT, asked);
    std::thread session = serve(stream);
    const auto reply = stream.written(0);
    ASSERT_TRUE(reply.has_value() && reply->has_assignment()) << asked;
    EXPECT_TRUE(events_.waitFor({"attach client=" + std::to_string(reply->assignment().client_id()),
                                 std::string(" guard=") + given, " sass=refuse", " always"}))
        << asked;
    stream.closeFromClient();
    session.join();
  }
}

// kvstore 1.2.0 needs queue ^1.0 (queue is 1.0.3); zeta is in the pool but not allowed.
ModulesSection twoModulesAndAForbiddenOne() {
  using agileos::modules::ModuleEntry;
  ModulesSection section;
  ModuleEntry kv;
  kv.name = "kvstore";
  kv.version = {1, 2, 0};
  kv.depends.push_back({"queue", *agileos::modules::parseRequirement("^1.0")});
  kv.host_library_path = "/opt/m/libkvstore.so";
  kv.service = "kv";
  ModuleEntry queue;
  queue.name = "queue";
  queue.version = {1, 0, 3};
  queue.ptx_path = "/opt/m/queue.ptx";
  ModuleEntry zeta;
  zeta.name = "zeta";
  zeta.version = {0, 1, 0};
  zeta.ptx_path = "/opt/m/zeta.ptx";
  section.pool.modules = {kv, queue, zeta};
  section.allowed = {"kvstore", "queue"};
  return section;
}

TEST_F(ClientSessionTest, ModuleRequestsThatAreNotAdmittedAreRefusedWithTheReason) {
  session_options_.modules = twoModulesAndAForbiddenOne();
  ASSERT_TRUE(agileos::modules::validateModulePool(session_options_.modules.pool, "pool").empty());
  startPool();
  const std::vector<std::pair<std::string, std::string>> too_many(65, {"queue", ""});
  const struct {
    std::vector<std::pair<std::string, std::string>> modules;
    std::string reason;
  } cases[] = {
      {{{"nosuch", ""}}, "module admission: module 'nosuch' is not in the pool"},
      {{{"zeta", ""}}, "module admission: module 'zeta' is not allowed by the policy"},
      {{{"kvstore", ">=2"}}, "module admission: module 'kvstore' 1.2.0 does not satisfy '>=2'"},
      {{{"queue", "^1"}, {"Bad\nName", ""}}, "module admission: invalid module name"},
      {too_many, "module admission: too many module requests (65); at most 64"},
  };
  for (const auto& c : cases) {
    FakeSessionStream stream;
    stream.sendHelloWithModules(c.modules);
    serve(stream).join();
    Refusal refusal;
    ASSERT_TRUE(stream.onlyRefusal(Refusal::BAD_REQUEST, &refusal)) << c.reason;
    EXPECT_THAT(refusal.message(), HasSubstr(c.reason));
    EXPECT_EQ(refusal.message().find('\n'), std::string::npos) << "client text is quoted";
  }
  EXPECT_EQ(pool_->snapshot().clients, 0u);
  EXPECT_EQ(events_.count({"attach"}), 0u) << "a refused request never reaches a worker";
}

TEST_F(ClientSessionTest, AdmittedModulesReachTheWorkerInLoadOrder) {
  session_options_.modules = twoModulesAndAForbiddenOne();
  PoolOptions options = testing::mockPoolOptions(dir_);
  options.service_sockets = {{"kv", "/run/agileos/service-kv.sock"}};
  startPool(std::move(options));
  FakeSessionStream stream;
  stream.sendHelloWithModules({{"kvstore", "^1.2"}});
  std::thread session = serve(stream);
  const auto reply = stream.written(0);
  ASSERT_TRUE(reply.has_value() && reply->has_assignment());
  // The worker gets the service's socket, not its name.
  EXPECT_TRUE(events_.waitFor({"attach client=" + std::to_string(reply->assignment().client_id()),
                               " modules=queue@1.0.3(/opt/m/queue.ptx||),"
                               "kvstore@1.2.0(|/opt/m/libkvstore.so|/run/agileos/service-kv.sock)"}));
  stream.closeFromClient();
  session.join();
}

TEST_F(ClientSessionTest, AModuleWhoseServiceTheDaemonDoesNotRunIsRefused) {
  session_options_.modules = twoModulesAndAForbiddenOne();
  startPool();  // no service sockets
  FakeSessionStream stream;
  stream.sendHelloWithModules({{"kvstore", ""}});
  serve(stream).join();
  Refusal refusal;
  ASSERT_TRUE(stream.onlyRefusal(Refusal::INTERNAL, &refusal));
  EXPECT_THAT(refusal.message(), HasSubstr("module 'kvstore' needs service 'kv'"));
  EXPECT_EQ(events_.count({"attach"}), 0u);
}

TEST_F(ClientSessionTest, AModuleWhoseServiceIsDownIsRefusedUnavailableBeforeAnythingIsPlaced) {
  session_options_.modules = twoModulesAndAForbiddenOne();
  std::vector<std::string> asked;
  session_options_.service_unavailable = [&asked](const std::string& name) -> std::string {
    asked.push_back(name);
    return name == "kv" ? "service 'kv' is down (failed; last: exited with status 3)" : "";
  };
  PoolOptions options = testing::mockPoolOptions(dir_);
  options.service_sockets = {{"kv", "/run/agileos/service-kv.sock"}};
  startPool(std::move(options));

  FakeSessionStream refused;
  refused.sendHelloWithModules({{"kvstore", ""}});
  serve(refused).join();
  Refusal refusal;
  ASSERT_TRUE(refused.onlyRefusal(Refusal::UNAVAILABLE, &refusal));
  EXPECT_EQ(refusal.message(),
            "module 'kvstore' cannot be served: service 'kv' is down (failed; last: exited with status 3)");
  EXPECT_EQ(pool_->snapshot().clients, 0u);
  EXPECT_EQ(events_.count({"attach"}), 0u);
  EXPECT_EQ(asked, std::vector<std::string>{"kv"}) << "only modules with a service are asked about";

  // A module without a service is unaffected by the other one's being down.
  FakeSessionStream served;
  served.sendHelloWithModules({{"queue", ""}});
  std::thread session = serve(served);
  const auto assignment = served.written(0);
  ASSERT_TRUE(assignment.has_value() && assignment->has_assignment());
  served.closeFromClient();
  session.join();
}

TEST_F(ClientSessionTest, AClientThatAsksForNoModulesGetsNone) {
  session_options_.modules = twoModulesAndAForbiddenOne();
  startPool();
  FakeSessionStream stream;
  stream.sendHello();
  std::thread session = serve(stream);
  const auto reply = stream.written(0);
  ASSERT_TRUE(reply.has_value() && reply->has_assignment());
  EXPECT_TRUE(events_.waitFor({"attach client=" + std::to_string(reply->assignment().client_id())}));
  EXPECT_EQ(events_.count({" modules=", "queue"}), 0u);
  stream.closeFromClient();
  session.join();
}

TEST_F(ClientSessionTest, AssignedClientIsReleasedWhenItCloses) {
  startPool();
  FakeSessionStream stream;
  stream.sendHello();
  std::thread session = serve(stream);
  const auto reply = stream.written(0);
  ASSERT_TRUE(reply.has_value() && reply->has_assignment());
  const agileos::v1::Assignment& a = reply->assignment();
  EXPECT_EQ(a.session_token().size(), 32u);
  EXPECT_EQ(events_.count({"attach client=" + std::to_string(a.client_id()) +
                           " token=" + testing::hex(a.session_token())}),
            1u);
  stream.closeFromClient();
  session.join();
  EXPECT_EQ(stream.writeCount(), 1u);
  EXPECT_FALSE(stream.cancelled());
  EXPECT_TRUE(events_.waitFor({"release client=" + std::to_string(a.client_id())}));
}

TEST_F(ClientSessionTest, ClientIdsAreMonotonicAndTokensFresh) {
  startPool();
  FakeSessionStream first, second;
  first.sendHello();
  second.sendHello();
  std::thread a = serve(first);
  std::thread b = serve(second);
  const auto ra = first.written(0);
  const auto rb = second.written(0);
  ASSERT_TRUE(ra.has_value() && ra->has_assignment());
  ASSERT_TRUE(rb.has_value() && rb->has_assignment());
  EXPECT_EQ(std::set<std::uint64_t>({ra->assignment().client_id(), rb->assignment().client_id()}),
            (std::set<std::uint64_t>{1, 2}));
  EXPECT_NE(ra->assignment().session_token(), rb->assignment().session_token());
  first.closeFromClient();
  second.closeFromClient();
  a.join();
  b.join();
}

TEST_F(ClientSessionTest, WorkerDeathSendsSessionEndedAndWaitsForTheClientToClose) {
  startPool();
  FakeSessionStream stream;
  stream.sendHello();
  std::thread session = serve(stream);
  const auto reply = stream.written(0);
  ASSERT_TRUE(reply.has_value() && reply->has_assignment());
  ::kill(events_.pidOf(1), SIGKILL);
  const auto ended = stream.written(1);
  ASSERT_TRUE(ended.has_value() && ended->has_ended());
  EXPECT_THAT(ended->ended().reason(), HasSubstr("worker 1 killed by signal 9"));
  stream.closeFromClient();
  session.join();
  EXPECT_FALSE(stream.cancelled());
  EXPECT_TRUE(waitUntil([&] { return pool_->snapshot().clients == 0; }));
}

TEST_F(ClientSessionTest, ClientThatIgnoresSessionEndedIsCancelledAfterTheGrace) {
  session_options_.end_grace = std::chrono::milliseconds(50);
  startPool();
  FakeSessionStream stream;
  stream.sendHello();
  std::thread session = serve(stream);
  ASSERT_TRUE(stream.written(0).has_value());
  ::kill(events_.pidOf(1), SIGKILL);
  session.join();  // returns only because the runner cancels the stream
  EXPECT_TRUE(stream.cancelled());
  ASSERT_EQ(stream.writeCount(), 2u);
  EXPECT_TRUE(stream.written(1)->has_ended());
  EXPECT_TRUE(waitUntil([&] { return pool_->snapshot().clients == 0; }));
}

TEST_F(ClientSessionTest, MessageAfterHelloCancelsTheSessionAndReleases) {
  startPool();
  FakeSessionStream stream;
  stream.sendHello();
  std::thread session = serve(stream);
  const auto reply = stream.written(0);
  ASSERT_TRUE(reply.has_value() && reply->has_assignment());
  stream.sendHello();
  session.join();
  EXPECT_TRUE(stream.cancelled());
  EXPECT_TRUE(events_.waitFor({"release client=" + std::to_string(reply->assignment().client_id())}));
}

TEST_F(ClientSessionTest, PoolRefusalsReachTheClient) {
  PoolOptions options = testing::mockPoolOptions(dir_);
  options.max_workers = 1;
  // The refusal is what is tested, not the admission queue (it has tests of its own): without
  // this the client waits out the default 60 s before it is refused.
  options.queue_wait = std::chrono::milliseconds(200);
  startPool(options);
  ASSERT_TRUE(pool_->acquire(1000, "occupant", nullptr).assigned);  // takes the only slot
  FakeSessionStream stream;
  stream.sendHello();
  serve(stream).join();
  Refusal refusal;
  ASSERT_TRUE(stream.onlyRefusal(Refusal::BUSY, &refusal));
  pool_->release(1000);
}

TEST_F(ClientSessionTest, DaemonStopEndsTheSession) {
  startPool();
  FakeSessionStream stream;
  stream.sendHello();
  std::thread session = serve(stream);
  ASSERT_TRUE(stream.written(0).has_value());
  pool_->stop();
  const auto ended = stream.written(1);
  ASSERT_TRUE(ended.has_value() && ended->has_ended());
  EXPECT_EQ(ended->ended().reason(), "daemon shutting down");
  stream.closeFromClient();
  session.join();
  EXPECT_EQ(pool_->snapshot().clients, 0u);
}

}  // namespace
}  // namespace agileos::scheduler
