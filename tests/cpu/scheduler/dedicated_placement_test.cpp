#include "scheduler/dedicated_placement.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace agileos::scheduler {
namespace {

using Kind = PlacementDecision::Kind;
using ::testing::HasSubstr;

WorkerSummary worker(WorkerId id, WorkerPhase phase, std::size_t clients = 0, bool served = false,
                     bool tainted = false) {
  WorkerSummary w;
  w.id = id;
  w.phase = phase;
  w.active_clients = clients;
  w.has_served = served;
  w.tainted = tainted;
  return w;
}

PoolSummary pool(std::vector<WorkerSummary> workers, std::size_t max_workers) {
  PoolSummary p;
  p.workers = std::move(workers);
  p.max_workers = max_workers;
  return p;
}

const DedicatedPlacement kPolicy;

TEST(DedicatedPlacement, EmptyPoolStartsAWorker) {
  EXPECT_EQ(kPolicy.place(pool({}, 4)).kind, Kind::kStartWorker);
}

TEST(DedicatedPlacement, PrefersAReadySpareOverAStartingOne) {
  const PlacementDecision d =
      kPolicy.place(pool({worker(1, WorkerPhase::kStarting), worker(2, WorkerPhase::kReady)}, 4));
  EXPECT_EQ(d.kind, Kind::kUseWorker);
  EXPECT_EQ(d.worker, 2u);
}

TEST(DedicatedPlacement, ClaimsAStartingSpareBeforeStartingAnother) {
  const PlacementDecision d =
      kPolicy.place(pool({worker(1, WorkerPhase::kReady, 1, true), worker(2, WorkerPhase::kStarting)}, 4));
  EXPECT_EQ(d.kind, Kind::kUseWorker);
  EXPECT_EQ(d.worker, 2u);
}

TEST(DedicatedPlacement, NeverReusesAWorkerThatServedAClient) {
  // Worker 1 is ready and idle but has served: a fresh worker is started instead.
  EXPECT_EQ(kPolicy.place(pool({worker(1, WorkerPhase::kReady, 0, true)}, 4)).kind, Kind::kStartWorker);
}

TEST(DedicatedPlacement, NeverSharesAWorker) {
  const PlacementDecision d = kPolicy.place(pool({worker(1, WorkerPhase::kReady, 1, true)}, 1));
  EXPECT_EQ(d.kind, Kind::kRefuse);
  EXPECT_EQ(d.refusal, RefusalKind::kBusy);
}

TEST(DedicatedPlacement, SkipsTaintedAndRetiringWorkers) {
  const PlacementDecision d =
      kPolicy.place(pool({worker(1, WorkerPhase::kReady, 0, false, true), worker(2, WorkerPhase::kRetiring),
                          worker(3, WorkerPhase::kExiting)},
                         4));
  EXPECT_EQ(d.kind, Kind::kStartWorker);
}

TEST(DedicatedPlacement, RefusesBusyWhenEverySlotServesAClient) {
  const PlacementDecision d =
      kPolicy.place(pool({worker(1, WorkerPhase::kReady, 1, true), worker(2, WorkerPhase::kStarting, 1)}, 2));
  EXPECT_EQ(d.kind, Kind::kRefuse);
  EXPECT_EQ(d.refusal, RefusalKind::kBusy);
  EXPECT_THAT(d.message, HasSubstr("all 2 worker slots are in use"));
  EXPECT_THAT(d.message, HasSubstr("max_workers"));
}

TEST(DedicatedPlacement, WaitsWhenASlotIsBeingFreed) {
  EXPECT_EQ(
      kPolicy.place(pool({worker(1, WorkerPhase::kReady, 1, true), worker(2, WorkerPhase::kRetiring)}, 2))
          .kind,
      Kind::kWait);
  EXPECT_EQ(kPolicy.place(pool({worker(1, WorkerPhase::kExiting)}, 1)).kind, Kind::kWait);
  // Served and idle: it is about to be retired.
  EXPECT_EQ(kPolicy.place(pool({worker(1, WorkerPhase::kReady, 0, true)}, 1)).kind, Kind::kWait);
}

TEST(DedicatedPlacement, RefusesInternalWhileStartsBackOff) {
  PoolSummary p = pool({}, 4);
  p.start_backoff_active = true;
  p.last_start_failure = "worker 3 failed to start: no GPU";
  const PlacementDecision d = kPolicy.place(p);
  EXPECT_EQ(d.kind, Kind::kRefuse);
  EXPECT_EQ(d.refusal, RefusalKind::kInternal);
  EXPECT_THAT(d.message, HasSubstr("no GPU"));
}

TEST(DedicatedPlacement, BackoffDoesNotHideAReadySpare) {
  PoolSummary p = pool({worker(1, WorkerPhase::kReady)}, 4);
  p.start_backoff_active = true;
  EXPECT_EQ(kPolicy.place(p).kind, Kind::kUseWorker);
}

TEST(DedicatedPlacement, RetiresServedWorkersAndKeepsFreshSpares) {
  EXPECT_TRUE(kPolicy.retireWhenIdle(worker(1, WorkerPhase::kReady, 0, true)));
  EXPECT_FALSE(kPolicy.retireWhenIdle(worker(1, WorkerPhase::kReady, 0, false)));
  EXPECT_TRUE(kPolicy.isSpare(worker(1, WorkerPhase::kReady)));
  EXPECT_TRUE(kPolicy.isSpare(worker(1, WorkerPhase::kStarting)));
  EXPECT_FALSE(kPolicy.isSpare(worker(1, WorkerPhase::kReady, 1)));
  EXPECT_FALSE(kPolicy.isSpare(worker(1, WorkerPhase::kReady, 0, true)));
  EXPECT_FALSE(kPolicy.isSpare(worker(1, WorkerPhase::kReady, 0, false, true)));
  EXPECT_FALSE(kPolicy.isSpare(worker(1, WorkerPhase::kRetiring)));
}

}  // namespace
}  // namespace agileos::scheduler
