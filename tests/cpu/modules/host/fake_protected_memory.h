// A ProtectedMemory for the module host tests: host-memory buffers at addresses in the
// protected module range, with an optional shared event log ("free <address>") so tests can
// see the order of revocations relative to plugin cleanups.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "agileos/module_abi.h"
#include "modules/host/protected_memory.h"

namespace agileos::modules::testing {

class FakeProtectedMemory : public ProtectedMemory {
 public:
  explicit FakeProtectedMemory(std::vector<std::string>* events = nullptr) : events_(events) {}

  int allocate(std::uint64_t bytes, std::uint64_t* device_address) override {
    ++allocate_calls;
    if (fail_allocations) return AGILEOS_MODULE_ENOMEM;
    *device_address = next_;
    next_ += (bytes + 0xFFF) / 0x1000 * 0x1000 + 0x1000;  // page-rounded, with a gap after each
    buffers_[*device_address].assign(bytes, 0);
    return AGILEOS_MODULE_OK;
  }
  int free(std::uint64_t device_address) override {
    ++free_calls;
    if (buffers_.erase(device_address) == 0) return AGILEOS_MODULE_EINVAL;
    if (events_ != nullptr) events_->push_back("free " + std::to_string(device_address));
    return AGILEOS_MODULE_OK;
  }
  int write(std::uint64_t device_address, const void* src, std::uint64_t bytes) override {
    std::vector<unsigned char>* buffer = containing(device_address, bytes);
    if (buffer == nullptr) return AGILEOS_MODULE_EINVAL;  // the host should never let this happen
    std::memcpy(buffer->data() + offset_, src, bytes);
    return AGILEOS_MODULE_OK;
  }
  int read(std::uint64_t device_address, void* dst, std::uint64_t bytes) override {
    std::vector<unsigned char>* buffer = containing(device_address, bytes);
    if (buffer == nullptr) return AGILEOS_MODULE_EINVAL;
    std::memcpy(dst, buffer->data() + offset_, bytes);
    return AGILEOS_MODULE_OK;
  }

  std::size_t live() const { return buffers_.size(); }
  bool isLive(std::uint64_t address) const { return buffers_.count(address) != 0; }

  static constexpr std::uint64_t kBase = 0xF1000000000ull;
  int allocate_calls = 0;
  int free_calls = 0;
  bool fail_allocations = false;

 private:
  std::vector<unsigned char>* containing(std::uint64_t address, std::uint64_t bytes) {
    auto after = buffers_.upper_bound(address);
    if (after == buffers_.begin()) return nullptr;
    --after;
    offset_ = address - after->first;
    if (offset_ > after->second.size() || bytes > after->second.size() - offset_) return nullptr;
    return &after->second;
  }

  std::vector<std::string>* events_;
  std::uint64_t next_ = kBase;
  std::uint64_t offset_ = 0;
  std::map<std::uint64_t, std::vector<unsigned char>> buffers_;
};

}  // namespace agileos::modules::testing
