// Held launches (worker/launch_batch.h): plain launches the client does not wait for, queued
// behind one another on a connection, go to the GPU together as launch chains, in the order the
// client sent them, before anything else of the connection; the chains are kept and reused per
// stream, dropped with their stream, module and session; a failing chain falls back to plain
// launches. The fake records a chain's launches as separate launches, all or none.
#include "worker/launch_batch.h"

#include <gtest/gtest.h>

#include "tests/cpu/worker/support/worker_harness.h"
#include "worker/call_context.h"

namespace agileos::worker::testing {
namespace {

// One shared-memory connection of the client, as worker/transport/shm_connection.cpp drives
// runtime.call: whether the client waits, and whether more requests are queued behind this one.
struct Connection {
  WorkerHarness& worker;
  std::string token;
  LaunchBatch batch;
  SharedMemoryChannel shared;

  Connection(WorkerHarness& w, const std::string& t) : worker(w), token(t) { shared.launches = &batch; }

  v1::CallReply send(const v1::CallRequest& request, bool awaited, bool unawaitedQueued) {
    shared.replyAwaited = awaited;
    shared.unawaitedQueued = unawaitedQueued;
    v1::CallReply reply;
    EXPECT_EQ(worker.runtime().call(token, request, reply, &shared), WorkerRuntime::CallStatus::kOk);
    return reply;
  }
  // A launch the client does not wait for, with `grid.x` as its mark.
  void launch(std::uint64_t function, unsigned mark, bool unawaitedQueued, std::uint64_t stream = 0,
              std::string params = "") {
    const v1::CallReply reply =
        send(requests::launchKernel(function, std::move(params), {mark, 1, 1}, {}, stream), false,
             unawaitedQueued);
    EXPECT_EQ(reply.error(), 0) << describe(reply);
  }
};

struct Fixture {
  WorkerHarness worker;
  TestClient client{worker.attach(1)};
  TestClient::LoadedModule module{client.loadModule(readTestFatbin(TestFatbin::kDefaultArch))};
  Connection connection{worker, WorkerHarness::tokenFor(1)};

  std::uint64_t empty() const { return module.function(kEmptyKernel); }
  std::vector<unsigned> marks() {
    std::vector<unsigned> out;
    for (const FakeLaunch& launch : worker.gpu().launches()) out.push_back(launch.config.gridX);
    return out;
  }
  std::uint64_t count(FakeGpuCall call) { return worker.gpu().callCount(call); }
};

TEST(LaunchBatch, QueuedLaunchesWaitForTheQueueToEmptyThenGoAsChainsInOrder) {
  Fixture f;
  for (unsigned i = 1; i <= 6; ++i) f.connection.launch(f.empty(), i, true);
  EXPECT_TRUE(f.marks().empty()) << "held while more requests are queued";
  f.connection.launch(f.empty(), 7, false);
  EXPECT_EQ(f.marks(), (std::vector<unsigned>{1, 2, 3, 4, 5, 6, 7}));
  // 7 = a chain of 4, a chain of 2, one plain launch.
  EXPECT_EQ(f.count(FakeGpuCall::kChainCreate), 2u);
  EXPECT_EQ(f.count(FakeGpuCall::kChainLaunch), 2u);
  EXPECT_EQ(f.count(FakeGpuCall::kLaunchKernel), 1u);
  // A launch with nothing of the kind queued behind it is not held at all.
  f.connection.launch(f.empty(), 8, false);
  EXPECT_EQ(f.count(FakeGpuCall::kLaunchKernel), 2u);
  EXPECT_TRUE(f.connection.batch.empty());
  EXPECT_TRUE(f.worker.gpu().misuse().empty());
}

TEST(LaunchBatch, ARunLikeAnEarlierOneReusesItsChainAndUpdatesOnlyNodesThatDiffer) {
  Fixture f;
  auto run = [&](unsigned third) {
    for (unsigned i = 1; i <= 3; ++i) f.connection.launch(f.empty(), i == 3 ? third : i, true);
    f.connection.launch(f.empty(), 4, false);
  };
  run(3);
  run(3);
  EXPECT_EQ(f.count(FakeGpuCall::kChainCreate), 1u);
  EXPECT_EQ(f.count(FakeGpuCall::kChainSetNode), 0u);
  run(9);
  EXPECT_EQ(f.count(FakeGpuCall::kChainCreate), 1u);
  EXPECT_EQ(f.count(FakeGpuCall::kChainSetNode), 1u) << "only the third node changed";
  EXPECT_EQ(f.count(FakeGpuCall::kChainLaunch), 3u);
  EXPECT_EQ(f.marks(), (std::vector<unsigned>{1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 9, 4}));
  // Parameters are part of a node: a different parameter block updates it.
  const std::string zeros(kPairKernelParamBytes, '\0');
  std::string ones = zeros;
  ones[0] = 1;
  const std::uint64_t pair = f.module.function(kPairKernel);
  f.connection.launch(pair, 1, true, 0, zeros);
  f.connection.launch(pair, 2, false, 0, zeros);
  f.connection.launch(pair, 1, true, 0, zeros);
  f.connection.launch(pair, 2, false, 0, ones);
  const auto launches = f.worker.gpu().launches();
  ASSERT_EQ(launches.size(), 16u);
  EXPECT_EQ(launches[15].params, ones);
  EXPECT_EQ(launches[14].params, zeros);
}

TEST(LaunchBatch, AnyOtherRequestOfTheConnectionFindsTheHeldLaunchesSubmitted) {
  Fixture f;
  f.connection.launch(f.empty(), 1, true);
  f.connection.launch(f.empty(), 2, true);
  EXPECT_TRUE(f.marks().empty());
  const v1::CallReply sync = f.connection.send(requests::deviceSynchronize(), true, true);
  EXPECT_EQ(sync.error(), 0) << describe(sync);
  EXPECT_EQ(f.marks(), (std::vector<unsigned>{1, 2}));
  // An awaited launch and a cooperative one are never held, and go after those held.
  f.connection.launch(f.empty(), 3, true);
  EXPECT_EQ(f.connection.send(requests::launchKernel(f.empty(), "", {4, 1, 1}), true, true).error(), 0);
  EXPECT_EQ(f.marks(), (std::vector<unsigned>{1, 2, 3, 4}));
  EXPECT_EQ(f.connection.send(requests::cooperativeLaunch(f.empty(), "", {5, 1, 1}), false, true).error(), 0);
  EXPECT_EQ(f.marks(), (std::vector<unsigned>{1, 2, 3, 4, 5}));
  EXPECT_TRUE(f.connection.batch.empty());
}

TEST(LaunchBatch, ABatchHoldsOneStreamsLaunchesAndAFullOneIsSubmitted) {
  Fixture f;
  const std::uint64_t stream = f.client.createStream();
  f.connection.launch(f.empty(), 1, true);
  f.connection.launch(f.empty(), 2, true);
  f.connection.launch(f.empty(), 3, true, stream);
  EXPECT_EQ(f.marks(), (std::vector<unsigned>{1, 2})) << "the default stream's launches went first";
  f.connection.launch(f.empty(), 4, false, stream);
  const auto launches = f.worker.gpu().launches();
  ASSERT_EQ(launches.size(), 4u);
  EXPECT_EQ(launches[0].stream, nullptr);
  EXPECT_NE(launches[3].stream, nullptr);
  EXPECT_EQ(launches[2].stream, launches[3].stream);

  f.worker.gpu().clearRecords();
  for (unsigned i = 0; i < LaunchBatch::kMaxHeld; ++i) f.connection.launch(f.empty(), i + 1, true);
  EXPECT_EQ(f.marks().size(), LaunchBatch::kMaxHeld) << "a full batch is submitted though more are queued";
  EXPECT_TRUE(f.connection.batch.empty());
}

TEST(LaunchBatch, HeldLaunchesOnAStreamDestroyedMeanwhileFailAndNothingRuns) {
  Fixture f;
  const std::uint64_t stream = f.client.createStream();
  f.connection.launch(f.empty(), 1, true, stream);
  f.connection.launch(f.empty(), 2, true, stream);
  // Another connection of the client (here: no shared memory) destroys the stream.
  ASSERT_EQ(f.client.call(requests::streamDestroy(stream)).error(), 0);
  f.connection.send(requests::deviceSynchronize(), true, false);
  EXPECT_TRUE(f.marks().empty());
  EXPECT_EQ(f.connection.shared.heldLaunchError, cudaErrorInvalidResourceHandle);
  EXPECT_NE(f.connection.shared.heldLaunchDetail.find("destroyed since"), std::string::npos)
      << f.connection.shared.heldLaunchDetail;
  EXPECT_TRUE(f.worker.gpu().misuse().empty()) << "the dead stream never reached the driver";
}

TEST(LaunchBatch, HeldLaunchesOfAModuleUnloadedMeanwhileFailAndTheOthersRun) {
  Fixture f;
  const TestClient::LoadedModule other = f.client.loadModule(readTestFatbin(TestFatbin::kDefaultArch));
  f.connection.launch(f.empty(), 1, true);
  f.connection.launch(other.function(kEmptyKernel), 2, true);
  f.connection.launch(f.empty(), 3, true);
  ASSERT_EQ(f.client.call(requests::moduleUnload(other.module)).error(), 0);
  f.connection.send(requests::deviceSynchronize(), true, false);
  EXPECT_EQ(f.marks(), (std::vector<unsigned>{1, 3}));
  EXPECT_EQ(f.connection.shared.heldLaunchError, cudaErrorInvalidResourceHandle);
  EXPECT_TRUE(f.worker.gpu().misuse().empty());
}

TEST(LaunchBatch, HeldLaunchesOfAClientTheGuardPoisonedMeanwhileNeverRun) {
  Fixture f;
  f.connection.launch(f.empty(), 1, true);
  f.connection.launch(f.empty(), 2, true);
  // Another connection's synchronize found a guard hit (policy poison).
  f.worker.runtime().bind(f.connection.token)->session->guard.poisoned = true;
  const v1::CallReply sync = f.connection.send(requests::deviceSynchronize(), true, false);
  EXPECT_EQ(sync.error(), cudaErrorIllegalAddress);
  EXPECT_TRUE(f.marks().empty());
  EXPECT_TRUE(f.connection.batch.empty());
  EXPECT_EQ(f.connection.shared.heldLaunchError, cudaErrorIllegalAddress);
  EXPECT_NE(f.connection.shared.heldLaunchDetail.find("poison"), std::string::npos);
}

TEST(LaunchBatch, AChainTheDriverRefusesFallsBackToPlainLaunches) {
  for (FakeGpuCall failing : {FakeGpuCall::kChainCreate, FakeGpuCall::kChainLaunch}) {
    Fixture f;
    f.worker.gpu().failNext(failing, CUDA_ERROR_OUT_OF_MEMORY);
    for (unsigned i = 1; i <= 3; ++i) f.connection.launch(f.empty(), i, true);
    f.connection.launch(f.empty(), 4, false);
    EXPECT_EQ(f.marks(), (std::vector<unsigned>{1, 2, 3, 4})) << toString(failing);
    EXPECT_EQ(f.count(FakeGpuCall::kLaunchKernel), 4u) << toString(failing);
    EXPECT_EQ(f.connection.shared.heldLaunchError, 0) << "the plain launches succeeded";
    EXPECT_EQ(f.worker.gpu().liveChains(), 0u) << "none built, or the one refused destroyed";
  }
  // A node update refused: that chain is destroyed, its launches go plain, the next run builds anew.
  Fixture f;
  f.connection.launch(f.empty(), 1, true);
  f.connection.launch(f.empty(), 2, false);
  f.worker.gpu().failNext(FakeGpuCall::kChainSetNode, CUDA_ERROR_INVALID_VALUE);
  f.connection.launch(f.empty(), 5, true);
  f.connection.launch(f.empty(), 6, false);
  EXPECT_EQ(f.marks(), (std::vector<unsigned>{1, 2, 5, 6}));
  EXPECT_EQ(f.worker.gpu().liveChains(), 0u);
  EXPECT_EQ(f.count(FakeGpuCall::kChainDestroy), 1u);
}

TEST(LaunchBatch, AfterRepeatedRefusalsTheSessionsLaunchesAreNoLongerHeld) {
  Fixture f;
  for (int i = 0; i < LaunchChainCache::kMaxRefusals; ++i) {
    f.worker.gpu().failNext(FakeGpuCall::kChainCreate, CUDA_ERROR_NOT_SUPPORTED);
    f.connection.launch(f.empty(), 1, true);
    f.connection.launch(f.empty(), 2, false);
  }
  EXPECT_EQ(f.count(FakeGpuCall::kChainCreate), std::uint64_t(LaunchChainCache::kMaxRefusals));
  f.connection.launch(f.empty(), 3, true);
  EXPECT_TRUE(f.connection.batch.empty()) << "went at once";
  f.connection.launch(f.empty(), 4, false);
  EXPECT_EQ(f.count(FakeGpuCall::kChainCreate), std::uint64_t(LaunchChainCache::kMaxRefusals));
  EXPECT_EQ(f.marks().size(), 2u * LaunchChainCache::kMaxRefusals + 2);
  EXPECT_EQ(f.connection.shared.heldLaunchError, 0);
}

TEST(LaunchBatch, WithEveryChainSlotTakenNewRunsGoOneByOne) {
  Fixture f;
  std::vector<std::uint64_t> streams;
  for (std::size_t i = 0; i <= LaunchChainCache::kMaxKept; ++i) streams.push_back(f.client.createStream());
  for (std::uint64_t stream : streams) {
    f.connection.launch(f.empty(), 1, true, stream);
    f.connection.launch(f.empty(), 2, false, stream);
  }
  EXPECT_EQ(f.worker.gpu().liveChains(), LaunchChainCache::kMaxKept);
  EXPECT_EQ(f.count(FakeGpuCall::kChainCreate), std::uint64_t(LaunchChainCache::kMaxKept))
      << "the last stream's run went one by one rather than build a chain to destroy";
  EXPECT_EQ(f.count(FakeGpuCall::kChainDestroy), 0u);
  EXPECT_EQ(f.marks().size(), 2 * streams.size());
  // A stream that has a kept chain still uses it.
  f.connection.launch(f.empty(), 1, true, streams.front());
  f.connection.launch(f.empty(), 2, false, streams.front());
  EXPECT_EQ(f.count(FakeGpuCall::kChainLaunch), std::uint64_t(LaunchChainCache::kMaxKept) + 1);
}

TEST(LaunchBatch, WithLoneLaunchChainsALaunchWithNothingQueuedUsesAOneNodeChain) {
  Fixture f;
  f.connection.shared.loneLaunchChains = true;
  f.connection.launch(f.empty(), 1, false);
  f.connection.launch(f.empty(), 1, false);
  f.connection.launch(f.empty(), 2, false);
  EXPECT_EQ(f.marks(), (std::vector<unsigned>{1, 1, 2}));
  EXPECT_EQ(f.count(FakeGpuCall::kLaunchKernel), 0u);
  EXPECT_EQ(f.count(FakeGpuCall::kChainCreate), 1u);
  EXPECT_EQ(f.count(FakeGpuCall::kChainLaunch), 3u);
  EXPECT_EQ(f.count(FakeGpuCall::kChainSetNode), 1u) << "only the third launch differed";
  // An awaited launch still goes alone.
  EXPECT_EQ(f.connection.send(requests::launchKernel(f.empty(), "", {3, 1, 1}), true, false).error(), 0);
  EXPECT_EQ(f.count(FakeGpuCall::kLaunchKernel), 1u);
  EXPECT_TRUE(f.connection.batch.empty());
}

TEST(LaunchBatch, KeptChainsGoWithTheirStreamTheModuleAndTheSession) {
  Fixture f;
  const std::uint64_t stream = f.client.createStream();
  for (std::uint64_t s : {std::uint64_t{0}, stream}) {
    f.connection.launch(f.empty(), 1, true, s);
    f.connection.launch(f.empty(), 2, false, s);
  }
  EXPECT_EQ(f.worker.gpu().liveChains(), 2u);
  ASSERT_EQ(f.client.call(requests::streamDestroy(stream)).error(), 0);
  EXPECT_EQ(f.worker.gpu().liveChains(), 1u) << "the destroyed stream's chain went with it";
  ASSERT_EQ(f.client.call(requests::moduleUnload(f.module.module)).error(), 0);
  EXPECT_EQ(f.worker.gpu().liveChains(), 0u) << "chains may name the unloaded module's functions";

  const TestClient::LoadedModule again = f.client.loadModule(readTestFatbin(TestFatbin::kDefaultArch));
  f.connection.launch(again.function(kEmptyKernel), 1, true);
  f.connection.launch(again.function(kEmptyKernel), 2, false);
  EXPECT_EQ(f.worker.gpu().liveChains(), 1u);
  f.worker.runtime().release(1);
  EXPECT_EQ(f.worker.gpu().liveChains(), 0u) << "the session's end frees its chains";
  EXPECT_TRUE(f.worker.gpu().misuse().empty());
}

}  // namespace
}  // namespace agileos::worker::testing
