// PlacementPolicy: decides where a new client goes, given a summary of the worker pool.
//
// The pool (worker_pool.h) owns processes and state; a policy only reads a PoolSummary and
// returns a decision, so policies are pure functions that can be unit-tested without processes.
// Pool tables are keyed by client id and a worker holds a set of clients, so a policy that
// places several clients on one worker needs no change to the pool's data structures.
//
// Thread-safety: implementations must be stateless or internally synchronized; the pool calls
// them from its supervisor thread only, with its lock held.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "scheduler/ids.h"

namespace agileos::scheduler {

enum class WorkerPhase {
  kStarting,  // spawned; has not sent ready yet
  kReady,     // ready; may hold clients
  kRetiring,  // asked to shut down (shutdown sent, or SIGTERM); takes no new clients
  kExiting,   // dead or being killed; waiting to be reaped. Still counts against max_workers.
};

const char* toString(WorkerPhase phase);

struct WorkerSummary {
  WorkerId id = 0;
  WorkerPhase phase = WorkerPhase::kStarting;
  // Clients placed on the worker and not yet released: waiting for it to start, attaching
  // or attached. Clients whose release is in progress are not counted.
  std::size_t active_clients = 0;
  bool has_served = false;  // an attach was ever sent to it (its context has seen a client)
  bool tainted = false;     // it reported that its context can no longer be trusted
  bool draining = false;    // an administrator drained it (WorkerPool::drain): like tainted, it
                            // takes no new clients and retires once idle
};

struct PoolSummary {
  std::vector<WorkerSummary> workers;  // every worker process not yet reaped, in id order
  std::size_t max_workers = 1;
  // A recent start failure forbids starting a worker before the backoff expires.
  bool start_backoff_active = false;
  std::string last_start_failure;  // empty if none
};

enum class RefusalKind {
  kBusy,          // every worker slot is claimed; try again later
  kInternal,      // the daemon cannot serve the client (workers fail to start, ...)
  kShuttingDown,  // the daemon is stopping
};

struct PlacementDecision {
  enum class Kind {
    kUseWorker,    // place the client on `worker` (ready, or starting: then wait for it)
    kStartWorker,  // start a new worker and place the client on it
    kWait,         // capacity is being freed (a worker is retiring); ask again when it is
    kRefuse,       // refuse with `refusal` and `message`
  };
  Kind kind = Kind::kRefuse;
  WorkerId worker = 0;
  RefusalKind refusal = RefusalKind::kInternal;
  std::string message;
};

class PlacementPolicy {
 public:
  virtual ~PlacementPolicy() = default;

  // Where a new client goes.
  virtual PlacementDecision place(const PoolSummary& pool) const = 0;

  // Whether a worker that has no active clients left (after a release) must be retired rather
  // than kept for later clients. Tainted and draining workers are always retired, whatever this
  // says.
  virtual bool retireWhenIdle(const WorkerSummary& worker) const = 0;

  // Whether `worker` counts as a spare: ready or starting, able to take a new client right away.
  // The pool keeps `prestart` spares.
  virtual bool isSpare(const WorkerSummary& worker) const = 0;

  virtual std::string_view name() const = 0;
};

}  // namespace agileos::scheduler
