#include "worker/tensor_maps/tensor_map_table.h"

namespace agileos::worker {

bool TensorMapTable::add(std::string_view bytes, const IssuedTensorMap& map,
                         const std::function<bool(const IssuedTensorMap&)>& dead) {
  std::lock_guard lock(mutex_);
  if (maps_.size() >= kMaxTensorMaps && maps_.count(std::string(bytes)) == 0) {
    std::erase_if(maps_, [&](const auto& entry) { return dead(entry.second); });
    if (maps_.size() >= kMaxTensorMaps) return false;
  }
  maps_[std::string(bytes)] = map;
  return true;
}

std::optional<IssuedTensorMap> TensorMapTable::find(std::string_view bytes) const {
  std::lock_guard lock(mutex_);
  const auto it = maps_.find(std::string(bytes));
  if (it == maps_.end()) return std::nullopt;
  return it->second;
}

void TensorMapTable::erase(std::string_view bytes) {
  std::lock_guard lock(mutex_);
  maps_.erase(std::string(bytes));
}

std::size_t TensorMapTable::size() const {
  std::lock_guard lock(mutex_);
  return maps_.size();
}

void TensorMapTable::clear() {
  std::lock_guard lock(mutex_);
  maps_.clear();
}

}  // namespace agileos::worker
