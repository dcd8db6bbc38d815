#include "proto/shm/doorbell.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <climits>

namespace agileos::shm {

// The futex word is a std::atomic<uint32_t> whose object representation is the plain
// 32-bit value (static_asserts in ring_layout.h), as the kernel requires.

void futexWait(std::atomic<std::uint32_t>* word, std::uint32_t expected, std::chrono::milliseconds timeout) {
  timespec relative{};
  relative.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  relative.tv_nsec = static_cast<long>((timeout.count() % 1000) * 1000000);
  // Shared futex (no FUTEX_PRIVATE_FLAG): the other side is another process.
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAIT, expected, &relative, nullptr, 0);
}

void futexWakeAll(std::atomic<std::uint32_t>* word) {
  ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace agileos::shm
