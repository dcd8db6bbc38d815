// HandleTable<T>: objects a client may name, reachable only through tokens
// the worker minted for that client.
//
// Invariants:
// - A token is a 64-bit value from a CSPRNG-seeded generator, never 0, 1 or 2
//   (CUDA's default-stream spellings), and unique within the table for the
//   table's lifetime (a destroyed token is never minted again: stale tokens
//   stay invalid).
// - Each client has its own tables, so a token minted for another client is
//   simply unknown here; a forged token is unknown with overwhelming probability.
//
// Thread-safety: all methods are safe to call concurrently.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <random>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace agileos::worker {

using Token = std::uint64_t;

class TokenSource {
 public:
  TokenSource() : engine_(seed()) {}
  Token next() {
    for (;;) {
      Token t = engine_();
      if (t > 2 && !issued_.contains(t)) {
        issued_.insert(t);
        return t;
      }
    }
  }

 private:
  static std::uint64_t seed() {
    std::random_device device;  // getrandom(2) on Linux
    return (static_cast<std::uint64_t>(device()) << 32) ^ device();
  }
  std::mt19937_64 engine_;
  std::unordered_set<Token> issued_;
};

template <typename T>
class HandleTable {
 public:
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
