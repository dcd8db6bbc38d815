// Request and response bytes of the resource test plugin's commands (resource_plugin.c), for the
// tests that drive it (ModuleInstance's in modules/host, the worker's in tests/cpu/worker).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>

namespace agileos::modules::testing {

// Builds a request: values appended in their in-memory (little-endian) form.
class Bytes {
 public:
  Bytes& u64(std::uint64_t value) { return put(&value, sizeof value); }
  Bytes& u32(std::uint32_t value) { return put(&value, sizeof value); }
  Bytes& text(const std::string& value) {
    data_ += value;
    return *this;
  }
  const std::string& str() const { return data_; }

 private:
  Bytes& put(const void* value, std::size_t size) {
    data_.append(static_cast<const char*>(value), size);
    return *this;
  }
  std::string data_;
};

// The T at `offset` of a response; a response too short for it fails the test (and gives T{}).
template <typename T>
T valueAt(const std::string& bytes, std::size_t offset) {
  T value{};
  EXPECT_LE(offset + sizeof value, bytes.size());
  if (offset + sizeof value <= bytes.size()) std::memcpy(&value, bytes.data() + offset, sizeof value);
  return value;
}

}  // namespace agileos::modules::testing
