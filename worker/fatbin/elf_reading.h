// What the ELF image check and the footprint both read from a cubin: CUDA's own section types
// and an unaligned read of a header or table entry. Internal to worker/fatbin.
#pragma once

#include <elf.h>

#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>

namespace agileos::fatbin::elf {

using Bytes = std::span<const std::uint8_t>;

// CUDA section types whose sh_size is a memory size, with no bytes in the file (like
// SHT_NOBITS): .nv.global, .nv.local.<kernel>, .nv.shared.<kernel> and .nv.shared.reserved.*
// in relocatable cubins (nvcc -rdc=true, ptxas -c, NVRTC -rdc=true). nvlink turns them into
// SHT_NOBITS in what it links.
inline constexpr std::uint32_t kShtCudaGlobal = SHT_LOPROC + 0x07;
inline constexpr std::uint32_t kShtCudaLocal = SHT_LOPROC + 0x09;
inline constexpr std::uint32_t kShtCudaShared = SHT_LOPROC + 0x0a;
inline constexpr std::uint32_t kShtCudaSharedReserved = SHT_LOPROC + 0x15;

// The T at `offset`; the caller has checked that it lies inside `image`. memcpy because nothing
// in an untrusted image is aligned.
template <typename T>
T readAt(Bytes image, std::uint64_t offset) {
  static_assert(std::is_trivially_copyable_v<T>);
  T value;
  std::memcpy(&value, image.data() + offset, sizeof value);
  return value;
}

}  // namespace agileos::fatbin::elf
