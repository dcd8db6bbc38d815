// Memory calls that must work, end to end through the fake driver's memory.
#include <gtest/gtest.h>

#include "memmgr/address_layout.h"
#include "tests/cpu/worker/support/worker_harness.h"

namespace agileos::worker::testing {
namespace {

using memmgr::DevicePtr;

std::string pattern(std::size_t size, unsigned seed) {
  std::string bytes(size, '\0');
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>((i * 31 + seed) & 0xff);
  return bytes;
}

TEST(MemoryRoundTrip, AllocReturnsAlignedUserPointersThatHoldWhatIsWritten) {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  for (std::uint64_t size : {1ull, 100ull, 4096ull, 3ull << 20}) {
    const DevicePtr p = client.malloc(size);
    EXPECT_EQ(memmgr::classify(p), memmgr::RegionKind::kUser) << size;
    EXPECT_EQ(p % 256, 0u) << size;
    const std::string data = pattern(size, static_cast<unsigned>(size));
    client.write(p, data);
    EXPECT_EQ(client.read(p, size), data) << size;
    std::string onDevice(size, '\0');
    ASSERT_TRUE(worker.gpu().readDevice(p, onDevice.data(), size));
    EXPECT_EQ(onDevice, data) << "the bytes did not reach the (fake) device";
  }
  EXPECT_TRUE(worker.gpu().misuse().empty());
}

TEST(MemoryRoundTrip, MemsetAndDeviceToDeviceCopy) {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  const DevicePtr a = client.malloc(1024);
  const DevicePtr b = client.malloc(1024);
  ASSERT_EQ(client.call(requests::memset(a, 0x1AB, 1024)).error(), 0);  // only the low byte counts
  EXPECT_EQ(client.read(a, 1024), std::string(1024, '\xAB'));
  client.write(b, pattern(1024, 7));
  ASSERT_EQ(client.call(requests::memcpyDtoD(a + 512, b, 256)).error(), 0);
  const std::string result = client.read(a, 1024);
  EXPECT_EQ(result.substr(0, 512), std::string(512, '\xAB'));
  EXPECT_EQ(result.substr(512, 256), pattern(1024, 7).substr(0, 256));
  EXPECT_EQ(result.substr(768), std::string(256, '\xAB'));
}

TEST(MemoryRoundTrip, ChunkedCopiesLandAtTheirOffsets) {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  const DevicePtr p = client.malloc(10000);
  const std::string data = pattern(10000, 3);
  for (std::uint64_t offset = 0; offset < data.size(); offset += 4096) {
    const std::string chunk = data.substr(offset, 4096);
    ASSERT_EQ(client.call(requests::memcpyHtoDChunk(p, data.size(), offset, chunk)).error(), 0) << offset;
  }
  std::string back;
  for (std::uint64_t offset = 0; offset < data.size(); offset += 3000) {
    const std::uint64_t size = std::min<std::uint64_t>(3000, data.size() - offset);
    const v1::CallReply reply = client.call(requests::memcpyDtoHChunk(p, data.size(), offset, size));
    ASSERT_EQ(reply.error(), 0) << describe(reply);
    back += reply.host_data().data();
  }
  EXPECT_EQ(back, data);
}

TEST(MemoryRoundTrip, AsyncCopiesOnAStreamAreHandedToTheDriverOnThatStream) {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  const DevicePtr p = client.malloc(64);
  const std::uint64_t stream = client.createStream();
  ASSERT_EQ(client.call(requests::memcpyHtoD(p, "abcdefgh", stream, true)).error(), 0);
  const v1::CallReply reply = client.call(requests::memcpyDtoH(p, 8, stream, true));
  ASSERT_EQ(reply.error(), 0) << describe(reply);
  EXPECT_EQ(reply.host_data().data(), "abcdefgh");
  const auto transfers = worker.gpu().transfers();
  ASSERT_EQ(transfers.size(), 2u);
  EXPECT_TRUE(transfers[0].async);
  EXPECT_NE(transfers[0].stream, nullptr);
  EXPECT_EQ(transfers[0].stream, transfers[1].stream);
}

TEST(MemoryRoundTrip, FreedMemoryIsGoneAndReusableWithoutItsOldContents) {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  const DevicePtr p = client.malloc(3u << 20);
  client.write(p, std::string(4096, 'S'));
  client.free(p);
  EXPECT_EQ(client.call(requests::memcpyDtoH(p, 16)).error(), cudaErrorInvalidValue);
  const DevicePtr q = client.malloc(3u << 20);
  EXPECT_EQ(client.read(q, 4096), std::string(4096, '\0')) << "memory was handed out again unscrubbed";
}

TEST(MemoryRoundTrip, SizeZeroAllocationIsNullAndExhaustionIsMemoryAllocation) {
  WorkerHarness worker(FakeGpuConfig{.memoryBytes = 64ull << 20});
  TestClient client = worker.attach(1);
  v1::CallReply reply = client.call(requests::memAlloc(0));
  EXPECT_EQ(reply.error(), 0);
  EXPECT_EQ(reply.device_pointer().dptr(), 0u);
  reply = client.call(requests::memAlloc(128ull << 20));
  EXPECT_EQ(reply.error(), cudaErrorMemoryAllocation) << describe(reply);
  reply = client.call(requests::memAlloc(~0ull));
  EXPECT_EQ(reply.error(), cudaErrorMemoryAllocation) << describe(reply);
  EXPECT_EQ(worker.memory().table().bytesOwnedBy(1), 0u);
}

TEST(MemoryRoundTrip, MemGetInfoReportsTheDevice) {
  WorkerHarness worker(FakeGpuConfig{.memoryBytes = 1ull << 30});
  TestClient client = worker.attach(1);
  client.malloc(3u << 20);
  const v1::CallReply reply = client.call(requests::memGetInfo());
  ASSERT_EQ(reply.error(), 0);
  EXPECT_EQ(reply.mem_info().total(), 1ull << 30);
  EXPECT_LT(reply.mem_info().free(), reply.mem_info().total());
}

TEST(MemoryRoundTrip, AQuotaIsTheDeviceTheClientSeesAndALimitItCannotPass) {
  WorkerHarness worker(FakeGpuConfig{.memoryBytes = 1ull << 30});
  constexpr std::uint64_t kQuota = 64ull << 20;
  ASSERT_TRUE(worker.runtime().attach(1, WorkerHarness::tokenFor(1), {}, {}, {}, kQuota));
  TestClient client(worker.runtime(), 1, WorkerHarness::tokenFor(1));
  TestClient other = worker.attach(2);  // no quota

  v1::CallReply info = client.call(requests::memGetInfo());
  ASSERT_EQ(info.error(), 0) << describe(info);
  EXPECT_EQ(info.mem_info().total(), kQuota);
  EXPECT_EQ(info.mem_info().free(), kQuota);

  const DevicePtr big = client.malloc(48ull << 20);
  ASSERT_NE(big, 0u);
  info = client.call(requests::memGetInfo());
  EXPECT_EQ(info.mem_info().total(), kQuota);
  EXPECT_EQ(info.mem_info().free(), kQuota - worker.memory().chargedBytes(1));

  v1::CallReply refused = client.call(requests::memAlloc(32ull << 20));
  EXPECT_EQ(refused.error(), cudaErrorMemoryAllocation) << describe(refused);
  EXPECT_EQ(worker.memory().table().bytesOwnedBy(1), 48ull << 20) << "the refusal changed nothing";
  EXPECT_NE(other.malloc(256ull << 20), 0u) << "another client's allocations are not charged to this one";
  EXPECT_EQ(client.call(requests::memGetInfo()).mem_info().total(), kQuota);
  EXPECT_EQ(other.call(requests::memGetInfo()).mem_info().total(), 1ull << 30);

  client.free(big);
  EXPECT_NE(client.malloc(kQuota), 0u) << "the whole quota, once the rest is freed";
}

// cudaDeviceSetLimit: what a raised limit sets aside on the device is charged to the quota before
// the driver sees the call (worker/driver_limit_cost.h). The fake device holds 132 x 2048
// threads, so each KiB of stack per thread costs 264 MiB.
TEST(MemoryRoundTrip, RaisedContextLimitsAreChargedToTheQuotaAndRestoredAtReset) {
  WorkerHarness worker(FakeGpuConfig{.memoryBytes = 1ull << 30});
  constexpr std::uint64_t kQuota = 512ull << 20;
  constexpr std::uint64_t kThreads = 132 * 2048;
  ASSERT_TRUE(worker.runtime().attach(1, WorkerHarness::tokenFor(1), {}, {}, {}, kQuota));
  TestClient client(worker.runtime(), 1, WorkerHarness::tokenFor(1));

  ASSERT_EQ(client.call(requests::deviceSetLimit(CU_LIMIT_STACK_SIZE, 2048)).error(), 0);
  EXPECT_EQ(worker.memory().driverCharge(1), kThreads * 1024) << "the rise over the initial 1 KiB";
  v1::CallReply info = client.call(requests::memGetInfo());
  EXPECT_EQ(info.mem_info().free(), kQuota - kThreads * 1024);

  const std::uint64_t calls = worker.gpu().callCount();
  v1::CallReply refused = client.call(requests::deviceSetLimit(CU_LIMIT_STACK_SIZE, 4096));
  EXPECT_EQ(refused.error(), cudaErrorMemoryAllocation) << describe(refused);
  EXPECT_EQ(worker.gpu().callCount(), calls) << "refused before the driver";
  EXPECT_EQ(client.call(requests::deviceGetLimit(CU_LIMIT_STACK_SIZE)).limit_value().value(), 2048u);
  EXPECT_EQ(worker.memory().driverCharge(1), kThreads * 1024) << "the refusal changed nothing";

  // The heap's cost is what it is raised by; the charges of two limits add up.
  ASSERT_EQ(
      client.call(requests::deviceSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, (8u << 20) + (64u << 20))).error(), 0);
  EXPECT_EQ(worker.memory().driverCharge(1), kThreads * 1024 + (64ull << 20));
  EXPECT_EQ(client.call(requests::memAlloc(kQuota - kThreads * 1024 - (64ull << 20) + (2u << 20))).error(),
            cudaErrorMemoryAllocation)
      << "allocations see the driver's share as spent";

  // Lowering a limit uncharges it; at reset every limit is back at its initial value.
  ASSERT_EQ(client.call(requests::deviceSetLimit(CU_LIMIT_STACK_SIZE, 512)).error(), 0);
  EXPECT_EQ(worker.memory().driverCharge(1), 64ull << 20);
  ASSERT_EQ(client.call(requests::deviceSetLimit(CU_LIMIT_STACK_SIZE, 2048)).error(), 0);
  ASSERT_EQ(client.call(requests::deviceReset()).error(), 0);
  EXPECT_EQ(worker.memory().driverCharge(1), 0u);
  EXPECT_EQ(client.call(requests::deviceGetLimit(CU_LIMIT_STACK_SIZE)).limit_value().value(), 1024u);
  EXPECT_EQ(client.call(requests::deviceGetLimit(CU_LIMIT_MALLOC_HEAP_SIZE)).limit_value().value(), 8u << 20);
  EXPECT_EQ(client.call(requests::memGetInfo()).mem_info().free(), kQuota);
}

// A limit the driver will not put back (the malloc heap once a kernel used it) stays charged
// after cudaDeviceReset: the memory stays set aside.
TEST(MemoryRoundTrip, ALimitTheDriverKeepsAtResetStaysCharged) {
  WorkerHarness worker(FakeGpuConfig{.memoryBytes = 1ull << 30});
  constexpr std::uint64_t kQuota = 512ull << 20;
  ASSERT_TRUE(worker.runtime().attach(1, WorkerHarness::tokenFor(1), {}, {}, {}, kQuota));
  TestClient client(worker.runtime(), 1, WorkerHarness::tokenFor(1));
  ASSERT_EQ(
      client.call(requests::deviceSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, (8u << 20) + (64u << 20))).error(), 0);
  worker.gpu().failNext(FakeGpuCall::kSetLimit, CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(client.call(requests::deviceReset()).error(), 0);
  EXPECT_EQ(worker.memory().driverCharge(1), 64ull << 20);
  EXPECT_EQ(client.call(requests::memGetInfo()).mem_info().free(), kQuota - (64ull << 20));
  ASSERT_EQ(client.call(requests::deviceSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 8u << 20)).error(), 0);
  EXPECT_EQ(worker.memory().driverCharge(1), 0u) << "lowered later, it is uncharged";
}

// The next client of a context finds the defaults, whatever the last one set.
TEST(MemoryRoundTrip, ContextLimitsAreRestoredWhenTheSessionEnds) {
  WorkerHarness worker;
  TestClient first = worker.attach(1);
  ASSERT_EQ(first.call(requests::deviceSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE, 64u << 20)).error(), 0);
  ASSERT_TRUE(worker.runtime().release(1));
  TestClient next = worker.attach(2);
  EXPECT_EQ(next.call(requests::deviceGetLimit(CU_LIMIT_PRINTF_FIFO_SIZE)).limit_value().value(), 8650752u);
  EXPECT_EQ(worker.memory().driverCharge(1), 0u);
}

}  // namespace
}  // namespace agileos::worker::testing
