// Byte layout of fatbin containers and entries (internal to worker/fatbin).
//
// All fields are little-endian. Offsets were read off binaries built by
// nvcc 13.0 (default, -arch, -gencode, -G, -Xfatbin -compress-all,
// -compress-mode=speed, sm_90a, sm_100f, lto_90) and agree with public
// descriptions of the format.
//
// Container header (16 bytes):
//   0x00 u32 magic (0xBA55ED50)   0x04 u16 version (1)
//   0x06 u16 header size (16)     0x08 u64 size of the entries that follow the header
//
// Entry header (64 bytes, longer when the header size says so: 0x48 with -G,
// 0x50 for PTX, 0x70 for sm_100+ ELF; the extra bytes are an object name,
// compiler options or unknown fields and are not interpreted):
//   0x00 u16 kind                 0x02 u16 (0x0101, not interpreted)
//   0x04 u32 header size          0x08 u64 payload size (padded to 8 bytes)
//   0x10 u32 compressed size (0 when not compressed)   0x14 u32 (not interpreted)
//   0x18 u16 minor version        0x1A u16 major version
//   0x1C u32 sm architecture      0x20 u32 name offset, 0x24 u32 name length
//   0x28 u64 flags                0x30 u64 (not interpreted; nonzero for LTO IR)
//   0x38 u64 decompressed size (0 when not compressed)
// The payload starts right after the entry header; the next entry starts right
// after the payload.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace agileos::fatbin::layout {

inline constexpr std::size_t kContainerHeaderSize = 16;
inline constexpr std::uint16_t kContainerVersion = 1;
inline constexpr std::size_t kContainerMagicAt = 0x00;
inline constexpr std::size_t kContainerVersionAt = 0x04;
inline constexpr std::size_t kContainerHeaderSizeAt = 0x06;
inline constexpr std::size_t kContainerPayloadSizeAt = 0x08;

inline constexpr std::size_t kEntryMinHeaderSize = 64;
inline constexpr std::size_t kEntryKindAt = 0x00;
inline constexpr std::size_t kEntryHeaderSizeAt = 0x04;
inline constexpr std::size_t kEntryPayloadSizeAt = 0x08;
inline constexpr std::size_t kEntryCompressedSizeAt = 0x10;
inline constexpr std::size_t kEntryMinorVersionAt = 0x18;
inline constexpr std::size_t kEntryMajorVersionAt = 0x1A;
inline constexpr std::size_t kEntryArchAt = 0x1C;
inline constexpr std::size_t kEntryFlagsAt = 0x28;
inline constexpr std::size_t kEntryDecompressedSizeAt = 0x38;

inline constexpr std::uint64_t kFlagCompressedLz4 = 0x2000;
inline constexpr std::uint64_t kFlagCompressedZstd = 0x8000;
inline constexpr std::uint64_t kFlagArchSpecific = 0x100000;    // sm_90a
inline constexpr std::uint64_t kFlagFamilySpecific = 0x200000;  // sm_100f

// Little-endian loads of `width` bytes at `at`. The caller guarantees
// `at + width <= bytes.size()`; bytes are read one at a time, so no alignment is needed.
inline std::uint64_t loadLittleEndian(std::span<const std::uint8_t> bytes, std::size_t at,
                                      std::size_t width) {
  std::uint64_t value = 0;
  for (std::size_t i = width; i-- > 0;) value = (value << 8) | bytes[at + i];
  return value;
}
inline std::uint16_t loadU16(std::span<const std::uint8_t> bytes, std::size_t at) {
  return static_cast<std::uint16_t>(loadLittleEndian(bytes, at, 2));
}
inline std::uint32_t loadU32(std::span<const std::uint8_t> bytes, std::size_t at) {
  return static_cast<std::uint32_t>(loadLittleEndian(bytes, at, 4));
}
inline std::uint64_t loadU64(std::span<const std::uint8_t> bytes, std::size_t at) {
  return loadLittleEndian(bytes, at, 8);
}

}  // namespace agileos::fatbin::layout
