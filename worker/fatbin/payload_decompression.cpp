#include "worker/fatbin/payload_decompression.h"

#include <lz4.h>
#include <zstd.h>

#include <algorithm>
#include <climits>
#include <memory>
#include <utility>

namespace agileos::fatbin {
namespace {

// Output grows in steps from this size up to the declared size, so a header that
// declares a large size for a small payload costs only what is really produced.
constexpr std::size_t kInitialOutputBytes = 64u << 10;

// zstd frames may ask for a window larger than their content. Allow what any
// standard compression level asks for (2^23) and more only when the declared
// size needs it, so a small hostile frame cannot make the decoder reserve 128 MiB.
constexpr int kMinWindowLog = 23;
// zstd's own default decoder limit (ZSTD_WINDOWLOG_LIMIT_DEFAULT, which zstd.h
// only declares for static linking): 128 MiB.
constexpr int kMaxWindowLog = 27;

// The most output one byte of an LZ4 block can produce: a match-length
// extension byte adds at most 255 bytes, every other byte less.
constexpr std::size_t kLz4MaxExpansion = 255;

Decompressed failure(std::string message) {
  Decompressed result;
  result.error = std::move(message);
  return result;
}

Decompressed success(std::string bytes) {
  Decompressed result;
  result.ok = true;
  result.bytes = std::move(bytes);
  return result;
}

int windowLogFor(std::size_t declaredSize) {
  int log = 0;
  while (log < 63 && (std::uint64_t{1} << log) < declaredSize) ++log;
  return std::clamp(log, kMinWindowLog, kMaxWindowLog);
}

struct DctxDeleter {
  void operator()(ZSTD_DCtx* context) const { ZSTD_freeDCtx(context); }
};

std::string sizeMismatch(std::size_t produced, std::size_t declaredSize) {
  return "decompresses to " + std::to_string(produced) + " bytes but the entry header declares " +
         std::to_string(declaredSize);
}

}  // namespace

Decompressed decompressZstd(std::span<const std::uint8_t> compressed, std::size_t declaredSize) {
  // A frame that states its content size must not contradict the entry header;
  // checking it first rejects the lie before any output is allocated.
  const unsigned long long frameContentSize = ZSTD_getFrameContentSize(compressed.data(), compressed.size());
  if (frameContentSize == ZSTD_CONTENTSIZE_ERROR) return failure("payload is not a zstd frame");
  if (frameContentSize != ZSTD_CONTENTSIZE_UNKNOWN && frameContentSize > declaredSize) {
    return failure("zstd frame declares " + std::to_string(frameContentSize) +
                   " bytes but the entry header declares " + std::to_string(declaredSize));
  }

  std::unique_ptr<ZSTD_DCtx, DctxDeleter> context(ZSTD_createDCtx());
  if (!context) return failure("cannot allocate a zstd decoder");
  const std::size_t setWindow =
      ZSTD_DCtx_setParameter(context.get(), ZSTD_d_windowLogMax, windowLogFor(declaredSize));
  if (ZSTD_isError(setWindow))
    return failure(std::string("decoder setup error: ") + ZSTD_getErrorName(setWindow));

  std::string output(std::min(declaredSize, kInitialOutputBytes), '\0');
  std::size_t produced = 0;
  // Once `output` holds the declared size, decoding continues into this one
  // byte: any byte landing here means the payload is larger than declared.
  std::uint8_t overflowProbe = 0;
  ZSTD_inBuffer input{compressed.data(), compressed.size(), 0};
  for (;;) {
    if (produced == output.size() && output.size() < declaredSize) {
      output.resize(output.size() > declaredSize / 2 ? declaredSize : output.size() * 2);
    }
    const bool outputFull = produced == output.size();
    ZSTD_outBuffer out = outputFull ? ZSTD_outBuffer{&overflowProbe, 1, 0}
                                    : ZSTD_outBuffer{output.data(), output.size(), produced};
    const std::size_t inputBefore = input.pos;
    const std::size_t outputBefore = out.pos;
    const std::size_t remaining = ZSTD_decompressStream(context.get(), &out, &input);
    if (ZSTD_isError(remaining))
      return failure(std::string("decoder error: ") + ZSTD_getErrorName(remaining));
    if (outputFull && out.pos > 0) {
      return failure("decompresses to more than the " + std::to_string(declaredSize) +
                     " bytes the entry header declares");
    }
    if (!outputFull) produced = out.pos;
    // 0 means the current frame is complete; further input is another frame.
    if (remaining == 0 && input.pos == input.size) break;
    if (input.pos == inputBefore && out.pos == outputBefore) return failure("zstd data ends inside a frame");
  }
  if (produced != declaredSize) return failure(sizeMismatch(produced, declaredSize));
  return success(std::move(output));
}

Decompressed decompressLz4Block(std::span<const std::uint8_t> compressed, std::size_t declaredSize) {
  if (compressed.size() > static_cast<std::size_t>(INT_MAX) ||
      declaredSize > static_cast<std::size_t>(INT_MAX)) {
    return failure("LZ4 block or its declared size exceeds 2 GiB");
  }
  if (declaredSize / kLz4MaxExpansion > compressed.size()) {
    return failure("entry header declares " + std::to_string(declaredSize) +
                   " bytes, more than an LZ4 block of " + std::to_string(compressed.size()) +
                   " bytes can produce");
  }
  std::string output(declaredSize, '\0');
  const int produced =
      LZ4_decompress_safe(reinterpret_cast<const char*>(compressed.data()), output.data(),
                          static_cast<int>(compressed.size()), static_cast<int>(declaredSize));
  if (produced < 0) {
    return failure("malformed LZ4 block, or it decompresses to more than the " +
                   std::to_string(declaredSize) + " bytes the entry header declares");
  }
  if (static_cast<std::size_t>(produced) != declaredSize) {
    return failure(sizeMismatch(static_cast<std::size_t>(produced), declaredSize));
  }
  return success(std::move(output));
}

}  // namespace agileos::fatbin
