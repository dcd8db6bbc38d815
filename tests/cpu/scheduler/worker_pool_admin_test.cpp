// The pool's side of the admin API: usage reports kept per client and per worker (and checked),
// guard hits told to PoolOptions::on_event, and drain.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <mutex>

#include "scheduler/dedicated_placement.h"
#include "scheduler/worker_pool.h"
#include "tests/cpu/scheduler/test_support.h"

namespace agileos::scheduler {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;
using testing::waitUntil;

class WorkerPoolAdminTest : public ::testing::Test {
 protected:
  void startPool(PoolOptions options) {
    options.on_event = [this](const PoolEvent& event) {
      std::lock_guard lock(events_mu_);
      events_.push_back(event);
    };
    pool_ = std::make_unique<WorkerPool>(std::move(options), std::make_unique<DedicatedPlacement>());
    pool_->start();
  }
  AcquireResult acquire(ClientId client, std::string policy = "trap") {
    ClientAttachSetting setting;
    setting.policy = std::move(policy);
    return pool_->acquire(
        client, "token-" + std::to_string(client), [](const std::string&) {}, setting);
  }
  std::optional<ClientSnapshot> client(ClientId id) const {
    for (const ClientSnapshot& c : pool_->snapshot().client_list)
      if (c.id == id) return c;
    return std::nullopt;
  }
  std::optional<WorkerSnapshot> worker(WorkerId id) const {
    for (const WorkerSnapshot& w : pool_->snapshot().workers)
      if (w.id == id) return w;
    return std::nullopt;
  }
  std::vector<PoolEvent> events() {
    std::lock_guard lock(events_mu_);
    return events_;
  }

  TempDir dir_;
  std::unique_ptr<WorkerPool> pool_;
  std::mutex events_mu_;
  std::vector<PoolEvent> events_;
};

TEST_F(WorkerPoolAdminTest, AUsageReportIsKeptForItsClientAndWorker) {
  startPool(testing::mockPoolOptions(dir_, {"--mode=usage"}));
  const AcquireResult placed = acquire(1);
  ASSERT_TRUE(placed.assigned) << placed.message;
  ASSERT_TRUE(waitUntil([&] { return client(1) && client(1)->usage && client(1)->usage->guard_hits == 5; }));
  const ClientSnapshot c = *client(1);
  EXPECT_EQ(c.state, "attached");
  EXPECT_EQ(c.worker, placed.worker);
  EXPECT_EQ(c.usage->device_memory_bytes, 1u << 20);
  EXPECT_EQ(c.usage->calls, 7u);
  const PoolSnapshot snapshot = pool_->snapshot();
  ASSERT_TRUE(snapshot.calls.operations.contains("mem_alloc"));
  EXPECT_EQ(snapshot.calls.operations.at("mem_alloc").calls, 3u);
  EXPECT_EQ(snapshot.calls.operations.at("mem_alloc").latency_buckets.at(0), 3u);
  EXPECT_EQ(snapshot.calls.bytes_host_to_device, 4096u);
  EXPECT_FALSE(worker(placed.worker)->tainted);
}

TEST_F(WorkerPoolAdminTest, NewGuardHitsAreToldOnceEachWithThePolicy) {
  startPool(testing::mockPoolOptions(dir_, {"--mode=usage"}));
  ASSERT_TRUE(acquire(1, "report").assigned);
  ASSERT_TRUE(waitUntil([&] { return client(1) && client(1)->usage && client(1)->usage->guard_hits == 5; }));
  std::vector<PoolEvent> hits;
  for (const PoolEvent& event : events())
    if (event.kind == PoolEvent::Kind::kGuardHits) hits.push_back(event);
  ASSERT_EQ(hits.size(), 2u);
  EXPECT_EQ(hits[0].new_hits, 2u);
  EXPECT_EQ(hits[1].new_hits, 3u) << "the second report's count less the first's";
  EXPECT_EQ(hits[1].guard_hits, 5u);
  EXPECT_EQ(hits[1].policy, "report");
  EXPECT_EQ(hits[1].client, 1u);
}

TEST_F(WorkerPoolAdminTest, AReportOfAClientTheWorkerDoesNotHoldTaintsIt) {
  startPool(testing::mockPoolOptions(dir_, {"--mode=foreign-usage"}));
  const AcquireResult placed = acquire(1);
  ASSERT_TRUE(placed.assigned) << placed.message;
  ASSERT_TRUE(waitUntil([&] { return worker(placed.worker) && worker(placed.worker)->tainted; }));
  EXPECT_THAT(worker(placed.worker)->taint_reason, HasSubstr("which it does not hold"));
  EXPECT_FALSE(client(1)->usage.has_value()) << "nothing of a rejected report is kept";
  bool told = false;
  for (const PoolEvent& event : events()) told |= event.kind == PoolEvent::Kind::kWorkerTainted;
  EXPECT_TRUE(told);
  EXPECT_EQ(pool_->snapshot().counters.tainted, 1u);
}

TEST_F(WorkerPoolAdminTest, ADrainedSpareRetiresAndIsReplaced) {
  startPool(testing::mockPoolOptions(dir_));
  ASSERT_TRUE(waitUntil([&] { return worker(1) && worker(1)->phase == WorkerPhase::kReady; }));
  std::string error;
  ASSERT_TRUE(pool_->drain(1, "test", &error)) << error;
  EXPECT_TRUE(waitUntil([&] { return !worker(1).has_value(); })) << "the drained spare is gone";
  EXPECT_TRUE(waitUntil([&] { return worker(2) && worker(2)->phase == WorkerPhase::kReady; }))
      << "a fresh spare replaces it";
  EXPECT_EQ(pool_->snapshot().counters.drained, 1u);
  EXPECT_FALSE(pool_->drain(1, "again", &error));
  EXPECT_THAT(error, HasSubstr("no worker 1"));
}

TEST_F(WorkerPoolAdminTest, ADrainedWorkerKeepsItsClientUntilReleaseAndTakesNoOther) {
  PoolOptions options = testing::mockPoolOptions(dir_);
  options.max_workers = 2;
  options.prestart = 0;
  startPool(options);
  const AcquireResult first = acquire(1);
  ASSERT_TRUE(first.assigned) << first.message;
  std::string error;
  ASSERT_TRUE(pool_->drain(first.worker, "maintenance", &error)) << error;
  EXPECT_TRUE(worker(first.worker)->draining);
  EXPECT_EQ(worker(first.worker)->drain_reason, "maintenance");
  EXPECT_EQ(client(1)->state, "attached") << "a drain does not end sessions";
  const AcquireResult second = acquire(2);
  ASSERT_TRUE(second.assigned) << second.message;
  EXPECT_NE(second.worker, first.worker);
  pool_->release(1);
  EXPECT_TRUE(waitUntil([&] { return !worker(first.worker).has_value(); }));
}

}  // namespace
}  // namespace agileos::scheduler
