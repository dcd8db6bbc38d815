// Which device a new client goes to (scheduler/device_choice.h).
#include "scheduler/device_choice.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace agileos::scheduler {
namespace {

using ::testing::HasSubstr;

constexpr std::uint64_t kGiB = 1ull << 30;

TEST(DeviceChoice, TheDeviceWithTheMostUnpromisedMemoryWins) {
  const std::vector<DeviceLoad> loads = {{0, 80 * kGiB, 60 * kGiB, 3}, {1, 80 * kGiB, 10 * kGiB, 5}};
  EXPECT_EQ(chooseDevice(loads, std::nullopt, 4 * kGiB, 0).device, 1);
}

TEST(DeviceChoice, TiesGoToFewerClientsThenTheLowerOrdinal) {
  EXPECT_EQ(chooseDevice({{0, 80 * kGiB, 0, 2}, {1, 80 * kGiB, 0, 1}}, std::nullopt, 0, 0).device, 1);
  EXPECT_EQ(chooseDevice({{3, 80 * kGiB, 0, 1}, {2, 80 * kGiB, 0, 1}}, std::nullopt, 0, 0).device, 2);
}

TEST(DeviceChoice, AQuotaGoesOnlyWhereItFits) {
  const std::vector<DeviceLoad> loads = {{0, 16 * kGiB, 0, 0}, {1, 80 * kGiB, 78 * kGiB, 0}};
  EXPECT_EQ(chooseDevice(loads, std::nullopt, 10 * kGiB, 0).device, 0)
      << "device 1 has more memory but only 2 GiB unpromised";
  const DeviceChoice none = chooseDevice(loads, std::nullopt, 20 * kGiB, 0);
  EXPECT_FALSE(none.device);
  EXPECT_THAT(none.shortfall, HasSubstr("device")) << none.shortfall;
}

TEST(DeviceChoice, TheReserveIsKeptOnEveryDevice) {
  EXPECT_FALSE(chooseDevice({{0, 16 * kGiB, 0, 0}}, std::nullopt, 15 * kGiB, 2 * kGiB).device);
  EXPECT_EQ(chooseDevice({{0, 16 * kGiB, 0, 0}}, std::nullopt, 14 * kGiB, 2 * kGiB).device, 0);
}

TEST(DeviceChoice, AnUnknownDeviceFitsUntilAWorkerReportsItsMemory) {
  EXPECT_EQ(chooseDevice({{0, 16 * kGiB, 15 * kGiB, 0}, {1, 0, 0, 0}}, std::nullopt, 4 * kGiB, 0).device, 1);
}

TEST(DeviceChoice, ARequestedDeviceIsThatOneOrNone) {
  const std::vector<DeviceLoad> loads = {{0, 80 * kGiB, 0, 0}, {1, 80 * kGiB, 79 * kGiB, 0}};
  EXPECT_EQ(chooseDevice(loads, 1, 0, 0).device, 1) << "no quota: it goes where it asked, full or not";
  const DeviceChoice full = chooseDevice(loads, 1, 4 * kGiB, 0);
  EXPECT_FALSE(full.device) << "never moved to another device";
  EXPECT_THAT(full.shortfall, HasSubstr("device 1"));
  const DeviceChoice absent = chooseDevice(loads, 7, 0, 0);
  EXPECT_FALSE(absent.device);
  EXPECT_THAT(absent.shortfall, HasSubstr("device 7 is not served"));
}

TEST(DeviceChoice, ItSaysWhenNoDeviceCanEverTakeTheClient) {
  // Device 0 is too small for the quota; device 1 could take it once its clients release memory.
  const std::vector<DeviceLoad> mixed = {{0, 16 * kGiB, 0, 0}, {1, 80 * kGiB, 70 * kGiB, 4}};
  const DeviceChoice later = chooseDevice(mixed, std::nullopt, 20 * kGiB, 0);
  EXPECT_FALSE(later.device);
  EXPECT_FALSE(later.never) << "device 1 can take it later, though device 0 has more unpromised memory";
  EXPECT_THAT(later.shortfall, HasSubstr("memory of device 1 is promised"));
  const DeviceChoice tooBig = chooseDevice(mixed, std::nullopt, 90 * kGiB, 0);
  EXPECT_FALSE(tooBig.device);
  EXPECT_TRUE(tooBig.never);
  EXPECT_THAT(tooBig.shortfall, HasSubstr("exceeds what device"));
  EXPECT_TRUE(chooseDevice(mixed, 0, 20 * kGiB, 0).never) << "asked for the device that is too small";
  EXPECT_FALSE(chooseDevice(mixed, 1, 20 * kGiB, 0).never);
  EXPECT_TRUE(chooseDevice(mixed, 5, 0, 0).never) << "not served";
  EXPECT_FALSE(chooseDevice({{0, 0, 0, 0}}, std::nullopt, 90 * kGiB, 0).never) << "memory not reported yet";
}

TEST(DeviceChoice, NoDeviceNoChoice) { EXPECT_FALSE(chooseDevice({}, std::nullopt, 0, 0).device); }

}  // namespace
}  // namespace agileos::scheduler
