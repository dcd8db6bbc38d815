// The cufftHandle numbers of this process (UNTRUSTED side).
//
// cuFFT hands the application an int per plan; the plan itself lives in the worker, named by
// a token the worker minted. The table maps each int to its token. Numbers start at 1 and are
// never reused, so a stale handle can never name another plan; an unknown number is refused
// here (CUFFT_INVALID_PLAN) without a call to the worker.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_map>

namespace agileos::client::cufft_shim {

class PlanTable {
 public:
  PlanTable() = default;
  // For tests: the next number handed out (the ints run out after INT_MAX plans).
  explicit PlanTable(int firstHandle) : next_(firstHandle) {}
  PlanTable(const PlanTable&) = delete;
  PlanTable& operator=(const PlanTable&) = delete;

  // Registers `token` under a new number; nullopt once every positive int was handed out.
  std::optional<int> add(std::uint64_t token);
  // The token of `handle`, or nullopt for a number that is not (or no longer) registered.
  std::optional<std::uint64_t> find(int handle) const;
  // Unregisters `handle` and returns its token; nullopt if it was not registered. Exactly one
  // of several concurrent removals of a handle gets the token.
  std::optional<std::uint64_t> remove(int handle);
  std::size_t size() const;

  // The type value (a cufftType, or a typed plan's: proto/adapters/cufft_operations.h) `handle`
  // was last made with (a convenience for cufftXtExec, which names no
  // transform kind: the worker still checks the kind against the plan it holds). Forgotten with
  // the handle; nullopt for a plan never made.
  void setType(int handle, std::int64_t type);
  std::optional<std::int64_t> type(int handle) const;

  // The stream cufftSetStream last gave `handle` (the program's cudaStream_t; null, the legacy
  // stream, until set), so that an exec on a capturing stream is refused (cuFFT's work runs in
  // the worker and cannot become a graph node). Forgotten with the handle.
  void setStream(int handle, void* stream);
  void* stream(int handle) const;

 private:
  mutable std::mutex mutex_;
  std::unordered_map<int, std::uint64_t> tokens_;
  std::unordered_map<int, std::int64_t> types_;
  std::unordered_map<int, void*> streams_;
  int next_ = 1;
  bool exhausted_ = false;
};

// The process-wide table (never destroyed: plans may be used from atexit handlers).
PlanTable& plans();

}  // namespace agileos::client::cufft_shim
