// DeviceChoice: which of the daemon's GPUs a new client goes to (one agileosd serves every GPU of
// its host, worker.devices; each client still sees one device, its worker's).
//
// A client that asks for a device (Hello.device, client env AGILEOS_DEVICE) gets that one or
// nothing. Otherwise the client goes where its memory quota fits with the most memory left
// unpromised (device memory - memory.reserve_bytes - the quotas of the clients placed there);
// ties go to the device with the fewest active clients, then to the lowest ordinal. A device
// whose memory no worker has reported yet counts as fitting, with nothing promised known. When
// none fits, the reason given is that of a device where the quota could fit once memory is
// released, if there is one.
//
// Pure functions of their arguments: the pool calls them under its lock (worker_pool.cpp), the
// tests call them directly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace agileos::scheduler {

struct DeviceLoad {
  int device = 0;
  std::uint64_t memory_bytes = 0;    // as its first ready worker reported it; 0: unknown yet
  std::uint64_t promised_bytes = 0;  // memory quotas of the clients placed on it
  std::size_t active_clients = 0;
};

struct DeviceChoice {
  std::optional<int> device;  // none: no device fits; `shortfall` says why
  std::string shortfall;      // for the best candidate when none fits
  // No device can ever take the client (the device it asked for is not served, or its quota
  // exceeds what every device can promise): waiting for memory to be released is no use.
  bool never = false;
};

// `loads` has one entry per served device, in the configured order. `quota` 0 fits anywhere.
DeviceChoice chooseDevice(const std::vector<DeviceLoad>& loads, std::optional<int> requested,
                          std::uint64_t quota, std::uint64_t reserve_bytes);

// "" if `quota` fits `load`, else why not (quota 0 and unknown memory always fit).
std::string memoryShortfall(const DeviceLoad& load, std::uint64_t quota, std::uint64_t reserve_bytes);

}  // namespace agileos::scheduler
