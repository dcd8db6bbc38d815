// Service-wide counters, reported by STATS (agileos_storage_reply).
//
// Thread-safety: atomics, updated by connection threads and pollers; relaxed, since they are
// statistics that order nothing.
#pragma once

#include <atomic>
#include <cstdint>

namespace agileos::services::storage {

struct ServiceCounters {
  std::atomic<std::uint64_t> active_leases{0};
  std::atomic<std::uint64_t> leases_served{0};    // attached since the service started
  std::atomic<std::uint64_t> reads_completed{0};  // submissions answered with a result >= 0
  std::atomic<std::uint64_t> leases_revoked{0};   // ended by DETACH or by their connection closing
};

}  // namespace agileos::services::storage
