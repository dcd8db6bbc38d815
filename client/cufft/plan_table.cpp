#include "client/cufft/plan_table.h"

#include <climits>

namespace agileos::client::cufft_shim {

std::optional<int> PlanTable::add(std::uint64_t token) {
  std::lock_guard lock(mutex_);
  if (exhausted_ || next_ <= 0) return std::nullopt;
  const int handle = next_;
  if (next_ == INT_MAX) {
    exhausted_ = true;
  } else {
    ++next_;
  }
  tokens_.emplace(handle, token);
  return handle;
}

std::optional<std::uint64_t> PlanTable::find(int handle) const {
  std::lock_guard lock(mutex_);
  const auto found = tokens_.find(handle);
  if (found == tokens_.end()) return std::nullopt;
  return found->second;
}

std::optional<std::uint64_t> PlanTable::remove(int handle) {
  std::lock_guard lock(mutex_);
  const auto found = tokens_.find(handle);
  if (found == tokens_.end()) return std::nullopt;
  const std::uint64_t token = found->second;
  tokens_.erase(found);
  types_.erase(handle);
  streams_.erase(handle);
  return token;
}

void PlanTable::setType(int handle, std::int64_t type) {
  std::lock_guard lock(mutex_);
  if (tokens_.contains(handle)) types_[handle] = type;
}

std::optional<std::int64_t> PlanTable::type(int handle) const {
  std::lock_guard lock(mutex_);
  const auto found = types_.find(handle);
  if (found == types_.end()) return std::nullopt;
  return found->second;
}

void PlanTable::setStream(int handle, void* stream) {
  std::lock_guard lock(mutex_);
  if (tokens_.contains(handle)) streams_[handle] = stream;
}

void* PlanTable::stream(int handle) const {
  std::lock_guard lock(mutex_);
  const auto found = streams_.find(handle);
  return found == streams_.end() ? nullptr : found->second;
}

std::size_t PlanTable::size() const {
  std::lock_guard lock(mutex_);
  return tokens_.size();
}

PlanTable& plans() {
  static auto* table = new PlanTable();
  return *table;
}

}  // namespace agileos::client::cufft_shim
