// One pool for every GPU of the host (PoolOptions::devices), with mock workers: spares per device,
// placement by free capacity or by the client's request, a worker on the wrong device refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "scheduler/dedicated_placement.h"
#include "scheduler/worker_pool.h"
#include "tests/cpu/scheduler/test_support.h"

namespace agileos::scheduler {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;
using testing::waitUntil;

constexpr std::uint64_t kDeviceMemory = 16ull << 30;

class WorkerPoolDevicesTest : public ::testing::Test {
 protected:
  PoolOptions options(std::vector<std::string> mock_args = {}) {
    mock_args.push_back("--device-memory=" + std::to_string(kDeviceMemory));
    PoolOptions o = testing::mockPoolOptions(dir_, mock_args);
    o.devices = {0, 1};
    o.max_workers = 4;
    return o;
  }
  void startPool(PoolOptions o) {
    pool_ = std::make_unique<WorkerPool>(std::move(o), std::make_unique<DedicatedPlacement>());
    pool_->start();
  }
  AcquireResult acquire(ClientId client, std::uint64_t quota, std::optional<int> device = std::nullopt) {
    ClientAttachSetting setting;
    setting.memory_quota_bytes = quota;
    setting.device = device;
    return pool_->acquire(
        client, "token-" + std::to_string(client), [](const std::string&) {}, setting);
  }
  std::optional<int> deviceOf(WorkerId id) const {
    for (const WorkerSnapshot& w : pool_->snapshot().workers)
      if (w.id == id) return w.device;
    return std::nullopt;
  }
  std::size_t readyOn(int device) const {
    std::size_t n = 0;
    for (const WorkerSnapshot& w : pool_->snapshot().workers)
      n += w.device == device && w.phase == WorkerPhase::kReady ? 1 : 0;
    return n;
  }

  TempDir dir_;
  std::unique_ptr<WorkerPool> pool_;
};

TEST_F(WorkerPoolDevicesTest, EachDeviceKeepsItsOwnSpareStartedForIt) {
  startPool(options());
  ASSERT_TRUE(waitUntil([&] { return readyOn(0) == 1 && readyOn(1) == 1; }));
  testing::MockEvents events(dir_.file("events.log"));
  EXPECT_EQ(events.count({"start", "device=0"}), 1u);
  EXPECT_EQ(events.count({"start", "device=1"}), 1u);
  EXPECT_EQ(pool_->snapshot().devices, (std::vector<int>{0, 1}));
}

TEST_F(WorkerPoolDevicesTest, ClientsAreSpreadByUnpromisedMemory) {
  startPool(options());
  ASSERT_TRUE(waitUntil([&] { return readyOn(0) == 1 && readyOn(1) == 1; }));
  const AcquireResult first = acquire(1, 12ull << 30);
  ASSERT_TRUE(first.assigned) << first.message;
  const AcquireResult second = acquire(2, 8ull << 30);
  ASSERT_TRUE(second.assigned) << second.message;
  EXPECT_NE(*deviceOf(first.worker), *deviceOf(second.worker))
      << "the second quota does not fit beside the first on one 16 GiB device";
  bool listed = false;
  for (const ClientSnapshot& c : pool_->snapshot().client_list) {
    if (c.id == 2) listed = c.device == deviceOf(second.worker);
  }
  EXPECT_TRUE(listed);
}

TEST_F(WorkerPoolDevicesTest, AClientThatAsksForADeviceGetsThatOne) {
  startPool(options());
  ASSERT_TRUE(waitUntil([&] { return readyOn(0) == 1 && readyOn(1) == 1; }));
  for (ClientId id : {1, 2}) {
    const AcquireResult placed = acquire(id, 0, 1);
    ASSERT_TRUE(placed.assigned) << placed.message;
    EXPECT_EQ(deviceOf(placed.worker), 1);
  }
}

TEST_F(WorkerPoolDevicesTest, ARequestedDeviceThatIsFullWaitsAndOneNotServedIsRefused) {
  PoolOptions o = options();
  o.queue_wait = std::chrono::milliseconds(300);
  startPool(o);
  ASSERT_TRUE(acquire(1, 12ull << 30, 0).assigned);
  const AcquireResult full = acquire(2, 8ull << 30, 0);
  EXPECT_FALSE(full.assigned) << "device 1 has room, but the client asked for device 0";
  EXPECT_THAT(full.message, HasSubstr("device 0"));
  const AcquireResult absent = acquire(3, 0, 5);
  EXPECT_FALSE(absent.assigned);
  EXPECT_THAT(absent.message, HasSubstr("device 5 is not served"));
}

TEST_F(WorkerPoolDevicesTest, AWorkerThatReportsAnotherDeviceIsNotUsed) {
  PoolOptions o = options({"--mode=wrong-device"});
  o.devices = {0};
  o.max_workers = 1;
  startPool(o);
  EXPECT_TRUE(waitUntil([&] { return pool_->snapshot().counters.start_failures >= 1; }));
  EXPECT_THAT(pool_->snapshot().last_start_failure,
              HasSubstr("reported device 1 instead of the requested 0"));
}

}  // namespace
}  // namespace agileos::scheduler
