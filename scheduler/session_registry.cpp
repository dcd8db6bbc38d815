#include "scheduler/session_registry.h"

#include <algorithm>

namespace agileos::scheduler {

void SessionRegistry::add(SessionInfo info, std::function<void(const std::string&)> end) {
  std::lock_guard lock(mu_);
  const ClientId client = info.client;
  sessions_[client] = Entry{std::move(info), std::move(end)};
  ++counters_.started;
}

void SessionRegistry::remove(ClientId client) {
  std::lock_guard lock(mu_);
  if (sessions_.erase(client) != 0) ++counters_.ended;
}

std::vector<SessionInfo> SessionRegistry::list() const {
  std::lock_guard lock(mu_);
  std::vector<SessionInfo> out;
  out.reserve(sessions_.size());
  for (const auto& [id, entry] : sessions_) out.push_back(entry.info);
  return out;
}

bool SessionRegistry::end(ClientId client, const std::string& reason) {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(client);
  if (it == sessions_.end()) return false;
  it->second.end(reason);
  ++counters_.ended_by_admin;
  return true;
}

void SessionRegistry::countRefusal(const std::string& reason_name) {
  std::lock_guard lock(mu_);
  ++counters_.refused[reason_name];
}

void SessionRegistry::countPlacementWait(std::chrono::steady_clock::duration waited) {
  const double seconds = std::chrono::duration<double>(waited).count();
  const auto& bounds = kPlacementWaitBoundsSeconds;
  const auto bucket =
      static_cast<std::size_t>(std::lower_bound(bounds.begin(), bounds.end(), seconds) - bounds.begin());
  std::lock_guard lock(mu_);
  counters_.placement_wait_buckets.resize(bounds.size() + 1);
  ++counters_.placement_wait_buckets[bucket];
  counters_.placement_wait_seconds_sum += seconds;
  ++counters_.placement_waits;
}

void SessionRegistry::countGuardHits(const std::string& policy, std::uint64_t hits) {
  std::lock_guard lock(mu_);
  counters_.guard_hits[policy] += hits;
}

SessionCounters SessionRegistry::counters() const {
  std::lock_guard lock(mu_);
  SessionCounters out = counters_;
  out.placement_wait_buckets.resize(kPlacementWaitBoundsSeconds.size() + 1);
  return out;
}

}  // namespace agileos::scheduler
