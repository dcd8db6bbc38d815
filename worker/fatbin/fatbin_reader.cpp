#include "worker/fatbin/fatbin_reader.h"

#include <algorithm>
#include <cstdio>
#include <string_view>
#include <utility>

#include "worker/fatbin/fatbin_layout.h"
#include "worker/fatbin/payload_decompression.h"

namespace agileos::fatbin {
namespace {

using Bytes = std::span<const std::uint8_t>;

std::string hex(std::uint64_t value) {
  char text[19];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

std::string decimal(std::uint64_t value) { return std::to_string(value); }

bool allZero(Bytes bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](std::uint8_t b) { return b == 0; });
}

std::string kindName(std::uint16_t kind) {
  switch (kind) {
    case static_cast<std::uint16_t>(EntryKind::kPtx):
      return "PTX";
    case static_cast<std::uint16_t>(EntryKind::kElf):
      return "ELF";
    default:
      return "kind " + decimal(kind);
  }
}

// PTX is text: trailing NULs are padding, any other NUL would make the
// driver see less text than the guard checked. ELF must carry the ELF magic.
bool checkPayloadContent(Entry& entry, std::string& error) {
  if (entry.kind == EntryKind::kPtx) {
    const std::size_t textEnd = entry.payload.find_last_not_of('\0');
    entry.payload.resize(textEnd == std::string::npos ? 0 : textEnd + 1);
    if (entry.payload.empty()) {
      error = "PTX payload is empty";
      return false;
    }
    const std::size_t nul = entry.payload.find('\0');
    if (nul != std::string::npos) {
      error = "PTX text contains a NUL byte at payload offset " + decimal(nul);
      return false;
    }
    return true;
  }
  if (!std::string_view(entry.payload).starts_with(kElfMagic)) {
    error = entry.payload.empty() ? "ELF payload is empty" : "ELF payload does not start with the ELF magic";
    return false;
  }
  return true;
}

// Decompresses `compressed` to exactly `declaredSize` bytes into *out.
bool decompress(Compression compression, Bytes compressed, std::uint64_t declaredSize, std::string* out,
                std::string& error) {
  Decompressed decompressed = compression == Compression::kZstd
                                  ? decompressZstd(compressed, static_cast<std::size_t>(declaredSize))
                                  : decompressLz4Block(compressed, static_cast<std::size_t>(declaredSize));
  if (!decompressed.ok) {
    error = (compression == Compression::kZstd ? "zstd payload: " : "LZ4 payload: ") + decompressed.error;
    return false;
  }
  *out = std::move(decompressed.bytes);
  return true;
}

// One pass over the input. Every offset it holds stays within `bytes_`: each
// length read from the input is compared against the bytes that remain before
// it is added to an offset, so no sum can overflow or pass the end.
class Parser {
 public:
  Parser(Bytes bytes, const Limits& limits, PayloadDecoding decoding)
      : bytes_(bytes), limits_(limits), decoding_(decoding) {}

  ParseResult run() {
    if (bytes_.empty()) {
      reject(0, "empty input: no fatbin container");
      return std::move(result_);
    }
    std::size_t at = 0;
    while (at < bytes_.size()) {
      if (!parseContainer(at)) return std::move(result_);
      // Zero padding may follow a container; a container never starts with 0
      // (its first byte is the magic's 0x50), so skipping zeros skips no data.
      while (at < bytes_.size() && bytes_[at] == 0) ++at;
    }
    result_.ok = true;
    return std::move(result_);
  }

 private:
  // Parses the container at `at` and advances `at` past it.
  bool parseContainer(std::size_t& at) {
    const std::size_t remaining = bytes_.size() - at;
    if (remaining < layout::kContainerHeaderSize) {
      return reject(at, "truncated container header: " + decimal(remaining) + " bytes left, " +
                            decimal(layout::kContainerHeaderSize) + " needed");
    }
    const std::uint32_t magic = layout::loadU32(bytes_, at + layout::kContainerMagicAt);
    if (magic == kWrapperMagic) {
      return reject(at,
                    "found a __fatBinC_Wrapper_t (magic 0x466243b1), not a container; "
                    "pass the container it points to");
    }
    if (magic != kContainerMagic) {
      return reject(at, "bad container magic " + hex(magic) + ", expected " + hex(kContainerMagic));
    }
    const std::uint16_t version = layout::loadU16(bytes_, at + layout::kContainerVersionAt);
    if (version != layout::kContainerVersion) {
      return reject(at, "unsupported container version " + decimal(version) + ", expected " +
                            decimal(layout::kContainerVersion));
    }
    const std::uint16_t headerSize = layout::loadU16(bytes_, at + layout::kContainerHeaderSizeAt);
    if (headerSize < layout::kContainerHeaderSize || headerSize > remaining) {
      return reject(at, "container header size " + decimal(headerSize) + " is below " +
                            decimal(layout::kContainerHeaderSize) + " or past the end of the input");
    }
    const std::uint64_t entriesSize = layout::loadU64(bytes_, at + layout::kContainerPayloadSizeAt);
    if (entriesSize > remaining - headerSize) {
      return reject(at, "container declares " + decimal(entriesSize) + " bytes of entries but only " +
                            decimal(remaining - headerSize) + " follow its header");
    }
    const std::size_t entriesBegin = at + headerSize;
    const std::size_t entriesEnd = entriesBegin + static_cast<std::size_t>(entriesSize);
    if (!parseEntries(entriesBegin, entriesEnd)) return false;
    ++result_.containers;
    at = entriesEnd;
    return true;
  }

  bool parseEntries(std::size_t at, std::size_t end) {
    while (at < end) {
      const std::size_t remaining = end - at;
      // Zero bytes up to the container's end are padding, not an entry.
      if (allZero(bytes_.subspan(at, remaining))) return true;
      if (remaining < layout::kEntryMinHeaderSize) {
        return reject(at, "truncated entry header: " + decimal(remaining) + " bytes left in the container, " +
                              decimal(layout::kEntryMinHeaderSize) + " needed");
      }
      if (entriesSeen_ == limits_.maxEntries) {
        return reject(at, "more than " + decimal(limits_.maxEntries) + " entries");
      }
      ++entriesSeen_;
      const std::uint32_t headerSize = layout::loadU32(bytes_, at + layout::kEntryHeaderSizeAt);
      if (headerSize < layout::kEntryMinHeaderSize || headerSize > remaining) {
        return reject(at, "entry header size " + decimal(headerSize) + " is below " +
                              decimal(layout::kEntryMinHeaderSize) + " or past the container end");
      }
      const std::uint64_t payloadSize = layout::loadU64(bytes_, at + layout::kEntryPayloadSizeAt);
      if (payloadSize > remaining - headerSize) {
        return reject(at, "entry payload of " + decimal(payloadSize) +
                              " bytes runs past the container end (" + decimal(remaining - headerSize) +
                              " bytes left)");
      }
      const Bytes header = bytes_.subspan(at, headerSize);
      const Bytes payload = bytes_.subspan(at + headerSize, static_cast<std::size_t>(payloadSize));
      if (!parseEntry(at, header, payload)) return false;
      at += headerSize + static_cast<std::size_t>(payloadSize);
    }
    return true;
  }

  bool parseEntry(std::size_t at, Bytes header, Bytes payload) {
    const std::uint16_t kind = layout::loadU16(header, layout::kEntryKindAt);
    if (kind != static_cast<std::uint16_t>(EntryKind::kPtx) &&
        kind != static_cast<std::uint16_t>(EntryKind::kElf)) {
      ++result_.skippedEntries;  // bounds checked by the caller; the payload is opaque to us
      return true;
    }
    Entry entry;
    entry.kind = static_cast<EntryKind>(kind);
    entry.smArch = layout::loadU32(header, layout::kEntryArchAt);
    entry.flags = layout::loadU64(header, layout::kEntryFlagsAt);
    entry.versionMajor = layout::loadU16(header, layout::kEntryMajorVersionAt);
    entry.versionMinor = layout::loadU16(header, layout::kEntryMinorVersionAt);
    entry.container = static_cast<std::uint32_t>(result_.containers);
    entry.offset = at;
    const std::string where = kindName(kind) + " entry for arch " + decimal(entry.smArch) + ": ";

    const bool archSpecific = (entry.flags & layout::kFlagArchSpecific) != 0;
    const bool familySpecific = (entry.flags & layout::kFlagFamilySpecific) != 0;
    if (archSpecific && familySpecific) {
      return reject(at, where + "flags " + hex(entry.flags) + " mark it both arch- and family-specific");
    }
    entry.variant = archSpecific     ? ArchVariant::kArchSpecific
                    : familySpecific ? ArchVariant::kFamilySpecific
                                     : ArchVariant::kGeneric;

    const bool zstd = (entry.flags & layout::kFlagCompressedZstd) != 0;
    const bool lz4 = (entry.flags & layout::kFlagCompressedLz4) != 0;
    if (zstd && lz4) {
      return reject(at, where + "flags " + hex(entry.flags) + " mark it both zstd- and LZ4-compressed");
    }
    entry.compression = zstd ? Compression::kZstd : lz4 ? Compression::kLz4 : Compression::kNone;

    std::string error;
    if (!readPayload(header, payload, entry, error)) return reject(at, where + error);
    // An entry kept compressed is checked when it is decoded (decodedPayload).
    if (entry.compressed.empty() && !checkPayloadContent(entry, error)) return reject(at, where + error);
    result_.entries.push_back(std::move(entry));
    return true;
  }

  // Fills entry.payload with the decompressed bytes, within Limits.
  bool readPayload(Bytes header, Bytes payload, Entry& entry, std::string& error) {
    if (entry.compression == Compression::kNone) {
      if (!reserveOutput(payload.size(), error)) return false;
      entry.payload.assign(payload.begin(), payload.end());
      return true;
    }
    // The payload is padded to 8 bytes; the compressed data is the first
    // `compressedSize` bytes of it.
    const std::uint32_t compressedSize = layout::loadU32(header, layout::kEntryCompressedSizeAt);
    const std::uint64_t declaredSize = layout::loadU64(header, layout::kEntryDecompressedSizeAt);
    if (compressedSize == 0 || compressedSize > payload.size()) {
      error = "compressed size " + decimal(compressedSize) + " is zero or exceeds the payload size " +
              decimal(payload.size());
      return false;
    }
    if (declaredSize == 0) {
      error = "compressed entry declares a decompressed size of 0";
      return false;
    }
    const Bytes compressed = payload.first(compressedSize);
    if (decoding_ == PayloadDecoding::kOnDemand) {
      // Kept compressed: the per-entry limit applies to what it declares, the total to what
      // is stored. A declared size that lies is caught when the entry is decoded.
      if (!withinEntryLimit(declaredSize, error) || !reserveOutput(compressedSize, error)) return false;
      entry.compressed.assign(compressed.begin(), compressed.end());
      entry.decompressedSize = declaredSize;
      return true;
    }
    if (!reserveOutput(declaredSize, error)) return false;
    return decompress(entry.compression, compressed, declaredSize, &entry.payload, error);
  }

  // Whether one entry's `size` bytes are within the per-entry limit.
  bool withinEntryLimit(std::uint64_t size, std::string& error) const {
    if (size <= limits_.maxDecompressedBytes) return true;
    error = "payload of " + decimal(size) + " bytes exceeds the per-entry limit of " +
            decimal(limits_.maxDecompressedBytes);
    return false;
  }

  // Counts `size` output bytes against the per-entry and total limits.
  bool reserveOutput(std::uint64_t size, std::string& error) {
    if (!withinEntryLimit(size, error)) return false;
    // totalBytes_ <= maxTotalBytes always holds, so the subtraction cannot wrap.
    if (size > limits_.maxTotalBytes - totalBytes_) {
      error = "payload of " + decimal(size) + " bytes takes all entries past the total limit of " +
              decimal(limits_.maxTotalBytes);
      return false;
    }
    totalBytes_ += static_cast<std::size_t>(size);
    return true;
  }

  // Records why the input is rejected and drops every entry parsed so far:
  // the result is all or nothing. Returns false for `return reject(...)`.
  bool reject(std::size_t offset, std::string what) {
    result_.ok = false;
    result_.error = "byte offset " + hex(offset) + ": " + std::move(what);
    result_.entries.clear();
    return false;
  }

  const Bytes bytes_;
  const Limits& limits_;
  const PayloadDecoding decoding_;
  ParseResult result_;
  std::size_t entriesSeen_ = 0;
  std::size_t totalBytes_ = 0;
};

}  // namespace

ParseResult parse(std::span<const std::uint8_t> bytes, const Limits& limits, PayloadDecoding decoding) {
  return Parser(bytes, limits, decoding).run();
}

bool decodedPayload(const Entry& entry, std::string* payload, std::string* error, const Limits& limits) {
  if (entry.compressed.empty()) {
    *payload = entry.payload;
    return true;
  }
  if (entry.compression == Compression::kNone || entry.decompressedSize == 0 ||
      entry.decompressedSize > limits.maxDecompressedBytes) {
    *error = "compressed entry declares " + decimal(entry.decompressedSize) + " bytes, outside 1.." +
             decimal(limits.maxDecompressedBytes);
    return false;
  }
  Entry decoded;
  decoded.kind = entry.kind;
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(entry.compressed.data());
  if (!decompress(entry.compression, Bytes(bytes, entry.compressed.size()), entry.decompressedSize,
                  &decoded.payload, *error) ||
      !checkPayloadContent(decoded, *error)) {
    return false;
  }
  *payload = std::move(decoded.payload);
  return true;
}

}  // namespace agileos::fatbin
