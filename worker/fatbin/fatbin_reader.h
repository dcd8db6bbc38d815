// FatbinReader: parses the fatbin containers a client registers, on the trusted side.
//
// Input is untrusted bytes. The reader never reads outside the given span,
// checks every header length and offset against it, bounds each decompressed
// payload (Limits), and rejects anything it does not understand with a message
// that says what and where. It never executes or loads anything.
//
// Formats handled (checked against binaries nvcc 13 builds; see tests/cpu):
// - container header: magic 0xBA55ED50, version, header size, payload size;
//   several containers may follow each other;
// - entries: kind (1 = PTX, 2 = ELF/SASS), header size, payload size,
//   sm architecture, flags; payload compressed with zstd (flag 0x8000, nvcc 13
//   default for PTX, -Xfatbin -compress-all for ELF) or with LZ4 (flag 0x2000,
//   older toolkits), with the decompressed size in the entry header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace agileos::fatbin {

inline constexpr std::uint32_t kContainerMagic = 0xBA55ED50u;
inline constexpr std::uint32_t kWrapperMagic = 0x466243B1u;  // __fatBinC_Wrapper_t

enum class EntryKind : std::uint16_t { kPtx = 1, kElf = 2 };

enum class Compression { kNone, kZstd, kLz4 };

struct Entry {
  EntryKind kind = EntryKind::kPtx;
  std::uint32_t smArch = 0;   // e.g. 75 for sm_75 / compute_75
  Compression compression = Compression::kNone;
  std::uint64_t flags = 0;
  std::string payload;        // decompressed: PTX text (no trailing NULs) or an ELF image
};

struct Limits {
  std::size_t maxEntries = 4096;
  std::size_t maxDecompressedBytes = 512u << 20;  // per entry
  std::size_t maxTotalBytes = 2048u << 20;        // all entries together
};

struct ParseResult {
  bool ok = false;
  std::string error;           // set when !ok
  std::vector<Entry> entries;  // in container order
};

ParseResult parse(std::span<const std::uint8_t> bytes, const Limits& limits = {});

enum class SelectionPolicy {
  kPreferSass,  // exact-architecture SASS if present, else the newest PTX <= device
  kPtxOnly,     // the newest PTX <= device; SASS is never chosen (needed by the guard)
};

// The entry to load on a device of compute capability `deviceSm` (e.g. 90), or
// nullptr if none fits. SASS fits only its exact architecture; PTX fits any
// device at or above its architecture.
const Entry* selectForDevice(const std::vector<Entry>& entries, std::uint32_t deviceSm,
                             SelectionPolicy policy);

}  // namespace agileos::fatbin
