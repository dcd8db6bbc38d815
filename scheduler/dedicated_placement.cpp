#include "scheduler/dedicated_placement.h"

#include <algorithm>

namespace agileos::scheduler {

bool DedicatedPlacement::isSpare(const WorkerSummary& worker) const {
  const bool up = worker.phase == WorkerPhase::kReady || worker.phase == WorkerPhase::kStarting;
  return up && worker.active_clients == 0 && !worker.has_served && !worker.tainted && !worker.draining;
}

bool DedicatedPlacement::retireWhenIdle(const WorkerSummary& worker) const { return worker.has_served; }

PlacementDecision DedicatedPlacement::place(const PoolSummary& pool) const {
  PlacementDecision decision;
  // Prefer a ready spare (the client is attached at once), then a starting one.
  const WorkerSummary* starting_spare = nullptr;
  for (const WorkerSummary& worker : pool.workers) {
    if (!isSpare(worker)) continue;
    if (worker.phase == WorkerPhase::kReady) {
      decision.kind = PlacementDecision::Kind::kUseWorker;
      decision.worker = worker.id;
      return decision;
    }
    if (starting_spare == nullptr) starting_spare = &worker;
  }
  if (starting_spare != nullptr) {
    decision.kind = PlacementDecision::Kind::kUseWorker;
    decision.worker = starting_spare->id;
    return decision;
  }

  if (pool.workers.size() < pool.max_workers) {
    if (pool.start_backoff_active) {
      decision.kind = PlacementDecision::Kind::kRefuse;
      decision.refusal = RefusalKind::kInternal;
      decision.message = "workers are failing to start (last failure: " + pool.last_start_failure +
                         "); the daemon is backing off before the next attempt";
      return decision;
    }
    decision.kind = PlacementDecision::Kind::kStartWorker;
    return decision;
  }

  // Every slot is taken. A slot whose worker is going away (retiring, exiting, or served and
  // now idle, hence about to retire) frees up soon: wait for it instead of refusing.
  const bool slot_freeing =
      std::any_of(pool.workers.begin(), pool.workers.end(), [&](const WorkerSummary& w) {
        return w.phase == WorkerPhase::kRetiring || w.phase == WorkerPhase::kExiting ||
               (w.active_clients == 0 && (w.tainted || w.draining || retireWhenIdle(w)));
      });
  if (slot_freeing) {
    decision.kind = PlacementDecision::Kind::kWait;
    return decision;
  }
  decision.kind = PlacementDecision::Kind::kRefuse;
  decision.refusal = RefusalKind::kBusy;
  decision.message = "all " + std::to_string(pool.max_workers) +
                     " worker slots are in use (worker.max_workers); try again later";
  return decision;
}

}  // namespace agileos::scheduler
