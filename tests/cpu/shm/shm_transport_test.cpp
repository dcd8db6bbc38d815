// Calls through the whole shared-memory path: ShmCallTransport (client) -> region ->
// ShmCallServer -> the real WorkerRuntime on the fake GPU, and back.
#include <sys/socket.h>
#include <sys/un.h>

#include <cstring>
#include <thread>
#include <vector>

#include "client/common/shm_call_transport.h"
#include "proto/shm/handshake.h"
#include "tests/cpu/shm/shm_fixture.h"
#include "tests/cpu/worker/support/requests.h"

namespace agileos::worker::testing {
namespace {

using client::ShmCallTransport;
using client::TransportStatus;

class ShmTransport : public ShmServerFixture {
 protected:
  std::unique_ptr<ShmCallTransport> connect(const TestClient& client) {
    std::string error;
    auto transport = ShmCallTransport::connect(path_, client.token(), shm::WaitPolicy{}, nullptr, &error);
    EXPECT_NE(transport, nullptr) << error;
    return transport;
  }
  v1::CallReply call(ShmCallTransport& transport, const v1::CallRequest& request) {
    v1::CallReply reply;
    EXPECT_EQ(transport.call(request, &reply), TransportStatus::kOk) << request.ShortDebugString();
    return reply;
  }
};

std::string pattern(std::size_t size, int seed) {
  std::string bytes(size, '\0');
  for (std::size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>((i * 131 + seed) & 0xff);
  return bytes;
}

TEST_F(ShmTransport, DeviceInfoMatchesTheDirectCall) {
  TestClient client = harness_.attach(1);
  auto transport = connect(client);
  ASSERT_NE(transport, nullptr);
  v1::CallReply viaShm = call(*transport, requests::getDeviceInfo());
  const v1::CallReply direct = client.call(requests::getDeviceInfo());
  EXPECT_EQ(viaShm.error(), 0);
  // Except mapped, registered and managed host memory, which exist over shared memory only
  // (host segments): the same device.
  int hostMemoryAttributes = 0;
  for (v1::DeviceAttribute& entry : *viaShm.mutable_device_info()->mutable_attributes()) {
    if (entry.attribute() == CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY ||
        entry.attribute() == CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY ||
        entry.attribute() == CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED) {
      EXPECT_EQ(entry.value(), 1) << entry.attribute();
      entry.set_value(0);
      ++hostMemoryAttributes;
    }
  }
  EXPECT_EQ(hostMemoryAttributes, 3);
  EXPECT_EQ(viaShm.SerializeAsString(), direct.SerializeAsString());
}

TEST_F(ShmTransport, AllocCopyMemsetRoundTrips) {
  TestClient client = harness_.attach(1);
  auto transport = connect(client);
  ASSERT_NE(transport, nullptr);
  // 30 rounds on a 4-slot ring: both rings wrap several times. Sizes cover inline (small)
  // and arena (40000 > 256-byte slots) payloads in both directions.
  for (int round = 0; round < 30; ++round) {
    const std::size_t size = round % 3 == 0 ? 40000 : 100 + round;
    v1::CallReply reply = call(*transport, requests::memAlloc(size));
    ASSERT_EQ(reply.error(), 0) << describe(reply);
    const std::uint64_t dptr = reply.device_pointer().dptr();
    const std::string data = pattern(size, round);
    reply = call(*transport, requests::memcpyHtoD(dptr, data));
    ASSERT_EQ(reply.error(), 0) << describe(reply);
    reply = call(*transport, requests::memcpyDtoH(dptr, size));
    ASSERT_EQ(reply.error(), 0) << describe(reply);
    EXPECT_EQ(reply.host_data().data(), data) << "round " << round;
    reply = call(*transport, requests::memset(dptr, 0xab, size / 2));
    ASSERT_EQ(reply.error(), 0) << describe(reply);
    reply = call(*transport, requests::memcpyDtoH(dptr, size));
    EXPECT_EQ(reply.host_data().data(), std::string(size / 2, '\xab') + data.substr(size / 2));
    reply = call(*transport, requests::memFree(dptr));
    ASSERT_EQ(reply.error(), 0) << describe(reply);
  }
}

TEST_F(ShmTransport, WorkerRefusalsArriveAsReplies) {
  TestClient client = harness_.attach(1);
  auto transport = connect(client);
  ASSERT_NE(transport, nullptr);
  const v1::CallReply reply = call(*transport, requests::memFree(0x1234));  // not an allocation
  EXPECT_NE(reply.error(), 0);
  EXPECT_EQ(call(*transport, requests::getDeviceInfo()).error(), 0);  // the transport carries on
}

TEST_F(ShmTransport, CallsFromManyThreadsAreSerialized) {
  TestClient client = harness_.attach(1);
  auto transport = connect(client);
  ASSERT_NE(transport, nullptr);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        v1::CallReply reply;
        if (transport->call(requests::memAlloc(256 + t), &reply) != TransportStatus::kOk ||
            reply.error() != 0) {
          ++failures;
          continue;
        }
        const std::string data = pattern(256 + t, t * 100 + i);
        const std::uint64_t dptr = reply.device_pointer().dptr();
        v1::CallReply copied, read, freed;
        transport->call(requests::memcpyHtoD(dptr, data), &copied);
        transport->call(requests::memcpyDtoH(dptr, data.size()), &read);
        transport->call(requests::memFree(dptr), &freed);
        if (read.host_data().data() != data || freed.error() != 0) ++failures;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST_F(ShmTransport, ReplyLargerThanTheArenaEndsTheTransport) {
  TestClient client = harness_.attach(1);
  auto transport = connect(client);
  ASSERT_NE(transport, nullptr);
  const std::uint64_t dptr = client.malloc(1 << 20);
  v1::CallReply reply;
  EXPECT_EQ(transport->call(requests::memcpyDtoH(dptr, 100000), &reply), TransportStatus::kUnavailable);
  EXPECT_EQ(transport->call(requests::getDeviceInfo(), &reply), TransportStatus::kUnavailable);
}

// Launches sent without waiting, through the real transport: whether the worker holds them for
// launch chains (it does when it finds another unawaited call queued behind one, which depends
// on timing) or not (--no-launch-chains), every launch reaches the GPU once, in order, before the
// synchronize that follows them.
TEST_F(ShmTransport, UnawaitedLaunchesArriveOnceInOrderWithOrWithoutLaunchChains) {
  for (bool chains : {true, false}) {
    SCOPED_TRACE(chains ? "launch chains on" : "launch chains off");
    harness_.runtime().setLaunchChains(chains);
    harness_.gpu().clearRecords();
    const std::uint64_t chainLaunches = harness_.gpu().callCount(FakeGpuCall::kChainLaunch);
    TestClient client = harness_.attach(chains ? 1 : 2);
    const TestClient::LoadedModule module = client.loadModule(readTestFatbin(TestFatbin::kDefaultArch));
    auto transport = connect(client);
    ASSERT_NE(transport, nullptr);
    constexpr unsigned kLaunches = 300;
    for (unsigned i = 1; i <= kLaunches; ++i) {
      v1::CallReply reply;
      bool replied = false;
      ASSERT_EQ(transport->send(requests::launchKernel(module.function(kEmptyKernel), "", {i, 1, 1}), &reply,
                                &replied),
                TransportStatus::kOk);
    }
    EXPECT_EQ(call(*transport, requests::deviceSynchronize()).error(), 0);
    std::vector<unsigned> marks;
    for (const FakeLaunch& launch : harness_.gpu().launches()) marks.push_back(launch.config.gridX);
    ASSERT_EQ(marks.size(), kLaunches);
    for (unsigned i = 0; i < kLaunches; ++i) ASSERT_EQ(marks[i], i + 1) << "launch " << i;
    const std::uint64_t chained = harness_.gpu().callCount(FakeGpuCall::kChainLaunch) - chainLaunches;
    if (!chains) {
      EXPECT_EQ(chained, 0u);
    }
    std::printf("launch chains %s: %llu chain launches for %u launches\n", chains ? "on" : "off",
                static_cast<unsigned long long>(chained), kLaunches);
    transport.reset();
    ASSERT_TRUE(harness_.runtime().release(client.id()));
  }
}

TEST_F(ShmTransport, ReleasedSessionIsRejected) {
  TestClient client = harness_.attach(1);
  auto transport = connect(client);
  ASSERT_NE(transport, nullptr);
  ASSERT_TRUE(harness_.runtime().release(client.id()));
  v1::CallReply reply;
  EXPECT_EQ(transport->call(requests::getDeviceInfo(), &reply), TransportStatus::kRejected);
  EXPECT_TRUE(awaitConnections(0));
}

TEST_F(ShmTransport, ClientGoingAwayEndsTheConnection) {
  TestClient client = harness_.attach(1);
  auto transport = connect(client);
  ASSERT_NE(transport, nullptr);
  EXPECT_TRUE(awaitConnections(1));
  transport.reset();
  EXPECT_TRUE(awaitConnections(0));
}

TEST_F(ShmTransport, WorkerGoingAwayMakesCallsUnavailable) {
  TestClient client = harness_.attach(1);
  auto transport = connect(client);
  ASSERT_NE(transport, nullptr);
  EXPECT_EQ(call(*transport, requests::getDeviceInfo()).error(), 0);
  server_->shutdown();
  v1::CallReply reply;
  EXPECT_EQ(transport->call(requests::getDeviceInfo(), &reply), TransportStatus::kUnavailable);
}

// A worker whose region is garbage: the client must end the transport, not crash.
TEST_F(ShmTransport, ClientSurvivesAGarbageCompletion) {
  server_->shutdown();
  const std::string path = uniqueSocketPath();
  // A fake worker on `path`: hands out a region, then answers the first request with a
  // completion index far ahead and a header full of garbage.
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(::listen(listener, 1), 0);
  std::string error;
  auto region = shm::MappedRegion::create(shm::testing::smallRegionSizes(), &error);
  ASSERT_NE(region, nullptr) << error;
  std::thread fakeWorker([&] {
    const int fd = ::accept(listener, nullptr, nullptr);
    std::string token, ignored;
    shm::readTokenFrame(fd, std::chrono::seconds(2), &token, &ignored);
    shm::sendRegionFd(fd, region->fd(), &ignored);
    while (region->control().requestProduced.value.load() == 0) std::this_thread::yield();
    std::memset(region->base() + region->geometry().completionRingOffset, 0xee, region->geometry().slotBytes);
    region->control().completionProduced.value.store(1000);
    shm::ring(region->control().completionBell);
    char byte;
    ::recv(fd, &byte, 1, 0);  // until the client closes
    ::close(fd);
  });
  auto transport = ShmCallTransport::connect(path, "token", shm::WaitPolicy{}, nullptr, &error);
  ASSERT_NE(transport, nullptr) << error;
  v1::CallReply reply;
  EXPECT_EQ(transport->call(requests::getDeviceInfo(), &reply), TransportStatus::kUnavailable);
  transport.reset();
  fakeWorker.join();
  ::close(listener);
  ::unlink(path.c_str());
}

}  // namespace
}  // namespace agileos::worker::testing
