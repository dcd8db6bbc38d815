// FatbinReader: parses the fatbin containers a client registers, on the trusted side.
//
// Input is untrusted bytes. The reader never reads outside the given span,
// checks every header length and offset against it, bounds each decompressed
// payload (Limits), and rejects anything it does not understand with a message
// that says what and where. It never executes or loads anything.
//
// Formats handled (checked against binaries nvcc 13 builds; see tests/cpu/fatbin
// and worker/fatbin/fatbin_layout.h for the byte layout):
// - container header: magic 0xBA55ED50, version 1, header size, payload size;
//   several containers may follow each other (an executable's .nv_fatbin
//   section holds one per translation unit), separated by zero padding;
// - entries: kind (1 = PTX, 2 = ELF/SASS), header size, payload size,
//   sm architecture, flags; payload compressed with zstd (flag 0x8000, nvcc 13
//   default for PTX, -Xfatbin -compress-all for ELF) or with an LZ4 block
//   (flag 0x2000, older toolkits and `-Xfatbin -compress-mode=speed`), with the
//   compressed and decompressed sizes in the entry header. Entries of other
//   kinds (LTO IR is kind 8 and its payload is opaque) are checked for their
//   bounds, counted in ParseResult::skippedEntries and not returned.
//
// Thread-safety: parse() and selectForDevice() are pure functions of their
// arguments and may be called concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace agileos::fatbin {

inline constexpr std::uint32_t kContainerMagic = 0xBA55ED50u;
inline constexpr std::uint32_t kWrapperMagic = 0x466243B1u;    // __fatBinC_Wrapper_t
inline constexpr std::string_view kElfMagic{"\x7f\x45LF", 4};  // "\x7fELF", how every ELF payload starts

enum class EntryKind : std::uint16_t { kPtx = 1, kElf = 2 };

enum class Compression { kNone, kZstd, kLz4 };

// Which devices an entry was built for, beyond its architecture number.
enum class ArchVariant {
  kGeneric,         // sm_90 / compute_90
  kArchSpecific,    // sm_90a / compute_90a: only that exact architecture (flag 0x100000)
  kFamilySpecific,  // sm_100f / compute_100f: that family, same major version (flag 0x200000)
};

struct Entry {
  EntryKind kind = EntryKind::kPtx;
  std::uint32_t smArch = 0;  // e.g. 75 for sm_75 / compute_75
  ArchVariant variant = ArchVariant::kGeneric;
  Compression compression = Compression::kNone;
  std::uint64_t flags = 0;
  std::uint16_t versionMajor = 0;  // PTX ISA version for PTX (9.0); the fatbin's ELF version for ELF
  std::uint16_t versionMinor = 0;
  std::uint32_t container = 0;  // index of the container it came from, 0-based, in input order
  std::size_t offset = 0;       // byte offset of its entry header in the parsed span
  std::string payload;          // decompressed: PTX text (no trailing NULs) or an ELF image
  // Set instead of `payload` for a compressed entry of a parse with PayloadDecoding::kOnDemand:
  // the compressed bytes and the size their header declares (<= Limits::maxDecompressedBytes).
  // decodedPayload() turns them into what `payload` would have held.
  std::string compressed;
  std::uint64_t decompressedSize = 0;
};

struct Limits {
  std::size_t maxEntries = 4096;                  // all containers together, skipped kinds included
  std::size_t maxDecompressedBytes = 512u << 20;  // per entry
  std::size_t maxTotalBytes = 2048u << 20;        // all entries' stored bytes together
};

// When compressed payloads are decompressed. kEveryEntry: parse() decompresses and checks every
// entry (tools, tests). kOnDemand: parse() checks every entry's bounds and declared sizes but
// keeps compressed payloads compressed (Entry::compressed); the caller decompresses only the
// entry it selected (decodedPayload), so a fatbin of many large compressed entries costs one
// entry's decompression, not all of them (the worker's choice: issue 14).
enum class PayloadDecoding { kEveryEntry, kOnDemand };

struct ParseResult {
  bool ok = false;
  std::string error;               // set when !ok: what was wrong and at which byte offset
  std::vector<Entry> entries;      // in container order; empty when !ok
  std::size_t containers = 0;      // containers parsed
  std::size_t skippedEntries = 0;  // well-formed entries of kinds other than PTX and ELF
};

// Parses every container in `bytes`. The span must start with a container;
// zero bytes between and after containers are padding. All-or-nothing: any
// malformed container, entry or payload fails the whole parse, so a caller
// never acts on part of a module. A container with no entries is valid.
ParseResult parse(std::span<const std::uint8_t> bytes, const Limits& limits = {},
                  PayloadDecoding decoding = PayloadDecoding::kEveryEntry);

// The payload of `entry` as parse() with kEveryEntry would have given it: `entry.payload` when it
// holds one, else `entry.compressed` decompressed to exactly `entry.decompressedSize` bytes
// (<= limits.maxDecompressedBytes) and checked like every payload (PTX without NUL bytes, ELF
// with its magic). False with *error set when it is not.
bool decodedPayload(const Entry& entry, std::string* payload, std::string* error, const Limits& limits = {});

enum class SelectionPolicy {
  kPreferSass,  // exact-architecture SASS if present, else the newest PTX <= device
  kPtxOnly,     // the newest PTX <= device; SASS is never chosen (needed by the guard)
};

// The entry to load on a device of compute capability `deviceSm` (e.g. 90), or
// nullptr if none fits. SASS fits only its exact architecture; PTX fits any
// device at or above its architecture, except that arch-specific PTX
// (compute_90a) fits only its exact architecture and family-specific PTX
// (compute_100f) only devices of the same major version. Among fitting PTX the
// highest architecture wins; ties go to the earliest entry. The pointer is into
// `entries` and lives as long as that vector is not modified.
const Entry* selectForDevice(const std::vector<Entry>& entries, std::uint32_t deviceSm,
                             SelectionPolicy policy);

}  // namespace agileos::fatbin
