// The fake must catch the mistakes the memory manager tests rely on it to catch.
#include "tests/cpu/memmgr/fake_vmm_backend.h"

#include <gtest/gtest.h>

namespace agileos::memmgr::testing {
namespace {

constexpr std::size_t kGranule = FakeVmmBackend::kDefaultGranularity;
constexpr DevicePtr kBase = 0x200000000ull;

class FakeVmmBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DevicePtr got = 0;
    ASSERT_EQ(fake.reserve(kBase, 8 * kGranule, &got), CUDA_SUCCESS);
    ASSERT_EQ(got, kBase);
  }
  PhysicalHandle mapped(DevicePtr va) {
    PhysicalHandle handle = 0;
    EXPECT_EQ(fake.createPhysical(kGranule, &handle), CUDA_SUCCESS);
    EXPECT_EQ(fake.map(va, kGranule, handle), CUDA_SUCCESS);
    EXPECT_EQ(fake.setAccess(va, kGranule), CUDA_SUCCESS);
    return handle;
  }
  FakeVmmBackend fake;
};

TEST_F(FakeVmmBackendTest, CorrectLifecycleHasNoViolations) {
  const PhysicalHandle handle = mapped(kBase);
  EXPECT_TRUE(fake.write(kBase + 100, 8));
  EXPECT_EQ(fake.fill(kBase, 0, kGranule), CUDA_SUCCESS);
  EXPECT_EQ(fake.unmap(kBase, kGranule), CUDA_SUCCESS);
  EXPECT_EQ(fake.releasePhysical(handle), CUDA_SUCCESS);
  EXPECT_EQ(fake.freeReservation(kBase, 8 * kGranule), CUDA_SUCCESS);
  EXPECT_TRUE(fake.violations().empty()) << joined(fake.violations());
}

TEST_F(FakeVmmBackendTest, UnmappingWrittenMemoryWithoutAFullZeroFillIsAViolation) {
  mapped(kBase);
  ASSERT_TRUE(fake.write(kBase, 8));
  EXPECT_EQ(fake.fill(kBase, 0, kGranule / 2), CUDA_SUCCESS);  // half is not a scrub
  EXPECT_EQ(fake.unmap(kBase, kGranule), CUDA_SUCCESS);
  EXPECT_EQ(fake.violations().size(), 1u);
}

TEST_F(FakeVmmBackendTest, OrderingMistakesAreViolations) {
  const PhysicalHandle handle = mapped(kBase);
  EXPECT_NE(fake.releasePhysical(handle), CUDA_SUCCESS);               // still mapped
  EXPECT_NE(fake.freeReservation(kBase, 8 * kGranule), CUDA_SUCCESS);  // still mapped in it
  EXPECT_NE(fake.map(kBase, kGranule, handle), CUDA_SUCCESS);          // twice at one address
  PhysicalHandle other = 0;
  ASSERT_EQ(fake.createPhysical(kGranule, &other), CUDA_SUCCESS);
  EXPECT_NE(fake.map(kBase, kGranule, other), CUDA_SUCCESS);                  // over a mapping
  EXPECT_NE(fake.map(kBase + 64 * kGranule, kGranule, other), CUDA_SUCCESS);  // outside the reservation
  EXPECT_NE(fake.unmap(kBase, 2 * kGranule), CUDA_SUCCESS);                   // not one whole mapping
  EXPECT_NE(fake.fill(kBase + kGranule, 0, 16), CUDA_SUCCESS);                // not mapped
  EXPECT_FALSE(fake.write(kBase + kGranule - 4, 8));                          // runs off the mapping
  EXPECT_EQ(fake.violations().size(), 8u);
}

TEST_F(FakeVmmBackendTest, ReservingATakenAddressLandsElsewhere) {
  DevicePtr got = 0;
  ASSERT_EQ(fake.reserve(kBase + kGranule, kGranule, &got), CUDA_SUCCESS);
  EXPECT_EQ(got, FakeVmmBackend::kElsewhere);
  EXPECT_EQ(fake.liveReservations(), 2u);
}

TEST_F(FakeVmmBackendTest, InjectedFailuresAreOneShotAndHaveNoEffect) {
  fake.failNthCall(2, CUDA_ERROR_NOT_PERMITTED);
  PhysicalHandle handle = 0;
  ASSERT_EQ(fake.createPhysical(kGranule, &handle), CUDA_SUCCESS);
  EXPECT_EQ(fake.map(kBase, kGranule, handle), CUDA_ERROR_NOT_PERMITTED);
  EXPECT_EQ(fake.liveMappings(), 0u);
  EXPECT_EQ(fake.map(kBase, kGranule, handle), CUDA_SUCCESS);

  fake.failNextCall(VmmCall::kUnmap, CUDA_ERROR_UNKNOWN);
  EXPECT_EQ(fake.unmap(kBase, kGranule), CUDA_ERROR_UNKNOWN);
  EXPECT_EQ(fake.liveMappings(), 1u);
  EXPECT_EQ(fake.unmap(kBase, kGranule), CUDA_SUCCESS);
  EXPECT_EQ(fake.releasePhysical(handle), CUDA_SUCCESS);
  EXPECT_TRUE(fake.violations().empty()) << joined(fake.violations());
}

TEST_F(FakeVmmBackendTest, CapacityLimitsPhysicalMemory) {
  fake.setPhysicalCapacity(2 * kGranule);
  PhysicalHandle a = 0, b = 0, c = 0;
  EXPECT_EQ(fake.createPhysical(kGranule, &a), CUDA_SUCCESS);
  EXPECT_EQ(fake.createPhysical(kGranule, &b), CUDA_SUCCESS);
  EXPECT_EQ(fake.createPhysical(kGranule, &c), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(fake.releasePhysical(a), CUDA_SUCCESS);
  EXPECT_EQ(fake.createPhysical(kGranule, &c), CUDA_SUCCESS);
  EXPECT_EQ(fake.physicalBytes(), 2 * kGranule);
}

}  // namespace
}  // namespace agileos::memmgr::testing
