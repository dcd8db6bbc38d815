// LaunchBatch: the kernel launches one connection took off its ring that the client does not
// wait for, held while the request queued behind them is another the client does not wait for
// (a hint from the ring), then submitted together as launch chains (worker/launch_chains.h).
//
// Why: the driver takes about 4 us of host time per cuLaunchKernel on the H200 machine, and a
// program that launches faster than that keeps the worker behind it; one graph launch of a
// chain of 64 kernels takes about 3 us in all. A batch only forms when launches are already
// queued behind one another, and is submitted as soon as what is queued next is a call the client
// waits for, so a program that waits for its work never waits longer for a launch.
//
// Invariants:
// - Only plain launches (no launch attributes, not cooperative) of one stream are held, in ring
//   order; every other request of the connection is handled after flush() (WorkerRuntime::call
//   and the launch handler flush first), so the order the client issued is the order the GPU sees.
// - A held launch names its function and stream by the client's tokens, resolved again by flush()
//   under the session's gate: a stream or module destroyed meanwhile (by another connection of the
//   client) fails that launch, as it would have failed, and never reaches a handle the driver has
//   since given to another object.
// - A held launch was checked as the handler checks any launch (function, parameter block size,
//   local memory), so the driver accepts it; a failure of the chain path falls back to plain
//   launches, which report the driver's own error.
//
// Thread-safety: none; one per connection, used by its serving thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "worker/backend/gpu_backend.h"
#include "worker/handle_table.h"

namespace agileos::worker {

struct CallContext;

class LaunchBatch {
 public:
  // A chain is at most this long; more held launches than this are submitted as several chains.
  static constexpr std::size_t kMaxHeld = 64;

  bool empty() const { return held_.empty(); }
  bool full() const { return held_.size() >= kMaxHeld; }
  // True if a launch on `streamToken` may join the held ones (none held, or the same stream).
  bool accepts(std::uint64_t streamToken) const {
    return held_.empty() || held_.front().stream == streamToken;
  }

  // Forgets every held launch (none reaches the GPU).
  void discard() { held_.clear(); }

  // Holds a checked launch; `params` is its packed parameter block (copied).
  void hold(Token function, std::uint64_t streamToken, const LaunchConfig& config, std::string_view params);

  // Submits every held launch in order and empties the batch. The first failure is returned,
  // with *what naming the driver call; later launches are still submitted, as the driver
  // would run them after a failed launch.
  CUresult flush(CallContext& ctx, std::string* what);

 private:
  struct Held {
    Token function = 0;
    std::uint64_t stream = 0;
    LaunchConfig config;
    std::string params;
  };
  std::vector<Held> held_;
};

}  // namespace agileos::worker
