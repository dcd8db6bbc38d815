// Helpers for the fatbin reader tests: the nvcc-built samples, and a writer of
// hand-made containers for input that nvcc would never produce.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace agileos::fatbin::testing {

using ByteVector = std::vector<std::uint8_t>;

// The kernels in inputs/probe_kernels.cu, as they appear in PTX.
inline constexpr std::string_view kProbeKernels[] = {"agileos_probe_scale", "agileos_probe_fill"};

// Contents of samples/<name>.fatbin, built by tests/cpu/fatbin/CMakeLists.txt.
// Throws std::runtime_error if the file cannot be read.
ByteVector readSample(std::string_view name);

ByteVector bytesOf(std::string_view text);

// Overwrites `width` bytes at `at` with `value`, little-endian.
void storeLittleEndian(ByteVector& bytes, std::size_t at, std::size_t width, std::uint64_t value);
std::uint64_t loadLittleEndian(const ByteVector& bytes, std::size_t at, std::size_t width);

// Every field of an entry header, as written by buildContainer().
struct SyntheticEntry {
  std::uint16_t kind = 1;
  std::uint32_t headerSize = 64;
  std::uint32_t arch = 90;
  std::uint64_t flags = 0x11;
  std::uint32_t compressedSize = 0;
  std::uint64_t decompressedSize = 0;
  ByteVector payload;  // written as is; payload size field = payload.size()
};

SyntheticEntry plainPtx(std::string_view text, std::uint32_t arch);
SyntheticEntry plainElf(std::uint32_t arch);  // a payload that starts with the ELF magic
SyntheticEntry zstdPtx(std::string_view text, std::uint32_t arch);
SyntheticEntry lz4Ptx(std::string_view text, std::uint32_t arch);

// One container (16-byte header, then the entries) in fatbin byte layout.
ByteVector buildContainer(const std::vector<SyntheticEntry>& entries);

ByteVector zstdCompress(std::string_view data);
ByteVector lz4Compress(std::string_view data);

}  // namespace agileos::fatbin::testing
