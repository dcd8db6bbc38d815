#include "docker/device_plugin/devices.h"

namespace agileos::device_plugin {

std::vector<std::string> deviceIds(int device, int slots) {
  std::vector<std::string> ids;
  ids.reserve(static_cast<std::size_t>(slots));
  for (int slot = 0; slot < slots; ++slot)
    ids.push_back("agileos-gpu" + std::to_string(device) + "-slot" + std::to_string(slot));
  return ids;
}

std::string cdiDeviceName(int device) { return std::string(kResourceName) + "=" + std::to_string(device); }

}  // namespace agileos::device_plugin
