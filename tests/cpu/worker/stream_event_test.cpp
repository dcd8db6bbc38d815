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

}  // namespace
}  // namespace agileos::worker::testing
