// Graph allocations (the GRAPH_* steps of proto StreamOrderedMemory) on the fake GPU: a
// reservation is address space that passes no check until its allocation node runs, which binds
// memory (charged to the quota) that allocations whose lifetimes do not overlap share; a free makes
// it not live again and keeps the memory mapped for the next launch until a trim; a reservation is
// given back when the client releases it and it is not live; each step names only the client's own
// reservations; a reset forgets them. The policy's stream and event cases: graph_memory_policy_test.
#include <gtest/gtest.h>

#include "tests/cpu/worker/support/worker_harness.h"

namespace agileos::worker::testing {
namespace {

using memmgr::DevicePtr;
using memmgr::PointerCheck;
using Step = v1::StreamOrderedMemory::Step;

v1::CallRequest step(Step which, std::uint64_t address = 0, std::uint64_t size = 0,
                     std::uint64_t stream = 0) {
  v1::CallRequest request;
  auto* args = request.mutable_stream_ordered_memory();
  args->set_step(which);
  args->set_size(size);
  args->set_address(address);
  args->set_stream(stream);
  return request;
}

class GraphMemoryTest : public ::testing::Test {
 protected:
  DevicePtr reserve(TestClient& client, std::uint64_t size) {
    const v1::CallReply reply = client.call(step(v1::StreamOrderedMemory::GRAPH_RESERVE, 0, size));
    EXPECT_EQ(reply.error(), 0) << describe(reply);
    return reply.stream_ordered_memory_result().address();
  }
  int activate(TestClient& client, DevicePtr p) {
    return client.call(step(v1::StreamOrderedMemory::GRAPH_ACTIVATE, p)).error();
  }
  int freeNode(TestClient& client, DevicePtr p, std::uint64_t stream = 0) {
    return client.call(step(v1::StreamOrderedMemory::FREE, p, 0, stream)).error();
  }
  int release(TestClient& client, DevicePtr p) {
    return client.call(step(v1::StreamOrderedMemory::GRAPH_RELEASE, p)).error();
  }
  v1::StreamOrderedMemoryResult usage(TestClient& client) {
    const v1::CallReply reply = client.call(step(v1::StreamOrderedMemory::GRAPH_USAGE));
    EXPECT_EQ(reply.error(), 0) << describe(reply);
    return reply.stream_ordered_memory_result();
  }
  std::uint64_t granularity() { return worker.memory().granularity(); }
  PointerCheck check(const TestClient& client, DevicePtr p) {
    return worker.memory().check(client.id(), p, 1);
  }

  WorkerHarness worker;
  TestClient client = worker.attach(1);
  TestClient other = worker.attach(2);
};

TEST_F(GraphMemoryTest, AReservationPassesNoCheckUntilItsAllocationNodeRuns) {
  const DevicePtr p = reserve(client, 4096);
  ASSERT_NE(p, 0u);
  EXPECT_EQ(check(client, p), PointerCheck::kUnknown);
  EXPECT_EQ(client.call(requests::memcpyHtoD(p, std::string(16, 'a'))).error(), cudaErrorInvalidValue)
      << "a copy into a reservation that is not live";
  EXPECT_EQ(client.call(requests::memset(p, 0, 16)).error(), cudaErrorInvalidValue);
  ASSERT_EQ(activate(client, p), 0);
  EXPECT_EQ(check(client, p), PointerCheck::kOk);
  EXPECT_EQ(check(other, p), PointerCheck::kForeign);
  client.write(p, std::string(4096, 'g'));
  EXPECT_EQ(client.read(p, 4), "gggg");
}

TEST_F(GraphMemoryTest, ALiveAllocationCannotBeMadeLiveAgain) {
  const DevicePtr p = reserve(client, 4096);
  ASSERT_EQ(activate(client, p), 0);
  EXPECT_EQ(activate(client, p), cudaErrorInvalidValue) << "a relaunch while the allocation lives";
  ASSERT_EQ(freeNode(client, p), 0);
  EXPECT_EQ(check(client, p), PointerCheck::kUnknown);
  EXPECT_EQ(freeNode(client, p), cudaErrorInvalidValue) << "freed twice";
  ASSERT_EQ(activate(client, p), 0) << "the next launch, at the same address";
  EXPECT_EQ(check(client, p), PointerCheck::kOk);
}

TEST_F(GraphMemoryTest, CudaFreeOfALiveAllocationSynchronizesAndKeepsTheReservation) {
  const DevicePtr p = reserve(client, 4096);
  ASSERT_EQ(activate(client, p), 0);
  const std::uint64_t syncs = worker.gpu().callCount(FakeGpuCall::kSynchronizeContext);
  ASSERT_EQ(client.call(requests::memFree(p)).error(), 0);
  EXPECT_GT(worker.gpu().callCount(FakeGpuCall::kSynchronizeContext), syncs);
  EXPECT_EQ(check(client, p), PointerCheck::kUnknown);
  EXPECT_EQ(client.call(requests::memFree(p)).error(), cudaErrorInvalidValue) << "freed twice";
  EXPECT_EQ(usage(client).used_bytes(), granularity()) << "the memory stays mapped for the next launch";
  ASSERT_EQ(activate(client, p), 0);
}

TEST_F(GraphMemoryTest, AReservationHasNoMemoryUntilALaunchRunsItsNode) {
  const std::uint64_t charged = worker.memory().chargedBytes(client.id());
  const DevicePtr p = reserve(client, 3 * granularity());
  EXPECT_EQ(worker.memory().chargedBytes(client.id()), charged);
  EXPECT_EQ(usage(client).reserved_bytes(), 0u);
  ASSERT_EQ(activate(client, p), 0);
  EXPECT_EQ(worker.memory().chargedBytes(client.id()), charged + 3 * granularity());
  EXPECT_EQ(usage(client).used_bytes(), 3 * granularity());
  EXPECT_EQ(usage(client).reserved_bytes(), 3 * granularity());
}

TEST_F(GraphMemoryTest, AllocationsWhoseLifetimesDoNotOverlapShareMemory) {
  const DevicePtr first = reserve(client, 4096);
  const DevicePtr second = reserve(client, 4096);
  ASSERT_NE(first, second);
  ASSERT_EQ(activate(client, first), 0);
  client.write(first, "shared");
  ASSERT_EQ(freeNode(client, first), 0);
  ASSERT_EQ(activate(client, second), 0) << "after the first's free, on the same stream";
  EXPECT_EQ(usage(client).reserved_bytes(), granularity()) << "one block serves both";
  EXPECT_EQ(client.read(second, 6), "shared") << "the same physical memory, at another address";
  ASSERT_EQ(activate(client, first), 0) << "while the second holds the shared memory";
  EXPECT_EQ(usage(client).reserved_bytes(), 2 * granularity()) << "the first moves to memory of its own";
  client.write(first, "moved!");
  EXPECT_EQ(client.read(second, 6), "shared") << "no longer shared";
}

TEST_F(GraphMemoryTest, AllocationsLiveAtOnceGetMemoryOfTheirOwn) {
  const DevicePtr first = reserve(client, 4096);
  const DevicePtr second = reserve(client, 4096);
  ASSERT_EQ(activate(client, first), 0);
  ASSERT_EQ(activate(client, second), 0);
  EXPECT_EQ(usage(client).reserved_bytes(), 2 * granularity());
  client.write(first, "one");
  client.write(second, "two");
  EXPECT_EQ(client.read(first, 3), "one");
  ASSERT_EQ(freeNode(client, second), 0);
  ASSERT_EQ(client.call(step(v1::StreamOrderedMemory::GRAPH_TRIM)).error(), 0);
  EXPECT_EQ(usage(client).reserved_bytes(), granularity()) << "the trim gives back only the free block";
  EXPECT_EQ(usage(client).used_bytes(), granularity());
  EXPECT_EQ(check(client, first), PointerCheck::kOk);
  EXPECT_EQ(client.read(first, 3), "one") << "the live allocation keeps its memory";
  ASSERT_EQ(activate(client, second), 0) << "the trimmed reservation gets memory at its next launch";
  EXPECT_EQ(usage(client).reserved_bytes(), 2 * granularity());
}

TEST_F(GraphMemoryTest, AReleasedReservationGoesWhenItIsNotLive) {
  const DevicePtr idle = reserve(client, 4096);
  const DevicePtr live = reserve(client, 8192);
  ASSERT_EQ(activate(client, live), 0);
  EXPECT_EQ(usage(client).used_bytes(), granularity());
  EXPECT_EQ(usage(client).reserved_bytes(), granularity());
  ASSERT_EQ(release(client, idle), 0);
  ASSERT_EQ(release(client, live), 0);
  EXPECT_EQ(release(client, live), cudaErrorInvalidValue) << "released twice";
  EXPECT_EQ(check(client, live), PointerCheck::kOk) << "the live one stays until it is freed";
  EXPECT_EQ(activate(client, idle), cudaErrorInvalidValue) << "a released reservation is gone";
  ASSERT_EQ(freeNode(client, live), 0);
  EXPECT_EQ(check(client, live), PointerCheck::kUnknown);
  EXPECT_EQ(usage(client).used_bytes(), 0u) << "mapped nowhere";
  EXPECT_EQ(usage(client).reserved_bytes(), granularity()) << "kept for other allocations until a trim";
  ASSERT_EQ(client.call(step(v1::StreamOrderedMemory::GRAPH_TRIM)).error(), 0);
  EXPECT_EQ(usage(client).reserved_bytes(), 0u);
  EXPECT_EQ(usage(client).reserved_high(), granularity());
}

TEST_F(GraphMemoryTest, AClientNamesOnlyItsOwnReservations) {
  const DevicePtr theirs = reserve(other, 4096);
  ASSERT_EQ(activate(other, theirs), 0);
  const DevicePtr mine = reserve(client, 4096);
  EXPECT_EQ(activate(client, theirs), cudaErrorInvalidValue);
  EXPECT_EQ(freeNode(client, theirs), cudaErrorInvalidValue);
  EXPECT_EQ(client.call(requests::memFree(theirs)).error(), cudaErrorInvalidValue);
  EXPECT_EQ(release(client, theirs), cudaErrorInvalidValue);
  EXPECT_EQ(activate(client, mine + 256), cudaErrorInvalidValue) << "an interior address";
  EXPECT_EQ(release(client, 0x1234), cudaErrorInvalidValue);
  EXPECT_EQ(activate(client, memmgr::kModuleRange.begin), cudaErrorInvalidValue);
  EXPECT_EQ(check(other, theirs), PointerCheck::kOk) << "the other client's allocation is untouched";
  EXPECT_EQ(client.call(requests::memFree(mine)).error(), cudaErrorInvalidValue)
      << "cudaFree of a reservation that is not live";
  EXPECT_EQ(freeNode(client, mine), cudaErrorInvalidValue) << "a free of a reservation that is not live";
}

TEST_F(GraphMemoryTest, TheQuotaCountsTheMemoryALaunchBinds) {
  worker.memory().setQuota(client.id(), 8ull << 20);
  const DevicePtr p = reserve(client, 6ull << 20);
  ASSERT_NE(p, 0u);
  const v1::CallReply user = client.call(requests::memAlloc(4ull << 20));
  ASSERT_EQ(user.error(), 0) << "a reservation is address space only";
  EXPECT_EQ(activate(client, p), cudaErrorMemoryAllocation) << "its memory would pass the quota";
  EXPECT_EQ(check(client, p), PointerCheck::kUnknown) << "a refused launch leaves it not live";
  ASSERT_EQ(client.call(requests::memFree(user.device_pointer().dptr())).error(), 0);
  ASSERT_EQ(activate(client, p), 0);
  EXPECT_EQ(client.call(requests::memAlloc(4ull << 20)).error(), cudaErrorMemoryAllocation) << "charged now";
  ASSERT_EQ(freeNode(client, p), 0);
  EXPECT_EQ(client.call(requests::memAlloc(4ull << 20)).error(), cudaErrorMemoryAllocation)
      << "a freed allocation's memory stays with the graphs";
  ASSERT_EQ(client.call(step(v1::StreamOrderedMemory::GRAPH_TRIM)).error(), 0);
  EXPECT_EQ(client.call(requests::memAlloc(4ull << 20)).error(), 0) << "trimmed: the quota has room again";
}

TEST_F(GraphMemoryTest, AZeroByteReservationIsRefused) {
  EXPECT_EQ(client.call(step(v1::StreamOrderedMemory::GRAPH_RESERVE, 0, 0)).error(), cudaErrorInvalidValue);
}

TEST_F(GraphMemoryTest, TheHighWaterMarksResetToTheCurrentValues) {
  const DevicePtr p = reserve(client, 4096);
  ASSERT_EQ(activate(client, p), 0);
  ASSERT_EQ(freeNode(client, p), 0);
  ASSERT_EQ(client.call(step(v1::StreamOrderedMemory::GRAPH_TRIM)).error(), 0);
  EXPECT_EQ(usage(client).used_high(), granularity());
  EXPECT_EQ(usage(client).used_bytes(), 0u);
  EXPECT_EQ(client.call(step(v1::StreamOrderedMemory::GRAPH_RESET_USED_HIGH)).error(), 0);
  EXPECT_EQ(usage(client).used_high(), 0u);
  EXPECT_EQ(usage(client).reserved_high(), granularity());
  EXPECT_EQ(client.call(step(v1::StreamOrderedMemory::GRAPH_RESET_RESERVED_HIGH)).error(), 0);
  EXPECT_EQ(usage(client).reserved_high(), 0u);
}

TEST_F(GraphMemoryTest, ADeviceResetForgetsEveryReservation) {
  const DevicePtr p = reserve(client, 4096);
  ASSERT_EQ(activate(client, p), 0);
  ASSERT_EQ(client.call(requests::deviceReset()).error(), 0);
  EXPECT_EQ(check(client, p), PointerCheck::kUnknown);
  EXPECT_EQ(usage(client).reserved_bytes(), 0u);
  EXPECT_EQ(freeNode(client, p), cudaErrorInvalidValue);
}

}  // namespace
}  // namespace agileos::worker::testing
