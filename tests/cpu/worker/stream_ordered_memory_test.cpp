// Stream-ordered allocation (proto StreamOrderedMemory) on the fake GPU: an allocation is the
// client's at once and checked like cudaMalloc's; a free keeps its memory until the event recorded
// on its stream has completed (the fake answers CUDA_ERROR_NOT_READY when told to); a range is
// never freed twice or by another client; pools account for their allocations; teardown and reset
// leave no event behind.
#include <gtest/gtest.h>

#include "tests/cpu/worker/support/worker_harness.h"

namespace agileos::worker::testing {
namespace {

using memmgr::DevicePtr;
using memmgr::PointerCheck;
using Step = v1::StreamOrderedMemory::Step;

constexpr std::uint64_t kDefaultPool = 1;

v1::CallRequest step(Step which, std::uint64_t pool = kDefaultPool, std::uint64_t size = 0,
                     std::uint64_t address = 0, std::uint64_t stream = 0) {
  v1::CallRequest request;
  auto* args = request.mutable_stream_ordered_memory();
  args->set_step(which);
  args->set_pool(pool);
  args->set_size(size);
  args->set_address(address);
  args->set_stream(stream);
  return request;
}

class StreamOrderedMemoryTest : public ::testing::Test {
 protected:
  DevicePtr allocate(TestClient& client, std::uint64_t size, std::uint64_t pool = kDefaultPool,
                     std::uint64_t stream = 0) {
    const v1::CallReply reply = client.call(step(v1::StreamOrderedMemory::ALLOC, pool, size, 0, stream));
    EXPECT_EQ(reply.error(), 0) << reply.error_detail();
    return reply.stream_ordered_memory_result().address();
  }
  v1::CallReply freeAsync(TestClient& client, DevicePtr p, std::uint64_t stream = 0) {
    return client.call(step(v1::StreamOrderedMemory::FREE, 0, 0, p, stream));
  }
  v1::StreamOrderedMemoryResult usage(TestClient& client, std::uint64_t pool = kDefaultPool) {
    const v1::CallReply reply = client.call(step(v1::StreamOrderedMemory::POOL_USAGE, pool));
    EXPECT_EQ(reply.error(), 0) << reply.error_detail();
    return reply.stream_ordered_memory_result();
  }
  PointerCheck check(const TestClient& client, DevicePtr p) {
    return worker.memory().check(client.id(), p, 1);
  }

  WorkerHarness worker;
  TestClient client = worker.attach(1);
  TestClient other = worker.attach(2);
};

TEST_F(StreamOrderedMemoryTest, AnAllocationIsTheClientsAtOnceAndCheckedLikeCudaMalloc) {
  const std::uint64_t stream = client.createStream();
  const DevicePtr p = allocate(client, 4096, kDefaultPool, stream);
  ASSERT_NE(p, 0u);
  EXPECT_EQ(check(client, p), PointerCheck::kOk);
  EXPECT_EQ(check(other, p), PointerCheck::kForeign);
  client.write(p, std::string(4096, 'a'));
  EXPECT_EQ(client.read(p, 4), "aaaa");
  EXPECT_EQ(usage(client).used_bytes(), 4096u);
}

TEST_F(StreamOrderedMemoryTest, AZeroByteAllocationIsNull) {
  const v1::CallReply reply = client.call(step(v1::StreamOrderedMemory::ALLOC, kDefaultPool, 0));
  EXPECT_EQ(reply.error(), 0);
  EXPECT_EQ(reply.stream_ordered_memory_result().address(), 0u);
}

TEST_F(StreamOrderedMemoryTest, AFreeKeepsItsMemoryUntilItsEventHasCompleted) {
  const std::uint64_t stream = client.createStream();
  const std::size_t eventsBefore = worker.gpu().liveEvents();
  const DevicePtr p = allocate(client, 8192, kDefaultPool, stream);
  ASSERT_EQ(freeAsync(client, p, stream).error(), 0);
  EXPECT_EQ(worker.gpu().liveEvents(), eventsBefore + 1) << "the free's event is recorded on its stream";
  // The work before the free has not finished: the next stream-ordered call leaves it pending.
  worker.gpu().failNext(FakeGpuCall::kEventQuery, CUDA_ERROR_NOT_READY);
  EXPECT_EQ(usage(client).reserved_bytes(), 8192u);
  EXPECT_EQ(check(client, p), PointerCheck::kOk)
      << "still mapped while work queued before the free may use it";
  // Finished now: the next stream-ordered call gives it back.
  EXPECT_EQ(usage(client).reserved_bytes(), 0u);
  EXPECT_EQ(check(client, p), PointerCheck::kUnknown);
  EXPECT_EQ(worker.gpu().liveEvents(), eventsBefore);
}

TEST_F(StreamOrderedMemoryTest, AnAllocationIsFreedOnceOnly) {
  const DevicePtr p = allocate(client, 4096);
  worker.gpu().failNext(FakeGpuCall::kEventQuery, CUDA_ERROR_NOT_READY);
  ASSERT_EQ(freeAsync(client, p).error(), 0);
  worker.gpu().failNext(FakeGpuCall::kEventQuery, CUDA_ERROR_NOT_READY);
  EXPECT_EQ(freeAsync(client, p).error(), cudaErrorInvalidValue) << "a second cudaFreeAsync while pending";
  EXPECT_EQ(client.call(requests::memFree(p)).error(), cudaErrorInvalidValue) << "a cudaFree while pending";
  EXPECT_EQ(freeAsync(client, p).error(), cudaErrorInvalidValue) << "a free after it was given back";
}

TEST_F(StreamOrderedMemoryTest, OnlyTheBaseOfTheClientsOwnAllocationCanBeFreed) {
  const DevicePtr mine = allocate(client, 4096);
  const DevicePtr theirs = allocate(other, 4096);
  const std::size_t events = worker.gpu().liveEvents();
  EXPECT_EQ(freeAsync(client, theirs).error(), cudaErrorInvalidValue);
  EXPECT_EQ(freeAsync(client, mine + 16).error(), cudaErrorInvalidValue);
  EXPECT_EQ(freeAsync(client, 0x1234).error(), cudaErrorInvalidValue);
  EXPECT_EQ(freeAsync(client, memmgr::kModuleRange.begin).error(), cudaErrorInvalidValue);
  EXPECT_EQ(worker.gpu().liveEvents(), events) << "a refused free records nothing";
  EXPECT_EQ(check(other, theirs), PointerCheck::kOk);
  EXPECT_EQ(freeAsync(client, 0).error(), 0) << "freeing null does nothing";
}

TEST_F(StreamOrderedMemoryTest, AFreeOnAStreamTheClientDoesNotOwnIsRefusedAndKeepsTheMemory) {
  const DevicePtr p = allocate(client, 4096);
  const std::uint64_t theirStream = other.createStream();
  EXPECT_EQ(freeAsync(client, p, theirStream).error(), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(check(client, p), PointerCheck::kOk);
  EXPECT_EQ(freeAsync(client, p).error(), 0);
}

TEST_F(StreamOrderedMemoryTest, ACudaMallocAllocationMayBeFreedInStreamOrder) {
  const DevicePtr p = client.malloc(4096);
  ASSERT_EQ(freeAsync(client, p).error(), 0);
  EXPECT_EQ(usage(client).used_bytes(), 0u) << "not a pool allocation";
  EXPECT_EQ(check(client, p), PointerCheck::kUnknown);
}

TEST_F(StreamOrderedMemoryTest, PoolsAccountForTheirAllocationsAndHighWaterMarks) {
  const v1::CallReply created = client.call(step(v1::StreamOrderedMemory::POOL_CREATE, 0, 1 << 20));
  ASSERT_EQ(created.error(), 0);
  const std::uint64_t pool = created.stream_ordered_memory_result().pool();
  ASSERT_NE(pool, kDefaultPool);
  const DevicePtr a = allocate(client, 256 << 10, pool);
  const DevicePtr b = allocate(client, 512 << 10, pool);
  EXPECT_EQ(usage(client, pool).used_bytes(), 768u << 10);
  EXPECT_EQ(usage(client).used_bytes(), 0u) << "the default pool is another pool";
  EXPECT_EQ(client.call(step(v1::StreamOrderedMemory::ALLOC, pool, 512 << 10)).error(),
            cudaErrorMemoryAllocation)
      << "past the pool's maximum size";
  ASSERT_EQ(freeAsync(client, a).error(), 0);
  const v1::StreamOrderedMemoryResult after = usage(client, pool);
  EXPECT_EQ(after.used_bytes(), 512u << 10);
  EXPECT_EQ(after.used_high(), 768u << 10);
  ASSERT_EQ(client.call(step(v1::StreamOrderedMemory::POOL_RESET_USED_HIGH, pool)).error(), 0);
  EXPECT_EQ(usage(client, pool).used_high(), 512u << 10);
  EXPECT_EQ(usage(client, pool).reserved_high(), 768u << 10) << "only the used mark was reset";
  // Destroying the pool leaves its live allocation valid.
  ASSERT_EQ(client.call(step(v1::StreamOrderedMemory::POOL_DESTROY, pool)).error(), 0);
  EXPECT_EQ(check(client, b), PointerCheck::kOk);
  EXPECT_EQ(client.call(step(v1::StreamOrderedMemory::POOL_USAGE, pool)).error(), cudaErrorInvalidValue);
  EXPECT_EQ(freeAsync(client, b).error(), 0);
}

TEST_F(StreamOrderedMemoryTest, APoolKeepsCompletedFreesUpToItsReleaseThreshold) {
  ASSERT_EQ(
      client.call(step(v1::StreamOrderedMemory::POOL_SET_RELEASE_THRESHOLD, kDefaultPool, 1 << 20)).error(),
      0);
  const DevicePtr a = allocate(client, 512 << 10);
  const DevicePtr b = allocate(client, 512 << 10);
  const DevicePtr c = allocate(client, 256 << 10);
  for (DevicePtr p : {a, b, c}) ASSERT_EQ(freeAsync(client, p).error(), 0);
  // Completed: a and b fit under the threshold and stay cached; c does not and is given back.
  v1::StreamOrderedMemoryResult now = usage(client);
  EXPECT_EQ(now.used_bytes(), 0u);
  EXPECT_EQ(now.reserved_bytes(), 1u << 20);
  EXPECT_EQ(check(client, a), PointerCheck::kOk) << "a cached range is still the client's memory";
  EXPECT_EQ(check(client, c), PointerCheck::kUnknown);
  EXPECT_EQ(client.call(requests::memFree(a)).error(), cudaErrorInvalidValue) << "a cached range was freed";
  EXPECT_EQ(freeAsync(client, a).error(), cudaErrorInvalidValue);
  // The next allocation of that size takes a cached range; another size does not.
  const DevicePtr again = allocate(client, 512 << 10);
  EXPECT_TRUE(again == a || again == b);
  EXPECT_EQ(usage(client).used_bytes(), 512u << 10);
  const DevicePtr other = allocate(client, 100 << 10);
  EXPECT_NE(other, a);
  EXPECT_NE(other, b);
  // A trim keeps at most what it is told to (used bytes count toward it).
  ASSERT_EQ(client.call(step(v1::StreamOrderedMemory::POOL_TRIM, kDefaultPool, 0)).error(), 0);
  now = usage(client);
  EXPECT_EQ(now.reserved_bytes(), now.used_bytes());
  EXPECT_EQ(check(client, again == a ? b : a), PointerCheck::kUnknown);
  // Lowering the threshold gives back what is cached above it.
  ASSERT_EQ(freeAsync(client, again).error(), 0);
  EXPECT_EQ(usage(client).reserved_bytes(), (512u << 10) + (100u << 10));
  ASSERT_EQ(client.call(step(v1::StreamOrderedMemory::POOL_SET_RELEASE_THRESHOLD, kDefaultPool, 0)).error(),
            0);
  EXPECT_EQ(usage(client).reserved_bytes(), 100u << 10);
  EXPECT_EQ(check(client, again), PointerCheck::kUnknown);
}

TEST_F(StreamOrderedMemoryTest, CachedRangesGoBeforeAnAllocationFails) {
  // The fake device has 4 GiB: 3 GiB can be had only once the cached 2 GiB are given back.
  constexpr std::uint64_t kGiB = 1ull << 30;
  ASSERT_EQ(
      client.call(step(v1::StreamOrderedMemory::POOL_SET_RELEASE_THRESHOLD, kDefaultPool, ~0ull)).error(), 0);
  const DevicePtr cached = allocate(client, 2 * kGiB);
  ASSERT_EQ(freeAsync(client, cached).error(), 0);
  ASSERT_EQ(usage(client).reserved_bytes(), 2 * kGiB);
  const DevicePtr big = allocate(client, 3 * kGiB);
  EXPECT_NE(big, 0u);
  EXPECT_EQ(usage(client).reserved_bytes(), 3 * kGiB);
}

// As the driver does: an allocation on the stream a free of the same size was made on takes that
// range at once (its work runs after the work before the free); on another stream it does not.
TEST_F(StreamOrderedMemoryTest, AnAllocationOnTheFreesStreamReusesItsRangeInStreamOrder) {
  const std::uint64_t a = client.createStream(), b = client.createStream();
  const std::size_t events = worker.gpu().liveEvents();
  const DevicePtr p = allocate(client, 1 << 20, kDefaultPool, a);
  ASSERT_EQ(freeAsync(client, p, a).error(), 0);
  worker.gpu().failNext(FakeGpuCall::kEventQuery, CUDA_ERROR_NOT_READY);  // the free has not run yet
  const DevicePtr other = allocate(client, 1 << 20, kDefaultPool, b);
  EXPECT_NE(other, p) << "another stream does not follow the free's stream";
  worker.gpu().failNext(FakeGpuCall::kEventQuery, CUDA_ERROR_NOT_READY);
  const DevicePtr again = allocate(client, 1 << 20, kDefaultPool, a);
  EXPECT_EQ(again, p) << "the free's own stream reuses its range";
  EXPECT_EQ(worker.gpu().liveEvents(), events) << "the reused free's event is gone";
  EXPECT_EQ(usage(client).used_bytes(), 2u << 20);
  EXPECT_EQ(check(client, p), PointerCheck::kOk);
  EXPECT_EQ(freeAsync(client, again, a).error(), 0) << "it can be freed again";
}

// A stream created after the free's stream was destroyed does not follow that stream's work, even
// when the driver gives it the same handle (as the fake does here): no reuse there.
TEST(StreamOrderedMemoryReuse, AStreamMadeAfterTheFreesStreamWasDestroyedDoesNotReuseItsRange) {
  FakeGpuConfig config;
  config.reuseDestroyedStreamHandles = true;
  WorkerHarness worker(config);
  TestClient client = worker.attach(1);
  const std::uint64_t a = client.createStream();
  const v1::CallReply allocated =
      client.call(step(v1::StreamOrderedMemory::ALLOC, kDefaultPool, 1 << 20, 0, a));
  ASSERT_EQ(allocated.error(), 0);
  const DevicePtr p = allocated.stream_ordered_memory_result().address();
  ASSERT_EQ(client.call(step(v1::StreamOrderedMemory::FREE, 0, 0, p, a)).error(), 0);
  worker.gpu().failNext(FakeGpuCall::kEventQuery, CUDA_ERROR_NOT_READY);
  ASSERT_EQ(client.call(requests::streamDestroy(a)).error(), 0);
  const std::uint64_t b = client.createStream();
  worker.gpu().failNext(FakeGpuCall::kEventQuery, CUDA_ERROR_NOT_READY);
  const v1::CallReply other = client.call(step(v1::StreamOrderedMemory::ALLOC, kDefaultPool, 1 << 20, 0, b));
  ASSERT_EQ(other.error(), 0);
  EXPECT_NE(other.stream_ordered_memory_result().address(), p);
}

// The legacy stream has two spellings (0 and cudaStreamLegacy): one stream for reuse.
TEST_F(StreamOrderedMemoryTest, BothSpellingsOfTheLegacyStreamAreOneStreamForReuse) {
  const DevicePtr p = allocate(client, 1 << 20, kDefaultPool, 0);
  ASSERT_EQ(freeAsync(client, p, 1).error(), 0);
  worker.gpu().failNext(FakeGpuCall::kEventQuery, CUDA_ERROR_NOT_READY);
  EXPECT_EQ(allocate(client, 1 << 20, kDefaultPool, 0), p);
}

// Before a stream-ordered allocation fails for lack of memory, the frees still pending are waited
// for and given back.
TEST_F(StreamOrderedMemoryTest, PendingFreesAreWaitedForBeforeAnAllocationFails) {
  constexpr std::uint64_t kGiB = 1ull << 30;
  const std::uint64_t a = client.createStream(), b = client.createStream();
  const DevicePtr big = allocate(client, 3 * kGiB, kDefaultPool, a);
  ASSERT_NE(big, 0u);
  ASSERT_EQ(freeAsync(client, big, a).error(), 0);
  worker.gpu().failNext(FakeGpuCall::kEventQuery, CUDA_ERROR_NOT_READY);
  const DevicePtr next = allocate(client, 3 * kGiB + 4096, kDefaultPool, b);
  EXPECT_NE(next, 0u) << "the 4 GiB device holds it once the pending 3 GiB are given back";
  EXPECT_EQ(check(client, big), next == big ? PointerCheck::kOk : PointerCheck::kUnknown);
}

TEST_F(StreamOrderedMemoryTest, PoolIdsAreThePerClientsOwn) {
  const std::uint64_t pool =
      client.call(step(v1::StreamOrderedMemory::POOL_CREATE)).stream_ordered_memory_result().pool();
  EXPECT_EQ(other.call(step(v1::StreamOrderedMemory::ALLOC, pool, 4096)).error(), cudaErrorInvalidValue);
  EXPECT_EQ(other.call(step(v1::StreamOrderedMemory::POOL_DESTROY, pool)).error(), cudaErrorInvalidValue);
  EXPECT_EQ(client.call(step(v1::StreamOrderedMemory::POOL_DESTROY, kDefaultPool)).error(),
            cudaErrorInvalidValue)
      << "the default pool cannot be destroyed";
  EXPECT_EQ(client.call(step(v1::StreamOrderedMemory::STEP_UNSPECIFIED)).error(), cudaErrorInvalidValue);
}

TEST_F(StreamOrderedMemoryTest, ResetAndTeardownLeaveNoEventBehind) {
  const std::size_t events = worker.gpu().liveEvents();
  const DevicePtr p = allocate(client, 4096);
  worker.gpu().failNext(FakeGpuCall::kEventQuery, CUDA_ERROR_NOT_READY);
  ASSERT_EQ(freeAsync(client, p).error(), 0);
  ASSERT_EQ(client.call(requests::deviceReset()).error(), 0);
  EXPECT_EQ(worker.gpu().liveEvents(), events);
  EXPECT_EQ(check(client, p), PointerCheck::kUnknown);

  const DevicePtr q = allocate(other, 4096);
  worker.gpu().failNext(FakeGpuCall::kEventQuery, CUDA_ERROR_NOT_READY);
  ASSERT_EQ(freeAsync(other, q).error(), 0);
  worker.shutDown();
  EXPECT_EQ(worker.gpu().liveEvents(), 0u);
}

}  // namespace
}  // namespace agileos::worker::testing
