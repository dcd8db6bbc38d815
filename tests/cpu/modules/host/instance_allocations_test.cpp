// InstanceAllocations: a plugin reaches only its own protected allocations.
#include "modules/host/instance_allocations.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "tests/cpu/modules/host/fake_protected_memory.h"

namespace agileos::modules {
namespace {

using testing::FakeProtectedMemory;

TEST(InstanceAllocations, ReadsAndWritesInsideItsAllocation) {
  FakeProtectedMemory memory;
  InstanceAllocations allocations(memory, 0);
  std::uint64_t address = 0;
  ASSERT_EQ(allocations.allocate(100, &address), AGILEOS_MODULE_OK);
  const char data[4] = {'a', 'b', 'c', 'd'};
  EXPECT_EQ(allocations.write(address + 96, data, 4), AGILEOS_MODULE_OK);
  char back[4] = {};
  EXPECT_EQ(allocations.read(address + 96, back, 4), AGILEOS_MODULE_OK);
  EXPECT_EQ(std::string(back, 4), "abcd");
  EXPECT_EQ(allocations.liveBytes(), 100u);
}

TEST(InstanceAllocations, RefusesRangesOutsideItsAllocations) {
  FakeProtectedMemory memory;
  InstanceAllocations allocations(memory, 0);
  std::uint64_t address = 0;
  ASSERT_EQ(allocations.allocate(100, &address), AGILEOS_MODULE_OK);
  char buffer[8] = {};
  EXPECT_EQ(allocations.read(address + 97, buffer, 4), AGILEOS_MODULE_ERANGE);
  EXPECT_EQ(allocations.write(address + 100, buffer, 1), AGILEOS_MODULE_EPERM);  // just past the end
  EXPECT_EQ(allocations.read(address - 1, buffer, 1), AGILEOS_MODULE_EPERM);
  EXPECT_EQ(allocations.read(0, buffer, 1), AGILEOS_MODULE_EPERM);
  // A length that would wrap the address space is a range error, not a wrap-around.
  EXPECT_EQ(allocations.read(address + 1, buffer, std::numeric_limits<std::uint64_t>::max()),
            AGILEOS_MODULE_ERANGE);
  EXPECT_EQ(allocations.write(address, nullptr, 1), AGILEOS_MODULE_EINVAL);
  EXPECT_EQ(allocations.free(address + 1), AGILEOS_MODULE_EPERM);  // not the start
  EXPECT_EQ(memory.free_calls, 0);
}

TEST(InstanceAllocations, DoesNotReachAnotherInstancesMemory) {
  FakeProtectedMemory memory;
  InstanceAllocations mine(memory, 0);
  InstanceAllocations theirs(memory, 0);
  std::uint64_t their_address = 0;
  ASSERT_EQ(theirs.allocate(64, &their_address), AGILEOS_MODULE_OK);
  char buffer[8] = {};
  EXPECT_EQ(mine.read(their_address, buffer, 8), AGILEOS_MODULE_EPERM);
  EXPECT_EQ(mine.write(their_address, buffer, 8), AGILEOS_MODULE_EPERM);
  EXPECT_EQ(mine.free(their_address), AGILEOS_MODULE_EPERM);
  EXPECT_TRUE(memory.isLive(their_address));
}

TEST(InstanceAllocations, FreedAllocationIsNoLongerReachable) {
  FakeProtectedMemory memory;
  InstanceAllocations allocations(memory, 0);
  std::uint64_t address = 0;
  ASSERT_EQ(allocations.allocate(16, &address), AGILEOS_MODULE_OK);
  EXPECT_EQ(allocations.free(address), AGILEOS_MODULE_OK);
  EXPECT_EQ(allocations.free(address), AGILEOS_MODULE_EPERM);
  char buffer[1] = {};
  EXPECT_EQ(allocations.read(address, buffer, 1), AGILEOS_MODULE_EPERM);
  EXPECT_EQ(memory.live(), 0u);
}

TEST(InstanceAllocations, EnforcesItsLimitAndRefusesEmptyAllocations) {
  FakeProtectedMemory memory;
  InstanceAllocations allocations(memory, 100);
  std::uint64_t address = 0;
  EXPECT_EQ(allocations.allocate(0, &address), AGILEOS_MODULE_EINVAL);
  EXPECT_EQ(allocations.allocate(60, &address), AGILEOS_MODULE_OK);
  EXPECT_EQ(allocations.allocate(41, &address), AGILEOS_MODULE_ENOMEM);
  EXPECT_EQ(allocations.allocate(40, &address), AGILEOS_MODULE_OK);
  EXPECT_EQ(memory.allocate_calls, 2);
}

TEST(InstanceAllocations, RevokesWhatIsLeft) {
  FakeProtectedMemory memory;
  InstanceAllocations allocations(memory, 0);
  std::uint64_t address = 0;
  ASSERT_EQ(allocations.allocate(10, &address), AGILEOS_MODULE_OK);
  ASSERT_EQ(allocations.allocate(20, &address), AGILEOS_MODULE_OK);
  const RevocationReport report = allocations.revokeAll();
  EXPECT_EQ(report.allocations, 2u);
  EXPECT_EQ(report.bytes, 30u);
  EXPECT_EQ(memory.live(), 0u);
  EXPECT_EQ(allocations.revokeAll().allocations, 0u);
}

}  // namespace
}  // namespace agileos::modules
