// The tensor maps the worker issued to one client (one table per ClientSession: maps are never
// shared between clients, even when several share a worker).
//
// An entry is the exact 128 bytes the driver encoded, the description it was encoded from and the
// global range it can reach (tensor_map_description.h), which lay inside one live allocation of
// the client when it was issued. At every launch of a kernel with tensor-map parameters, each
// parameter's bytes must be an entry's, and the entry's range must still lie inside one live
// allocation of the client (worker/handlers/tensor_map_handlers.cpp): a free therefore disables
// every map over the freed memory, whatever path freed it (the entry is dropped when a launch or
// an encode finds it dead). The table holds at most kMaxTensorMaps entries.
//
// Thread-safety: every method locks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "worker/tensor_maps/tensor_map_description.h"

namespace agileos::worker {

inline constexpr std::size_t kTensorMapBytes = 128;

struct IssuedTensorMap {
  TensorMapDescription description;
  std::uint64_t extentBytes = 0;  // from description.globalAddress
};

class TensorMapTable {
 public:
  static constexpr std::size_t kMaxTensorMaps = 1 << 16;

  // Records `bytes` (kTensorMapBytes) as issued; false when the table is full (after dropping
  // the entries `dead` names).
  bool add(std::string_view bytes, const IssuedTensorMap& map,
           const std::function<bool(const IssuedTensorMap&)>& dead);
  std::optional<IssuedTensorMap> find(std::string_view bytes) const;
  void erase(std::string_view bytes);
  std::size_t size() const;
  void clear();

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, IssuedTensorMap> maps_;  // by the map's bytes
};

}  // namespace agileos::worker
