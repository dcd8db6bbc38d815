// What workers report of their clients and calls (WorkerUsage in worker_control.proto), as the
// daemon keeps it for the admin API and the metrics.
//
// A worker runs untrusted kernels in its context, so its reports are checked before they are
// kept (parseWorkerUsage): only operations of the wire table, each once, the agreed number of
// latency buckets, only clients the worker holds, each once; and counts that never go back
// (neverDecreases). Nothing the daemon decides depends on them; they are
// what the operator sees.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agileos/v1/worker_control.pb.h"
#include "scheduler/ids.h"

namespace agileos::scheduler {

struct ClientUsage {
  std::uint64_t device_memory_bytes = 0;
  std::uint64_t pinned_host_bytes = 0;
  std::uint64_t calls = 0;
  std::uint64_t guard_hits = 0;
  bool guard_poisoned = false;
};

// One operation's calls; cumulative.
struct OperationTotals {
  std::uint64_t calls = 0;
  std::uint64_t errors = 0;
  std::uint64_t latency_ns_sum = 0;
  std::vector<std::uint64_t> latency_buckets;  // kCallLatencyBoundsMicros.size() + 1 (not cumulative)
};

// Calls and copies: a worker's since it started, or the pool's (every worker it ever had).
struct CallTotals {
  std::map<std::string, OperationTotals> operations;  // by operation name (wire table)
  std::uint64_t bytes_host_to_device = 0;
  std::uint64_t bytes_device_to_host = 0;
  std::uint64_t bytes_device_to_device = 0;

  void add(const CallTotals& other);
};

struct ParsedWorkerUsage {
  std::map<ClientId, ClientUsage> clients;
  CallTotals calls;
};

// The report's contents, or nullopt with *error when it breaks the rules above. `held` are the
// clients the worker holds.
std::optional<ParsedWorkerUsage> parseWorkerUsage(const v1::internal::WorkerUsage& report,
                                                  const std::set<ClientId>& held, std::string* error);

// Whether every count of `after` is at least the same count of `before` (a worker's counts are
// cumulative; one that goes back breaks the rules, and would make the exported counters reset).
bool neverDecreases(const CallTotals& before, const CallTotals& after);

}  // namespace agileos::scheduler
