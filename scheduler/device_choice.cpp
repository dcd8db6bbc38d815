#include "scheduler/device_choice.h"

#include <cstdio>
#include <tuple>

namespace agileos::scheduler {
namespace {

std::string gib(std::uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1ull << 30));
  return text;
}

std::uint64_t capacityOf(const DeviceLoad& load, std::uint64_t reserve_bytes) {
  return load.memory_bytes > reserve_bytes ? load.memory_bytes - reserve_bytes : 0;
}

// Memory not yet promised; unknown memory counts as all of it (the largest value).
std::uint64_t unpromised(const DeviceLoad& load, std::uint64_t reserve_bytes) {
  if (load.memory_bytes == 0) return UINT64_MAX;
  const std::uint64_t capacity = capacityOf(load, reserve_bytes);
  return load.promised_bytes < capacity ? capacity - load.promised_bytes : 0;
}

// Whether `quota` exceeds what the device can promise at all (known memory less the reserve).
bool neverFits(const DeviceLoad& load, std::uint64_t quota, std::uint64_t reserve_bytes) {
  return quota != 0 && load.memory_bytes != 0 && quota > capacityOf(load, reserve_bytes);
}

}  // namespace

std::string memoryShortfall(const DeviceLoad& load, std::uint64_t quota, std::uint64_t reserve_bytes) {
  // Without a quota there is nothing to reserve; before any worker reported the device's memory
  // there is nothing to compare with (the first client then meets its quota alone).
  if (quota == 0 || load.memory_bytes == 0) return {};
  const std::uint64_t capacity = capacityOf(load, reserve_bytes);
  const std::string device = "device " + std::to_string(load.device);
  if (quota > capacity) {
    return "its memory quota (" + gib(quota) + ") exceeds what " + device + " can promise (" + gib(capacity) +
           " = device memory - memory.reserve_bytes)";
  }
  if (load.promised_bytes <= capacity && quota <= capacity - load.promised_bytes) return {};
  return "the memory of " + device + " is promised to other clients (" + gib(load.promised_bytes) + " of " +
         gib(capacity) + "; this client's quota is " + gib(quota) + ")";
}

DeviceChoice chooseDevice(const std::vector<DeviceLoad>& loads, std::optional<int> requested,
                          std::uint64_t quota, std::uint64_t reserve_bytes) {
  DeviceChoice choice;
  if (requested) {
    for (const DeviceLoad& load : loads) {
      if (load.device != *requested) continue;
      choice.shortfall = memoryShortfall(load, quota, reserve_bytes);
      if (choice.shortfall.empty()) choice.device = load.device;
      choice.never = neverFits(load, quota, reserve_bytes);
      return choice;
    }
    choice.shortfall = "device " + std::to_string(*requested) + " is not served here (worker.devices)";
    choice.never = true;
    return choice;
  }
  const DeviceLoad* best = nullptr;
  // Of those that do not fit now, the best where the quota could fit later, else the best of all:
  // the reason given.
  const DeviceLoad* closest = nullptr;
  bool closest_never = true;
  auto better = [&](const DeviceLoad& a, const DeviceLoad* b) {
    if (b == nullptr) return true;
    // More unpromised memory first, then fewer clients, then the lower ordinal.
    return std::make_tuple(unpromised(a, reserve_bytes), b->active_clients, b->device) >
           std::make_tuple(unpromised(*b, reserve_bytes), a.active_clients, a.device);
  };
  for (const DeviceLoad& load : loads) {
    const bool fits = memoryShortfall(load, quota, reserve_bytes).empty();
    if (fits && better(load, best)) best = &load;
    if (fits) continue;
    const bool never = neverFits(load, quota, reserve_bytes);
    if (closest == nullptr || (closest_never && !never) ||
        (closest_never == never && better(load, closest))) {
      closest = &load;
      closest_never = never;
    }
  }
  if (best != nullptr) {
    choice.device = best->device;
  } else if (closest != nullptr) {
    choice.shortfall = memoryShortfall(*closest, quota, reserve_bytes);
    choice.never = closest_never;
  } else {
    choice.shortfall = "no device is served (worker.devices is empty)";
    choice.never = true;
  }
  return choice;
}

}  // namespace agileos::scheduler
