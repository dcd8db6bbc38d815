// The reader against malformed and hostile input: real samples with fields
// overwritten, truncated or extended, and hand-made containers. Every case must
// fail with a message that names the problem and its byte offset, or parse to
// exactly what the well-formed part holds.
#include <gtest/gtest.h>

#include <cstdio>
#include <limits>
#include <string>
#include <string_view>

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

constexpr std::uint64_t kU64Max = std::numeric_limits<std::uint64_t>::max();
constexpr std::uint32_t kU32Max = std::numeric_limits<std::uint32_t>::max();
constexpr std::string_view kPtxText = "\n.version 9.0\n.target sm_90\n.address_size 64\n";

std::string hex(std::uint64_t value) {
  char text[19];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

// Parses `bytes` expecting failure, and checks that the message starts with the
// offset and names the problem.
void expectRejected(const ByteVector& bytes, std::uint64_t offset, std::string_view problem,
                    const Limits& limits = {}) {
  const ParseResult result = parse(bytes, limits);
  EXPECT_FALSE(result.ok);
  EXPECT_TRUE(result.entries.empty());
  EXPECT_EQ(result.error.rfind("byte offset " + hex(offset) + ": ", 0), 0u) << result.error;
  EXPECT_NE(result.error.find(problem), std::string::npos)
      << "'" << result.error << "' lacks '" << problem << "'";
}

// The entry header offset of entry `index` of a sample, from a clean parse.
std::size_t entryOffset(const ByteVector& bytes, std::size_t index) {
  const ParseResult result = parse(bytes);
  EXPECT_TRUE(result.ok) << result.error;
  return result.entries.at(index).offset;
}

// Where each container of a well-formed input ends, walking the headers.
std::vector<std::size_t> containerEnds(const ByteVector& bytes) {
  std::vector<std::size_t> ends;
  std::size_t at = 0;
  while (at < bytes.size()) {
    at += layout::kContainerHeaderSize + loadLittleEndian(bytes, at + layout::kContainerPayloadSizeAt, 8);
    ends.push_back(at);
    while (at < bytes.size() && bytes[at] == 0) ++at;
  }
  return ends;
}

class TruncatedSample : public ::testing::TestWithParam<const char*> {};

// Every prefix fails cleanly, except one that ends after whole containers
// (plus zero padding), which yields exactly those containers' entries.
TEST_P(TruncatedSample, EveryPrefixFailsCleanlyOrParsesWholeContainers) {
  const ByteVector full = readSample(GetParam());
  const ParseResult reference = parse(full);
  ASSERT_TRUE(reference.ok) << reference.error;
  const std::vector<std::size_t> ends = containerEnds(full);
  for (std::size_t length = 0; length < full.size(); ++length) {
    const ByteVector prefix(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(length));
    const ParseResult result = parse(prefix);
    std::size_t wholeContainers = 0;
    while (wholeContainers < ends.size() && ends[wholeContainers] <= length) ++wholeContainers;
    bool expectOk = wholeContainers > 0;
    for (std::size_t i = expectOk ? ends[wholeContainers - 1] : length; i < length; ++i) {
      expectOk = expectOk && prefix[i] == 0;
    }
    ASSERT_EQ(result.ok, expectOk) << "prefix of " << length << " bytes: " << result.error;
    if (!result.ok) {
      ASSERT_FALSE(result.error.empty()) << length;
      ASSERT_TRUE(result.entries.empty()) << length;
      continue;
    }
    ASSERT_EQ(result.containers, wholeContainers) << length;
    std::size_t entriesInPrefix = 0;
    for (const Entry& entry : reference.entries) entriesInPrefix += entry.offset < ends[wholeContainers - 1];
    ASSERT_EQ(result.entries.size(), entriesInPrefix) << length;
    for (std::size_t i = 0; i < result.entries.size(); ++i) {
      ASSERT_EQ(result.entries[i].offset, reference.entries[i].offset);
      ASSERT_EQ(result.entries[i].payload, reference.entries[i].payload);
    }
  }
}

// The container size is shrunk along with the input, so that every cut lands
// inside the container and the entry-level checks see it: each cut fails, except
// one at an entry boundary, which yields the entries before it.
TEST_P(TruncatedSample, EveryCutInsideTheFirstContainerFailsOrEndsAtAnEntry) {
  const ByteVector full = readSample(GetParam());
  const ParseResult reference = parse(full);
  ASSERT_TRUE(reference.ok) << reference.error;
  const std::size_t firstEnd = containerEnds(full).front();
  std::vector<std::size_t> entryStarts;
  for (const Entry& entry : reference.entries) {
    if (entry.container == 0) entryStarts.push_back(entry.offset);
  }
  for (std::size_t length = layout::kContainerHeaderSize; length < firstEnd; ++length) {
    ByteVector prefix(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(length));
    storeLittleEndian(prefix, layout::kContainerPayloadSizeAt, 8, length - layout::kContainerHeaderSize);
    const ParseResult result = parse(prefix);
    std::size_t wholeEntries = 0;
    while (wholeEntries < entryStarts.size() && entryStarts[wholeEntries] < length) ++wholeEntries;
    const bool atEntryBoundary = length == layout::kContainerHeaderSize ||
                                 (wholeEntries < entryStarts.size() && entryStarts[wholeEntries] == length);
    ASSERT_EQ(result.ok, atEntryBoundary) << "cut at " << length << ": " << result.error;
    if (!result.ok) {
      ASSERT_FALSE(result.error.empty());
      continue;
    }
    ASSERT_EQ(result.entries.size(), wholeEntries) << length;
  }
}

INSTANTIATE_TEST_SUITE_P(Samples, TruncatedSample,
                         ::testing::Values("sm90", "compress_all", "lz4", "program_section"));

TEST(HostileInput, EmptyInput) { expectRejected({}, 0, "empty input"); }

TEST(HostileInput, BadMagic) {
  ByteVector bytes = readSample("sm90");
  bytes[0] ^= 0xFF;
  expectRejected(bytes, 0, "bad container magic");
}

TEST(HostileInput, WrapperInsteadOfContainer) {
  ByteVector bytes = readSample("sm90");
  storeLittleEndian(bytes, 0, 4, kWrapperMagic);
  expectRejected(bytes, 0, "__fatBinC_Wrapper_t");
}

TEST(HostileInput, UnsupportedContainerVersion) {
  ByteVector bytes = readSample("sm90");
  storeLittleEndian(bytes, layout::kContainerVersionAt, 2, 2);
  expectRejected(bytes, 0, "unsupported container version 2");
}

TEST(HostileInput, ContainerHeaderSizeOutOfRange) {
  for (std::uint64_t headerSize : {0, 15, 0xFFFF}) {
    ByteVector bytes = readSample("sm90");
    storeLittleEndian(bytes, layout::kContainerHeaderSizeAt, 2, headerSize);
    expectRejected(bytes, 0, "container header size");
  }
}

TEST(HostileInput, ContainerSizePastTheEnd) {
  const ByteVector original = readSample("sm90");
  const std::uint64_t declared = loadLittleEndian(original, layout::kContainerPayloadSizeAt, 8);
  for (std::uint64_t size : {declared + 1, kU64Max, kU64Max - 15, std::uint64_t{1} << 63}) {
    ByteVector bytes = original;
    storeLittleEndian(bytes, layout::kContainerPayloadSizeAt, 8, size);
    expectRejected(bytes, 0, "bytes of entries but only");
  }
}

TEST(HostileInput, ContainerSizeShorterThanItsEntries) {
  ByteVector bytes = readSample("sm90");
  const std::size_t ptxAt = entryOffset(bytes, 1);
  // The container now ends inside the PTX entry's header.
  storeLittleEndian(bytes, layout::kContainerPayloadSizeAt, 8, ptxAt + 10 - layout::kContainerHeaderSize);
  expectRejected(bytes, ptxAt, "truncated entry header");
}

TEST(HostileInput, EntryHeaderSizeOutOfRange) {
  for (std::uint64_t headerSize :
       {std::uint64_t{0}, std::uint64_t{63}, std::uint64_t{0x10000000}, std::uint64_t{kU32Max}}) {
    ByteVector bytes = readSample("sm90");
    storeLittleEndian(bytes, 16 + layout::kEntryHeaderSizeAt, 4, headerSize);
    expectRejected(bytes, 16, "entry header size");
  }
}

TEST(HostileInput, EntryPayloadSizePastTheContainer) {
  const ByteVector original = readSample("sm90");
  const std::size_t ptxAt = entryOffset(original, 1);
  const std::uint64_t declared = loadLittleEndian(original, ptxAt + layout::kEntryPayloadSizeAt, 8);
  for (std::uint64_t size : {declared + 1, kU64Max, kU64Max - 63, std::uint64_t{1} << 63}) {
    ByteVector bytes = original;
    storeLittleEndian(bytes, ptxAt + layout::kEntryPayloadSizeAt, 8, size);
    expectRejected(bytes, ptxAt, "runs past the container end");
  }
}

TEST(HostileInput, CompressedSizeZeroOrPastThePayload) {
  const ByteVector original = readSample("sm90");
  const std::size_t ptxAt = entryOffset(original, 1);
  const std::uint64_t payloadSize = loadLittleEndian(original, ptxAt + layout::kEntryPayloadSizeAt, 8);
  for (std::uint64_t size : {std::uint64_t{0}, payloadSize + 1, std::uint64_t{kU32Max}}) {
    ByteVector bytes = original;
    storeLittleEndian(bytes, ptxAt + layout::kEntryCompressedSizeAt, 4, size);
    expectRejected(bytes, ptxAt, "compressed size");
  }
}

// The decompressed size in the entry header must be exactly what the payload
// decompresses to, for both compression formats.
TEST(HostileInput, DecompressedSizeLies) {
  for (const char* sample : {"sm90", "lz4"}) {
    SCOPED_TRACE(sample);
    const ByteVector original = readSample(sample);
    const std::size_t ptxAt = entryOffset(original, 1);
    const std::size_t sizeAt = ptxAt + layout::kEntryDecompressedSizeAt;
    const std::uint64_t actual = loadLittleEndian(original, sizeAt, 8);
    for (std::uint64_t lie : {actual + 1, actual - 1, actual * 2, std::uint64_t{1}}) {
      ByteVector bytes = original;
      storeLittleEndian(bytes, sizeAt, 8, lie);
      expectRejected(bytes, ptxAt, "entry header declares");
    }
    ByteVector zero = original;
    storeLittleEndian(zero, sizeAt, 8, 0);
    expectRejected(zero, ptxAt, "decompressed size of 0");
    for (std::uint64_t huge : {kU64Max, std::uint64_t{1} << 40}) {
      ByteVector bytes = original;
      storeLittleEndian(bytes, sizeAt, 8, huge);
      expectRejected(bytes, ptxAt, "per-entry limit");
    }
  }
}

TEST(HostileInput, CorruptedZstdFrame) {
  const ByteVector original = readSample("sm90");
  const std::size_t ptxAt = entryOffset(original, 1);
  const std::size_t headerSize = loadLittleEndian(original, ptxAt + layout::kEntryHeaderSizeAt, 4);
  const std::size_t frameAt = ptxAt + headerSize;
  ASSERT_EQ(loadLittleEndian(original, frameAt, 4), 0xFD2FB528u) << "zstd magic";

  ByteVector badMagic = original;
  badMagic[frameAt] ^= 0xFF;
  expectRejected(badMagic, ptxAt, "not a zstd frame");

  // nvcc writes single-segment frames with a 2-byte content size, so the first
  // block header starts at frame byte 7; block type 3 is reserved.
  ASSERT_EQ(original[frameAt + 4], 0x60) << "frame header descriptor changed; adjust this test";
  ByteVector reservedBlock = original;
  reservedBlock[frameAt + 7] |= 0x06;
  expectRejected(reservedBlock, ptxAt, "zstd payload: decoder error");

  ByteVector cutFrame = original;
  const std::uint64_t compressedSize = loadLittleEndian(original, ptxAt + layout::kEntryCompressedSizeAt, 4);
  storeLittleEndian(cutFrame, ptxAt + layout::kEntryCompressedSizeAt, 4, compressedSize / 2);
  expectRejected(cutFrame, ptxAt, "zstd payload");
}

TEST(HostileInput, CorruptedLz4Block) {
  const ByteVector original = readSample("lz4");
  const std::size_t ptxAt = entryOffset(original, 1);
  const std::size_t headerSize = loadLittleEndian(original, ptxAt + layout::kEntryHeaderSizeAt, 4);
  const std::uint64_t compressedSize = loadLittleEndian(original, ptxAt + layout::kEntryCompressedSizeAt, 4);

  ByteVector garbage = original;
  for (std::size_t i = 0; i < compressedSize; ++i) garbage[ptxAt + headerSize + i] = 0xFF;
  expectRejected(garbage, ptxAt, "malformed LZ4 block");

  ByteVector cut = original;
  storeLittleEndian(cut, ptxAt + layout::kEntryCompressedSizeAt, 4, compressedSize / 2);
  expectRejected(cut, ptxAt, "LZ4 payload");
}

TEST(HostileInput, Lz4DeclaredSizeBeyondAnyBlockOfThatLength) {
  SyntheticEntry entry = testing::lz4Ptx(kPtxText, 90);
  entry.decompressedSize = std::uint64_t{entry.compressedSize} * 255 + 1024;
  expectRejected(buildContainer({entry}), 16, "more than an LZ4 block");
}

TEST(HostileInput, BothCompressionFlags) {
  SyntheticEntry entry = testing::zstdPtx(kPtxText, 90);
  entry.flags |= layout::kFlagCompressedLz4;
  expectRejected(buildContainer({entry}), 16, "both zstd- and LZ4-compressed");
}

TEST(HostileInput, BothArchVariantFlags) {
  SyntheticEntry entry = testing::plainPtx(kPtxText, 90);
  entry.flags |= layout::kFlagArchSpecific | layout::kFlagFamilySpecific;
  expectRejected(buildContainer({entry}), 16, "both arch- and family-specific");
}

TEST(HostileInput, ZeroLengthEntries) {
  SyntheticEntry emptyElf = testing::plainElf(90);
  emptyElf.payload.clear();
  expectRejected(buildContainer({emptyElf}), 16, "ELF payload is empty");

  SyntheticEntry emptyPtx = testing::plainPtx("", 90);
  emptyPtx.payload.clear();
  expectRejected(buildContainer({emptyPtx}), 16, "PTX payload is empty");

  SyntheticEntry onlyPadding = testing::plainPtx("", 90);
  ASSERT_EQ(onlyPadding.payload, ByteVector(8, 0));
  // The second entry is the bad one; the offset must say so.
  expectRejected(buildContainer({testing::plainElf(90), onlyPadding}), 16 + 64 + 8, "PTX payload is empty");
}

TEST(HostileInput, EmptyContainerIsValid) {
  const ParseResult result = parse(buildContainer({}));
  ASSERT_TRUE(result.ok) << result.error;
  EXPECT_EQ(result.containers, 1u);
  EXPECT_TRUE(result.entries.empty());
}

TEST(HostileInput, PtxWithEmbeddedNul) {
  std::string text(kPtxText);
  text[5] = '\0';
  expectRejected(buildContainer({testing::plainPtx(text, 90)}), 16, "NUL byte at payload offset 5");
}

TEST(HostileInput, ElfWithoutElfMagic) {
  SyntheticEntry entry = testing::plainElf(90);
  entry.payload[0] = 'X';
  expectRejected(buildContainer({entry}), 16, "does not start with the ELF magic");
}

TEST(HostileInput, EntryCountLimit) {
  std::vector<SyntheticEntry> entries(5, testing::plainPtx(kPtxText, 90));
  const ByteVector bytes = buildContainer(entries);
  Limits limits;
  limits.maxEntries = 5;
  const ParseResult atLimit = parse(bytes, limits);
  ASSERT_TRUE(atLimit.ok) << atLimit.error;
  EXPECT_EQ(atLimit.entries.size(), 5u);

  limits.maxEntries = 4;
  const std::size_t fifthAt = 16 + 4 * (64 + entries[0].payload.size());
  expectRejected(bytes, fifthAt, "more than 4 entries", limits);

  // Skipped kinds count too: they still cost a pass over their headers.
  std::vector<SyntheticEntry> opaque(5, testing::plainPtx(kPtxText, 90));
  for (SyntheticEntry& entry : opaque) entry.kind = 8;
  expectRejected(buildContainer(opaque), fifthAt, "more than 4 entries", limits);
}

TEST(HostileInput, EntryCountLimitSpansContainers) {
  ByteVector bytes = buildContainer({testing::plainPtx(kPtxText, 90), testing::plainPtx(kPtxText, 80)});
  const std::size_t secondContainerAt = bytes.size();
  const ByteVector second = buildContainer({testing::plainPtx(kPtxText, 75)});
  bytes.insert(bytes.end(), second.begin(), second.end());
  Limits limits;
  limits.maxEntries = 2;
  expectRejected(bytes, secondContainerAt + 16, "more than 2 entries", limits);
}

TEST(HostileInput, PerEntryAndTotalSizeLimits) {
  const ByteVector bytes = readSample("sm90");
  const ParseResult reference = parse(bytes);
  ASSERT_TRUE(reference.ok) << reference.error;
  const std::size_t elfSize = reference.entries[0].payload.size();
  const std::size_t ptxAt = reference.entries[1].offset;
  const std::uint64_t ptxDeclared = loadLittleEndian(bytes, ptxAt + layout::kEntryDecompressedSizeAt, 8);

  Limits perEntry;
  perEntry.maxDecompressedBytes = elfSize - 1;
  expectRejected(bytes, 16, "per-entry limit", perEntry);

  Limits total;
  total.maxTotalBytes = elfSize + ptxDeclared - 1;
  expectRejected(bytes, ptxAt, "total limit", total);
  total.maxTotalBytes = elfSize + ptxDeclared;
  EXPECT_TRUE(parse(bytes, total).ok);
}

TEST(HostileInput, UnknownKindIsBoundsCheckedThenSkipped) {
  SyntheticEntry opaque = testing::plainPtx(kPtxText, 90);
  opaque.kind = 8;
  const ParseResult result = parse(buildContainer({opaque, testing::plainElf(90)}));
  ASSERT_TRUE(result.ok) << result.error;
  EXPECT_EQ(result.skippedEntries, 1u);
  ASSERT_EQ(result.entries.size(), 1u);
  EXPECT_EQ(result.entries[0].kind, EntryKind::kElf);

  ByteVector bytes = buildContainer({opaque});
  storeLittleEndian(bytes, 16 + layout::kEntryPayloadSizeAt, 8, kU64Max);
  expectRejected(bytes, 16, "runs past the container end");
}

TEST(HostileInput, ZeroPaddingBetweenAndAfterContainers) {
  const ByteVector sample = readSample("sm90");
  const ParseResult single = parse(sample);
  ASSERT_TRUE(single.ok) << single.error;

  ByteVector bytes = sample;
  bytes.insert(bytes.end(), 8, 0);
  bytes.insert(bytes.end(), sample.begin(), sample.end());
  bytes.insert(bytes.end(), 24, 0);
  const ParseResult doubled = parse(bytes);
  ASSERT_TRUE(doubled.ok) << doubled.error;
  EXPECT_EQ(doubled.containers, 2u);
  ASSERT_EQ(doubled.entries.size(), 2 * single.entries.size());
  const Entry& copy = doubled.entries[single.entries.size()];
  EXPECT_EQ(copy.container, 1u);
  EXPECT_EQ(copy.offset, sample.size() + 8 + single.entries[0].offset);
  EXPECT_EQ(copy.payload, single.entries[0].payload);
}

TEST(HostileInput, ZeroPaddingInsideAContainer) {
  ByteVector bytes = buildContainer({testing::plainElf(90)});
  bytes.insert(bytes.end(), 100, 0);
  storeLittleEndian(bytes, layout::kContainerPayloadSizeAt, 8, bytes.size() - 16);
  const ParseResult result = parse(bytes);
  ASSERT_TRUE(result.ok) << result.error;
  EXPECT_EQ(result.entries.size(), 1u);
}

TEST(HostileInput, GarbageAfterAContainer) {
  ByteVector bytes = readSample("sm90");
  const std::size_t end = bytes.size();
  bytes.insert(bytes.end(), {0, 0, 0, 0, 'j', 'u', 'n', 'k'});
  expectRejected(bytes, end + 4, "truncated container header");
  bytes.insert(bytes.end(), 16, 'x');
  expectRejected(bytes, end + 4, "bad container magic");
}

}  // namespace
}  // namespace agileos::fatbin
