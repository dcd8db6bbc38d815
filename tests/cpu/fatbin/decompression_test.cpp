// payload_decompression on its own: zstd frames in forms nvcc does not write
// (streamed without a content size, several frames) and exact-size checks.
#include <gtest/gtest.h>
#include <zstd.h>

#include <string>

#include "tests/cpu/fatbin/fatbin_test_support.h"
#include "worker/fatbin/payload_decompression.h"

namespace agileos::fatbin {
namespace {

using testing::ByteVector;

// A text long enough to need several output buffer growths.
std::string largeText() {
  std::string text;
  for (int i = 0; text.size() < (300u << 10); ++i)
    text += "ld.global.u32 %r" + std::to_string(i) + ", [%rd1];\n";
  return text;
}

// A frame without a content size in its header, as a streaming compressor writes.
ByteVector zstdStreamedWithoutContentSize(const std::string& text) {
  ZSTD_CCtx* context = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(context, ZSTD_c_contentSizeFlag, 0);
  ByteVector out(ZSTD_compressBound(text.size()) + 64);
  ZSTD_inBuffer in{text.data(), text.size(), 0};
  ZSTD_outBuffer outBuffer{out.data(), out.size(), 0};
  const std::size_t remaining = ZSTD_compressStream2(context, &outBuffer, &in, ZSTD_e_end);
  ZSTD_freeCCtx(context);
  EXPECT_EQ(remaining, 0u);
  out.resize(outBuffer.pos);
  EXPECT_EQ(ZSTD_getFrameContentSize(out.data(), out.size()), ZSTD_CONTENTSIZE_UNKNOWN);
  return out;
}

TEST(Decompression, ZstdRoundTripGrowsOutputToTheDeclaredSize) {
  const std::string text = largeText();
  const Decompressed result = decompressZstd(testing::zstdCompress(text), text.size());
  ASSERT_TRUE(result.ok) << result.error;
  EXPECT_EQ(result.bytes, text);
}

TEST(Decompression, ZstdFrameWithoutContentSize) {
  const std::string text = largeText();
  const ByteVector frame = zstdStreamedWithoutContentSize(text);
  const Decompressed exact = decompressZstd(frame, text.size());
  ASSERT_TRUE(exact.ok) << exact.error;
  EXPECT_EQ(exact.bytes, text);

  // Without a content size in the frame, only decoding reveals the lie.
  const Decompressed tooSmall = decompressZstd(frame, text.size() - 1);
  EXPECT_FALSE(tooSmall.ok);
  EXPECT_NE(tooSmall.error.find("more than the"), std::string::npos) << tooSmall.error;
  const Decompressed tooLarge = decompressZstd(frame, text.size() + 1);
  EXPECT_FALSE(tooLarge.ok);
  EXPECT_NE(tooLarge.error.find("decompresses to " + std::to_string(text.size())), std::string::npos)
      << tooLarge.error;
}

TEST(Decompression, ZstdConcatenatedFrames) {
  ByteVector frames = testing::zstdCompress("first frame, ");
  const ByteVector second = testing::zstdCompress("second frame");
  frames.insert(frames.end(), second.begin(), second.end());
  const Decompressed result = decompressZstd(frames, 25);
  ASSERT_TRUE(result.ok) << result.error;
  EXPECT_EQ(result.bytes, "first frame, second frame");
}

TEST(Decompression, ZstdTrailingGarbageAfterAFrame) {
  ByteVector frame = testing::zstdCompress("some PTX");
  frame.insert(frame.end(), {'g', 'a', 'r', 'b', 'a', 'g', 'e', '!'});
  EXPECT_FALSE(decompressZstd(frame, 8).ok);
}

TEST(Decompression, ZstdEmptyOrTinyInput) {
  EXPECT_FALSE(decompressZstd({}, 10).ok);
  const ByteVector magicOnly = {0x28, 0xB5, 0x2F, 0xFD};
  EXPECT_FALSE(decompressZstd(magicOnly, 10).ok);
}

TEST(Decompression, Lz4RoundTripAndExactSize) {
  const std::string text = largeText();
  const ByteVector block = testing::lz4Compress(text);
  const Decompressed exact = decompressLz4Block(block, text.size());
  ASSERT_TRUE(exact.ok) << exact.error;
  EXPECT_EQ(exact.bytes, text);
  EXPECT_FALSE(decompressLz4Block(block, text.size() - 1).ok);
  const Decompressed tooLarge = decompressLz4Block(block, text.size() + 1);
  EXPECT_FALSE(tooLarge.ok);
  EXPECT_NE(tooLarge.error.find("decompresses to"), std::string::npos) << tooLarge.error;
}

TEST(Decompression, Lz4EmptyInput) { EXPECT_FALSE(decompressLz4Block({}, 10).ok); }

}  // namespace
}  // namespace agileos::fatbin
