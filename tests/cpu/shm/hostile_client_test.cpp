// A hostile client: while the worker's real serving loop (serveShmConnection) runs on a
// region, another thread rewrites the whole region at random — counters, futex words,
// slot headers, lengths, arena offsets, payloads — mixed with well-formed requests so the
// reader is mid-request when the bytes change under it. The worker must survive every
// connection (no crash, and under the ASan build no sanitizer report): each connection
// ends with a protocol violation or when the client's socket closes, and the runtime
// keeps serving afterwards. Run under ASan too (build/shm-asan).
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <cstring>
#include <random>
#include <thread>

#include "tests/cpu/shm/raw_region_client.h"
#include "tests/cpu/worker/support/requests.h"
#include "tests/cpu/worker/support/worker_harness.h"
#include "worker/transport/shm_connection.h"

namespace agileos::worker::testing {
namespace {

using Clock = std::chrono::steady_clock;

class Scribbler {
 public:
  Scribbler(const shm::MappedRegion& region, std::uint64_t seed) : region_(region), g_(region.geometry()), rng_(seed) {}

  void step() {
    shm::ControlBlock& control = region_.control();
    const std::uint64_t consumed = control.requestConsumed.value.load();
    // Half the steps are well-formed requests, so connections live long enough to serve some.
    const std::uint64_t op = rng_() % 16;
    switch (op < 8 ? 3 : op - 8) {
      case 0: {  // eight random bytes anywhere in the region, control block included
        const std::uint64_t offset = (rng_() % (g_.regionBytes - 8)) & ~7ull;
        const std::uint64_t value = rng_();
        std::memcpy(region_.base() + offset, &value, 8);
        break;
      }
      case 1:  // the request index: plausible, or anything
        control.requestProduced.value.store(rng_() % 10 == 0 ? rng_() : consumed + rng_() % 6);
        break;
      case 2:  // the completion consumer index
        control.completionConsumed.value.store(rng_() % 4 == 0 ? rng_() : control.completionProduced.value.load());
        break;
      case 3:  // a well-formed request, so the reader also gets real work
        writeRequest(consumed, requestBytes());
        break;
      case 4: {  // a slot header with hostile lengths and offsets
        shm::SlotHeader header{};
        header.kind = static_cast<std::uint32_t>(rng_() % 3 == 0 ? rng_() : 1 + rng_() % 2);
        header.status = static_cast<std::uint32_t>(rng_() % 3 == 0 ? rng_() : rng_() % 2);  // request flags
        header.inlineBytes = static_cast<std::uint32_t>(rng_() % 2 == 0 ? rng_() % (g_.slotBytes + 64) : rng_());
        header.arenaOffset = rng_() % 2 == 0 ? rng_() % (g_.requestArenaBytes + 16) : rng_();
        header.arenaBytes = rng_() % 2 == 0 ? rng_() % (g_.requestArenaBytes + 16) : rng_();
        std::memcpy(slot(consumed), &header, sizeof header);
        control.requestProduced.value.store(consumed + 1);
        break;
      }
      case 5: {  // random payload bytes into the slot being read, or the request arena
        std::uint8_t noise[64];
        for (auto& byte : noise) byte = static_cast<std::uint8_t>(rng_());
        std::uint8_t* target = rng_() % 2 == 0 ? slot(consumed) + sizeof(shm::SlotHeader)
                                                : region_.base() + g_.requestArenaOffset + rng_() % 4096;
        std::memcpy(target, noise, sizeof noise);
        break;
      }
      case 6:  // the doorbells
        control.requestBell.sequence.store(static_cast<std::uint32_t>(rng_()));
        control.requestBell.sleeping.store(static_cast<std::uint32_t>(rng_()));
        control.completionBell.sleeping.store(static_cast<std::uint32_t>(rng_()));
        shm::futexWakeAll(&control.requestBell.sequence);
        break;
      case 7:  // a request, then its slot rewritten at once (a race with the reader's copy)
        writeRequest(consumed, requestBytes());
        std::memset(slot(consumed), static_cast<int>(rng_()), 16);
        break;
    }
  }

 private:
  std::uint8_t* slot(std::uint64_t index) { return region_.base() + shm::slotOffset(g_.requestRingOffset, index, g_); }

  std::string requestBytes() {
    switch (rng_() % 5) {
      case 0:
        return requests::getDeviceInfo().SerializeAsString();
      case 1:
        return requests::memAlloc(1 + rng_() % 5000).SerializeAsString();
      case 2: {  // a copy naming shared host memory: staging or a segment, plausible or wild ranges
        v1::CallRequest request = requests::memcpyHtoD(rng_(), "");
        v1::HostBuffer* source = request.mutable_memcpy_htod()->mutable_source();
        source->set_segment(rng_() % 2 == 0 ? 0 : rng_());
        source->set_offset(rng_() % 2 == 0 ? rng_() % (g_.stagingBytes + 16) : rng_());
        source->set_size(rng_() % 2 == 0 ? rng_() % (g_.stagingBytes + 16) : rng_());
        request.mutable_memcpy_htod()->set_total_size(rng_());
        return request.SerializeAsString();
      }
      case 3: {  // shared host memory: asked for (a few pages at most), or freed by a guessed name
        v1::CallRequest request;
        if (rng_() % 2 == 0) {
          request.mutable_host_alloc()->set_size(rng_() % (1 << 14));
        } else {
          request.mutable_host_free()->set_segment(rng_());
        }
        return request.SerializeAsString();
      }
      default:
        return requests::memcpyHtoD(rng_(), std::string(rng_() % 2000, 'h')).SerializeAsString();
    }
  }

  void writeRequest(std::uint64_t index, const std::string& message) {
    shm::SlotHeader header{};
    header.callId = index + 1;
    header.status = rng_() % 3 == 0 ? std::uint32_t{shm::kNoReply} : 0u;  // some sent without waiting
    if (message.size() <= shm::slotPayloadBytes(g_)) {
      header.kind = static_cast<std::uint32_t>(shm::SlotKind::kInline);
      header.inlineBytes = static_cast<std::uint32_t>(message.size());
      std::memcpy(slot(index) + sizeof header, message.data(), message.size());
    } else {
      header.kind = static_cast<std::uint32_t>(shm::SlotKind::kArena);
      header.arenaBytes = message.size();
      std::memcpy(region_.base() + g_.requestArenaOffset, message.data(), message.size());
    }
    std::memcpy(slot(index), &header, sizeof header);
    region_.control().requestProduced.value.store(index + 1, std::memory_order_seq_cst);
    shm::ring(region_.control().requestBell);
  }

  const shm::MappedRegion& region_;
  const shm::RegionGeometry g_;
  std::mt19937_64 rng_;
};

TEST(HostileClient, ScribblingOverTheRegionNeverHurtsTheWorker) {
  WorkerHarness harness;
  TestClient client = harness.attach(1);
  const std::uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 seeds(seed);

  shm::WaitPolicy policy;
  policy.spin = std::chrono::microseconds(5);
  policy.sleepSlice = std::chrono::milliseconds(5);
  const std::atomic<bool> stop{false};
  int connections = 0, violations = 0, closedByClient = 0, answered = 0;
  const Clock::time_point end = Clock::now() + std::chrono::seconds(3);
  while (Clock::now() < end) {
    std::string error;
    auto region = shm::MappedRegion::create(shm::testing::smallRegionSizes(), &error);
    ASSERT_NE(region, nullptr) << error;
    int fds[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    std::atomic<bool> served{false};
    std::string reason;
    std::thread server([&] {
      reason = serveShmConnection(harness.runtime(), *region, fds[0], client.token(), policy, stop);
      served = true;
    });
    Scribbler scribbler(*region, seeds());
    const Clock::time_point connectionEnd = Clock::now() + std::chrono::milliseconds(100);
    while (!served && Clock::now() < connectionEnd) scribbler.step();
    ::close(fds[1]);  // the client "exits": the worker must notice, if it has not ended already
    server.join();
    ::close(fds[0]);
    ++connections;
    if (region->control().completionProduced.value.load() != 0) ++answered;  // served at least one call
    if (reason.starts_with("protocol violation")) {
      ++violations;
    } else {
      EXPECT_EQ(reason, "client closed its socket");
      ++closedByClient;
    }
  }
  std::printf(
      "hostile client: %d connections (%d answered at least one call), %d ended by a protocol violation, %d by "
      "the client closing\n",
      connections, answered, violations, closedByClient);
  EXPECT_GT(connections, 10);
  EXPECT_GT(violations, 0);
  EXPECT_GT(answered, 0);  // the reader did real work while being scribbled on
  // The worker is intact: the same client's calls still work.
  EXPECT_EQ(client.call(requests::getDeviceInfo()).error(), 0);
  const memmgr::DevicePtr p = client.malloc(4096);
  client.write(p, "still fine");
  EXPECT_EQ(client.read(p, 10), "still fine");
}

}  // namespace
}  // namespace agileos::worker::testing
