#include "worker/driver_limit_cost.h"

#include <algorithm>

namespace agileos::worker {
namespace {

int attribute(const DeviceDescription& device, CUdevice_attribute which) {
  for (const auto& [id, value] : device.attributes) {
    if (id == which) return value;
  }
  return 0;
}

std::uint64_t saturatingProduct(std::uint64_t a, std::uint64_t b) {
  if (a != 0 && b > kMaxLimitCost / a) return kMaxLimitCost;
  return a * b;
}

}  // namespace

std::uint64_t residentThreads(const DeviceDescription& device) {
  const int sms = attribute(device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  const int perSm = attribute(device, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  if (sms <= 0 || perSm <= 0) return 0;
  return static_cast<std::uint64_t>(sms) * static_cast<std::uint64_t>(perSm);
}

std::uint64_t driverLimitCost(CUlimit limit, std::size_t value, const DeviceDescription& device) {
  switch (limit) {
    case CU_LIMIT_STACK_SIZE: {
      // A device that does not say how many threads it holds is charged as the largest today
      // (an H200's 132 x 2048), never as none.
      std::uint64_t threads = residentThreads(device);
      if (threads == 0) threads = 132u * 2048u;
      return saturatingProduct(value, threads);
    }
    case CU_LIMIT_MALLOC_HEAP_SIZE:
    case CU_LIMIT_PRINTF_FIFO_SIZE:
      return std::min<std::uint64_t>(value, kMaxLimitCost);
    case CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT:
      return saturatingProduct(value, kPendingLaunchSlotBytes);
    default:
      return 0;
  }
}

std::uint64_t driverLimitCharge(const std::map<int, LimitChange>& changes, const DeviceDescription& device) {
  std::uint64_t charge = 0;
  for (const auto& [limit, change] : changes) {
    const std::uint64_t now = driverLimitCost(static_cast<CUlimit>(limit), change.current, device);
    const std::uint64_t before = driverLimitCost(static_cast<CUlimit>(limit), change.initial, device);
    if (now > before) charge = std::min(kMaxLimitCost, charge + (now - before));
  }
  return charge;
}

}  // namespace agileos::worker
