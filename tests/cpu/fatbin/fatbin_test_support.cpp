#include "tests/cpu/fatbin/fatbin_test_support.h"

#include <lz4.h>
#include <zstd.h>

#include <fstream>
#include <iterator>
#include <stdexcept>

#include "worker/fatbin/fatbin_layout.h"
#include "worker/fatbin/fatbin_reader.h"

namespace agileos::fatbin::testing {

ByteVector readSample(std::string_view name) {
  const std::string path = std::string(AGILEOS_FATBIN_SAMPLE_DIR) + "/" + std::string(name) + ".fatbin";
  std::ifstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error("cannot open fatbin sample " + path);
  return ByteVector(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
}

ByteVector bytesOf(std::string_view text) { return ByteVector(text.begin(), text.end()); }

void storeLittleEndian(ByteVector& bytes, std::size_t at, std::size_t width, std::uint64_t value) {
  for (std::size_t i = 0; i < width; ++i) bytes.at(at + i) = static_cast<std::uint8_t>(value >> (8 * i));
}

std::uint64_t loadLittleEndian(const ByteVector& bytes, std::size_t at, std::size_t width) {
  std::uint64_t value = 0;
  for (std::size_t i = width; i-- > 0;) value = (value << 8) | bytes.at(at + i);
  return value;
}

SyntheticEntry plainPtx(std::string_view text, std::uint32_t arch) {
  SyntheticEntry entry;
  entry.kind = static_cast<std::uint16_t>(EntryKind::kPtx);
  entry.arch = arch;
  entry.payload = bytesOf(text);
  entry.payload.push_back(0);  // nvcc pads PTX with NULs to 8 bytes
  while (entry.payload.size() % 8 != 0) entry.payload.push_back(0);
  return entry;
}

SyntheticEntry plainElf(std::uint32_t arch) {
  SyntheticEntry entry;
  entry.kind = static_cast<std::uint16_t>(EntryKind::kElf);
  entry.arch = arch;
  entry.payload = bytesOf(kElfMagic);
  entry.payload.insert(entry.payload.end(), {0x02, 0x01, 0x01, 0x41});  // 64-bit, little-endian, CUDA ABI
  return entry;
}

SyntheticEntry zstdPtx(std::string_view text, std::uint32_t arch) {
  SyntheticEntry entry;
  entry.kind = static_cast<std::uint16_t>(EntryKind::kPtx);
  entry.arch = arch;
  entry.flags = 0x11 | layout::kFlagCompressedZstd;
  entry.payload = zstdCompress(text);
  entry.compressedSize = static_cast<std::uint32_t>(entry.payload.size());
  entry.decompressedSize = text.size();
  return entry;
}

SyntheticEntry lz4Ptx(std::string_view text, std::uint32_t arch) {
  SyntheticEntry entry = zstdPtx(text, arch);
  entry.flags = 0x11 | layout::kFlagCompressedLz4;
  entry.payload = lz4Compress(text);
  entry.compressedSize = static_cast<std::uint32_t>(entry.payload.size());
  return entry;
}

ByteVector buildContainer(const std::vector<SyntheticEntry>& entries) {
  ByteVector bytes(layout::kContainerHeaderSize, 0);
  storeLittleEndian(bytes, layout::kContainerMagicAt, 4, kContainerMagic);
  storeLittleEndian(bytes, layout::kContainerVersionAt, 2, layout::kContainerVersion);
  storeLittleEndian(bytes, layout::kContainerHeaderSizeAt, 2, layout::kContainerHeaderSize);
  for (const SyntheticEntry& entry : entries) {
    const std::size_t at = bytes.size();
    bytes.resize(at + entry.headerSize, 0);
    storeLittleEndian(bytes, at + layout::kEntryKindAt, 2, entry.kind);
    storeLittleEndian(bytes, at + 2, 2, 0x0101);
    storeLittleEndian(bytes, at + layout::kEntryHeaderSizeAt, 4, entry.headerSize);
    storeLittleEndian(bytes, at + layout::kEntryPayloadSizeAt, 8, entry.payload.size());
    storeLittleEndian(bytes, at + layout::kEntryCompressedSizeAt, 4, entry.compressedSize);
    storeLittleEndian(bytes, at + layout::kEntryArchAt, 4, entry.arch);
    storeLittleEndian(bytes, at + layout::kEntryFlagsAt, 8, entry.flags);
    storeLittleEndian(bytes, at + layout::kEntryDecompressedSizeAt, 8, entry.decompressedSize);
    bytes.insert(bytes.end(), entry.payload.begin(), entry.payload.end());
  }
  storeLittleEndian(bytes, layout::kContainerPayloadSizeAt, 8, bytes.size() - layout::kContainerHeaderSize);
  return bytes;
}

ByteVector zstdCompress(std::string_view data) {
  ByteVector out(ZSTD_compressBound(data.size()));
  const std::size_t size = ZSTD_compress(out.data(), out.size(), data.data(), data.size(), 3);
  if (ZSTD_isError(size)) throw std::runtime_error(ZSTD_getErrorName(size));
  out.resize(size);
  return out;
}

ByteVector lz4Compress(std::string_view data) {
  ByteVector out(static_cast<std::size_t>(LZ4_compressBound(static_cast<int>(data.size()))));
  const int size = LZ4_compress_default(data.data(), reinterpret_cast<char*>(out.data()),
                                        static_cast<int>(data.size()), static_cast<int>(out.size()));
  if (size <= 0) throw std::runtime_error("LZ4_compress_default failed");
  out.resize(static_cast<std::size_t>(size));
  return out;
}

}  // namespace agileos::fatbin::testing
