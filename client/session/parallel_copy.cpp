#include "client/session/parallel_copy.h"

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

namespace agileos::client {
namespace {

constexpr unsigned kDefaultThreads = 4;  // the caller and three helpers
constexpr unsigned kMaxThreads = 16;

unsigned threadsFromEnvironment() {
  unsigned threads = kDefaultThreads;
  if (const char* text = std::getenv("AGILEOS_COPY_THREADS"); text != nullptr) {
    const std::string_view view(text);
    unsigned value = 0;
    auto [end, ec] = std::from_chars(view.data(), view.data() + view.size(), value);
    if (ec == std::errc() && end == view.data() + view.size() && value >= 1)
      threads = std::min(value, kMaxThreads);
  }
  return threads;
}

// One copy at a time, cut into `parts` equal slices; helper i copies slice i + 1.
class CopyPool {
 public:
  explicit CopyPool(unsigned threads) : parts_(threads) {
    for (unsigned i = 1; i < threads; ++i) std::thread([this, i] { helperLoop(i); }).detach();
  }

  void copy(void* dst, const void* src, std::size_t bytes) {
    std::lock_guard turn(turn_);  // one copy uses the pool at a time
    {
      std::lock_guard lock(mutex_);
      dst_ = static_cast<std::uint8_t*>(dst);
      src_ = static_cast<const std::uint8_t*>(src);
      bytes_ = bytes;
      pending_ = parts_ - 1;
      ++generation_;
    }
    wake_.notify_all();
    copySlice(0);
    std::unique_lock lock(mutex_);
    done_.wait(lock, [this] { return pending_ == 0; });
  }

  unsigned parts() const { return parts_; }

 private:
  // Slices end on 64-byte boundaries so that no cache line is written by two threads.
  void copySlice(unsigned index) {
    const std::size_t slice = (bytes_ / parts_ + 63) / 64 * 64;
    const std::size_t begin = std::min(bytes_, slice * index);
    const std::size_t end = index + 1 == parts_ ? bytes_ : std::min(bytes_, begin + slice);
    if (end > begin) std::memcpy(dst_ + begin, src_ + begin, end - begin);
  }

  void helperLoop(unsigned index) {
    std::uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return generation_ != seen; });
        seen = generation_;
      }
      copySlice(index);  // the fields are stable until every helper has reported
      std::lock_guard lock(mutex_);
      if (--pending_ == 0) done_.notify_one();
    }
  }

  const unsigned parts_;
  std::mutex turn_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::uint64_t generation_ = 0;
  unsigned pending_ = 0;
  std::uint8_t* dst_ = nullptr;
  const std::uint8_t* src_ = nullptr;
  std::size_t bytes_ = 0;
};

CopyPool& pool() {
  static CopyPool* instance = new CopyPool(threadsFromEnvironment());  // never destroyed: see header
  return *instance;
}

}  // namespace

void parallelCopy(void* dst, const void* src, std::size_t bytes) {
  if (bytes < kParallelCopyMin || pool().parts() == 1) {
    std::memcpy(dst, src, bytes);
    return;
  }
  pool().copy(dst, src, bytes);
}

}  // namespace agileos::client
