// Streams and events that must work, and the flags the worker refuses.
#include <gtest/gtest.h>

#include "tests/cpu/worker/support/worker_harness.h"

namespace agileos::worker::testing {
namespace {

TEST(StreamsAndEvents, CreateRecordSynchronizeDestroy) {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  const std::uint64_t stream = client.createStream(CU_STREAM_NON_BLOCKING);
  const std::uint64_t start = client.createEvent();
  const std::uint64_t end = client.createEvent(CU_EVENT_BLOCKING_SYNC);
  EXPECT_EQ(worker.gpu().liveStreams(), 1u);
  EXPECT_EQ(worker.gpu().liveEvents(), 2u);

  EXPECT_EQ(client.call(requests::eventRecord(start, stream)).error(), 0);
  EXPECT_EQ(client.call(requests::streamWaitEvent(stream, start)).error(), 0);
  EXPECT_EQ(client.call(requests::eventRecord(end, stream)).error(), 0);
  EXPECT_EQ(client.call(requests::streamSynchronize(stream)).error(), 0);
  EXPECT_EQ(client.call(requests::streamQuery(stream)).error(), 0);
  EXPECT_EQ(client.call(requests::eventSynchronize(end)).error(), 0);
  EXPECT_EQ(client.call(requests::eventQuery(end)).error(), 0);
  const v1::CallReply elapsed = client.call(requests::eventElapsedTime(start, end));
  ASSERT_EQ(elapsed.error(), 0) << describe(elapsed);
  EXPECT_FLOAT_EQ(elapsed.elapsed_time().milliseconds(), FakeGpuBackend::kEventTickMs);

  EXPECT_EQ(client.call(requests::eventDestroy(start)).error(), 0);
  EXPECT_EQ(client.call(requests::eventDestroy(end)).error(), 0);
  EXPECT_EQ(client.call(requests::streamDestroy(stream)).error(), 0);
  EXPECT_EQ(worker.gpu().liveStreams(), 0u);
  EXPECT_EQ(worker.gpu().liveEvents(), 0u);
  EXPECT_TRUE(worker.gpu().misuse().empty());
}

// Issue 14: a client's tables are bounded. At the bound a creation is refused before the
// driver is asked, so the refusal changes nothing; after a destroy there is room again.
TEST(StreamsAndEvents, AClientsEventTableIsBoundedAndARefusalCreatesNothing) {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  std::uint64_t last = 0;
  for (std::size_t k = 0; k < kHandleTableCapacity; ++k) last = client.createEvent();
  EXPECT_EQ(worker.gpu().liveEvents(), kHandleTableCapacity);
  const std::uint64_t callsBefore = worker.gpu().callCount();
  const v1::CallReply refused = client.call(requests::eventCreate(0));
  EXPECT_EQ(refused.error(), cudaErrorMemoryAllocation) << describe(refused);
  EXPECT_EQ(worker.gpu().callCount(), callsBefore) << "the driver was not asked";
  EXPECT_EQ(worker.gpu().liveEvents(), kHandleTableCapacity);
  EXPECT_EQ(client.call(requests::eventDestroy(last)).error(), 0);
  EXPECT_EQ(client.call(requests::eventCreate(0)).error(), 0);
  // Another client's table is its own.
  TestClient other = worker.attach(2);
  EXPECT_NE(other.createEvent(), 0u);
}

TEST(StreamsAndEvents, LegacyDefaultStreamTokensReachTheDriverAsTheNullStream) {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  const std::uint64_t event = client.createEvent();
  for (std::uint64_t legacy : {0ull, 1ull}) {
    EXPECT_EQ(client.call(requests::eventRecord(event, legacy)).error(), 0);
    EXPECT_EQ(client.call(requests::streamSynchronize(legacy)).error(), 0);
  }
  EXPECT_TRUE(worker.gpu().misuse().empty());
}

// client_api.proto: "Stream token 0 is the legacy default stream and token 2 the
// per-thread default stream, as in CUDA". Programs built with
// --default-stream per-thread, or passing cudaStreamPerThread, send 2.
// The per-thread default stream never crosses the wire (client_api.proto): the
// client gives each of its threads a real stream. Token 2 is therefore just an
// unknown handle to the worker, and nothing reaches the driver.
TEST(StreamsAndEvents, PerThreadDefaultStreamTokenIsRefused) {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  const memmgr::DevicePtr p = client.malloc(64);
  const std::uint64_t event = client.createEvent();
  const std::uint64_t callsBefore = worker.gpu().callCount();
  EXPECT_EQ(client.call(requests::streamSynchronize(2)).error(), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(client.call(requests::memset(p, 1, 64, 2, true)).error(), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(client.call(requests::eventRecord(event, 2)).error(), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(worker.gpu().callCount(), callsBefore);
  EXPECT_TRUE(worker.gpu().misuse().empty());
}

TEST(StreamsAndEvents, UnknownFlagsAndInterProcessEventsAreRefused) {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  const std::uint64_t callsBefore = worker.gpu().callCount();
  EXPECT_EQ(client.call(requests::streamCreate(0x80)).error(), cudaErrorInvalidValue);
  EXPECT_EQ(client.call(requests::eventCreate(CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING)).error(),
            cudaErrorInvalidValue);
  EXPECT_EQ(client.call(requests::eventCreate(0x100)).error(), cudaErrorInvalidValue);
  EXPECT_EQ(worker.gpu().callCount(), callsBefore);
  const std::uint64_t stream = client.createStream();
  const std::uint64_t event = client.createEvent();
  EXPECT_EQ(client.call(requests::streamWaitEvent(stream, event, 0x4)).error(), cudaErrorInvalidValue);
  EXPECT_EQ(client.call(requests::eventRecord(event, stream, 0x4)).error(), cudaErrorInvalidValue);
}

TEST(StreamsAndEvents, DriverStatusesAreForwarded) {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  const std::uint64_t stream = client.createStream();
  const std::uint64_t event = client.createEvent();
  // Not recorded yet: the driver answers CUDA_ERROR_INVALID_HANDLE, as measured.
  EXPECT_EQ(client.call(requests::eventElapsedTime(event, event)).error(), cudaErrorInvalidResourceHandle);
  worker.gpu().failNext(FakeGpuCall::kStreamQuery, CUDA_ERROR_NOT_READY);
  EXPECT_EQ(client.call(requests::streamQuery(stream)).error(), cudaErrorNotReady);
  worker.gpu().failNext(FakeGpuCall::kEventQuery, CUDA_ERROR_NOT_READY);
  EXPECT_EQ(client.call(requests::eventQuery(event)).error(), cudaErrorNotReady);
  worker.gpu().failNext(FakeGpuCall::kStreamCreate, CUDA_ERROR_OUT_OF_MEMORY);
  const v1::CallReply failed = client.call(requests::streamCreate());
  EXPECT_EQ(failed.error(), cudaErrorMemoryAllocation);
  EXPECT_FALSE(failed.has_token()) << "a failed create minted a token";
}

TEST(DeviceCalls, LimitsAreReadAndSetForKnownLimitsOnly) {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  v1::CallReply reply = client.call(requests::deviceGetLimit(CU_LIMIT_STACK_SIZE));
  ASSERT_EQ(reply.error(), 0);
  EXPECT_EQ(reply.limit_value().value(), 1024u);
  ASSERT_EQ(client.call(requests::deviceSetLimit(CU_LIMIT_STACK_SIZE, 4096)).error(), 0);
  EXPECT_EQ(client.call(requests::deviceGetLimit(CU_LIMIT_STACK_SIZE)).limit_value().value(), 4096u);
  const std::uint64_t callsBefore = worker.gpu().callCount();
  EXPECT_EQ(client.call(requests::deviceGetLimit(0x7fff)).error(), cudaErrorInvalidValue);  // as CUDA 13 does
  EXPECT_EQ(client.call(requests::deviceSetLimit(-1, 1)).error(), cudaErrorInvalidValue);
  EXPECT_EQ(worker.gpu().callCount(), callsBefore);
  EXPECT_EQ(client.call(requests::deviceSynchronize()).error(), 0);
}

// StreamGetId validates the stream (the capture-status queries of the shim rely on
// it) and returns the driver's id: unique per stream, stable, and the legacy stream
// has its own.
TEST(StreamsAndEvents, StreamIdsAreStableUniqueAndOnlyForLiveStreams) {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  const std::uint64_t first = client.createStream();
  const std::uint64_t second = client.createStream(CU_STREAM_NON_BLOCKING);
  auto idOf = [&](std::uint64_t stream) {
    const v1::CallReply reply = client.call(requests::streamGetId(stream));
    EXPECT_EQ(reply.error(), 0) << describe(reply);
    return reply.stream_id().id();
  };
  const std::uint64_t legacy = idOf(0);
  EXPECT_EQ(idOf(1), legacy) << "cudaStreamLegacy is the legacy stream";
  EXPECT_EQ(legacy, FakeGpuBackend::kLegacyStreamId);
  const std::uint64_t firstId = idOf(first);
  EXPECT_EQ(idOf(first), firstId);
  EXPECT_NE(firstId, legacy);
  EXPECT_NE(idOf(second), firstId);
  EXPECT_NE(idOf(second), legacy);

  const std::uint64_t callsBefore = worker.gpu().callCount(FakeGpuCall::kStreamGetId);
  for (std::uint64_t forged : {std::uint64_t{2}, std::uint64_t{0x1234567890}, first ^ 0x10}) {
    EXPECT_EQ(client.call(requests::streamGetId(forged)).error(), cudaErrorInvalidResourceHandle) << forged;
  }
  EXPECT_EQ(client.call(requests::streamDestroy(first)).error(), 0);
  EXPECT_EQ(client.call(requests::streamGetId(first)).error(), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(worker.gpu().callCount(FakeGpuCall::kStreamGetId), callsBefore) << "refused before the driver";

  TestClient other = worker.attach(2);
  EXPECT_EQ(other.call(requests::streamGetId(second)).error(), cudaErrorInvalidResourceHandle)
      << "another client's stream is not this client's";
  EXPECT_TRUE(worker.gpu().misuse().empty());
}

TEST(StreamsAndEvents, DriverFailureOfStreamGetIdIsReported) {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  worker.gpu().failNext(FakeGpuCall::kStreamGetId, CUDA_ERROR_INVALID_VALUE);
  const v1::CallReply reply = client.call(requests::streamGetId(0));
  EXPECT_EQ(reply.error(), cudaErrorInvalidValue);
  EXPECT_FALSE(reply.has_stream_id());
}

// cudaDeviceGetCacheConfig / cudaDeviceSetCacheConfig: the context's preference,
// set only to the four cudaFuncCache values.
TEST(DeviceCacheConfig, SetValuesAreReadBackAndUnknownValuesNeverReachTheDriver) {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  v1::CallReply reply = client.call(requests::deviceGetCacheConfig());
  ASSERT_EQ(reply.error(), 0) << describe(reply);
  EXPECT_EQ(reply.cache_config().config(), CU_FUNC_CACHE_PREFER_NONE);
  for (int config : {CU_FUNC_CACHE_PREFER_SHARED, CU_FUNC_CACHE_PREFER_L1, CU_FUNC_CACHE_PREFER_EQUAL,
                     CU_FUNC_CACHE_PREFER_NONE}) {
    ASSERT_EQ(client.call(requests::deviceSetCacheConfig(config)).error(), 0) << config;
    EXPECT_EQ(client.call(requests::deviceGetCacheConfig()).cache_config().config(), config);
  }
  const std::uint64_t setsBefore = worker.gpu().callCount(FakeGpuCall::kSetCacheConfig);
  for (int bad : {-1, 4, 0x7fffffff}) {
    EXPECT_EQ(client.call(requests::deviceSetCacheConfig(bad)).error(), cudaErrorInvalidValue) << bad;
  }
  EXPECT_EQ(worker.gpu().callCount(FakeGpuCall::kSetCacheConfig), setsBefore);
  EXPECT_EQ(client.call(requests::deviceGetCacheConfig()).cache_config().config(), CU_FUNC_CACHE_PREFER_NONE);
}

TEST(DeviceCacheConfig, DriverFailuresAreReported) {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  worker.gpu().failNext(FakeGpuCall::kGetCacheConfig, CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(client.call(requests::deviceGetCacheConfig()).error(), cudaErrorNotSupported);
  worker.gpu().failNext(FakeGpuCall::kSetCacheConfig, CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(client.call(requests::deviceSetCacheConfig(CU_FUNC_CACHE_PREFER_L1)).error(),
            cudaErrorNotSupported);
}

}  // namespace
}  // namespace agileos::worker::testing
