// The shared-memory transport's data paths, through the real ShmCallServer and the real
// WorkerRuntime on the fake GPU: page-locked host segments (HostAlloc/HostFree and copies
// that name them), the staging area, calls sent without waiting (kNoReply) and their
// deferred errors, and the limits on all of them. Every hostile case must be refused with
// an error and change nothing.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "client/common/shm_call_transport.h"
#include "memmgr/address_layout.h"
#include "proto/shm/fd_passing.h"
#include "proto/shm/handshake.h"
#include "tests/cpu/shm/shm_fixture.h"
#include "tests/cpu/worker/support/requests.h"

namespace agileos::worker::testing {
namespace {

using client::ShmCallTransport;
using client::StagedCalls;
using client::TransportStatus;

constexpr int kInvalidValue = 1;      // cudaErrorInvalidValue
constexpr int kMemoryAllocation = 2;  // cudaErrorMemoryAllocation
constexpr int kNotSupported = 801;    // cudaErrorNotSupported

std::string pattern(std::size_t size, int seed) {
  std::string bytes(size, '\0');
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>((i * 29 + seed) & 0xff);
  return bytes;
}

v1::CallRequest hostAlloc(std::uint64_t size) {
  v1::CallRequest request;
  request.mutable_host_alloc()->set_size(size);
  return request;
}

v1::CallRequest hostFree(std::uint64_t segment) {
  v1::CallRequest request;
  request.mutable_host_free()->set_segment(segment);
  return request;
}

v1::CallRequest copyFromShared(std::uint64_t dst, std::uint64_t total, std::uint64_t segment,
                               std::uint64_t offset, std::uint64_t size) {
  v1::CallRequest request;
  auto* copy = request.mutable_memcpy_htod();
  copy->set_dst(dst);
  copy->set_total_size(total);
  copy->mutable_source()->set_segment(segment);
  copy->mutable_source()->set_offset(offset);
  copy->mutable_source()->set_size(size);
  return request;
}

v1::CallRequest copyToShared(std::uint64_t src, std::uint64_t size, std::uint64_t segment,
                             std::uint64_t offset, std::uint64_t sharedSize) {
  v1::CallRequest request;
  auto* copy = request.mutable_memcpy_dtoh();
  copy->set_src(src);
  copy->set_total_size(size);
  copy->set_size(size);
  copy->mutable_destination()->set_segment(segment);
  copy->mutable_destination()->set_offset(offset);
  copy->mutable_destination()->set_size(sharedSize);
  return request;
}

class SharedMemoryPaths : public ShmServerFixture {
 protected:
  std::unique_ptr<ShmCallTransport> connect(const TestClient& client) {
    std::string error;
    auto transport = ShmCallTransport::connect(path_, client.token(), shm::WaitPolicy{}, nullptr, &error);
    EXPECT_NE(transport, nullptr) << error;
    return transport;
  }
  static v1::CallReply call(ShmCallTransport& transport, const v1::CallRequest& request) {
    v1::CallReply reply;
    EXPECT_EQ(transport.call(request, &reply), TransportStatus::kOk) << request.ShortDebugString();
    return reply;
  }
  struct Segment {
    std::uint64_t name = 0;
    std::uint64_t size = 0;
    std::uint8_t* mapping = nullptr;
  };
  static Segment allocate(ShmCallTransport& transport, std::uint64_t size) {
    v1::CallReply reply;
    void* mapping = nullptr;
    EXPECT_EQ(transport.allocateShared(hostAlloc(size), &reply, &mapping, false), TransportStatus::kOk);
    EXPECT_EQ(reply.error(), 0) << reply.error_detail();
    return {reply.host_segment().segment(), reply.host_segment().size(), static_cast<std::uint8_t*>(mapping)};
  }
};

TEST_F(SharedMemoryPaths, APinnedSegmentIsSharedRegisteredAndCopiedWithoutStaging) {
  TestClient client = harness_.attach(1);
  auto transport = connect(client);
  ASSERT_NE(transport, nullptr);
  // After one round trip the connection is being served, so its staging area is registered.
  EXPECT_EQ(call(*transport, requests::getDeviceInfo()).error(), 0);
  const std::size_t registeredBefore = harness_.gpu().registeredHostRanges();  // the staging area
  EXPECT_EQ(registeredBefore, 1u);

  const Segment segment = allocate(*transport, 10000);
  ASSERT_NE(segment.mapping, nullptr);
  EXPECT_NE(segment.name, 0u);
  EXPECT_EQ(segment.size, 12288u) << "rounded up to pages";
  EXPECT_EQ(harness_.gpu().registeredHostRanges(), registeredBefore + 1) << "registered with the GPU once";

  // Host to device: the worker reads the bytes this process wrote into the segment.
  const memmgr::DevicePtr device = client.malloc(10000);
  const std::string in = pattern(10000, 1);
  std::memcpy(segment.mapping, in.data(), in.size());
  EXPECT_EQ(call(*transport, copyFromShared(device, 10000, segment.name, 0, 10000)).error(), 0);
  EXPECT_EQ(client.read(device, 10000), in);

  // Device to host, into the middle of the segment; the reply carries no bytes.
  const std::string out = pattern(100, 2);
  client.write(device, out);
  const v1::CallReply back = call(*transport, copyToShared(device, 100, segment.name, 500, 100));
  EXPECT_EQ(back.error(), 0) << back.error_detail();
  EXPECT_FALSE(back.has_host_data());
  EXPECT_EQ(std::memcmp(segment.mapping + 500, out.data(), out.size()), 0);

  EXPECT_EQ(call(*transport, hostFree(segment.name)).error(), 0);
  EXPECT_EQ(harness_.gpu().registeredHostRanges(), registeredBefore) << "unregistered when freed";
  EXPECT_EQ(call(*transport, hostFree(segment.name)).error(), kInvalidValue) << "freed twice";
  EXPECT_EQ(call(*transport, copyFromShared(device, 16, segment.name, 0, 16)).error(), kInvalidValue)
      << "a freed segment is gone";
  ::munmap(segment.mapping, segment.size);
}

// cudaHostAllocMapped: the segment is also mapped for the device, and the reply says where; a
// mapping the driver refuses fails the allocation (nothing stays registered or charged).
TEST_F(SharedMemoryPaths, AMappedSegmentComesWithItsDeviceAddress) {
  TestClient client = harness_.attach(1);
  auto transport = connect(client);
  ASSERT_NE(transport, nullptr);
  EXPECT_EQ(call(*transport, requests::getDeviceInfo()).error(), 0);
  const std::size_t registeredBefore = harness_.gpu().registeredHostRanges();

  v1::CallRequest mapped = hostAlloc(4096);
  mapped.mutable_host_alloc()->set_flags(cudaHostAllocMapped);
  v1::CallReply reply;
  void* mapping = nullptr;
  ASSERT_EQ(transport->allocateShared(mapped, &reply, &mapping, false), TransportStatus::kOk);
  ASSERT_EQ(reply.error(), 0) << reply.error_detail();
  ASSERT_NE(mapping, nullptr);
  EXPECT_NE(reply.host_segment().device_address(), 0u) << "the fake maps at the worker's own address";
  EXPECT_EQ(harness_.gpu().registeredHostRanges(), registeredBefore + 1);
  EXPECT_EQ(call(*transport, hostFree(reply.host_segment().segment())).error(), 0);
  EXPECT_EQ(harness_.gpu().registeredHostRanges(), registeredBefore);
  ::munmap(mapping, reply.host_segment().size());

  const Segment plain = allocate(*transport, 4096);
  EXPECT_EQ(call(*transport, hostFree(plain.name)).error(), 0);
  ::munmap(plain.mapping, plain.size);

  harness_.gpu().failNext(FakeGpuCall::kHostRegister, CUDA_ERROR_OUT_OF_MEMORY);
  v1::CallReply refused;
  mapping = nullptr;
  ASSERT_EQ(transport->allocateShared(mapped, &refused, &mapping, false), TransportStatus::kOk);
  EXPECT_NE(refused.error(), 0) << "a segment the driver would not map for the device is no mapped segment";
  EXPECT_EQ(mapping, nullptr);
  EXPECT_EQ(harness_.gpu().registeredHostRanges(), registeredBefore);
  const Segment after = allocate(*transport, 4096);  // the refusal charged nothing
  EXPECT_NE(after.mapping, nullptr);
  EXPECT_EQ(call(*transport, hostFree(after.name)).error(), 0);
  ::munmap(after.mapping, after.size);
}

v1::CallRequest managedAlloc(std::uint64_t size) {
  v1::CallRequest request = hostAlloc(size);
  request.mutable_host_alloc()->set_managed(true);
  return request;
}

// Managed memory: the worker places the segment in its managed window, maps it for the device
// at that same address, and the client must map it at exactly that address. Here the client is
// this process, which holds the worker's mapping there: the client's MAP_FIXED_NOREPLACE fails,
// which is the clean failure a client whose address space is taken gets (no mapping, an error,
// the segment still the worker's to free).
TEST_F(SharedMemoryPaths, AManagedSegmentIsPlacedInTheWindowAtTheDevicesAddress) {
  TestClient client = harness_.attach(1);
  auto transport = connect(client);
  ASSERT_NE(transport, nullptr);
  EXPECT_EQ(call(*transport, requests::getDeviceInfo()).error(), 0);
  const std::size_t registeredBefore = harness_.gpu().registeredHostRanges();

  v1::CallReply reply;
  void* mapping = nullptr;
  ASSERT_EQ(transport->allocateShared(managedAlloc(10000), &reply, &mapping, true), TransportStatus::kOk);
  EXPECT_EQ(reply.error(), kMemoryAllocation) << "the address is this process's own (the worker's) mapping";
  EXPECT_EQ(mapping, nullptr);
  const std::uint64_t first = reply.host_segment().device_address();
  EXPECT_TRUE(memmgr::kManagedWindow.contains(first)) << std::hex << first;
  EXPECT_EQ(first % (2 << 20), 0u);
  EXPECT_EQ(reply.host_segment().size(), 12288u);
  EXPECT_EQ(harness_.gpu().registeredHostRanges(), registeredBefore + 1) << "mapped for the device";
  // The worker's mapping is at exactly that address and holds the segment's bytes.
  auto* worker = reinterpret_cast<volatile std::uint8_t*>(first);
  worker[0] = 0x5a;
  EXPECT_EQ(worker[0], 0x5a);
  EXPECT_EQ(call(*transport, hostFree(reply.host_segment().segment())).error(), 0);
  EXPECT_EQ(harness_.gpu().registeredHostRanges(), registeredBefore);

  // Mapped anywhere (as a client that does not ask for the address would), the same memfd is
  // shared; the next segment gets a fresh, higher address (addresses are never reused).
  v1::CallReply next;
  ASSERT_EQ(transport->allocateShared(managedAlloc(4096), &next, &mapping, false), TransportStatus::kOk);
  ASSERT_EQ(next.error(), 0) << next.error_detail();
  ASSERT_NE(mapping, nullptr);
  const std::uint64_t second = next.host_segment().device_address();
  EXPECT_GT(second, first);
  EXPECT_TRUE(memmgr::kManagedWindow.contains(second));
  static_cast<std::uint8_t*>(mapping)[100] = 0x77;
  EXPECT_EQ(reinterpret_cast<volatile std::uint8_t*>(second)[100], 0x77) << "one segment, two views";
  EXPECT_EQ(call(*transport, hostFree(next.host_segment().segment())).error(), 0);
  ::munmap(mapping, next.host_segment().size());

  // Something already mapped where the worker would place the next one: it moves on.
  const std::uint64_t expected = second + (2 << 20);
  void* squatter = ::mmap(reinterpret_cast<void*>(expected), 4096, PROT_READ,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  ASSERT_EQ(squatter, reinterpret_cast<void*>(expected));
  ASSERT_EQ(transport->allocateShared(managedAlloc(4096), &next, &mapping, false), TransportStatus::kOk);
  ASSERT_EQ(next.error(), 0) << next.error_detail();
  EXPECT_GE(next.host_segment().device_address(), expected + (64ull << 30))
      << "never over a mapping: the worker skips 64 GiB past it";
  EXPECT_EQ(call(*transport, hostFree(next.host_segment().segment())).error(), 0);
  ::munmap(mapping, next.host_segment().size());
  ::munmap(squatter, 4096);

  // A segment the driver will not map for the device is no managed memory.
  harness_.gpu().failNext(FakeGpuCall::kHostRegister, CUDA_ERROR_OUT_OF_MEMORY);
  ASSERT_EQ(transport->allocateShared(managedAlloc(4096), &next, &mapping, false), TransportStatus::kOk);
  EXPECT_EQ(next.error(), kMemoryAllocation);
  EXPECT_EQ(mapping, nullptr);
  EXPECT_EQ(harness_.gpu().registeredHostRanges(), registeredBefore);
}

// Managed memory counts against the same pinned share as page-locked memory.
TEST_F(SharedMemoryPaths, ManagedMemoryCountsAgainstThePinnedShare) {
  constexpr std::uint64_t kShare = 64 << 10;
  ASSERT_TRUE(harness_.runtime().attach(8, WorkerHarness::tokenFor(8), {}, {}, {}, 0, kShare));
  TestClient client(harness_.runtime(), 8, WorkerHarness::tokenFor(8));
  auto transport = connect(client);
  ASSERT_NE(transport, nullptr);
  const Segment pinned = allocate(*transport, 48 << 10);
  ASSERT_NE(pinned.mapping, nullptr);
  v1::CallReply reply;
  void* mapping = nullptr;
  ASSERT_EQ(transport->allocateShared(managedAlloc(32 << 10), &reply, &mapping, false), TransportStatus::kOk);
  EXPECT_EQ(reply.error(), kMemoryAllocation) << "48 + 32 KiB is past the 64 KiB share";
  ASSERT_EQ(transport->allocateShared(managedAlloc(16 << 10), &reply, &mapping, false), TransportStatus::kOk);
  EXPECT_EQ(reply.error(), 0) << "exactly the rest";
  ASSERT_NE(mapping, nullptr);
  ::munmap(mapping, reply.host_segment().size());
  ::munmap(pinned.mapping, pinned.size);
}

TEST_F(SharedMemoryPaths, TheSegmentFdCannotBeResized) {
  TestClient client = harness_.attach(1);
  int socketFd = -1, regionFd = -1;
  std::string error;
  ASSERT_TRUE(
      shm::clientHandshake(path_, client.token(), std::chrono::seconds(2), &socketFd, &regionFd, &error))
      << error;
  auto region = shm::MappedRegion::attach(regionFd, &error);
  ASSERT_NE(region, nullptr) << error;
  shm::testing::RawRegionClient raw(*region);
  raw.pushRequest(1, hostAlloc(8192).SerializeAsString());
  for (int i = 0; i < 500 && raw.completionsProduced() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_EQ(raw.completionsProduced(), 1u);
  char tag = 0;
  int segmentFd = -1;
  ASSERT_TRUE(shm::receiveFd(socketFd, std::chrono::seconds(2), &tag, &segmentFd, &error)) << error;
  EXPECT_EQ(tag, shm::kSegmentFdTag);
  // The worker maps this file: shrinking it would make the worker's accesses SIGBUS.
  EXPECT_NE(::ftruncate(segmentFd, 0), 0);
  EXPECT_NE(::ftruncate(segmentFd, 1 << 20), 0);
  struct stat st {};
  ASSERT_EQ(::fstat(segmentFd, &st), 0);
  EXPECT_EQ(st.st_size, 8192);
  // The region itself is sealed the same way.
  EXPECT_NE(::ftruncate(region->fd(), 4096), 0);
  ::close(segmentFd);
  ::close(socketFd);
}

TEST_F(SharedMemoryPaths, SharedRangesAreBoundedAndBelongToOneClient) {
  TestClient alice = harness_.attach(1);
  TestClient bob = harness_.attach(2);
  auto aliceTransport = connect(alice);
  auto bobTransport = connect(bob);
  ASSERT_NE(aliceTransport, nullptr);
  ASSERT_NE(bobTransport, nullptr);
  const Segment segment = allocate(*aliceTransport, 4096);
  ASSERT_NE(segment.mapping, nullptr);
  const memmgr::DevicePtr aliceDevice = alice.malloc(8192);
  const memmgr::DevicePtr bobDevice = bob.malloc(8192);
  alice.write(aliceDevice, std::string(8192, 'a'));
  bob.write(bobDevice, std::string(8192, 'b'));
  std::memset(segment.mapping, 'x', 4096);
  const std::uint64_t staging = shm::testing::smallRegionSizes().stagingBytes;

  struct Case {
    const char* what;
    v1::CallRequest request;
    int error;
  };
  v1::CallRequest both = copyFromShared(aliceDevice, 16, segment.name, 0, 16);
  both.mutable_memcpy_htod()->set_data("inline bytes too");
  const Case aliceCases[] = {
      {"staging range past its end", copyFromShared(aliceDevice, 20, 0, staging - 10, 20), kInvalidValue},
      {"staging offset that wraps", copyFromShared(aliceDevice, 2, 0, UINT64_MAX, 2), kInvalidValue},
      {"segment range past its end", copyFromShared(aliceDevice, 8192, segment.name, 4096, 4096),
       kInvalidValue},
      {"segment size that wraps", copyFromShared(aliceDevice, 16, segment.name, 16, UINT64_MAX),
       kInvalidValue},
      {"a forged segment", copyFromShared(aliceDevice, 16, segment.name ^ 1, 0, 16), kInvalidValue},
      {"inline and shared bytes at once", both, kInvalidValue},
      {"shared destination of another size", copyToShared(aliceDevice, 64, segment.name, 0, 32),
       kInvalidValue},
      {"device range outside the allocation", copyFromShared(aliceDevice + 8000, 400, segment.name, 0, 400),
       kInvalidValue},
  };
  for (const Case& c : aliceCases) {
    EXPECT_EQ(call(*aliceTransport, c.request).error(), c.error) << c.what;
  }
  // Bob names Alice's segment: it is not his.
  EXPECT_EQ(call(*bobTransport, copyFromShared(bobDevice, 16, segment.name, 0, 16)).error(), kInvalidValue);
  EXPECT_EQ(call(*bobTransport, copyToShared(bobDevice, 16, segment.name, 0, 16)).error(), kInvalidValue);
  EXPECT_EQ(call(*bobTransport, hostFree(segment.name)).error(), kInvalidValue);

  // Nothing moved: both clients' memory and the segment are as they were.
  EXPECT_EQ(alice.read(aliceDevice, 8192), std::string(8192, 'a'));
  EXPECT_EQ(bob.read(bobDevice, 8192), std::string(8192, 'b'));
  EXPECT_EQ(std::string(reinterpret_cast<char*>(segment.mapping), 4096), std::string(4096, 'x'));
  EXPECT_EQ(call(*aliceTransport, hostFree(segment.name)).error(), 0) << "still Alice's to free";
  ::munmap(segment.mapping, segment.size);
}

TEST_F(SharedMemoryPaths, SharedMemoryOverGrpcIsRefused) {
  TestClient client = harness_.attach(1);
  const memmgr::DevicePtr device = client.malloc(64);
  // TestClient::call reaches the runtime the way the gRPC server does: no shared channel.
  EXPECT_EQ(client.call(hostAlloc(4096)).error(), kNotSupported);
  EXPECT_EQ(client.call(managedAlloc(4096)).error(), kNotSupported)
      << "managed memory is a shared segment too";
  EXPECT_EQ(client.call(copyFromShared(device, 16, 0, 0, 16)).error(), kNotSupported);
  EXPECT_EQ(client.call(copyToShared(device, 16, 0, 0, 16)).error(), kNotSupported);
}

TEST_F(SharedMemoryPaths, AllocationsBeyondTheQuotaOrOfNothingAreRefused) {
  TestClient client = harness_.attach(1);
  auto transport = connect(client);
  ASSERT_NE(transport, nullptr);
  v1::CallReply reply;
  void* mapping = nullptr;
  ASSERT_EQ(transport->allocateShared(hostAlloc(33ull << 30), &reply, &mapping, false), TransportStatus::kOk);
  EXPECT_EQ(reply.error(), kMemoryAllocation);
  EXPECT_EQ(mapping, nullptr);
  ASSERT_EQ(transport->allocateShared(hostAlloc(0), &reply, &mapping, false), TransportStatus::kOk);
  EXPECT_EQ(reply.error(), kInvalidValue);
  // The transport is still in step: an ordinary allocation works after the refusals.
  const Segment segment = allocate(*transport, 4096);
  EXPECT_NE(segment.mapping, nullptr);
  ::munmap(segment.mapping, segment.size);
}

// The share of the host's pinned memory the daemon attached the client with bounds its segments;
// what it frees it may pin again.
TEST_F(SharedMemoryPaths, ThePinnedShareFromTheAttachBoundsTheClientsSegments) {
  constexpr std::uint64_t kShare = 64 << 10;
  ASSERT_TRUE(harness_.runtime().attach(7, WorkerHarness::tokenFor(7), {}, {}, {}, 0, kShare));
  TestClient client(harness_.runtime(), 7, WorkerHarness::tokenFor(7));
  auto transport = connect(client);
  ASSERT_NE(transport, nullptr);
  const Segment first = allocate(*transport, 48 << 10);
  ASSERT_NE(first.mapping, nullptr);
  v1::CallReply reply;
  void* mapping = nullptr;
  ASSERT_EQ(transport->allocateShared(hostAlloc(32 << 10), &reply, &mapping, false), TransportStatus::kOk);
  EXPECT_EQ(reply.error(), kMemoryAllocation) << "48 + 32 KiB is past the 64 KiB share";
  EXPECT_EQ(mapping, nullptr);
  const Segment second = allocate(*transport, 16 << 10);  // exactly the rest
  EXPECT_NE(second.mapping, nullptr);
  ::munmap(first.mapping, first.size);
  ::munmap(second.mapping, second.size);
}

TEST_F(SharedMemoryPaths, CallsSentWithoutWaitingRunInOrderAndDeferTheirFirstError) {
  TestClient client = harness_.attach(1);
  auto transport = connect(client);
  ASSERT_NE(transport, nullptr);
  const memmgr::DevicePtr device = client.malloc(4096);
  client.write(device, std::string(4096, '\0'));
  auto send = [&](const v1::CallRequest& request) {
    v1::CallReply unused;
    bool replied = true;
    EXPECT_EQ(transport->send(request, &unused, &replied), TransportStatus::kOk);
    EXPECT_FALSE(replied);
  };
  send(requests::memset(device, 'a', 4096, 0, true));
  send(requests::memset(device + 4000, 'z', 4096, 0, true));  // past the end: refused, deferred
  send(requests::memset(device, 'b', 100, 0, true));          // still runs, in order
  send(requests::eventRecord(0xdeadbeef));                    // a second error: not the first
  const v1::CallReply first = call(*transport, requests::getDeviceInfo());
  EXPECT_EQ(first.error(), 0);
  EXPECT_EQ(first.deferred_error(), kInvalidValue) << "the first error of the calls nobody waited for";
  EXPECT_FALSE(first.deferred_error_detail().empty());
  EXPECT_EQ(call(*transport, requests::getDeviceInfo()).deferred_error(), 0) << "reported once";
  EXPECT_EQ(client.read(device, 100), std::string(100, 'b'));
  EXPECT_EQ(client.read(device + 100, 3996), std::string(3996, 'a'));
}

TEST_F(SharedMemoryPaths, StagedCallsPipelineThroughTheStagingArea) {
  TestClient client = harness_.attach(1);
  auto transport = connect(client);
  ASSERT_NE(transport, nullptr);
  std::unique_ptr<StagedCalls> staged = transport->stage();
  ASSERT_NE(staged, nullptr);
  const std::uint32_t chunks = staged->chunkCount();
  const std::uint64_t chunkBytes = staged->chunkBytes();
  ASSERT_GT(chunks, 1u);
  ASSERT_GT(chunkBytes, 0u);
  const std::uint64_t total = chunks * chunkBytes;
  const memmgr::DevicePtr device = client.malloc(total);
  const std::string in = pattern(total, 7);
  // Every chunk is in flight at once; the replies come back in order.
  for (std::uint32_t i = 0; i < chunks; ++i) {
    std::memcpy(staged->chunk(i), in.data() + i * chunkBytes, chunkBytes);
    v1::CallRequest request;
    auto* copy = request.mutable_memcpy_htod();
    copy->set_dst(device);
    copy->set_total_size(total);
    copy->set_offset(i * chunkBytes);
    staged->describeChunk(i, chunkBytes, copy->mutable_source());
    ASSERT_EQ(staged->submit(request), TransportStatus::kOk);
  }
  for (std::uint32_t i = 0; i < chunks; ++i) {
    v1::CallReply reply;
    ASSERT_EQ(staged->next(&reply), TransportStatus::kOk);
    EXPECT_EQ(reply.error(), 0) << reply.error_detail();
  }
  staged.reset();
  EXPECT_EQ(client.read(device, total), in);
  // Back through staging, chunk by chunk.
  staged = transport->stage();
  for (std::uint32_t i = 0; i < chunks; ++i) {
    v1::CallRequest request;
    auto* copy = request.mutable_memcpy_dtoh();
    copy->set_src(device);
    copy->set_total_size(total);
    copy->set_offset(i * chunkBytes);
    copy->set_size(chunkBytes);
    staged->describeChunk(chunks - 1 - i, chunkBytes, copy->mutable_destination());
    ASSERT_EQ(staged->submit(request), TransportStatus::kOk);
  }
  for (std::uint32_t i = 0; i < chunks; ++i) {
    v1::CallReply reply;
    ASSERT_EQ(staged->next(&reply), TransportStatus::kOk);
    EXPECT_EQ(reply.error(), 0);
    EXPECT_EQ(std::memcmp(staged->chunk(chunks - 1 - i), in.data() + i * chunkBytes, chunkBytes), 0) << i;
  }
}

TEST_F(SharedMemoryPaths, EndingTheSessionReleasesSegmentsAndStaging) {
  TestClient client = harness_.attach(1);
  auto transport = connect(client);
  ASSERT_NE(transport, nullptr);
  std::vector<Segment> segments;
  for (int i = 0; i < 3; ++i) segments.push_back(allocate(*transport, 4096 * (i + 1)));
  EXPECT_EQ(harness_.gpu().registeredHostRanges(), 4u);
  transport.reset();  // the client goes away
  ASSERT_TRUE(awaitConnections(0));
  EXPECT_EQ(harness_.gpu().registeredHostRanges(), 3u)
      << "the staging area is unregistered with the connection";
  EXPECT_TRUE(harness_.runtime().release(client.id()));
  EXPECT_EQ(harness_.gpu().registeredHostRanges(), 0u) << "segments are released with the session";
  for (const Segment& segment : segments) ::munmap(segment.mapping, segment.size);
}

TEST_F(SharedMemoryPaths, ASessionGetsAtMostFourConnections) {
  TestClient client = harness_.attach(1);
  std::vector<std::unique_ptr<ShmCallTransport>> open;
  for (std::size_t i = 0; i < ShmCallServer::kMaxConnectionsPerSession; ++i) {
    open.push_back(connect(client));
    ASSERT_NE(open.back(), nullptr);
  }
  std::string error;
  EXPECT_EQ(ShmCallTransport::connect(path_, client.token(), shm::WaitPolicy{}, nullptr, &error), nullptr);
  // Another session is not affected, and the first ones still work.
  TestClient other = harness_.attach(2);
  EXPECT_NE(connect(other), nullptr);
  EXPECT_EQ(call(*open.front(), requests::getDeviceInfo()).error(), 0);
}

TEST_F(SharedMemoryPaths, UnknownRequestFlagsEndTheConnection) {
  TestClient client = harness_.attach(1);
  int socketFd = -1, regionFd = -1;
  std::string error;
  ASSERT_TRUE(
      shm::clientHandshake(path_, client.token(), std::chrono::seconds(2), &socketFd, &regionFd, &error));
  auto region = shm::MappedRegion::attach(regionFd, &error);
  ASSERT_NE(region, nullptr);
  const std::string message = requests::getDeviceInfo().SerializeAsString();
  shm::SlotHeader header{};
  header.kind = static_cast<std::uint32_t>(shm::SlotKind::kInline);
  header.status = 0x4;  // no such flag
  header.callId = 1;
  header.inlineBytes = static_cast<std::uint32_t>(message.size());
  std::uint8_t* slot = region->base() + region->geometry().requestRingOffset;
  std::memcpy(slot + sizeof header, message.data(), message.size());
  std::memcpy(slot, &header, sizeof header);
  region->control().requestProduced.value.store(1);
  shm::ring(region->control().requestBell);
  EXPECT_TRUE(shm::peerGone(socketFd, std::chrono::seconds(2))) << "the worker ends the connection";
  EXPECT_EQ(region->control().completionProduced.value.load(), 0u) << "and answers nothing";
  ::close(socketFd);
  // The session itself is intact.
  EXPECT_EQ(client.call(requests::getDeviceInfo()).error(), 0);
}

}  // namespace
}  // namespace agileos::worker::testing
