// SessionRegistry: the daemon's table of live sessions and its session counters, for the admin
// API (list, end) and the metrics.
//
// SessionRunner adds a session once its client is assigned and removes it before its stream's
// objects are gone, so an entry's `end` can always be called while the entry exists. Counters
// are cumulative for the daemon's run.
//
// Lock order: the pool's lock may be held when countGuardHits() is called (PoolOptions::
// on_event); the registry never calls into the pool, and `end` only records and wakes.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/ids.h"
#include "scheduler/peer_listener.h"

namespace agileos::scheduler {

struct SessionInfo {
  ClientId client = 0;
  std::optional<PeerCredentials> peer;  // the kernel's word (SO_PEERCRED); none in in-process tests
  std::string program;                  // Hello.program, made printable (untrusted)
  std::string guard_policy;
  std::uint64_t memory_quota_bytes = 0;
  std::vector<std::string> modules;  // "name version", admitted
  WorkerId worker = 0;
  std::chrono::system_clock::time_point started;
};

struct SessionCounters {
  std::uint64_t started = 0;
  std::uint64_t ended = 0;
  std::uint64_t ended_by_admin = 0;
  std::map<std::string, std::uint64_t> refused;       // by Refusal reason name
  std::map<std::string, std::uint64_t> guard_hits;    // by guard policy
  std::vector<std::uint64_t> placement_wait_buckets;  // kPlacementWaitBoundsSeconds + 1, not cumulative
  double placement_wait_seconds_sum = 0;
  std::uint64_t placement_waits = 0;
};

// Upper bounds (seconds) of the placement wait histogram: from a spare worker at once to a full
// admission queue (worker.queue_wait_ms defaults to a minute).
inline const std::vector<double> kPlacementWaitBoundsSeconds = {0.001, 0.01, 0.1, 0.5, 1, 5, 15, 30, 60, 120};

class SessionRegistry {
 public:
  // `end(reason)` ends the session as its worker's death would (SessionEnded, then release).
  void add(SessionInfo info, std::function<void(const std::string& reason)> end);
  void remove(ClientId client);

  std::vector<SessionInfo> list() const;
  // Ends `client`'s session with `reason`; false if there is no such live session.
  bool end(ClientId client, const std::string& reason);

  void countRefusal(const std::string& reason_name);
  // How long a client waited from its Hello's admission to its placement or refusal.
  void countPlacementWait(std::chrono::steady_clock::duration waited);
  // New kernel memory guard hits of a client whose guard policy is `policy`.
  void countGuardHits(const std::string& policy, std::uint64_t hits);

  SessionCounters counters() const;

 private:
  struct Entry {
    SessionInfo info;
    std::function<void(const std::string&)> end;
  };
  mutable std::mutex mu_;
  std::map<ClientId, Entry> sessions_;
  SessionCounters counters_;
};

}  // namespace agileos::scheduler
