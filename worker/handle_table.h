// HandleTable<T>: objects a client may name, reachable only through tokens
// the worker minted for that client.
//
// Invariants:
// - A token is a 64-bit value from a keyed permutation (TokenSource), never 0,
//   1 or 2 (CUDA's default-stream spellings), and unique within the table for
//   the table's lifetime (a destroyed token is never minted again: stale tokens
//   stay invalid), in constant memory.
// - Each client has its own tables, so a token minted for another client is
//   simply unknown here; a forged token is unknown with overwhelming probability.
//
// Thread-safety: all methods are safe to call concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <random>
#include <unordered_map>
#include <utility>
#include <vector>

namespace agileos::worker {

using Token = std::uint64_t;

// Tokens are a keyed permutation of a counter: a 4-round Feistel network over
// the counter's two 32-bit halves, with round keys from the system's CSPRNG.
// A permutation is a bijection, so tokens never repeat (stale tokens stay
// invalid) without remembering the ones already issued, and they are not
// guessable from each other.
class TokenSource {
 public:
  TokenSource() {
    std::random_device device;  // getrandom(2) on Linux
    for (auto& key : keys_) key = (static_cast<std::uint64_t>(device()) << 32) ^ device();
  }
  Token next() {
    for (;;) {
      const Token t = permute(counter_++);
      if (t > 2) return t;  // 0, 1 and 2 are CUDA's default-stream spellings
    }
  }

 private:
  static std::uint32_t round(std::uint32_t half, std::uint64_t key) {
    std::uint64_t z = (half ^ key) * 0x9E3779B97F4A7C15ull;
    z ^= z >> 29;
    z *= 0xBF58476D1CE4E5B9ull;
    z ^= z >> 32;
    return static_cast<std::uint32_t>(z);
  }
  std::uint64_t permute(std::uint64_t value) const {
    auto left = static_cast<std::uint32_t>(value >> 32);
    auto right = static_cast<std::uint32_t>(value);
    for (std::uint64_t key : keys_) {
      const std::uint32_t next = left ^ round(right, key);
      left = right;
      right = next;
    }
    return static_cast<std::uint64_t>(left) << 32 | right;
  }

  std::uint64_t keys_[4] = {};
  std::uint64_t counter_ = 0;
};

// The most live entries a table holds for one client (issue 14: bounded per-client tables).
// Creation handlers check full() before they create the object the entry would name, so a
// refused call changes nothing; concurrent creations of one client may pass the check
// together, so a table can hold up to the worker's concurrent calls more.
inline constexpr std::size_t kHandleTableCapacity = 65536;

template <typename T>
class HandleTable {
 public:
  bool full() const {
    std::lock_guard lock(mutex_);
    return entries_.size() >= kHandleTableCapacity;
  }

  Token insert(T value) {
    std::lock_guard lock(mutex_);
    Token token = tokens_.next();
    entries_.emplace(token, std::move(value));
    return token;
  }

  std::optional<T> find(Token token) const {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(token);
    if (it == entries_.end()) return std::nullopt;
    return it->second;
  }

  // Overwrites the value of a live token; returns false if the token is unknown.
  bool replace(Token token, T value) {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(token);
    if (it == entries_.end()) return false;
    it->second = std::move(value);
    return true;
  }

  std::optional<T> erase(Token token) {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(token);
    if (it == entries_.end()) return std::nullopt;
    T value = std::move(it->second);
    entries_.erase(it);
    return value;
  }

  // A copy of every live entry.
  std::vector<std::pair<Token, T>> snapshot() const {
    std::lock_guard lock(mutex_);
    return {entries_.begin(), entries_.end()};
  }

  // Removes every entry and returns them (for teardown).
  std::vector<std::pair<Token, T>> drain() {
    std::lock_guard lock(mutex_);
    std::vector<std::pair<Token, T>> out(entries_.begin(), entries_.end());
    entries_.clear();
    return out;
  }

  std::size_t size() const {
    std::lock_guard lock(mutex_);
    return entries_.size();
  }

 private:
  mutable std::mutex mutex_;
  TokenSource tokens_;
  std::unordered_map<Token, T> entries_;
};

}  // namespace agileos::worker
