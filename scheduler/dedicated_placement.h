// DedicatedPlacement: one fresh worker per client, never reused.
//
// A client gets a ready worker that has never served anyone (else a starting one, else a new
// one if fewer than max_workers processes exist). When its client is released the worker is
// retired, so every client starts in a fresh CUDA context and no state can leak between
// clients. If every slot is taken the client is refused BUSY, unless a slot is about to be
// freed by a retiring worker, in which case it waits.
//
// Thread-safety: stateless; safe from any thread.
#pragma once

#include "scheduler/placement_policy.h"

namespace agileos::scheduler {

class DedicatedPlacement final : public PlacementPolicy {
 public:
  PlacementDecision place(const PoolSummary& pool) const override;
  bool retireWhenIdle(const WorkerSummary& worker) const override;
  bool isSpare(const WorkerSummary& worker) const override;
  std::string_view name() const override { return "dedicated"; }
};

}  // namespace agileos::scheduler
