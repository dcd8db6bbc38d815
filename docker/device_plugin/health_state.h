// The health every advertised device shares (they all stand for the one daemon), and a way for
// ListAndWatch streams to wait for it to change.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace agileos::device_plugin {

class HealthState {
 public:
  struct Snapshot {
    bool healthy = false;
    // Counts changes of `healthy`; a stream re-sends the list when it differs from what it sent.
    std::uint64_t generation = 0;
  };

  // Records the daemon's state; wakes the waiting streams only when it changed.
  void set(bool healthy);
  Snapshot get() const;
  // Waits until the generation differs from `seen` or `timeout` passes; returns the state then.
  Snapshot waitForChange(std::uint64_t seen, std::chrono::milliseconds timeout) const;

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  // Unhealthy until the first probe says otherwise: nothing is advertised as usable unchecked.
  Snapshot state_;
};

}  // namespace agileos::device_plugin
