// exportUserAllocation(), exportProtected(), placeIoRange() and releaseIoRange(): exports only of
// the exact allocation of the asking client, descriptors that cover the right physical memory, and
// placements in the MMIO window that never overlap and belong to one client.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "memmgr/address_layout.h"
#include "tests/cpu/memmgr/memory_manager_fixture.h"

namespace agileos::memmgr::testing {
namespace {

using MemoryManagerExport = MemoryManagerTest;
using MemoryManagerIoPlacement = MemoryManagerTest;
using MemoryManagerUnguardedCode = MemoryManagerTest;

struct Exported {
  CUresult result = CUDA_ERROR_UNKNOWN;
  std::uint64_t handleBytes = 0;
  std::uint64_t offset = 0;
};

// exportUserAllocation, closing the descriptor it gave (which must be open on success).
Exported exportUser(MemoryManager& manager, ClientId client, DevicePtr p, std::uint64_t size) {
  Exported e;
  int fd = -1;
  e.result = manager.exportUserAllocation(client, p, size, &fd, &e.handleBytes, &e.offset);
  if (e.result == CUDA_SUCCESS) {
    EXPECT_GE(fd, 0);
    if (fd >= 0) ::close(fd);
  } else {
    EXPECT_EQ(fd, -1);
  }
  return e;
}

CUresult exportProtected(MemoryManager& manager, ClientId client, DevicePtr p) {
  int fd = -1;
  const CUresult result = manager.exportProtected(client, p, &fd);
  if (result == CUDA_SUCCESS) {
    EXPECT_GE(fd, 0);
    if (fd >= 0) ::close(fd);
  } else {
    EXPECT_EQ(fd, -1);
  }
  return result;
}

// ---- exportUserAllocation ----

TEST_F(MemoryManagerExport, ALargeAllocationIsItsWholeMapping) {
  const std::uint64_t size = 3 * kMiB + 1;
  const DevicePtr p = allocate(kAlice, size);
  const std::size_t exports = fake.exportCount();
  const Exported e = exportUser(*manager, kAlice, p, size);
  ASSERT_EQ(e.result, CUDA_SUCCESS);
  EXPECT_EQ(e.offset, 0u);
  EXPECT_EQ(e.handleBytes, 2 * kChunk);  // rounded up to the granularity, as mapped
  EXPECT_EQ(fake.exportCount(), exports + 1);
}

TEST_F(MemoryManagerExport, ASmallAllocationIsItsPlaceInItsChunk) {
  const DevicePtr first = allocate(kAlice, 1000);
  const DevicePtr second = allocate(kAlice, 900);  // the same size class: the same chunk
  const Exported a = exportUser(*manager, kAlice, first, 1000);
  const Exported b = exportUser(*manager, kAlice, second, 900);
  ASSERT_EQ(a.result, CUDA_SUCCESS);
  ASSERT_EQ(b.result, CUDA_SUCCESS);
  EXPECT_EQ(a.handleBytes, kChunk);
  EXPECT_EQ(b.handleBytes, kChunk);
  EXPECT_LE(a.offset + 1000, a.handleBytes);
  EXPECT_LE(b.offset + 900, b.handleBytes);
  EXPECT_NE(a.offset, b.offset);
  // One chunk: both offsets are measured from the same start.
  EXPECT_EQ(first - a.offset, second - b.offset);
  EXPECT_EQ((first - a.offset) % kChunk, 0u);
  EXPECT_EQ(fake.exportCount(), 2u);
}

TEST_F(MemoryManagerExport, AnAllocationInALaterChunkIsMeasuredFromThatChunk) {
  // Fill Alice's first chunk with 512 KiB slots, so the next one opens a second chunk.
  std::vector<DevicePtr> slots;
  for (std::uint64_t i = 0; i < kChunk / (512 * 1024) + 1; ++i) slots.push_back(allocate(kAlice, 512 * 1024));
  const DevicePtr last = slots.back();
  const Exported e = exportUser(*manager, kAlice, last, 512 * 1024);
  ASSERT_EQ(e.result, CUDA_SUCCESS);
  EXPECT_EQ((last - e.offset) % kChunk, 0u);
  EXPECT_LE(e.offset + 512 * 1024, e.handleBytes);
  const Exported first = exportUser(*manager, kAlice, slots.front(), 512 * 1024);
  ASSERT_EQ(first.result, CUDA_SUCCESS);
  EXPECT_NE(slots.front() - first.offset, last - e.offset);  // different chunks
}

TEST_F(MemoryManagerExport, AnythingButAnExactLiveAllocationOfTheClientIsRefused) {
  const DevicePtr small = allocate(kAlice, 1000);
  const DevicePtr large = allocate(kAlice, 2 * kMiB);
  const DevicePtr bobs = allocate(kBob, 1000);
  const DevicePtr bobsLarge = allocate(kBob, 4 * kMiB);
  const DevicePtr freed = allocate(kAlice, 3000);
  ASSERT_EQ(manager->free(kAlice, freed), CUDA_SUCCESS);
  const DevicePtr global = 0x10000000ull;
  ASSERT_TRUE(manager->registerModuleGlobal(kAlice, global, 64));
  const std::size_t exports = fake.exportCount();

  EXPECT_EQ(exportUser(*manager, kAlice, bobs, 1000).result, CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(exportUser(*manager, kAlice, bobsLarge, 4 * kMiB).result, CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(exportUser(*manager, kAlice, small + 256, 1000 - 256).result, CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(exportUser(*manager, kAlice, small, 999).result, CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(exportUser(*manager, kAlice, small, 1024).result, CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(exportUser(*manager, kAlice, large, kChunk + 1).result, CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(exportUser(*manager, kAlice, large + kChunk / 2, kChunk / 2).result, CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(exportUser(*manager, kAlice, freed, 3000).result, CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(exportUser(*manager, kAlice, global, 64).result, CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(exportUser(*manager, kAlice, 0, 0).result, CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(fake.exportCount(), exports);

  int fd = -1;
  std::uint64_t handleBytes = 0, offset = 0;
  EXPECT_EQ(manager->exportUserAllocation(kAlice, small, 1000, nullptr, &handleBytes, &offset),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(manager->exportUserAllocation(kAlice, small, 1000, &fd, nullptr, &offset),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(manager->exportUserAllocation(kAlice, small, 1000, &fd, &handleBytes, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(fd, -1);
  EXPECT_EQ(fake.exportCount(), exports);

  // Bob's own are his to export.
  EXPECT_EQ(exportUser(*manager, kBob, bobs, 1000).result, CUDA_SUCCESS);
  EXPECT_EQ(exportUser(*manager, kBob, bobsLarge, 4 * kMiB).result, CUDA_SUCCESS);
  EXPECT_EQ(fake.exportCount(), exports + 2);
}

TEST_F(MemoryManagerExport, AReleasedClientHasNothingToExport) {
  const DevicePtr small = allocate(kAlice, 1000);
  const DevicePtr large = allocate(kAlice, 2 * kMiB);
  manager->releaseClient(kAlice);
  EXPECT_EQ(exportUser(*manager, kAlice, small, 1000).result, CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(exportUser(*manager, kAlice, large, 2 * kMiB).result, CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(fake.exportCount(), 0u);
}

TEST_F(MemoryManagerExport, UserMemoryIsStillAllocatedWhenExportableMemoryIsNotSupported) {
  // The first createPhysical (the exportable attempt) is refused as by a driver without POSIX
  // descriptor export; the allocation falls back to plain memory and succeeds.
  const std::uint64_t creates = fake.callCount(VmmCall::kCreatePhysical);
  fake.failNextCall(VmmCall::kCreatePhysical, CUDA_ERROR_NOT_SUPPORTED);
  const DevicePtr p = allocate(kAlice, 3 * kMiB);
  ASSERT_NE(p, 0u);
  EXPECT_EQ(fake.callCount(VmmCall::kCreatePhysical), creates + 2);
  EXPECT_TRUE(fake.isMappedAndAccessible(p, 3 * kMiB));
  EXPECT_EQ(manager->free(kAlice, p), CUDA_SUCCESS);
}

// ---- exportProtected ----

TEST_F(MemoryManagerExport, ProtectedMemoryIsExportedOnlyToItsClientAtItsBase) {
  DevicePtr alices = 0, bobs = 0;
  ASSERT_EQ(manager->allocateProtected(kAlice, 4096, &alices), CUDA_SUCCESS);
  ASSERT_EQ(manager->allocateProtected(kBob, 4096, &bobs), CUDA_SUCCESS);
  const DevicePtr user = allocate(kAlice, 4096);

  EXPECT_EQ(exportProtected(*manager, kAlice, alices), CUDA_SUCCESS);
  EXPECT_EQ(fake.exportCount(), 1u);
  EXPECT_EQ(exportProtected(*manager, kAlice, bobs), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(exportProtected(*manager, kAlice, alices + 4096), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(exportProtected(*manager, kAlice, user), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(exportProtected(*manager, kAlice, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(manager->exportProtected(kAlice, alices, nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(fake.exportCount(), 1u);

  ASSERT_EQ(manager->freeProtected(kAlice, alices), CUDA_SUCCESS);
  EXPECT_EQ(exportProtected(*manager, kAlice, alices), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(exportProtected(*manager, kBob, bobs), CUDA_SUCCESS);
  EXPECT_EQ(fake.exportCount(), 2u);
  manager->releaseProtected(kBob);
  EXPECT_EQ(exportProtected(*manager, kBob, bobs), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(fake.exportCount(), 2u);
}

// ---- placeIoRange / releaseIoRange ----

TEST_F(MemoryManagerIoPlacement, PlacementsAreAlignedInsideTheMmioWindowAndDoNotOverlap) {
  const std::uint64_t calls = fake.callCount();
  struct Placed {
    DevicePtr base;
    std::uint64_t size;
  };
  std::vector<Placed> placed;
  for (std::uint64_t size : {std::uint64_t{1}, std::uint64_t{4096}, kIoPlacementAlignment,
                             kIoPlacementAlignment + 1, 3 * kMiB, std::uint64_t{100}}) {
    const std::optional<DevicePtr> p = manager->placeIoRange(kAlice, size);
    ASSERT_TRUE(p) << size;
    EXPECT_EQ(*p % kIoPlacementAlignment, 0u) << size;
    EXPECT_TRUE(kMmioWindow.contains(*p) && size <= kMmioWindow.end() - *p) << std::hex << *p;
    placed.push_back({*p, size});
  }
  for (const Placed& a : placed) {
    for (const Placed& b : placed) {
      if (a.base == b.base) continue;
      EXPECT_TRUE(a.base + a.size <= b.base || b.base + b.size <= a.base)
          << std::hex << a.base << " " << b.base;
    }
  }
  EXPECT_EQ(fake.callCount(), calls);  // arithmetic only: the window is not reserved on the GPU
}

TEST_F(MemoryManagerIoPlacement, AReleasedPlacementIsReusable) {
  const std::optional<DevicePtr> first = manager->placeIoRange(kAlice, 4096);
  const std::optional<DevicePtr> second = manager->placeIoRange(kAlice, 4096);
  ASSERT_TRUE(first && second);
  EXPECT_NE(*first, *second);
  EXPECT_TRUE(manager->releaseIoRange(kAlice, *first));
  EXPECT_FALSE(manager->releaseIoRange(kAlice, *first));  // twice
  EXPECT_EQ(manager->placeIoRange(kAlice, 4096), first);  // the lowest free range again
  EXPECT_TRUE(manager->releaseIoRange(kAlice, *second));
}

TEST_F(MemoryManagerIoPlacement, OnlyItsClientReleasesAPlacementAndOnlyAtItsBase) {
  const std::optional<DevicePtr> alices = manager->placeIoRange(kAlice, 2 * kIoPlacementAlignment);
  ASSERT_TRUE(alices);
  EXPECT_FALSE(manager->releaseIoRange(kBob, *alices));
  EXPECT_FALSE(manager->releaseIoRange(kAlice, *alices + kIoPlacementAlignment));
  EXPECT_FALSE(manager->releaseIoRange(kAlice, 0));
  // Still Alice's: nobody is placed over it.
  const std::optional<DevicePtr> bobs = manager->placeIoRange(kBob, kIoPlacementAlignment);
  ASSERT_TRUE(bobs);
  EXPECT_TRUE(*bobs + kIoPlacementAlignment <= *alices || *alices + 2 * kIoPlacementAlignment <= *bobs);
  EXPECT_TRUE(manager->releaseIoRange(kAlice, *alices));
  EXPECT_FALSE(manager->releaseIoRange(kAlice, *bobs));
  EXPECT_TRUE(manager->releaseIoRange(kBob, *bobs));
}

TEST_F(MemoryManagerIoPlacement, TheWindowIsTheLimit) {
  EXPECT_FALSE(manager->placeIoRange(kAlice, 0));
  EXPECT_FALSE(manager->placeIoRange(kAlice, kMmioWindow.size + 1));
  const std::optional<DevicePtr> whole = manager->placeIoRange(kAlice, kMmioWindow.size);
  ASSERT_TRUE(whole);
  EXPECT_EQ(*whole, kMmioWindow.begin);
  EXPECT_FALSE(manager->placeIoRange(kBob, 1));  // no room left
  EXPECT_TRUE(manager->releaseIoRange(kAlice, *whole));
  EXPECT_EQ(manager->placeIoRange(kBob, 1), kMmioWindow.begin);
}

TEST_F(MemoryManagerIoPlacement, PlacementsAreNotUserMemory) {
  const std::optional<DevicePtr> p = manager->placeIoRange(kAlice, 4096);
  ASSERT_TRUE(p);
  EXPECT_FALSE(manager->table().find(*p));
  EXPECT_NE(manager->check(kAlice, *p, 1), PointerCheck::kOk);
  EXPECT_EQ(exportUser(*manager, kAlice, *p, 4096).result, CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(manager->free(kAlice, *p), CUDA_ERROR_INVALID_VALUE);
  EXPECT_TRUE(manager->releaseIoRange(kAlice, *p));
}

// ---- the unguarded-code gate's half (admitUnguardedCode) ----

TEST_F(MemoryManagerUnguardedCode, IsAdmittedOnlyWithoutProtectedStateAndTheGuardPageIsNone) {
  DevicePtr page = 0;
  ASSERT_EQ(manager->allocateProtected(kAlice, 4096, &page, ProtectedUse::kGuardState), CUDA_SUCCESS);
  EXPECT_FALSE(manager->holdsProtectedState(kAlice)) << "the guard's own page is not protected state";
  DevicePtr state = 0;
  ASSERT_EQ(manager->allocateProtected(kBob, 4096, &state), CUDA_SUCCESS);
  EXPECT_TRUE(manager->holdsProtectedState(kBob));
  EXPECT_FALSE(manager->admitUnguardedCode(kBob));
  EXPECT_FALSE(manager->runsUnguardedCode(kBob));
  ASSERT_EQ(manager->freeProtected(kBob, state), CUDA_SUCCESS);
  const std::optional<DevicePtr> io = manager->placeIoRange(kBob, 4096);
  ASSERT_TRUE(io);
  EXPECT_TRUE(manager->holdsProtectedState(kBob)) << "an I/O placement is protected state";
  EXPECT_FALSE(manager->admitUnguardedCode(kBob));
  EXPECT_TRUE(manager->admitUnguardedCode(kAlice)) << "Bob's state is not Alice's";
  EXPECT_TRUE(manager->runsUnguardedCode(kAlice));
  EXPECT_FALSE(manager->runsUnguardedCode(kBob));
}

TEST_F(MemoryManagerUnguardedCode, OnceAdmittedEveryStepToProtectedStateIsRefusedForThatClientOnly) {
  const DevicePtr user = allocate(kAlice, 4096);
  DevicePtr state = 0;
  ASSERT_TRUE(manager->admitUnguardedCode(kAlice));
  EXPECT_EQ(manager->allocateProtected(kAlice, 4096, &state), CUDA_ERROR_NOT_PERMITTED);
  EXPECT_EQ(manager->protectedBytes(kAlice), 0u);
  EXPECT_FALSE(manager->placeIoRange(kAlice, 4096));
  EXPECT_EQ(exportUser(*manager, kAlice, user, 4096).result, CUDA_ERROR_NOT_PERMITTED);
  DevicePtr page = 0;
  ASSERT_EQ(manager->allocateProtected(kAlice, 4096, &page, ProtectedUse::kGuardState), CUDA_SUCCESS)
      << "the guard's own page stays allowed";
  EXPECT_EQ(exportProtected(*manager, kAlice, page), CUDA_ERROR_NOT_PERMITTED);
  EXPECT_FALSE(manager->holdsProtectedState(kAlice));
  // Another client of the same worker is not affected.
  EXPECT_EQ(manager->allocateProtected(kBob, 4096, &state), CUDA_SUCCESS);
  EXPECT_TRUE(manager->placeIoRange(kBob, 4096));
  // The mark lasts until the client's protected memory is released at the end of its session.
  manager->releaseClient(kAlice);
  EXPECT_EQ(manager->allocateProtected(kAlice, 4096, &state), CUDA_ERROR_NOT_PERMITTED);
  manager->releaseProtected(kAlice);
  EXPECT_FALSE(manager->runsUnguardedCode(kAlice));
  EXPECT_EQ(manager->allocateProtected(kAlice, 4096, &state), CUDA_SUCCESS);
}

}  // namespace
}  // namespace agileos::memmgr::testing
