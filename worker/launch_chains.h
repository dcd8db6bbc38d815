// LaunchChainCache: a session's instantiated launch chains (GpuBackend::chainCreate), kept for
// reuse by stream and length, each with what its nodes hold now, so that a run of launches
// like an earlier one costs one graph launch and only the node updates that differ.
//
// Keyed by stream because a chain's launches are ordered after its earlier launches: one chain
// shared by two streams would order work of one stream after the other's (and could deadlock
// where a program makes the first wait for the second). A chain is checked out while a
// connection submits it, so two connections of the client never update one concurrently.
// Every chain belongs to its session; dropStream, dropAll and the destructor's owner free them.
//
// Thread-safety: every method is safe to call from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "worker/backend/gpu_backend.h"

namespace agileos::worker {

// What one node of a chain launches now: compared with the next launch it is to carry.
struct ChainNodeState {
  CUfunction function = nullptr;
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned sharedMemBytes = 0;
  std::string params;  // the packed parameter bytes
};

struct LaunchChain {
  LaunchChainHandle handle = 0;
  std::vector<ChainNodeState> nodes;
};

class LaunchChainCache {
 public:
  // At most this many chains are kept per session (six lengths for each of about 20 streams); one
  // checked in beyond it is destroyed. Creating one costs 50-650 us of the driver's time.
  static constexpr std::size_t kMaxKept = 128;

  LaunchChainCache() = default;
  LaunchChainCache(const LaunchChainCache&) = delete;
  LaunchChainCache& operator=(const LaunchChainCache&) = delete;

  // A kept chain of `length` nodes for `stream`, taken out of the cache, or nullopt.
  std::optional<LaunchChain> checkout(CUstream stream, std::size_t length);
  // Puts a chain back for `stream` (or destroys it when the cache is full).
  void checkin(GpuBackend& gpu, CUstream stream, LaunchChain chain);
  // Destroys the chains kept for `stream` (before the stream itself is destroyed: its handle
  // may be the driver's answer for a later stream).
  void dropStream(GpuBackend& gpu, CUstream stream);
  // Destroys every kept chain (before a module unload: nodes name the module's functions; and at
  // a device reset or the session's end).
  void dropAll(GpuBackend& gpu);
  std::size_t kept() const;
  // True while a new chain could be kept. When false, launches that find no kept chain go one by
  // one: creating a chain only to destroy it (50-650 us) would cost more than it saves.
  bool room() const { return kept() < kMaxKept; }

  // A chain the driver refused (to create, update or launch) is counted; after kMaxRefusals the
  // session's launches are no longer held (each attempt can cost an instantiation, 50-650 us, for
  // launches that then go one by one anyway: a kernel the driver will not put in a graph).
  static constexpr int kMaxRefusals = 4;
  void noteRefusal() { refusals_.fetch_add(1, std::memory_order_relaxed); }
  bool chaining() const { return refusals_.load(std::memory_order_relaxed) < kMaxRefusals; }

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<CUstream, std::size_t>, std::vector<LaunchChain>> chains_;
  std::size_t kept_ = 0;
  std::atomic<int> refusals_{0};
};

}  // namespace agileos::worker
