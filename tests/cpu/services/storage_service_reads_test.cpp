// End-to-end reads through the real service: the test writes submissions as the device would
// and checks the completions and the bytes in the data buffer's slots.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <limits>
#include <thread>

#include "tests/cpu/services/storage_service_fixture.h"

namespace agileos::services::storage::testing {
namespace {

class StorageReadsTest : public StorageServiceTest {};

TEST_F(StorageReadsTest, ReadsLandInTheirSlots) {
  DeviceQueue queue(8, kSlotBytes);
  std::uint32_t file = 0;
  UniqueFd fd = attachedConnection(queue, &file);
  for (int round = 0; round < 3; ++round) {
    std::vector<std::uint32_t> sequences;
    for (std::uint32_t slot = 0; slot < queue.slots(); ++slot) {
      queue.fillSlot(slot, std::byte{0xEE});
      sequences.push_back(queue.submit(slot, file, slot * 1000 + round * 37, 4096 + slot * 100));
    }
    for (std::uint32_t slot = 0; slot < queue.slots(); ++slot) {
      std::int64_t result = 0;
      ASSERT_TRUE(queue.waitCompletion(slot, sequences[slot], &result)) << "slot " << slot;
      EXPECT_EQ(result, 4096 + slot * 100) << "slot " << slot;
      EXPECT_TRUE(slotHolds(queue, slot, slot * 1000 + round * 37, 4096 + slot * 100)) << "slot " << slot;
      // Nothing past the bytes read was written.
      EXPECT_EQ(queue.slotData(slot)[4096 + slot * 100], std::byte{0xEE}) << "slot " << slot;
    }
  }
}

TEST_F(StorageReadsTest, AWholeSlotReadsWhole) {
  DeviceQueue queue(2, kSlotBytes);
  std::uint32_t file = 0;
  UniqueFd fd = attachedConnection(queue, &file);
  EXPECT_EQ(read(queue, 1, file, kSlotBytes, kSlotBytes), kSlotBytes);
  EXPECT_TRUE(slotHolds(queue, 1, kSlotBytes, kSlotBytes));
}

TEST_F(StorageReadsTest, AReadAtTheEndOfTheFileIsShort) {
  DeviceQueue queue(2, kSlotBytes);
  std::uint32_t file = 0;
  UniqueFd fd = attachedConnection(queue, &file);
  queue.fillSlot(0, std::byte{0xEE});
  EXPECT_EQ(read(queue, 0, file, kDataBytes - 100, 4096), 100);
  EXPECT_TRUE(slotHolds(queue, 0, kDataBytes - 100, 100));
  EXPECT_EQ(queue.slotData(0)[100], std::byte{0xEE});
  EXPECT_EQ(read(queue, 0, file, kDataBytes, 4096), 0);          // at the end
  EXPECT_EQ(read(queue, 0, file, kDataBytes + 12345, 4096), 0);  // past it
}

TEST_F(StorageReadsTest, BadEntriesGetNegativeResultsAndTheSlotKeepsWorking) {
  DeviceQueue queue(4, kSlotBytes);
  std::uint32_t file = 0;
  UniqueFd fd = attachedConnection(queue, &file);
  queue.fillSlot(2, std::byte{0xEE});
  EXPECT_EQ(read(queue, 2, 0, 0, 4096), -EBADF);         // 0 is never a handle
  EXPECT_EQ(read(queue, 2, file + 1, 0, 4096), -EBADF);  // not open
  EXPECT_EQ(read(queue, 2, 0xFFFFFFFFu, 0, 4096), -EBADF);
  EXPECT_EQ(read(queue, 2, file, 0, 0), -EINVAL);
  EXPECT_EQ(read(queue, 2, file, 0, kSlotBytes + 1), -EINVAL);
  EXPECT_EQ(read(queue, 2, file, 0, 0xFFFFFFFFu), -EINVAL);
  EXPECT_EQ(read(queue, 2, file, std::numeric_limits<std::uint64_t>::max() - 10, 4096), -EOVERFLOW);
  EXPECT_EQ(read(queue, 2, file, std::uint64_t{std::numeric_limits<std::int64_t>::max()}, 1), -EOVERFLOW);
  EXPECT_EQ(queue.slotData(2)[0], std::byte{0xEE}) << "a refused entry wrote the slot";
  EXPECT_EQ(read(queue, 2, file, 10, 4096), 4096);
  EXPECT_TRUE(slotHolds(queue, 2, 10, 4096));
}

TEST_F(StorageReadsTest, AClosedHandleReadsNoMore) {
  DeviceQueue queue(1, kSlotBytes);
  std::uint32_t file = 0;
  UniqueFd fd = attachedConnection(queue, &file);
  EXPECT_EQ(read(queue, 0, file, 0, 4096), 4096);
  EXPECT_EQ(closeFile(fd.get(), file).status, 0);
  EXPECT_EQ(read(queue, 0, file, 0, 4096), -EBADF);
}

TEST_F(StorageReadsTest, StatsCountCompletedReads) {
  DeviceQueue queue(2, kSlotBytes);
  std::uint32_t file = 0;
  UniqueFd fd = attachedConnection(queue, &file);
  read(queue, 0, file, 0, 4096);
  read(queue, 1, file, 0, 4096);
  read(queue, 1, file, kDataBytes, 4096);  // 0 bytes: still a completed read
  read(queue, 0, 0, 0, 4096);              // refused: not counted
  const agileos_storage_reply counters = stats(fd.get());
  ASSERT_EQ(counters.status, 0);
  EXPECT_EQ(counters.reads_completed, 3u);
  EXPECT_EQ(counters.active_leases, 1u);
  EXPECT_EQ(counters.leases_served, 1u);
  EXPECT_EQ(counters.leases_revoked, 0u);
}

// Several device "threads" at once, each owning some slots, many rounds: every completion is
// the one submitted, with the bytes asked for.
TEST_F(StorageReadsTest, ManyRoundsOnEverySlotAtOnce) {
  constexpr std::uint32_t kSlots = 16;
  constexpr int kSubmitters = 4;
  constexpr int kRounds = 150;
  DeviceQueue queue(kSlots, 4096);
  std::uint32_t file = 0;
  UniqueFd fd = attachedConnection(queue, &file);
  std::atomic<int> failures{0};
  std::vector<std::thread> submitters;
  for (int t = 0; t < kSubmitters; ++t) {
    submitters.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        std::vector<std::uint32_t> sequences(kSlots);
        for (std::uint32_t slot = t; slot < kSlots; slot += kSubmitters) {
          const std::uint64_t offset = (slot * 977 + round * 131) % (kDataBytes - 4096);
          sequences[slot] = queue.submit(slot, file, offset, 4096 - slot);
        }
        for (std::uint32_t slot = t; slot < kSlots; slot += kSubmitters) {
          const std::uint64_t offset = (slot * 977 + round * 131) % (kDataBytes - 4096);
          std::int64_t result = 0;
          if (!queue.waitCompletion(slot, sequences[slot], &result) || result != 4096 - slot ||
              !slotHolds(queue, slot, offset, 4096 - slot)) {
            failures.fetch_add(1);
          }
        }
      }
    });
  }
  for (std::thread& submitter : submitters) submitter.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(stats(fd.get()).reads_completed, std::uint64_t{kSlots} * kRounds);
}

// The slots are spread over the pollers by slot % threads, whatever the counts.
class StoragePollerCountTest : public StorageServiceTest, public ::testing::WithParamInterface<const char*> {
 protected:
  std::vector<std::string> serviceArguments() const override { return {"--threads", GetParam()}; }
};

TEST_P(StoragePollerCountTest, EverySlotIsServed) {
  DeviceQueue queue(5, 4096);
  std::uint32_t file = 0;
  UniqueFd fd = attachedConnection(queue, &file);
  std::vector<std::uint32_t> sequences;
  for (std::uint32_t slot = 0; slot < queue.slots(); ++slot)
    sequences.push_back(queue.submit(slot, file, slot, 4096));
  for (std::uint32_t slot = 0; slot < queue.slots(); ++slot) {
    std::int64_t result = 0;
    ASSERT_TRUE(queue.waitCompletion(slot, sequences[slot], &result)) << "slot " << slot;
    EXPECT_EQ(result, 4096);
    EXPECT_TRUE(slotHolds(queue, slot, slot, 4096));
  }
}

INSTANTIATE_TEST_SUITE_P(Threads, StoragePollerCountTest, ::testing::Values("1", "2", "64"));

}  // namespace
}  // namespace agileos::services::storage::testing
