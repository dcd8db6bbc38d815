// Quotas (setQuota): every mapped byte of a client is charged, user and protected alike; an
// allocation past the quota fails with CUDA_ERROR_OUT_OF_MEMORY and changes nothing.
#include <gtest/gtest.h>

#include "tests/cpu/memmgr/memory_manager_fixture.h"

namespace agileos::memmgr::testing {
namespace {

using MemoryManagerQuota = MemoryManagerTest;

TEST_F(MemoryManagerQuota, NoQuotaByDefault) {
  EXPECT_EQ(manager->quota(kAlice), 0u);
  allocate(kAlice, 8 * kChunk);
  EXPECT_EQ(manager->chargedBytes(kAlice), 8 * kChunk);
}

TEST_F(MemoryManagerQuota, LargeAllocationsUpToTheQuotaAndNotOneByteMore) {
  manager->setQuota(kAlice, 4 * kChunk);
  const DevicePtr first = allocate(kAlice, 3 * kChunk);
  ASSERT_NE(first, 0u);
  const std::uint64_t calls = fake.callCount();
  DevicePtr p = 0xdead;
  // 1 byte more than the quota leaves, rounded to a whole granule: 2 chunks > 1 left.
  EXPECT_EQ(manager->allocate(kAlice, kChunk + 1, &p), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(p, 0xdeadu);
  EXPECT_EQ(fake.callCount(), calls);  // refused before the driver
  EXPECT_EQ(manager->chargedBytes(kAlice), 3 * kChunk);
  EXPECT_NE(allocate(kAlice, kChunk), 0u);  // exactly the rest fits
  EXPECT_EQ(manager->chargedBytes(kAlice), 4 * kChunk);
  EXPECT_EQ(manager->free(kAlice, first), CUDA_SUCCESS);
  EXPECT_NE(allocate(kAlice, 2 * kChunk), 0u);  // freed bytes are uncharged
}

TEST_F(MemoryManagerQuota, SmallAllocationsAreChargedByTheChunk) {
  manager->setQuota(kAlice, kChunk);
  const DevicePtr a = allocate(kAlice, 4096);
  EXPECT_EQ(manager->chargedBytes(kAlice), kChunk);
  EXPECT_NE(allocate(kAlice, 4096), 0u);  // same chunk: no new charge
  DevicePtr p = 0;
  EXPECT_EQ(manager->allocate(kAlice, kSmallAllocationLimit, &p), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_NE(a, 0u);
}

TEST_F(MemoryManagerQuota, ProtectedMemoryCountsToo) {
  manager->setQuota(kAlice, 2 * kChunk);
  DevicePtr state = 0;
  ASSERT_EQ(manager->allocateProtected(kAlice, kChunk, &state), CUDA_SUCCESS);
  EXPECT_EQ(manager->chargedBytes(kAlice), kChunk);
  DevicePtr p = 0;
  EXPECT_EQ(manager->allocate(kAlice, 2 * kChunk, &p), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_NE(allocate(kAlice, kChunk), 0u);
  DevicePtr more = 0;
  EXPECT_EQ(manager->allocateProtected(kAlice, 1, &more), CUDA_ERROR_OUT_OF_MEMORY);
  manager->releaseProtected(kAlice);
}

TEST_F(MemoryManagerQuota, CachedEmptyChunksGiveWayToANewAllocation) {
  manager->setQuota(kAlice, 2 * kChunk);
  const DevicePtr small = allocate(kAlice, 4096);
  ASSERT_EQ(manager->free(kAlice, small), CUDA_SUCCESS);  // the emptied chunk stays cached
  EXPECT_EQ(manager->chargedBytes(kAlice), kChunk);
  EXPECT_NE(allocate(kAlice, 2 * kChunk), 0u);  // fits once the cached chunk is given back
  EXPECT_EQ(manager->chargedBytes(kAlice), 2 * kChunk);
}

TEST_F(MemoryManagerQuota, OneClientsQuotaIsNotAnothersAndOutlivesReleaseClient) {
  manager->setQuota(kAlice, kChunk);
  EXPECT_NE(allocate(kBob, 4 * kChunk), 0u);
  DevicePtr p = 0;
  EXPECT_EQ(manager->allocate(kAlice, 2 * kChunk, &p), CUDA_ERROR_OUT_OF_MEMORY);
  manager->releaseClient(kAlice);  // what a device reset does: the quota stays
  EXPECT_EQ(manager->quota(kAlice), kChunk);
  EXPECT_EQ(manager->allocate(kAlice, 2 * kChunk, &p), CUDA_ERROR_OUT_OF_MEMORY);
  manager->setQuota(kAlice, 0);
  EXPECT_EQ(manager->quota(kAlice), 0u);
  manager->releaseClient(kBob);
}

TEST_F(MemoryManagerQuota, LoweringBelowTheChargeRefusesNewMemoryOnly) {
  const DevicePtr p = allocate(kAlice, 3 * kChunk);
  manager->setQuota(kAlice, kChunk);
  EXPECT_EQ(manager->check(kAlice, p, 3 * kChunk), PointerCheck::kOk);
  DevicePtr q = 0;
  EXPECT_EQ(manager->allocate(kAlice, 4096, &q), CUDA_ERROR_OUT_OF_MEMORY);
  manager->setQuota(kAlice, 0);
  EXPECT_NE(allocate(kAlice, 4096), 0u);
}

// The driver's share (context limits a client raised) is charged like a mapping: it counts in
// chargedBytes, a rise past the quota is refused and changes nothing, a fall always succeeds,
// and a device reset (releaseClient) keeps it, since the limits live on in the context.
TEST_F(MemoryManagerQuota, DriverChargesCountAgainstTheQuota) {
  manager->setQuota(kAlice, 4 * kChunk);
  const DevicePtr p = allocate(kAlice, 2 * kChunk);
  EXPECT_TRUE(manager->setDriverCharge(kAlice, DriverShare::kContextLimits, kChunk));
  EXPECT_EQ(manager->chargedBytes(kAlice), 3 * kChunk);
  EXPECT_FALSE(manager->setDriverCharge(kAlice, DriverShare::kContextLimits, 2 * kChunk + 1));
  EXPECT_EQ(manager->driverCharge(kAlice), kChunk) << "a refused rise changed the charge";
  EXPECT_TRUE(manager->setDriverCharge(kAlice, DriverShare::kContextLimits, 2 * kChunk));  // exactly the rest
  DevicePtr q = 0;
  EXPECT_EQ(manager->allocate(kAlice, 4096, &q), CUDA_ERROR_OUT_OF_MEMORY) << "the driver's share is spent";
  EXPECT_EQ(manager->free(kAlice, p), CUDA_SUCCESS);
  manager->releaseClient(kAlice);
  EXPECT_EQ(manager->driverCharge(kAlice), 2 * kChunk) << "a device reset keeps the context's limits";
  manager->setQuota(kAlice, kChunk);
  EXPECT_TRUE(manager->setDriverCharge(kAlice, DriverShare::kContextLimits, kChunk))
      << "lowering always succeeds";
  EXPECT_TRUE(manager->setDriverCharge(kAlice, DriverShare::kContextLimits, 0));
  EXPECT_EQ(manager->chargedBytes(kAlice), 0u);
  EXPECT_TRUE(manager->setDriverCharge(kBob, DriverShare::kContextLimits, 1ull << 40))
      << "no quota, no bound";
  EXPECT_TRUE(manager->setDriverCharge(kBob, DriverShare::kContextLimits, 0));
  manager->setQuota(kAlice, 0);
}

// Shares add up against one quota; each is raised and lowered on its own. addDriverCharge is
// what concurrent module loads use: a rise past the quota is refused and changes nothing.
TEST_F(MemoryManagerQuota, DriverSharesAddUpAgainstOneQuota) {
  manager->setQuota(kAlice, 4 * kChunk);
  EXPECT_TRUE(manager->setDriverCharge(kAlice, DriverShare::kContextLimits, kChunk));
  EXPECT_TRUE(manager->addDriverCharge(kAlice, DriverShare::kModuleImages, 2 * kChunk));
  EXPECT_EQ(manager->driverCharge(kAlice), 3 * kChunk);
  EXPECT_EQ(manager->driverCharge(kAlice, DriverShare::kModuleImages), 2 * kChunk);
  EXPECT_FALSE(manager->addDriverCharge(kAlice, DriverShare::kModuleImages, kChunk + 1));
  EXPECT_FALSE(manager->addDriverCharge(kAlice, DriverShare::kModuleImages, ~0ull)) << "no wrap";
  EXPECT_EQ(manager->driverCharge(kAlice, DriverShare::kModuleImages), 2 * kChunk)
      << "the refusals changed nothing";
  EXPECT_TRUE(manager->addDriverCharge(kAlice, DriverShare::kModuleImages, kChunk));  // exactly the rest
  DevicePtr q = 0;
  EXPECT_EQ(manager->allocate(kAlice, 4096, &q), CUDA_ERROR_OUT_OF_MEMORY);
  manager->subtractDriverCharge(kAlice, DriverShare::kModuleImages, 2 * kChunk);
  EXPECT_EQ(manager->driverCharge(kAlice), 2 * kChunk);
  manager->subtractDriverCharge(kAlice, DriverShare::kModuleImages, 5 * kChunk);  // at most what it holds
  EXPECT_EQ(manager->driverCharge(kAlice, DriverShare::kModuleImages), 0u);
  EXPECT_EQ(manager->driverCharge(kAlice, DriverShare::kContextLimits), kChunk)
      << "the other share is untouched";
  EXPECT_TRUE(manager->setDriverCharge(kAlice, DriverShare::kContextLimits, 0));
  EXPECT_EQ(manager->chargedBytes(kAlice), 0u);
  manager->setQuota(kAlice, 0);
}

}  // namespace
}  // namespace agileos::memmgr::testing
