// What cudaDeviceReset, session release and worker shutdown leave behind, and
// the isolation of two clients of one worker.
#include <gtest/gtest.h>

#include <mutex>

#include "tests/cpu/worker/support/worker_harness.h"

namespace agileos::worker::testing {
namespace {

using memmgr::DevicePtr;

TEST(Lifecycle, DeviceResetReleasesMemoryStreamsAndEventsButKeepsModules) {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  const auto module = client.loadModule(readTestFatbin(TestFatbin::kDefaultArch));
  const DevicePtr small = client.malloc(4096), large = client.malloc(3u << 20);
  const std::uint64_t stream = client.createStream(), event = client.createEvent();
  client.write(module.variable(kCounterVariable), "kept");

  ASSERT_EQ(client.call(requests::deviceReset()).error(), 0);

  EXPECT_EQ(worker.memory().bytesInUse(1), 0u);
  EXPECT_EQ(worker.gpu().liveStreams(), 0u);
  EXPECT_EQ(worker.gpu().liveEvents(), 0u);
  for (DevicePtr p : {small, large}) {
    EXPECT_EQ(client.call(requests::memcpyDtoH(p, 4)).error(), cudaErrorInvalidValue)
        << "memory survived the reset";
  }
  EXPECT_EQ(client.call(requests::streamSynchronize(stream)).error(), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(client.call(requests::eventQuery(event)).error(), cudaErrorInvalidResourceHandle);
  // Modules stay loaded: their functions launch and their variables stay addressable.
  EXPECT_EQ(worker.gpu().liveModules(), 1u);
  EXPECT_EQ(client.call(requests::launchKernel(module.function(kEmptyKernel), "")).error(), 0);
  EXPECT_EQ(client.read(module.variable(kCounterVariable), 4), "kept");
  // And the client can start over.
  const DevicePtr again = client.malloc(4096);
  client.write(again, "new");
  EXPECT_EQ(client.read(again, 3), "new");
  EXPECT_TRUE(worker.gpu().misuse().empty());
}

TEST(Lifecycle, ReleaseFreesEverythingTheClientHeld) {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  client.loadModule(readTestFatbin(TestFatbin::kDefaultArch));
  client.loadModule(readTestFatbin(TestFatbin::kDefaultArch));
  for (std::uint64_t size : {100ull, 4096ull, 3ull << 20, 200ull << 10}) client.malloc(size);
  for (int i = 0; i < 3; ++i) {
    client.createStream();
    client.createEvent();
  }
  ASSERT_GT(worker.memory().bytesInUse(1), 0u);

  ASSERT_TRUE(worker.runtime().release(1));

  EXPECT_EQ(worker.memory().bytesInUse(1), 0u);
  EXPECT_EQ(worker.memory().table().bytesOwnedBy(1), 0u);
  EXPECT_EQ(worker.memory().table().size(), 0u) << "module variables or allocations left in the table";
  EXPECT_EQ(worker.gpu().liveStreams(), 0u);
  EXPECT_EQ(worker.gpu().liveEvents(), 0u);
  EXPECT_EQ(worker.gpu().liveModules(), 0u);
  EXPECT_EQ(worker.runtime().clientCount(), 0u);
  EXPECT_TRUE(worker.gpu().misuse().empty());
}

TEST(Lifecycle, ShutdownGivesEveryMappingHandleAndReservationBack) {
  WorkerHarness worker;
  TestClient first = worker.attach(1);
  TestClient second = worker.attach(2);
  first.malloc(3u << 20);
  second.malloc(4096);
  second.loadModule(readTestFatbin(TestFatbin::kDefaultArch));
  worker.shutDown();  // releaseAll, then the memory manager's destructor
  EXPECT_EQ(worker.gpu().liveMappings(), 0u);
  EXPECT_EQ(worker.gpu().livePhysicalHandles(), 0u);
  EXPECT_EQ(worker.gpu().physicalBytes(), 0u);
  EXPECT_EQ(worker.gpu().liveReservations(), 0u);
  EXPECT_EQ(worker.gpu().liveModules(), 0u);
  EXPECT_TRUE(worker.gpu().misuse().empty());
}

TEST(Lifecycle, TwoClientsCannotTouchEachOthersMemoryOrHandles) {
  WorkerHarness worker;
  TestClient alice = worker.attach(1);
  TestClient bob = worker.attach(2);
  const DevicePtr secret = bob.malloc(4096);
  bob.write(secret, std::string(4096, 'B'));
  const std::uint64_t bobStream = bob.createStream();
  const std::uint64_t bobEvent = bob.createEvent();
  const DevicePtr mine = alice.malloc(4096);
  const std::size_t transfersBefore = worker.gpu().transfers().size();

  EXPECT_EQ(alice.call(requests::memcpyDtoH(secret, 16)).error(), cudaErrorInvalidValue);
  EXPECT_EQ(alice.call(requests::memcpyHtoD(secret, "A")).error(), cudaErrorInvalidValue);
  EXPECT_EQ(alice.call(requests::memcpyDtoD(mine, secret, 16)).error(), cudaErrorInvalidValue);
  EXPECT_EQ(alice.call(requests::memcpyDtoD(secret, mine, 16)).error(), cudaErrorInvalidValue);
  EXPECT_EQ(alice.call(requests::memset(secret, 0, 16)).error(), cudaErrorInvalidValue);
  EXPECT_EQ(alice.call(requests::memFree(secret)).error(), cudaErrorInvalidValue);
  EXPECT_EQ(alice.call(requests::streamDestroy(bobStream)).error(), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(alice.call(requests::eventDestroy(bobEvent)).error(), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(worker.gpu().transfers().size(), transfersBefore);

  // Alice's reset and release leave Bob's state alone.
  ASSERT_EQ(alice.call(requests::deviceReset()).error(), 0);
  ASSERT_TRUE(worker.runtime().release(1));
  EXPECT_EQ(bob.read(secret, 4096), std::string(4096, 'B'));
  EXPECT_EQ(bob.call(requests::streamSynchronize(bobStream)).error(), 0);
  EXPECT_EQ(bob.call(requests::eventQuery(bobEvent)).error(), 0);
  EXPECT_TRUE(worker.gpu().misuse().empty());
}

TEST(Lifecycle, ClientsWithTheSameRequestsGetDistinctObjects) {
  WorkerHarness worker;
  TestClient alice = worker.attach(1);
  TestClient bob = worker.attach(2);
  const DevicePtr a = alice.malloc(256), b = bob.malloc(256);
  EXPECT_NE(a, b);
  EXPECT_NE(a / (2u << 20), b / (2u << 20)) << "two clients share a physical chunk";
  EXPECT_NE(alice.createStream(), bob.createStream());
}

// worker/handlers/module_handlers.cpp moduleUnload removes the module from the
// session's table before synchronizing; when the synchronize fails it returns
// without unloading, and nothing refers to the module any more.
TEST(Lifecycle, ReleaseUnloadsAModuleWhoseUnloadFailedEarlier) {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  const auto module = client.loadModule(readTestFatbin(TestFatbin::kDefaultArch));
  worker.gpu().failNext(FakeGpuCall::kSynchronizeContext, CUDA_ERROR_LAUNCH_TIMEOUT);
  EXPECT_NE(client.call(requests::moduleUnload(module.module)).error(), 0);
  ASSERT_TRUE(worker.runtime().release(1));
  EXPECT_EQ(worker.gpu().liveModules(), 0u) << "the module stays loaded in the context after its client left";
  EXPECT_EQ(worker.memory().table().size(), 0u);
}

class TaintRecorder final : public TaintListener {
 public:
  void contextTainted(ClientId client, const std::string& reason) override {
    std::lock_guard lock(mutex_);
    reports_.emplace_back(client, reason);
  }
  std::vector<std::pair<ClientId, std::string>> reports() const {
    std::lock_guard lock(mutex_);
    return reports_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::pair<ClientId, std::string>> reports_;
};

TEST(Lifecycle, ContextFatalDriverErrorsAreReportedAsTaintWithTheClient) {
  WorkerHarness worker;
  TaintRecorder taint;
  WorkerRuntime runtime(worker.gpu(), worker.memory(), nullptr, &taint);
  ASSERT_TRUE(runtime.attach(5, "t5"));
  TestClient client(runtime, 5, "t5");
  const DevicePtr p = client.malloc(256);
  worker.gpu().failNext(FakeGpuCall::kCopyHostToDevice, CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(client.call(requests::memcpyHtoD(p, "x")).error(), cudaErrorInvalidValue);
  EXPECT_TRUE(taint.reports().empty()) << "an ordinary error tainted the context";
  worker.gpu().failNext(FakeGpuCall::kSynchronizeContext, CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(client.call(requests::deviceSynchronize()).error(), cudaErrorIllegalAddress);
  const auto reports = taint.reports();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].first, 5u);
  runtime.releaseAll();
}

}  // namespace
}  // namespace agileos::worker::testing
