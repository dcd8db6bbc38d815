// What nvcc emits for device code a program carries (untrusted side): the wrapper it registers
// (__fatBinC_Wrapper_t) and the fatbin container's magic. The client only finds lengths with
// these; the worker parses and checks everything.
#pragma once

#include <cstdint>

namespace agileos::client {

inline constexpr std::uint32_t kFatbinWrapperMagic = 0x466243B1u;
inline constexpr std::uint32_t kFatbinContainerMagic = 0xBA55ED50u;

struct FatbinWrapper {
  std::uint32_t magic;
  std::uint32_t version;
  const void* data;               // the fatbin container
  const void* filenameOrFatbins;  // version 2: the prelinked fatbins of -rdc code
};
static_assert(sizeof(FatbinWrapper) == 24);

}  // namespace agileos::client
