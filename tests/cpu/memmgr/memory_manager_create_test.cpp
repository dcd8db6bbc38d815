// create(): granularity query and exact reservation of the three fixed ranges.
#include <gtest/gtest.h>

#include <string>

#include "memmgr/memory_manager.h"
#include "tests/cpu/memmgr/fake_vmm_backend.h"
#include "tests/cpu/memmgr/memory_manager_fixture.h"

namespace agileos::memmgr::testing {
namespace {

// The I/O aperture is reserved except its MMIO window (address_layout.h: kMmioWindow).
constexpr Region kFixedRegions[] = {kGuardZone, kIoApertureReserved, kModuleRange, kUserRange};

TEST(MemoryManagerCreate, ReservesTheFixedRangesExactlyAndGivesThemBack) {
  FakeVmmBackend fake;
  std::string error;
  auto manager = MemoryManager::create(fake, &error);
  ASSERT_NE(manager, nullptr) << error;
  EXPECT_EQ(manager->granularity(), FakeVmmBackend::kDefaultGranularity);
  EXPECT_EQ(fake.liveReservations(), 4u);
  for (const Region& region : kFixedRegions) EXPECT_TRUE(fake.hasReservation(region.begin, region.size));

  manager.reset();
  EXPECT_EQ(fake.liveReservations(), 0u);
  EXPECT_TRUE(fake.violations().empty()) << joined(fake.violations());
}

// For each range in turn, something already occupies part of it, so the driver
// grants the reservation elsewhere: create() must refuse and give back all it got.
class RangeTakenTest : public ::testing::TestWithParam<int> {};

TEST_P(RangeTakenTest, RefusesAndReleasesWhatItReserved) {
  const Region& taken = kFixedRegions[GetParam()];
  FakeVmmBackend fake;
  DevicePtr squatter = 0;
  ASSERT_EQ(fake.reserve(taken.begin + 64 * kMiB, 2 * kMiB, &squatter), CUDA_SUCCESS);

  std::string error;
  EXPECT_EQ(MemoryManager::create(fake, &error), nullptr);
  EXPECT_NE(error.find("granted"), std::string::npos) << error;
  char expected[32];
  std::snprintf(expected, sizeof expected, "0x%llx", static_cast<unsigned long long>(taken.begin));
  EXPECT_NE(error.find(expected), std::string::npos) << error;
  EXPECT_EQ(fake.liveReservations(), 1u);  // only the squatter's
  EXPECT_TRUE(fake.hasReservation(squatter, 2 * kMiB));
  EXPECT_TRUE(fake.violations().empty()) << joined(fake.violations());
}

INSTANTIATE_TEST_SUITE_P(EachFixedRange, RangeTakenTest, ::testing::Values(0, 1, 2, 3));

TEST(MemoryManagerCreate, RefusesWhenAReservationFails) {
  for (std::uint64_t failingCall = 2; failingCall <= 5; ++failingCall) {  // call 1 is the granularity query
    FakeVmmBackend fake;
    fake.failNthCall(failingCall, CUDA_ERROR_OUT_OF_MEMORY);
    std::string error;
    EXPECT_EQ(MemoryManager::create(fake, &error), nullptr);
    EXPECT_NE(error.find("cuMemAddressReserve failed with CUresult 2"), std::string::npos) << error;
    EXPECT_EQ(fake.liveReservations(), 0u) << "reservation call " << failingCall;
    EXPECT_TRUE(fake.violations().empty()) << joined(fake.violations());
  }
}

TEST(MemoryManagerCreate, RefusesWhenTheGranularityQueryFails) {
  FakeVmmBackend fake;
  fake.failNextCall(VmmCall::kAllocationGranularity, CUDA_ERROR_NOT_INITIALIZED);
  std::string error;
  EXPECT_EQ(MemoryManager::create(fake, &error), nullptr);
  EXPECT_NE(error.find("cuMemGetAllocationGranularity"), std::string::npos) << error;
  EXPECT_EQ(fake.callCount(VmmCall::kReserve), 0u);
}

TEST(MemoryManagerCreate, RefusesAnUnusableGranularity) {
  for (std::size_t granularity : {std::size_t{128}, std::size_t{3} << 20}) {
    FakeVmmBackend fake(granularity);
    std::string error;
    EXPECT_EQ(MemoryManager::create(fake, &error), nullptr) << granularity;
    EXPECT_NE(error.find("granularity"), std::string::npos) << error;
    EXPECT_EQ(fake.liveReservations(), 0u);
  }
}

TEST(MemoryManagerCreate, AcceptsANullErrorPointer) {
  FakeVmmBackend fake;
  DevicePtr squatter = 0;
  ASSERT_EQ(fake.reserve(kUserRange.begin, 2 * kMiB, &squatter), CUDA_SUCCESS);
  EXPECT_EQ(MemoryManager::create(fake, nullptr), nullptr);
}

TEST(MemoryManagerCreate, WorksWithASmallerGranularity) {
  FakeVmmBackend fake(64 * 1024);
  std::string error;
  auto manager = MemoryManager::create(fake, &error);
  ASSERT_NE(manager, nullptr) << error;
  DevicePtr small = 0, large = 0;
  ASSERT_EQ(manager->allocate(1, 1000, &small), CUDA_SUCCESS);
  ASSERT_EQ(manager->allocate(1, 1 * kMiB + 1, &large), CUDA_SUCCESS);
  EXPECT_EQ(manager->bytesInUse(1), kMiB /* one chunk */ + kMiB + 64 * 1024 /* rounded large */);
  manager.reset();
  EXPECT_EQ(fake.liveHandles(), 0u);
  EXPECT_TRUE(fake.violations().empty()) << joined(fake.violations());
}

}  // namespace
}  // namespace agileos::memmgr::testing
