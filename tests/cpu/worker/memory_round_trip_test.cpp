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

}  // namespace
}  // namespace agileos::worker::testing
