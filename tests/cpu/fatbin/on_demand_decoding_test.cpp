// PayloadDecoding::kOnDemand, the worker's mode: every entry's bounds and declared sizes are
// checked at parse time, compressed payloads are decompressed only for the entry a caller
// decodes, and a decoded payload is exactly what an eager parse gives, with the same checks.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "tests/cpu/fatbin/fatbin_test_support.h"
#include "worker/fatbin/fatbin_layout.h"
#include "worker/fatbin/fatbin_reader.h"

namespace agileos::fatbin {
namespace {

using testing::buildContainer;
using testing::ByteVector;
using testing::loadLittleEndian;
using testing::readSample;
using testing::storeLittleEndian;
using testing::SyntheticEntry;

ParseResult parseOnDemand(const ByteVector& bytes, const Limits& limits = {}) {
  return parse(bytes, limits, PayloadDecoding::kOnDemand);
}

std::string decodeOrFail(const Entry& entry) {
  std::string payload, error;
  EXPECT_TRUE(decodedPayload(entry, &payload, &error)) << error;
  return payload;
}

// A PTX text of about `bytes` bytes that compresses to little.
std::string largePtx(std::size_t bytes) {
  std::string text = "\n.version 9.0\n.target sm_90\n.address_size 64\n";
  text.append(bytes - text.size(), '\n');
  return text;
}

class EverySample : public ::testing::TestWithParam<const char*> {};

TEST_P(EverySample, DecodedPayloadsEqualTheEagerParse) {
  const ByteVector bytes = readSample(GetParam());
  const ParseResult eager = parse(bytes);
  const ParseResult lazy = parseOnDemand(bytes);
  ASSERT_TRUE(eager.ok) << eager.error;
  ASSERT_TRUE(lazy.ok) << lazy.error;
  ASSERT_EQ(lazy.entries.size(), eager.entries.size());
  EXPECT_EQ(lazy.skippedEntries, eager.skippedEntries);
  std::size_t keptCompressed = 0;
  for (std::size_t i = 0; i < eager.entries.size(); ++i) {
    const Entry& want = eager.entries[i];
    const Entry& got = lazy.entries[i];
    EXPECT_EQ(got.kind, want.kind);
    EXPECT_EQ(got.smArch, want.smArch);
    EXPECT_EQ(got.variant, want.variant);
    EXPECT_EQ(got.offset, want.offset);
    EXPECT_TRUE(want.compressed.empty()) << "an eager parse keeps nothing compressed";
    if (got.compression != Compression::kNone) {
      ++keptCompressed;
      EXPECT_TRUE(got.payload.empty()) << "entry " << i << " was decompressed at parse time";
      EXPECT_GE(got.decompressedSize, want.payload.size()) << "entry " << i;
    }
    EXPECT_EQ(decodeOrFail(got), want.payload) << "entry " << i;
  }
  std::size_t compressedEntries = 0;
  for (const Entry& entry : eager.entries)
    compressedEntries += entry.compression != Compression::kNone ? 1 : 0;
  EXPECT_EQ(keptCompressed, compressedEntries) << "every compressed entry stays compressed";
}

INSTANTIATE_TEST_SUITE_P(NvccSamples, EverySample,
                         ::testing::Values("default_arch", "sm90", "multi_gencode", "compress_all",
                                           "uncompressed", "lz4", "arch_variants", "with_lto_ir",
                                           "program_section"));

// A lie about the decompressed size passes the parse (nothing was decompressed) and fails the
// decode with the eager parse's message; a size over the per-entry limit fails the parse.
TEST(OnDemandDecoding, DeclaredSizeIsCheckedWhenTheEntryIsDecoded) {
  for (const char* sample : {"sm90", "lz4"}) {
    SCOPED_TRACE(sample);
    ByteVector bytes = readSample(sample);
    const std::size_t ptxAt = parse(bytes).entries.at(1).offset;
    const std::size_t sizeAt = ptxAt + layout::kEntryDecompressedSizeAt;
    storeLittleEndian(bytes, sizeAt, 8, loadLittleEndian(bytes, sizeAt, 8) + 1);
    const ParseResult lied = parseOnDemand(bytes);
    ASSERT_TRUE(lied.ok) << lied.error;
    std::string payload, error;
    EXPECT_FALSE(decodedPayload(lied.entries.at(1), &payload, &error));
    EXPECT_NE(error.find("entry header declares"), std::string::npos) << error;
    EXPECT_TRUE(payload.empty());

    storeLittleEndian(bytes, sizeAt, 8, std::uint64_t{1} << 40);
    const ParseResult huge = parseOnDemand(bytes);
    EXPECT_FALSE(huge.ok);
    EXPECT_NE(huge.error.find("per-entry limit"), std::string::npos) << huge.error;
  }
}

// The point of the mode: many entries that each decompress to a lot cost nothing until one is
// chosen. Eagerly, their total would pass the limit; on demand only stored bytes count.
TEST(OnDemandDecoding, OnlyTheDecodedEntryIsDecompressed) {
  constexpr std::size_t kEntryBytes = 1u << 20;
  std::vector<SyntheticEntry> entries;
  for (std::uint32_t arch : {70, 75, 80, 86, 89, 90, 100, 120})
    entries.push_back(testing::zstdPtx(largePtx(kEntryBytes), arch));
  const ByteVector bytes = buildContainer(entries);
  Limits limits;
  limits.maxTotalBytes = 2 * kEntryBytes;
  const ParseResult eager = parse(bytes, limits);
  EXPECT_FALSE(eager.ok);
  EXPECT_NE(eager.error.find("total limit"), std::string::npos) << eager.error;

  const ParseResult lazy = parseOnDemand(bytes, limits);
  ASSERT_TRUE(lazy.ok) << lazy.error;
  ASSERT_EQ(lazy.entries.size(), entries.size());
  const Entry* chosen = selectForDevice(lazy.entries, 90, SelectionPolicy::kPtxOnly);
  ASSERT_NE(chosen, nullptr);
  EXPECT_EQ(chosen->smArch, 90u);
  EXPECT_EQ(decodeOrFail(*chosen), largePtx(kEntryBytes));
}

// A corrupt frame or bad content in an entry nobody selects never matters; in the selected one
// it is refused with the eager parse's message.
TEST(OnDemandDecoding, BadPayloadsFailOnlyWhenDecoded) {
  ByteVector bytes = readSample("sm90");
  const Entry ptx = parse(bytes).entries.at(1);
  const std::size_t headerSize = loadLittleEndian(bytes, ptx.offset + layout::kEntryHeaderSizeAt, 4);
  bytes[ptx.offset + headerSize] ^= 0xFF;  // the zstd magic
  ParseResult lazy = parseOnDemand(bytes);
  ASSERT_TRUE(lazy.ok) << lazy.error;
  std::string payload, error;
  EXPECT_FALSE(decodedPayload(lazy.entries.at(1), &payload, &error));
  EXPECT_NE(error.find("not a zstd frame"), std::string::npos) << error;
  EXPECT_EQ(decodeOrFail(lazy.entries.at(0)), parse(readSample("sm90")).entries.at(0).payload)
      << "the intact SASS entry still decodes";

  std::string withNul = largePtx(4096);
  withNul[100] = '\0';
  lazy = parseOnDemand(buildContainer({testing::zstdPtx(withNul, 90)}));
  ASSERT_TRUE(lazy.ok) << lazy.error;
  error.clear();
  EXPECT_FALSE(decodedPayload(lazy.entries.at(0), &payload, &error));
  EXPECT_NE(error.find("NUL byte"), std::string::npos) << error;
}

// decodedPayload re-checks what it is given: an entry edited after the parse to claim more than
// the limit is refused without decompressing.
TEST(OnDemandDecoding, DecodeAppliesThePerEntryLimit) {
  const ParseResult lazy = parseOnDemand(readSample("sm90"));
  ASSERT_TRUE(lazy.ok) << lazy.error;
  Entry entry = lazy.entries.at(1);
  ASSERT_FALSE(entry.compressed.empty());
  Limits small;
  small.maxDecompressedBytes = entry.decompressedSize - 1;
  std::string payload, error;
  EXPECT_FALSE(decodedPayload(entry, &payload, &error, small));
  EXPECT_NE(error.find("outside 1.."), std::string::npos) << error;
}

}  // namespace
}  // namespace agileos::fatbin
