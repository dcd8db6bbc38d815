// The client's own records of its streams and device allocations (client/session/streams.h,
// device_allocations.h): what the shim decides from them without asking the worker.
#include <gtest/gtest.h>

#include <cstdint>

#include "client/session/device_allocations.h"
#include "client/session/streams.h"

namespace agileos::client {
namespace {

// A priority set with cudaStreamSetAttribute changes the priority only: work noted as pending on
// the stream stays pending, so cudaStreamQuery still asks the worker (stop 39's review: the whole
// record was rewritten, and the stream read as idle with its work still running).
TEST(StreamRecords, APriorityChangeKeepsTheStreamsPendingWork) {
  constexpr std::uint64_t kStream = 0x5150'0001;
  rememberStream(kStream, 1, -2);
  noteWorkPosted(kStream);
  ASSERT_FALSE(streamSurelyIdle(kStream));
  setStreamPriority(kStream, 0);
  unsigned flags = 0;
  int priority = -100;
  ASSERT_TRUE(streamProperties(kStream, &flags, &priority));
  EXPECT_EQ(priority, 0);
  EXPECT_EQ(flags, 1u);
  EXPECT_FALSE(streamSurelyIdle(kStream));
  forgetStream(kStream);
}

TEST(StreamRecords, APriorityChangeOfAnUnknownStreamMakesNoRecord) {
  constexpr std::uint64_t kStream = 0x5150'0002;
  setStreamPriority(kStream, -1);
  EXPECT_FALSE(isKnownStream(kStream));
}

// Only a freeable allocation's record is dropped by a free that may go unwaited; a range the
// program mapped itself (cuMemMap) stays recorded, since the worker refuses to free it.
TEST(DeviceAllocationRecords, OnlyAFreeableAllocationIsForgottenForAFree) {
  constexpr std::uint64_t kMapped = 0x7100'0000'0000, kAllocated = 0x7200'0000'0000;
  rememberDeviceAllocation(kMapped, 4096, /*freeable=*/false);
  rememberDeviceAllocation(kAllocated, 4096);
  EXPECT_FALSE(forgetFreeableDeviceAllocation(kMapped));
  std::uint64_t base = 0, size = 0;
  EXPECT_TRUE(deviceAllocationContaining(kMapped + 8, &base, &size));
  EXPECT_EQ(base, kMapped);
  EXPECT_TRUE(forgetFreeableDeviceAllocation(kAllocated));
  EXPECT_FALSE(deviceAllocationContaining(kAllocated + 8, &base, &size));
  EXPECT_FALSE(forgetFreeableDeviceAllocation(kAllocated));      // gone already
  EXPECT_FALSE(forgetFreeableDeviceAllocation(kAllocated + 8));  // not a base
  forgetDeviceAllocation(kMapped);
}

}  // namespace
}  // namespace agileos::client
