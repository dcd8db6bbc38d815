#include "modules/host/instance_allocations.h"

#include <iterator>

#include "agileos/module_abi.h"

namespace agileos::modules {

int InstanceAllocations::allocate(std::uint64_t bytes, std::uint64_t* device_address) {
  if (bytes == 0 || device_address == nullptr) return AGILEOS_MODULE_EINVAL;
  if (limit_bytes_ != 0 && bytes > limit_bytes_ - live_bytes_) return AGILEOS_MODULE_ENOMEM;
  std::uint64_t address = 0;
  const int rc = memory_.allocate(bytes, &address);
  if (rc != AGILEOS_MODULE_OK) return rc < 0 ? rc : AGILEOS_MODULE_EIO;
  live_[address] = bytes;
  live_bytes_ += bytes;
  *device_address = address;
  return AGILEOS_MODULE_OK;
}

int InstanceAllocations::free(std::uint64_t device_address) {
  auto found = live_.find(device_address);
  if (found == live_.end()) return AGILEOS_MODULE_EPERM;
  const int rc = memory_.free(device_address);
  // The allocation is forgotten even if the memory manager failed: this instance no longer
  // owns it and must not touch it again.
  live_bytes_ -= found->second;
  live_.erase(found);
  return rc == AGILEOS_MODULE_OK ? AGILEOS_MODULE_OK : (rc < 0 ? rc : AGILEOS_MODULE_EIO);
}

int InstanceAllocations::checkRange(std::uint64_t address, std::uint64_t bytes) const {
  auto after = live_.upper_bound(address);
  if (after == live_.begin()) return AGILEOS_MODULE_EPERM;
  const auto& [start, size] = *std::prev(after);
  const std::uint64_t offset = address - start;  // address >= start by upper_bound
  if (offset >= size) return AGILEOS_MODULE_EPERM;
  if (bytes > size - offset) return AGILEOS_MODULE_ERANGE;
  return AGILEOS_MODULE_OK;
}

int InstanceAllocations::write(std::uint64_t device_address, const void* src, std::uint64_t bytes) {
  if (src == nullptr && bytes != 0) return AGILEOS_MODULE_EINVAL;
  const int rc = checkRange(device_address, bytes);
  if (rc != AGILEOS_MODULE_OK || bytes == 0) return rc;
  const int written = memory_.write(device_address, src, bytes);
  return written == AGILEOS_MODULE_OK ? written : (written < 0 ? written : AGILEOS_MODULE_EIO);
}

int InstanceAllocations::read(std::uint64_t device_address, void* dst, std::uint64_t bytes) {
  if (dst == nullptr && bytes != 0) return AGILEOS_MODULE_EINVAL;
  const int rc = checkRange(device_address, bytes);
  if (rc != AGILEOS_MODULE_OK || bytes == 0) return rc;
  const int got = memory_.read(device_address, dst, bytes);
  return got == AGILEOS_MODULE_OK ? got : (got < 0 ? got : AGILEOS_MODULE_EIO);
}

RevocationReport InstanceAllocations::revokeAll() {
  RevocationReport report;
  for (const auto& [address, size] : live_) {
    memory_.free(address);  // nothing to do on failure: the instance is gone either way
    ++report.allocations;
    report.bytes += size;
  }
  live_.clear();
  live_bytes_ = 0;
  return report;
}

}  // namespace agileos::modules
