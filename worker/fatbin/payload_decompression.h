// Decompression of fatbin entry payloads (internal to worker/fatbin).
//
// Both functions take untrusted compressed bytes and the decompressed size the
// entry header declares, and succeed only if the payload decompresses to exactly
// that many bytes. They never write or allocate more than `declaredSize` bytes
// for the result (the caller bounds `declaredSize` by Limits first), so a lying
// header cannot make them use unbounded memory. Thread-safe: no shared state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace agileos::fatbin {

struct Decompressed {
  bool ok = false;
  std::string bytes;  // exactly the declared size when ok
  std::string error;  // when !ok: what was wrong, without location (the caller adds it)
};

// One or more zstd frames (magic 28 b5 2f fd), decoded incrementally so that
// memory grows with the output actually produced, not with the declared size.
Decompressed decompressZstd(std::span<const std::uint8_t> compressed, std::size_t declaredSize);

// One raw LZ4 block (no frame header), as fatbinary writes with flag 0x2000.
// Rejects a declared size that no LZ4 block of this length can produce before
// allocating anything.
Decompressed decompressLz4Block(std::span<const std::uint8_t> compressed, std::size_t declaredSize);

}  // namespace agileos::fatbin
