#include "docker/device_plugin/health_state.h"

namespace agileos::device_plugin {

void HealthState::set(bool healthy) {
  {
    std::lock_guard lock(mutex_);
    if (state_.healthy == healthy) return;
    state_.healthy = healthy;
    ++state_.generation;
  }
  changed_.notify_all();
}

HealthState::Snapshot HealthState::get() const {
  std::lock_guard lock(mutex_);
  return state_;
}

HealthState::Snapshot HealthState::waitForChange(std::uint64_t seen,
                                                 std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, timeout, [&] { return state_.generation != seen; });
  return state_;
}

}  // namespace agileos::device_plugin
