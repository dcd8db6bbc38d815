// GraphMemory's decisions over a recording backing: which block a launch binds (the reservation's
// own, a free one last freed on the same stream or whose work has finished, else a new one), when
// it waits for the context (only before it unmaps or gives back something queued work may use),
// what a trim gives back, and that every event it was handed is destroyed exactly once.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "worker/graph_memory.h"

namespace agileos::worker::testing {
namespace {

using memmgr::DevicePtr;
using Outcome = GraphMemory::Outcome;

constexpr std::uint64_t kSpan = 2u << 20;
constexpr std::uint64_t kStreamA = 7;
constexpr std::uint64_t kStreamB = 9;

class RecordingBacking final : public GraphBacking {
 public:
  CUresult createBlock(std::uint64_t size, std::uint64_t* block) override {
    if (blocks.size() >= capacity) return CUDA_ERROR_OUT_OF_MEMORY;
    *block = nextBlock++;
    blocks[*block] = size;
    return CUDA_SUCCESS;
  }
  CUresult destroyBlock(std::uint64_t block) override {
    for (const auto& [reservation, mapped] : mappedAt) {
      if (mapped == block) ADD_FAILURE() << "a block destroyed while mapped";
    }
    if (synchronizedSinceLastWork == false) ADD_FAILURE() << "a block destroyed under queued work";
    return blocks.erase(block) == 1 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  }
  CUresult map(DevicePtr reservation, std::uint64_t block) override {
    if (mappedAt.contains(reservation) || !blocks.contains(block)) return CUDA_ERROR_INVALID_VALUE;
    mappedAt[reservation] = block;
    return CUDA_SUCCESS;
  }
  CUresult unmap(DevicePtr reservation) override {
    if (!synchronizedSinceLastWork) ADD_FAILURE() << "unmapped under queued work";
    return mappedAt.erase(reservation) == 1 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  }
  CUresult freeReservation(DevicePtr reservation) override {
    if (mappedAt.contains(reservation) && !synchronizedSinceLastWork)
      ADD_FAILURE() << "given back under queued work";
    mappedAt.erase(reservation);
    freed.insert(reservation);
    return CUDA_SUCCESS;
  }
  bool setLive(DevicePtr reservation, bool isLive) override {
    if (isLive && !mappedAt.contains(reservation)) return false;
    if (isLive) {
      live.insert(reservation);
    } else {
      live.erase(reservation);
    }
    return true;
  }
  CUresult synchronize() override {
    ++synchronizations;
    synchronizedSinceLastWork = true;
    for (CUevent event : pending) done.insert(event);
    pending.clear();
    return CUDA_SUCCESS;
  }
  bool completed(CUevent event) override { return done.contains(event); }
  void destroyEvent(CUevent event) override {
    if (!destroyed.insert(event).second) ADD_FAILURE() << "an event destroyed twice";
  }

  // Work queued on a stream, then a free there: the event the free records (pending).
  CUevent queueWorkAndFree() {
    synchronizedSinceLastWork = false;
    CUevent event = reinterpret_cast<CUevent>(nextEvent++);
    pending.insert(event);
    return event;
  }
  void finishAll() {
    for (CUevent event : pending) done.insert(event);
    pending.clear();
  }

  std::size_t capacity = 64;
  std::uint64_t nextBlock = 1;
  std::map<std::uint64_t, std::uint64_t> blocks;  // id -> size
  std::map<DevicePtr, std::uint64_t> mappedAt;    // reservation -> block
  std::set<DevicePtr> live;
  std::set<DevicePtr> freed;
  std::uint64_t synchronizations = 0;
  bool synchronizedSinceLastWork = true;
  std::uintptr_t nextEvent = 0x1000;
  std::set<CUevent> pending, done, destroyed;
};

class GraphMemoryPolicy : public ::testing::Test {
 protected:
  DevicePtr reserve() {
    const DevicePtr base = nextBase;
    nextBase += kSpan;
    memory.noteReserved(base, kSpan);
    return base;
  }
  Outcome activate(DevicePtr base, std::uint64_t stream) {
    CUresult failure = CUDA_SUCCESS;
    return memory.activate(backing, base, stream, &failure);
  }
  // A free on `stream` after queued work (its event pending).
  Outcome freeOn(DevicePtr base, std::uint64_t stream) {
    CUresult failure = CUDA_SUCCESS;
    return memory.deactivate(backing, base, backing.queueWorkAndFree(), stream, &failure);
  }
  std::uint64_t blockOf(DevicePtr base) { return backing.mappedAt.at(base); }

  void TearDown() override {
    memory.dropEvents([this](CUevent event) { backing.destroyEvent(event); });
    // Every event handed over is destroyed exactly once (destroyEvent fails the test on a second).
    std::set<CUevent> handedOver = backing.pending;
    handedOver.insert(backing.done.begin(), backing.done.end());
    EXPECT_EQ(backing.destroyed, handedOver);
  }

  RecordingBacking backing;
  GraphMemory memory;
  DevicePtr nextBase = 0x7000'0000'0000;
};

TEST_F(GraphMemoryPolicy, OnOneStreamAFreedBlockServesTheNextAllocationWithoutWaiting) {
  const DevicePtr first = reserve(), second = reserve();
  ASSERT_EQ(activate(first, kStreamA), Outcome::kDone);
  ASSERT_EQ(freeOn(first, kStreamA), Outcome::kDone);
  ASSERT_EQ(activate(second, kStreamA), Outcome::kDone);
  EXPECT_EQ(blockOf(first), blockOf(second)) << "stream order runs the second's work after the first's";
  EXPECT_EQ(backing.blocks.size(), 1u);
  EXPECT_EQ(backing.synchronizations, 0u);
  EXPECT_EQ(memory.usage().usedBytes, kSpan);
  EXPECT_EQ(memory.usage().reservedBytes, kSpan);
}

TEST_F(GraphMemoryPolicy, OnAnotherStreamABlockServesOnlyOnceItsWorkHasFinished) {
  const DevicePtr first = reserve(), second = reserve(), third = reserve();
  ASSERT_EQ(activate(first, kStreamA), Outcome::kDone);
  ASSERT_EQ(freeOn(first, kStreamA), Outcome::kDone);
  ASSERT_EQ(activate(second, kStreamB), Outcome::kDone);
  EXPECT_NE(blockOf(first), blockOf(second)) << "the first's work may still run";
  EXPECT_EQ(memory.usage().reservedBytes, 2 * kSpan);
  backing.finishAll();
  ASSERT_EQ(activate(third, kStreamB), Outcome::kDone);
  EXPECT_EQ(blockOf(third), blockOf(first)) << "finished: any stream may take it";
  EXPECT_EQ(backing.synchronizations, 0u);
}

TEST_F(GraphMemoryPolicy, ARelaunchKeepsItsMemoryAndWaitsOnlyWhenItChangesStream) {
  const DevicePtr p = reserve();
  ASSERT_EQ(activate(p, kStreamA), Outcome::kDone);
  const std::uint64_t block = blockOf(p);
  ASSERT_EQ(freeOn(p, kStreamA), Outcome::kDone);
  ASSERT_EQ(activate(p, kStreamA), Outcome::kDone);
  EXPECT_EQ(blockOf(p), block);
  EXPECT_EQ(backing.synchronizations, 0u);
  ASSERT_EQ(freeOn(p, kStreamA), Outcome::kDone);
  ASSERT_EQ(activate(p, kStreamB), Outcome::kDone);
  EXPECT_EQ(blockOf(p), block) << "natively a graph's launches run one after another";
  EXPECT_EQ(backing.synchronizations, 1u);
  EXPECT_EQ(backing.blocks.size(), 1u);
}

TEST_F(GraphMemoryPolicy, AReservationWhoseBlockAnotherHoldsMovesAfterTheContextIsSynchronized) {
  const DevicePtr first = reserve(), second = reserve();
  ASSERT_EQ(activate(first, kStreamA), Outcome::kDone);
  ASSERT_EQ(freeOn(first, kStreamA), Outcome::kDone);
  ASSERT_EQ(activate(second, kStreamA), Outcome::kDone);
  const std::uint64_t shared = blockOf(second);
  ASSERT_EQ(activate(first, kStreamA), Outcome::kDone);
  EXPECT_NE(blockOf(first), shared);
  EXPECT_EQ(backing.synchronizations, 1u) << "its old mapping may be in use by queued work";
  EXPECT_EQ(activate(first, kStreamA), Outcome::kWrongState) << "live already";
}

TEST_F(GraphMemoryPolicy, ATrimGivesBackTheBlocksNoLiveAllocationHolds) {
  const DevicePtr held = reserve(), freed = reserve(), aliased = reserve();
  ASSERT_EQ(activate(held, kStreamA), Outcome::kDone);
  ASSERT_EQ(activate(freed, kStreamB), Outcome::kDone);
  ASSERT_EQ(freeOn(freed, kStreamB), Outcome::kDone);
  ASSERT_EQ(activate(aliased, kStreamB), Outcome::kDone);
  ASSERT_EQ(freeOn(aliased, kStreamB), Outcome::kDone);
  EXPECT_EQ(memory.usage().reservedBytes, 2 * kSpan);
  EXPECT_EQ(memory.trim(backing), CUDA_SUCCESS);
  EXPECT_EQ(backing.synchronizations, 1u);
  EXPECT_EQ(backing.blocks.size(), 1u);
  EXPECT_TRUE(backing.mappedAt.contains(held));
  EXPECT_FALSE(backing.mappedAt.contains(freed));
  EXPECT_FALSE(backing.mappedAt.contains(aliased));
  EXPECT_EQ(memory.usage().usedBytes, kSpan);
  EXPECT_EQ(memory.usage().reservedBytes, kSpan);
  EXPECT_EQ(memory.usage().reservedHigh, 2 * kSpan);
  EXPECT_EQ(memory.trim(backing), CUDA_SUCCESS);
  EXPECT_EQ(backing.synchronizations, 1u) << "nothing to give back: no wait";
  ASSERT_EQ(activate(freed, kStreamA), Outcome::kDone) << "trimmed: memory again at the next launch";
}

TEST_F(GraphMemoryPolicy, WhenMemoryRunsOutTheFreeBlocksGoFirst) {
  backing.capacity = 2;
  const DevicePtr a = reserve(), b = reserve(), c = reserve();
  ASSERT_EQ(activate(a, kStreamA), Outcome::kDone);
  ASSERT_EQ(activate(b, kStreamB), Outcome::kDone);
  ASSERT_EQ(freeOn(b, kStreamB), Outcome::kDone);
  ASSERT_EQ(activate(c, kStreamA), Outcome::kDone) << "b's block is trimmed, then made again";
  EXPECT_EQ(backing.blocks.size(), 2u);
  const DevicePtr d = reserve();
  CUresult failure = CUDA_SUCCESS;
  EXPECT_EQ(memory.activate(backing, d, kStreamA, &failure), Outcome::kFailed);
  EXPECT_EQ(failure, CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_FALSE(backing.live.contains(d));
}

TEST_F(GraphMemoryPolicy, AReleaseWaitsOnlyForAReservationThatHadMemory) {
  const DevicePtr never = reserve(), used = reserve(), live = reserve();
  CUresult failure = CUDA_SUCCESS;
  ASSERT_EQ(memory.release(backing, never, &failure), Outcome::kDone);
  EXPECT_EQ(backing.synchronizations, 0u);
  ASSERT_EQ(activate(used, kStreamA), Outcome::kDone);
  ASSERT_EQ(freeOn(used, kStreamA), Outcome::kDone);
  ASSERT_EQ(memory.release(backing, used, &failure), Outcome::kDone);
  EXPECT_EQ(backing.synchronizations, 1u);
  ASSERT_EQ(activate(live, kStreamA), Outcome::kDone);
  ASSERT_EQ(memory.release(backing, live, &failure), Outcome::kDone);
  EXPECT_FALSE(backing.freed.contains(live)) << "live: it goes at its free";
  EXPECT_EQ(memory.release(backing, live, &failure), Outcome::kUnknown) << "released once";
  ASSERT_EQ(freeOn(live, kStreamA), Outcome::kDone);
  EXPECT_TRUE(backing.freed.contains(live));
  EXPECT_FALSE(memory.isReservation(live));
  EXPECT_EQ(memory.usage().usedBytes, 0u);
  EXPECT_EQ(memory.usage().reservedBytes, kSpan) << "the block stays for others until a trim";
}

TEST_F(GraphMemoryPolicy, AFreeThatIsRefusedStillDestroysItsEvent) {
  const DevicePtr p = reserve();
  EXPECT_EQ(freeOn(p, kStreamA), Outcome::kWrongState) << "not live";
  EXPECT_EQ(freeOn(0x1234, kStreamA), Outcome::kUnknown);
  EXPECT_EQ(backing.destroyed.size(), 2u);
}

}  // namespace
}  // namespace agileos::worker::testing
