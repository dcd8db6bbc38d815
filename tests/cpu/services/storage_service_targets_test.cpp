// Registered target buffers through the real service (REGISTER_BUFFER, sqe.target,
// UNREGISTER_BUFFER): reads land exactly in the registered range of the client's allocation
// and nowhere else, bad targets write nothing, and unregistering, DETACH and a closed
// connection leave the service with no access to the allocation.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>
#include <thread>

#include "services/storage/storage_client.h"
#include "tests/cpu/services/storage_service_fixture.h"

namespace agileos::services::storage::testing {
namespace {

using namespace std::chrono_literals;

constexpr std::uint64_t kHandleBytes = 2 << 20;  // the client allocation (the memfd)
constexpr std::uint64_t kRangeOffset = 4096;     // the registered range within it
constexpr std::uint64_t kRangeBytes = 64 << 10;
constexpr std::byte kSentinel{0xA5};
constexpr std::byte kSlotFill{0xEE};

class StorageTargetsTest : public StorageServiceTest {
 protected:
  StorageTargetsTest() : client_(kHandleBytes) { client_.fill(kSentinel); }

  // REGISTER_BUFFER of the usual range of client_; the id, or 0 after a failed expectation.
  std::uint32_t registerRange(int fd) {
    const agileos_storage_reply reply =
        registerBuffer(fd, {client_.fd()}, kHandleBytes, kRangeOffset, kRangeBytes);
    EXPECT_EQ(reply.status, 0);
    EXPECT_GE(reply.buffer, 1u);
    return reply.status == 0 ? reply.buffer : 0;
  }

  // What client_ should hold: the sentinel, with data.bin's [file_offset, +bytes) at
  // kRangeOffset + target_offset for every read `expected` records.
  void expectRead(std::uint64_t file_offset, std::uint64_t bytes, std::uint64_t target_offset) {
    std::copy_n(data_.begin() + static_cast<std::ptrdiff_t>(file_offset), bytes,
                expected_.begin() + static_cast<std::ptrdiff_t>(kRangeOffset + target_offset));
  }

  // Every byte of client_ is as expected_ says; reports the first that is not.
  ::testing::AssertionResult clientHoldsExpected() const {
    const std::span<std::byte> actual = client_.data();
    const auto mismatch = std::mismatch(actual.begin(), actual.end(), expected_.begin());
    if (mismatch.first == actual.end()) return ::testing::AssertionSuccess();
    const auto at = mismatch.first - actual.begin();
    return ::testing::AssertionFailure()
           << "byte " << at << " of the client buffer is " << static_cast<int>(*mismatch.first)
           << ", expected " << static_cast<int>(*mismatch.second) << " (registered range [" << kRangeOffset
           << ", " << kRangeOffset + kRangeBytes << "))";
  }

  int targetMappings() const { return mappingsMentioning(service_->pid(), ClientBuffer::kMemfdName); }
  int targetDescriptors() const { return descriptorsMentioning(service_->pid(), ClientBuffer::kMemfdName); }

  ClientBuffer client_;
  std::vector<std::byte> expected_ = std::vector<std::byte>(kHandleBytes, kSentinel);
};

TEST_F(StorageTargetsTest, ReadsLandExactlyInTheRegisteredRange) {
  DeviceQueue queue(4, kSlotBytes);
  std::uint32_t file = 0;
  UniqueFd fd = attachedConnection(queue, &file);
  const std::uint32_t id = registerRange(fd.get());
  ASSERT_NE(id, 0u);
  EXPECT_EQ(targetMappings(), 1);
  EXPECT_EQ(targetDescriptors(), 0);  // an import, not the descriptor
  for (std::uint32_t slot = 0; slot < queue.slots(); ++slot) queue.fillSlot(slot, kSlotFill);

  EXPECT_EQ(readInto(queue, 0, file, 100, 4096, id, 0), 4096);  // the range's first byte
  expectRead(100, 4096, 0);
  EXPECT_EQ(readInto(queue, 1, file, 7, kSlotBytes, id, kRangeBytes - kSlotBytes), kSlotBytes);  // its last
  expectRead(7, kSlotBytes, kRangeBytes - kSlotBytes);
  EXPECT_EQ(readInto(queue, 2, file, 12345, 1, id, 777), 1);  // a single byte, unaligned
  expectRead(12345, 1, 777);
  EXPECT_EQ(readInto(queue, 3, file, 3000, 4001, id, 20000), 4001);
  expectRead(3000, 4001, 20000);
  // At the end of the file: only the bytes read are written, the rest of the range is untouched.
  EXPECT_EQ(readInto(queue, 0, file, kDataBytes - 100, 4096, id, 40000), 100);
  expectRead(kDataBytes - 100, 100, 40000);
  EXPECT_EQ(readInto(queue, 0, file, kDataBytes, 4096, id, 50000), 0);
  EXPECT_TRUE(clientHoldsExpected());

  // The slots were not written by the targeted reads...
  for (std::uint32_t slot = 0; slot < queue.slots(); ++slot) {
    const std::span<const std::byte> data = queue.slotData(slot);
    EXPECT_TRUE(std::all_of(data.begin(), data.end(), [](std::byte b) { return b == kSlotFill; }))
        << "slot " << slot;
  }
  // ...and the slot path is as before on the same slots.
  EXPECT_EQ(read(queue, 1, file, 10, 4096), 4096);
  EXPECT_TRUE(slotHolds(queue, 1, 10, 4096));
  EXPECT_TRUE(clientHoldsExpected());
  EXPECT_EQ(stats(fd.get()).reads_completed, 7u);
}

TEST_F(StorageTargetsTest, ReadsOutsideTheRangeAreRefusedAndWriteNothing) {
  DeviceQueue queue(2, kSlotBytes);
  std::uint32_t file = 0;
  UniqueFd fd = attachedConnection(queue, &file);
  const std::uint32_t id = registerRange(fd.get());
  ASSERT_NE(id, 0u);
  queue.fillSlot(0, kSlotFill);
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  EXPECT_EQ(readInto(queue, 0, file, 0, 4096, id, kRangeBytes - 4095), -ERANGE);  // one byte past
  EXPECT_EQ(readInto(queue, 0, file, 0, 1, id, kRangeBytes), -ERANGE);
  EXPECT_EQ(readInto(queue, 0, file, 0, 4096, id, kHandleBytes - kRangeOffset - 4096),
            -ERANGE);  // in the handle
  EXPECT_EQ(readInto(queue, 0, file, 0, 4096, id, kMax - 10), -ERANGE);
  EXPECT_EQ(readInto(queue, 0, file, 0, 4096, id, kMax - 4095), -ERANGE);  // offset + bytes wraps to 0
  EXPECT_EQ(readInto(queue, 0, file, 0, 4096, id + 1, 0), -EBADF);         // not registered
  EXPECT_EQ(readInto(queue, 0, file, 0, 4096, 0xFFFFFFFFu, 0), -EBADF);
  // The entry's other checks come first, as on the slot path.
  EXPECT_EQ(readInto(queue, 0, file, 0, kSlotBytes + 1, id, 0), -EINVAL);
  EXPECT_EQ(readInto(queue, 0, 0, 0, 4096, id, 0), -EBADF);
  EXPECT_TRUE(clientHoldsExpected());
  EXPECT_EQ(queue.slotData(0)[0], kSlotFill) << "a refused entry wrote the slot";
  EXPECT_EQ(stats(fd.get()).reads_completed, 0u);
  // The slot and the registration still work.
  EXPECT_EQ(readInto(queue, 0, file, 5, 4096, id, kRangeBytes - 4096), 4096);
  expectRead(5, 4096, kRangeBytes - 4096);
  EXPECT_TRUE(clientHoldsExpected());
}

TEST_F(StorageTargetsTest, TargetsBelongToTheirLease) {
  DeviceQueue queue(1, kSlotBytes);
  DeviceQueue other_queue(1, kSlotBytes);
  std::uint32_t file = 0;
  std::uint32_t other_file = 0;
  UniqueFd fd = attachedConnection(queue, &file);
  UniqueFd other = attachedConnection(other_queue, &other_file);
  const std::uint32_t id = registerRange(fd.get());
  ASSERT_NE(id, 0u);
  EXPECT_EQ(readInto(other_queue, 0, other_file, 0, 4096, id, 0), -EBADF);
  EXPECT_EQ(unregisterBuffer(other.get(), id).status, -ENOENT);
  EXPECT_TRUE(clientHoldsExpected());
  EXPECT_EQ(readInto(queue, 0, file, 0, 4096, id, 0), 4096);
}

TEST_F(StorageTargetsTest, RegisterNeedsALease) {
  UniqueFd fd = connect();
  const agileos_storage_reply reply =
      registerBuffer(fd.get(), {client_.fd()}, kHandleBytes, kRangeOffset, kRangeBytes);
  EXPECT_EQ(reply.status, -ENOENT);
  EXPECT_EQ(reply.buffer, 0u);
  EXPECT_EQ(unregisterBuffer(fd.get(), 1).status, -ENOENT);
  Pipe pipe;
  EXPECT_EQ(registerBuffer(fd.get(), {pipe.write_end.get()}, kHandleBytes, kRangeOffset, kRangeBytes).status,
            -ENOENT);
  pipe.write_end.reset();
  EXPECT_TRUE(seesEndOfFile(pipe.read_end.get())) << "the service kept the descriptor";
  EXPECT_EQ(targetMappings(), 0);
  EXPECT_EQ(targetDescriptors(), 0);
}

TEST_F(StorageTargetsTest, RegisterTakesExactlyOneDescriptor) {
  DeviceQueue queue(1, kSlotBytes);
  UniqueFd fd = connect();
  ASSERT_EQ(queue.attach(fd.get()).status, 0);
  EXPECT_EQ(registerBuffer(fd.get(), {}, kHandleBytes, kRangeOffset, kRangeBytes).status, -EINVAL);
  Pipe pipe;
  EXPECT_EQ(
      registerBuffer(fd.get(), {client_.fd(), pipe.write_end.get()}, kHandleBytes, kRangeOffset, kRangeBytes)
          .status,
      -EINVAL);
  pipe.write_end.reset();
  EXPECT_TRUE(seesEndOfFile(pipe.read_end.get())) << "the service kept the descriptor";
  EXPECT_EQ(targetMappings(), 0);
  EXPECT_EQ(targetDescriptors(), 0);
  // UNREGISTER takes none.
  Pipe second;
  agileos_storage_request request = makeStorageRequest(AGILEOS_STORAGE_UNREGISTER_BUFFER);
  request.buffer = 1;
  ASSERT_TRUE(sendRaw(fd.get(), &request, sizeof(request), {second.write_end.get()}));
  EXPECT_EQ(receiveReply(fd.get()).status, -EINVAL);
  second.write_end.reset();
  EXPECT_TRUE(seesEndOfFile(second.read_end.get()));
}

TEST_F(StorageTargetsTest, BadSizesAreRefusedAndMapNothing) {
  DeviceQueue queue(1, kSlotBytes);
  std::uint32_t file = 0;
  UniqueFd fd = attachedConnection(queue, &file);
  const int client = client_.fd();
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  EXPECT_EQ(registerBuffer(fd.get(), {client}, 0, 0, 4096).status, -EINVAL);
  EXPECT_EQ(registerBuffer(fd.get(), {client}, kHandleBytes, 0, 0).status, -EINVAL);
  EXPECT_EQ(registerBuffer(fd.get(), {client}, kHandleBytes, 4096, kHandleBytes).status, -EINVAL);
  EXPECT_EQ(registerBuffer(fd.get(), {client}, kHandleBytes, kHandleBytes, 1).status, -EINVAL);
  EXPECT_EQ(registerBuffer(fd.get(), {client}, kHandleBytes, kMax - 10, 4096).status, -EINVAL);
  EXPECT_EQ(registerBuffer(fd.get(), {client}, kHandleBytes, 4096, kMax).status, -EINVAL);
  EXPECT_EQ(registerBuffer(fd.get(), {client}, kMax, kMax - 4096, 4096).status,
            -EINVAL);  // valid, too large to map
  // Larger than the allocation: mapping it would fault past its end.
  EXPECT_EQ(registerBuffer(fd.get(), {client}, 2 * kHandleBytes, 0, 4096).status, -EINVAL);
  Pipe pipe;  // not an allocation at all
  EXPECT_EQ(registerBuffer(fd.get(), {pipe.write_end.get()}, kHandleBytes, 0, 4096).status, -EINVAL);
  EXPECT_EQ(targetMappings(), 0);
  EXPECT_EQ(targetDescriptors(), 0);
  // The whole allocation is a valid range.
  const agileos_storage_reply whole = registerBuffer(fd.get(), {client}, kHandleBytes, 0, kHandleBytes);
  ASSERT_EQ(whole.status, 0);
  EXPECT_EQ(readInto(queue, 0, file, 0, 4096, whole.buffer, kHandleBytes - 4096), 4096);
  EXPECT_TRUE(std::equal(data_.begin(), data_.begin() + 4096, client_.data().end() - 4096));
}

TEST_F(StorageTargetsTest, UnregisterEndsTheRegistration) {
  DeviceQueue queue(1, kSlotBytes);
  std::uint32_t file = 0;
  UniqueFd fd = attachedConnection(queue, &file);
  const std::uint32_t id = registerRange(fd.get());
  ASSERT_NE(id, 0u);
  EXPECT_EQ(readInto(queue, 0, file, 0, 4096, id, 0), 4096);
  EXPECT_EQ(unregisterBuffer(fd.get(), id).status, 0);
  EXPECT_EQ(targetMappings(), 0);  // released before the reply
  client_.fill(kSentinel);
  EXPECT_EQ(readInto(queue, 0, file, 0, 4096, id, 0), -EBADF);
  EXPECT_TRUE(clientHoldsExpected());
  EXPECT_EQ(unregisterBuffer(fd.get(), id).status, -ENOENT);
  EXPECT_EQ(unregisterBuffer(fd.get(), 0).status, -ENOENT);
  // A new registration gets a new id: the old one still names nothing.
  const std::uint32_t again = registerRange(fd.get());
  EXPECT_NE(again, id);
  EXPECT_EQ(readInto(queue, 0, file, 0, 4096, id, 0), -EBADF);
  EXPECT_EQ(readInto(queue, 0, file, 0, 4096, again, 0), 4096);
  expectRead(0, 4096, 0);
  EXPECT_TRUE(clientHoldsExpected());
}

TEST_F(StorageTargetsTest, AtMost64Registrations) {
  DeviceQueue queue(1, kSlotBytes);
  std::uint32_t file = 0;
  UniqueFd fd = attachedConnection(queue, &file);
  std::vector<std::uint32_t> ids;
  for (int i = 0; i < 64; ++i) {
    const agileos_storage_reply reply = registerBuffer(fd.get(), {client_.fd()}, kHandleBytes, 0, 4096);
    ASSERT_EQ(reply.status, 0) << "registration " << i;
    ids.push_back(reply.buffer);
  }
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::adjacent_find(ids.begin(), ids.end()), ids.end()) << "an id was handed out twice";
  EXPECT_EQ(registerBuffer(fd.get(), {client_.fd()}, kHandleBytes, 0, 4096).status, -EMFILE);
  EXPECT_EQ(targetMappings(), 64);
  EXPECT_EQ(unregisterBuffer(fd.get(), ids[10]).status, 0);
  EXPECT_EQ(registerBuffer(fd.get(), {client_.fd()}, kHandleBytes, 0, 4096).status, 0);
  EXPECT_EQ(detach(fd.get()).status, 0);
  EXPECT_EQ(targetMappings(), 0);
}

TEST_F(StorageTargetsTest, DetachReleasesEveryRegistration) {
  DeviceQueue queue(2, kSlotBytes);
  std::uint32_t file = 0;
  UniqueFd fd = attachedConnection(queue, &file);
  const std::uint32_t first = registerRange(fd.get());
  const std::uint32_t second = registerRange(fd.get());
  ASSERT_NE(first, 0u);
  ASSERT_NE(second, 0u);
  EXPECT_NE(first, second);
  EXPECT_EQ(targetMappings(), 2);
  EXPECT_EQ(readInto(queue, 1, file, 0, 4096, second, 0), 4096);
  EXPECT_EQ(detach(fd.get()).status, 0);
  // Once DETACH is answered: nothing of the client's allocation is mapped or held.
  EXPECT_EQ(targetMappings(), 0);
  EXPECT_EQ(targetDescriptors(), 0);
  EXPECT_EQ(mappingsMentioning(service_->pid(), "memfd:agileos-test"), 0);
  EXPECT_EQ(unregisterBuffer(fd.get(), first).status, -ENOENT);  // no lease any more
}

TEST_F(StorageTargetsTest, AClosedConnectionReleasesItsRegistrations) {
  DeviceQueue queue(2, kSlotBytes);
  std::uint32_t file = 0;
  UniqueFd fd = attachedConnection(queue, &file);
  ASSERT_NE(registerRange(fd.get()), 0u);
  ASSERT_NE(registerRange(fd.get()), 0u);
  EXPECT_EQ(targetMappings(), 2);
  fd.reset();  // the worker died: no DETACH, no UNREGISTER
  UniqueFd observer = connect();
  ASSERT_TRUE(eventually([&] { return stats(observer.get()).active_leases == 0; }));
  EXPECT_EQ(targetMappings(), 0);
  EXPECT_EQ(targetDescriptors(), 0);
}

// Reads into a registration keep coming while it is unregistered: each completes before the
// reply (data or -EBADF), and once UNREGISTER is answered nothing is written to the client's
// allocation any more.
TEST_F(StorageTargetsTest, UnregisterWhileReadsAreInFlight) {
  constexpr std::uint32_t kSlots = 4;
  DeviceQueue queue(kSlots, kSlotBytes);
  std::uint32_t file = 0;
  UniqueFd fd = attachedConnection(queue, &file);
  for (int round = 0; round < 5; ++round) {
    const std::uint32_t id = registerRange(fd.get());
    ASSERT_NE(id, 0u);
    std::atomic<bool> unregistered{false};
    std::atomic<bool> stop{false};
    std::atomic<int> bad_results{0};
    std::atomic<int> refused{0};
    std::vector<std::thread> submitters;
    for (std::uint32_t slot = 0; slot < kSlots; ++slot) {
      submitters.emplace_back([&, slot] {
        while (!stop.load()) {
          const bool after = unregistered.load();
          const std::uint32_t sequence =
              queue.submit(slot, file, slot * 100, kSlotBytes, id, slot * kSlotBytes);
          std::int64_t result = 0;
          if (!queue.waitCompletion(slot, sequence, &result)) {
            bad_results.fetch_add(1);
            return;
          }
          if (result == -EBADF) {
            refused.fetch_add(1);
          } else if (result != kSlotBytes || after) {
            bad_results.fetch_add(1);  // a read submitted after the reply was served
          }
        }
      });
    }
    std::this_thread::sleep_for(20ms);
    ASSERT_EQ(unregisterBuffer(fd.get(), id).status, 0);
    unregistered.store(true);
    EXPECT_EQ(targetMappings(), 0);
    client_.fill(kSentinel);
    std::this_thread::sleep_for(50ms);  // submissions go on, and are refused
    stop.store(true);
    for (std::thread& submitter : submitters) submitter.join();
    EXPECT_EQ(bad_results.load(), 0) << "round " << round;
    EXPECT_GT(refused.load(), 0) << "round " << round;
    EXPECT_TRUE(clientHoldsExpected()) << "round " << round;
  }
}

}  // namespace
}  // namespace agileos::services::storage::testing
