// Helpers shared by the two-tenant matrix's programs (two_tenant_matrix.sh; seed 002, 2G-01..09).
//
// Contract of those programs: every line on stdout starts with the program's prefix ("smoke:",
// "owner:", ...) and is flushed at once (the script waits for some of them while the program
// runs); every result is compared with a value computed on the host; a failed check prints a
// line with "FAILED" and the program exits non-zero. Only the runtime calls of
// tests/gpu/supported_api.txt are used.
#pragma once

#include <cuda_runtime.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace tenant {

inline const char* gPrefix = "tenant";

// One line on stdout, "<prefix>: <text>", flushed.
__attribute__((format(printf, 1, 2))) inline void say(const char* format, ...) {
  std::printf("%s: ", gPrefix);
  va_list arguments;
  va_start(arguments, format);
  std::vprintf(format, arguments);
  va_end(arguments);
  std::printf("\n");
  std::fflush(stdout);
}

// True when `error` is cudaSuccess; otherwise says "FAILED <what>: <error name>".
inline bool ok(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return true;
  say("FAILED %s: %s", what, cudaGetErrorName(error));
  return false;
}

inline double epochSeconds() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

inline double monotonicSeconds() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

// A number from the command line: decimal or 0x-prefixed hexadecimal.
inline unsigned long long number(const char* text) { return std::strtoull(text, nullptr, 0); }

template <typename T>
T fromValue(unsigned long long value) {
  return reinterpret_cast<T>(static_cast<std::uintptr_t>(value));
}

template <typename T>
unsigned long long valueOf(T pointer) {
  return static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(pointer));
}

// Waits at most `seconds` for a line "go" on stdin (two_tenant_matrix.sh writes it into a FIFO
// once the other tenant is done), calling tick() about every 100 ms meanwhile; tick() returns
// false to stop waiting. A closed or empty stdin (/dev/null) is not a "go": the wait then runs
// out. Returns true on "go".
template <typename Tick>
bool waitForGo(double seconds, Tick tick) {
  const double deadline = monotonicSeconds() + seconds;
  bool stdinOpen = true;
  char line[64];
  std::size_t used = 0;
  while (monotonicSeconds() < deadline) {
    if (stdinOpen) {
      pollfd in{STDIN_FILENO, POLLIN, 0};
      if (poll(&in, 1, 100) > 0) {
        const ssize_t got = read(STDIN_FILENO, line + used, sizeof line - 1 - used);
        if (got <= 0) {
          stdinOpen = false;
        } else {
          used += static_cast<std::size_t>(got);
          line[used] = '\0';
          if (std::strstr(line, "go") != nullptr) return true;
          if (used >= sizeof line - 1) used = 0;
        }
      }
    } else {
      usleep(100 * 1000);
    }
    if (!tick()) return false;
  }
  return false;
}

// The words the owner and the intruder write (tenant_owner.cu, tenant_intruder.cu): a tag per
// tenant, so that either can tell its own bytes from the other's.
inline unsigned canaryWord(unsigned tag, std::size_t i) {
  return 0xC0DE0000u ^ (tag * 0x01000193u) ^ (static_cast<unsigned>(i) * 2654435761u);
}
inline unsigned padWord(unsigned tag, std::size_t i) {
  return 0x9AD00000u ^ (tag * 0x0100019Bu) ^ (static_cast<unsigned>(i) * 2246822519u);
}
inline unsigned workStart(unsigned tag, std::size_t i) { return static_cast<unsigned>(i) * 7u + tag; }
// One round of the work kernel, on the host.
inline unsigned workStep(unsigned w) { return w * 3u + 1u; }

__global__ void workRound(unsigned* work, std::size_t words) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < words;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    work[i] = work[i] * 3u + 1u;
}

// The owner's buffer: a canary MiB, the work area, a canary MiB (the intruder's is the same).
constexpr std::size_t kCanaryBytes = 1u << 20;
constexpr std::size_t kWorkBytes = 2u << 20;
constexpr std::size_t kBufferBytes = 2 * kCanaryBytes + kWorkBytes;
constexpr std::size_t kWorkWords = kWorkBytes / sizeof(unsigned);
constexpr std::size_t kCanaryWords = kCanaryBytes / sizeof(unsigned);

// The host images of a tenant's pad and buffer for `tag`: pad words; the buffer's canaries at
// both ends and its work words between.
inline void fillImages(unsigned tag, std::vector<unsigned>& pad, std::vector<unsigned>& buffer) {
  for (std::size_t i = 0; i < pad.size(); ++i) pad[i] = padWord(tag, i);
  for (std::size_t i = 0; i < kCanaryWords; ++i) {
    buffer[i] = canaryWord(tag, i);
    buffer[buffer.size() - kCanaryWords + i] = canaryWord(tag, i + kCanaryWords);
  }
  for (std::size_t i = 0; i < kWorkWords; ++i) buffer[kCanaryWords + i] = workStart(tag, i);
}

}  // namespace tenant
