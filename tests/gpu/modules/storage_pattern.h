// The content of the storage tests' file: byte i is a letter derived from i, so a client can
// check what it read without access to the file, and no 8 bytes of it look like an address.
#pragma once

#include <cstdint>
#include <cstdio>
#include <vector>

inline unsigned char storagePatternByte(std::uint64_t i) {
  return static_cast<unsigned char>('A' + ((i * 2654435761ull) >> 16) % 26);
}

// Writes `bytes` of the pattern to `path`; false on failure.
inline bool writeStoragePattern(const char* path, std::uint64_t bytes) {
  std::FILE* file = std::fopen(path, "wb");
  if (file == nullptr) return false;
  std::vector<unsigned char> block(1 << 20);
  for (std::uint64_t done = 0; done < bytes;) {
    const std::uint64_t n = bytes - done < block.size() ? bytes - done : block.size();
    for (std::uint64_t j = 0; j < n; ++j) block[j] = storagePatternByte(done + j);
    if (std::fwrite(block.data(), 1, n, file) != n) {
      std::fclose(file);
      return false;
    }
    done += n;
  }
  return std::fclose(file) == 0;
}
