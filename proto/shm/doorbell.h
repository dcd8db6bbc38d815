// Waiting for the peer on a shared-memory ring: spin briefly, then sleep on a futex.
//
// Protocol (Dekker style, both sides sequentially consistent on the two words):
//   consumer: seq = bell.sequence; bell.sleeping = 1; if (!ready()) FUTEX_WAIT(sequence, seq); sleeping = 0
//   producer: publish the index (seq_cst); if (bell.sleeping) { ++bell.sequence; FUTEX_WAKE(sequence) }
// Either the producer sees `sleeping`, or the consumer's re-check sees the index; a wake
// that races the wait makes FUTEX_WAIT return at once because `sequence` changed.
//
// The words live in memory the peer can write. Garbage there costs at most a spurious
// wake-up or a needless FUTEX_WAKE: waits are bounded by `sleepSlice`, after which
// `keepWaiting()` decides (peer gone, shutdown). No futex word is ever trusted for more.
//
// Thread-safety: one waiter per doorbell; ring() may be called by the one producer.
#pragma once

#include <chrono>
#include <cstdint>

#include "proto/shm/ring_layout.h"

namespace agileos::shm {

// How long to spin is a latency/CPU trade: a wait that outlasts the spin pays a futex
// wake-up (several microseconds, more under load) on top. Native CUDA spins while it
// waits for the GPU, so the client spins as long as a typical short GPU wait
// (kClientSpin); the worker spins long enough to catch the next call of a program that
// issues them back to back (kWorkerSpin).
struct WaitPolicy {
  static constexpr std::chrono::microseconds kClientSpin{500};
  static constexpr std::chrono::microseconds kWorkerSpin{200};
  std::chrono::microseconds spin{30};        // busy-wait this long before sleeping
  std::chrono::milliseconds sleepSlice{50};  // longest single sleep between keepWaiting() checks
};

// FUTEX_WAIT (shared, not private: the word is in a MAP_SHARED mapping) with a timeout.
// Returns when woken, on timeout, on a signal, or at once if *word != expected.
void futexWait(std::atomic<std::uint32_t>* word, std::uint32_t expected, std::chrono::milliseconds timeout);
void futexWakeAll(std::atomic<std::uint32_t>* word);

// Producer: call after publishing the index with memory_order_seq_cst.
inline void ring(Doorbell& bell) {
  if (bell.sleeping.load(std::memory_order_seq_cst) != 0) {
    bell.sequence.fetch_add(1, std::memory_order_seq_cst);
    futexWakeAll(&bell.sequence);
  }
}

enum class WaitOutcome { kReady, kGaveUp };

// Returns kReady as soon as ready() is true, kGaveUp when keepWaiting() (asked at least
// every policy.sleepSlice once sleeping) returns false. ready() must read the index
// with memory_order_seq_cst (or stronger than acquire) for the protocol above.
template <class Ready, class KeepWaiting>
WaitOutcome waitFor(Doorbell& bell, const WaitPolicy& policy, Ready&& ready, KeepWaiting&& keepWaiting) {
  using Clock = std::chrono::steady_clock;
  if (ready()) return WaitOutcome::kReady;
  const Clock::time_point spinUntil = Clock::now() + policy.spin;
  while (Clock::now() < spinUntil) {
    if (ready()) return WaitOutcome::kReady;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  Clock::time_point nextCheck = Clock::now() + policy.sleepSlice;
  for (;;) {
    const std::uint32_t seq = bell.sequence.load(std::memory_order_seq_cst);
    bell.sleeping.store(1, std::memory_order_seq_cst);
    if (ready()) {
      bell.sleeping.store(0, std::memory_order_relaxed);
      return WaitOutcome::kReady;
    }
    futexWait(&bell.sequence, seq, policy.sleepSlice);
    bell.sleeping.store(0, std::memory_order_relaxed);
    if (ready()) return WaitOutcome::kReady;
    // Checked by the clock, not per wake-up, so a peer that keeps changing `sequence` cannot
    // keep this side from noticing that it should stop.
    if (Clock::now() >= nextCheck) {
      if (!keepWaiting()) return WaitOutcome::kGaveUp;
      nextCheck = Clock::now() + policy.sleepSlice;
    }
  }
}

}  // namespace agileos::shm
