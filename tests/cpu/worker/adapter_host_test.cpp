// Trusted library adapters in the worker (worker/adapters/library_adapter.h): before any adapter
// code runs, the library must be hosted, the operation declared and admitted for the client,
// and the arguments must match the declaration; library objects are per client and die with
// the client's session.
#include <gtest/gtest.h>

#include <atomic>

#include "tests/cpu/worker/support/worker_harness.h"
#include "worker/adapters/library_adapter.h"

namespace agileos::worker::testing {
namespace {

using adapters::ArgKind;

constexpr std::array kNoArgs = std::array<ArgKind, 0>{};
constexpr std::array kUseArgs{ArgKind::kHandle, ArgKind::kDevicePointer, ArgKind::kInteger};
constexpr std::array kHandleArg{ArgKind::kHandle};
constexpr std::array kOperations{
    adapters::OperationDecl{"make", kNoArgs},
    adapters::OperationDecl{"use", kUseArgs},
    adapters::OperationDecl{"destroy", kHandleArg, true},
};
constexpr adapters::LibraryDecl kTestLibrary{"testlib", kOperations};

std::atomic<int> liveObjects{0};

struct Thing final : LibraryObject {
  Thing() : LibraryObject(kTestLibrary.name) { ++liveObjects; }
  ~Thing() override { --liveObjects; }
};

// Records what reached it; `use` checks its pointer over 64 bytes like a real adapter.
class RecordingAdapter final : public LibraryAdapter {
 public:
  explicit RecordingAdapter(std::atomic<int>* runs) : runs_(runs) {}
  const adapters::LibraryDecl& declaration() const override { return kTestLibrary; }
  void run(std::size_t operation, AdapterInvocation& call) override {
    ++*runs_;
    const std::string_view name = kOperations[operation].name;
    if (name == "make") {
      call.addHandle(call.ctx.session.libraryObjects.insert(std::make_shared<Thing>()));
      call.result.set_status(0);
    } else if (name == "use") {
      if (!call.object<Thing>(0, 7)) return;
      if (!checkRange(call.ctx, call.pointer(1), 64, call.reply, "test buffer")) return;
      call.addInteger(call.integer(2) * 2);
      call.result.set_status(0);
    } else {
      if (!call.object<Thing>(0, 7)) return;
      call.ctx.session.libraryObjects.erase(call.args[0].handle());
      call.result.set_status(0);
    }
  }

 private:
  std::atomic<int>* runs_;
};

v1::CallRequest adapterCall(const std::string& library, const std::string& operation,
                            std::vector<v1::AdapterValue> args = {}) {
  v1::CallRequest request;
  auto* call = request.mutable_adapter_call();
  call->set_library(library);
  call->set_operation(operation);
  for (auto& arg : args) *call->add_args() = std::move(arg);
  return request;
}

v1::AdapterValue integer(std::int64_t v) {
  v1::AdapterValue value;
  value.set_integer(v);
  return value;
}
v1::AdapterValue handle(std::uint64_t v) {
  v1::AdapterValue value;
  value.set_handle(v);
  return value;
}
v1::AdapterValue pointer(std::uint64_t v) {
  v1::AdapterValue value;
  value.set_device_pointer(v);
  return value;
}

struct AdapterFixture : ::testing::Test {
  AdapterFixture() {
    auto host = std::make_unique<AdapterHost>();
    host->add(std::make_unique<RecordingAdapter>(&runs));
    worker.runtime().setAdapters(std::move(host));
  }
  TestClient attach(ClientId id, std::vector<std::string> operations) {
    EXPECT_TRUE(worker.runtime().attach(id, WorkerHarness::tokenFor(id), {}, std::move(operations)));
    return TestClient(worker.runtime(), id, WorkerHarness::tokenFor(id));
  }
  std::uint64_t make(TestClient& client) {
    const v1::CallReply reply = client.call(adapterCall("testlib", "make"));
    EXPECT_EQ(reply.error(), 0) << describe(reply);
    return reply.adapter_reply().results(0).handle();
  }

  std::atomic<int> runs{0};
  WorkerHarness worker;
};

TEST_F(AdapterFixture, AnAdmittedCallRunsAndReturnsItsResults) {
  TestClient client = attach(1, {"testlib.*"});
  const std::uint64_t thing = make(client);
  const auto p = client.malloc(4096);
  const v1::CallReply reply =
      client.call(adapterCall("testlib", "use", {handle(thing), pointer(p), integer(21)}));
  ASSERT_EQ(reply.error(), 0) << describe(reply);
  EXPECT_EQ(reply.adapter_reply().results(0).integer(), 42);
}

TEST_F(AdapterFixture, RefusalsHappenBeforeTheAdapterRuns) {
  TestClient client = attach(1, {"testlib.make"});
  const std::uint64_t thing = make(client);
  const int before = runs.load();
  struct Case {
    v1::CallRequest request;
    int error;
  } cases[] = {
      {adapterCall("testlib", "use", {handle(thing), pointer(0), integer(1)}), cudaErrorNotPermitted},
      {adapterCall("nolib", "make"), cudaErrorNotSupported},
      {adapterCall("testlib", "setCallback"), cudaErrorNotSupported},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(client.call(c.request).error(), c.error) << c.request.ShortDebugString();
  }
  EXPECT_EQ(runs.load(), before);

  TestClient full = attach(2, {"testlib.*"});
  const std::uint64_t mine = make(full);
  const int afterMake = runs.load();
  // Wrong count, wrong kinds.
  EXPECT_EQ(full.call(adapterCall("testlib", "use", {handle(mine)})).error(), cudaErrorInvalidValue);
  EXPECT_EQ(full.call(adapterCall("testlib", "use", {integer(1), pointer(0), integer(1)})).error(),
            cudaErrorInvalidValue);
  EXPECT_EQ(full.call(adapterCall("testlib", "use", {handle(mine), integer(0), integer(1)})).error(),
            cudaErrorInvalidValue);
  EXPECT_EQ(full.call(adapterCall("testlib", "make", {integer(1)})).error(), cudaErrorInvalidValue);
  EXPECT_EQ(runs.load(), afterMake);
}

TEST_F(AdapterFixture, ObjectsArePerClientAndStaleHandlesAreRefused) {
  TestClient a = attach(1, {"testlib.*"});
  TestClient b = attach(2, {"testlib.*"});
  const std::uint64_t thing = make(a);
  const auto pb = b.malloc(4096);
  // b names a's object: unknown to b, refused with the library's status.
  v1::CallReply reply = b.call(adapterCall("testlib", "use", {handle(thing), pointer(pb), integer(1)}));
  EXPECT_EQ(reply.error(), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(reply.adapter_reply().status(), 7);
  // A forged handle, and a's own after destroying it.
  EXPECT_EQ(a.call(adapterCall("testlib", "destroy", {handle(thing ^ 0x5555)})).error(),
            cudaErrorInvalidResourceHandle);
  ASSERT_EQ(a.call(adapterCall("testlib", "destroy", {handle(thing)})).error(), 0);
  EXPECT_EQ(a.call(adapterCall("testlib", "destroy", {handle(thing)})).error(),
            cudaErrorInvalidResourceHandle);
}

TEST_F(AdapterFixture, PointersAreCheckedAgainstTheCallersAllocations) {
  TestClient a = attach(1, {"testlib.*"});
  TestClient b = attach(2, {"testlib.*"});
  const std::uint64_t thing = make(a);
  const auto pa = a.malloc(4096), pb = b.malloc(4096);
  EXPECT_EQ(
      a.call(adapterCall("testlib", "use", {handle(thing), pointer(pa + 4096 - 32), integer(1)})).error(),
      cudaErrorInvalidValue);
  EXPECT_NE(a.call(adapterCall("testlib", "use", {handle(thing), pointer(pb), integer(1)})).error(), 0);
  EXPECT_NE(
      a.call(adapterCall("testlib", "use", {handle(thing), pointer(0xF1000000000ull), integer(1)})).error(),
      0);
}

TEST_F(AdapterFixture, ObjectsDieWithTheSession) {
  const int before = liveObjects.load();
  TestClient a = attach(1, {"testlib.*"});
  make(a);
  make(a);
  EXPECT_EQ(liveObjects.load(), before + 2);
  ASSERT_TRUE(worker.runtime().release(1));
  EXPECT_EQ(liveObjects.load(), before);
}

TEST(AdapterAdmission, MatchesLibraryAndOperation) {
  const std::vector<std::string> admitted{"cufft.exec", "nvrtc.*"};
  EXPECT_TRUE(isAdmitted(admitted, "cufft", "exec"));
  EXPECT_FALSE(isAdmitted(admitted, "cufft", "create"));
  EXPECT_TRUE(isAdmitted(admitted, "nvrtc", "compile"));
  EXPECT_FALSE(isAdmitted(admitted, "nvrt", "compile"));
  EXPECT_FALSE(isAdmitted({"cufft*"}, "cufft", "exec"));
  EXPECT_FALSE(isAdmitted({}, "cufft", "exec"));
}

}  // namespace
}  // namespace agileos::worker::testing
