// An enum argument's bits, read as an integer (untrusted side). A program may pass any bits in a
// parameter of enum type; loading an enum object that holds no value of its range is undefined
// behaviour (UBSan's -fsanitize=enum flags it), so a value to be checked is copied out as bits.
#pragma once

#include <cstring>

namespace agileos::client {

template <typename Enum>
int enumBits(const Enum& value) {
  static_assert(sizeof(Enum) == sizeof(int), "CUDA's enums are int-sized");
  int bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

}  // namespace agileos::client
