// The reader against fatbins that nvcc 13 builds from inputs/probe_kernels.cu
// (see CMakeLists.txt for the exact nvcc options of each sample).
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "tests/cpu/fatbin/fatbin_test_support.h"
#include "worker/fatbin/fatbin_reader.h"

namespace agileos::fatbin {
namespace {

using testing::kProbeKernels;
using testing::readSample;

ParseResult parseSample(std::string_view name) {
  const testing::ByteVector bytes = readSample(name);
  ParseResult result = parse(bytes);
  EXPECT_TRUE(result.ok) << name << ": " << result.error;
  return result;
}

// Decompressed PTX for `arch`: text whose first directive is `.version`, that
// targets sm_<arch>, declares both probe kernels and carries no NUL padding.
void expectProbePtx(const Entry& entry, std::uint32_t arch) {
  ASSERT_EQ(entry.kind, EntryKind::kPtx);
  EXPECT_EQ(entry.smArch, arch);
  const std::string& ptx = entry.payload;
  ASSERT_FALSE(ptx.empty());
  EXPECT_NE(ptx.back(), '\0');
  EXPECT_EQ(ptx.find('\0'), std::string::npos);
  const std::size_t firstDirective = ptx.find_first_not_of(" \t\r\n");
  ASSERT_NE(firstDirective, std::string::npos);
  EXPECT_EQ(ptx.compare(firstDirective, 9, ".version "), 0) << ptx.substr(0, 200);
  EXPECT_NE(ptx.find(".target sm_" + std::to_string(arch)), std::string::npos);
  for (std::string_view kernel : kProbeKernels) {
    EXPECT_NE(ptx.find(".entry " + std::string(kernel) + "("), std::string::npos) << kernel;
  }
  EXPECT_EQ(entry.versionMajor, 9) << "PTX ISA version of nvcc 13";
}

void expectElf(const Entry& entry, std::uint32_t arch) {
  ASSERT_EQ(entry.kind, EntryKind::kElf);
  EXPECT_EQ(entry.smArch, arch);
  ASSERT_GE(entry.payload.size(), 64u);
  EXPECT_EQ(std::string_view(entry.payload).substr(0, 4), kElfMagic);
  for (std::string_view kernel : kProbeKernels) {
    EXPECT_NE(entry.payload.find(kernel), std::string::npos)
        << kernel << " missing from the ELF symbol table";
  }
}

TEST(SampleFatbin, DefaultArchHasSm75SassAndZstdCompressedPtx) {
  const ParseResult result = parseSample("default_arch");
  ASSERT_EQ(result.entries.size(), 2u);
  EXPECT_EQ(result.containers, 1u);
  EXPECT_EQ(result.skippedEntries, 0u);
  expectElf(result.entries[0], 75);
  EXPECT_EQ(result.entries[0].compression, Compression::kNone);
  expectProbePtx(result.entries[1], 75);
  EXPECT_EQ(result.entries[1].compression, Compression::kZstd);
  EXPECT_EQ(result.entries[1].flags, 0x8011u);
  EXPECT_EQ(result.entries[0].offset, 16u) << "the first entry follows the 16-byte container header";
}

TEST(SampleFatbin, ArchSm90HasSm90SassAndPtx) {
  const ParseResult result = parseSample("sm90");
  ASSERT_EQ(result.entries.size(), 2u);
  expectElf(result.entries[0], 90);
  expectProbePtx(result.entries[1], 90);
  EXPECT_EQ(result.entries[1].compression, Compression::kZstd);
  EXPECT_EQ(result.entries[0].variant, ArchVariant::kGeneric);
}

// One entry per -gencode target; nvcc orders them its own way, so look each up.
TEST(SampleFatbin, MultipleGencodeTargets) {
  const ParseResult result = parseSample("multi_gencode");
  ASSERT_EQ(result.entries.size(), 4u);
  const auto find = [&](EntryKind kind, std::uint32_t arch) -> const Entry* {
    for (const Entry& entry : result.entries) {
      if (entry.kind == kind && entry.smArch == arch) return &entry;
    }
    return nullptr;
  };
  for (std::uint32_t arch : {75u, 80u, 90u}) {
    const Entry* elf = find(EntryKind::kElf, arch);
    ASSERT_NE(elf, nullptr) << "no sm_" << arch << " SASS";
    expectElf(*elf, arch);
  }
  const Entry* ptx = find(EntryKind::kPtx, 90);
  ASSERT_NE(ptx, nullptr) << "no compute_90 PTX";
  expectProbePtx(*ptx, 90);
}

TEST(SampleFatbin, CompressAllCompressesElfWithZstd) {
  const ParseResult result = parseSample("compress_all");
  ASSERT_EQ(result.entries.size(), 2u);
  expectElf(result.entries[0], 90);
  EXPECT_EQ(result.entries[0].compression, Compression::kZstd);
  expectProbePtx(result.entries[1], 90);
  EXPECT_EQ(result.entries[1].compression, Compression::kZstd);
}

TEST(SampleFatbin, UncompressedEntriesLoseTheirNulPadding) {
  const ParseResult result = parseSample("uncompressed");
  ASSERT_EQ(result.entries.size(), 2u);
  expectElf(result.entries[0], 90);
  EXPECT_EQ(result.entries[0].compression, Compression::kNone);
  expectProbePtx(result.entries[1], 90);
  EXPECT_EQ(result.entries[1].compression, Compression::kNone);
}

TEST(SampleFatbin, Lz4CompressedEntries) {
  const ParseResult result = parseSample("lz4");
  ASSERT_EQ(result.entries.size(), 2u);
  expectElf(result.entries[0], 90);
  EXPECT_EQ(result.entries[0].compression, Compression::kLz4);
  expectProbePtx(result.entries[1], 90);
  EXPECT_EQ(result.entries[1].compression, Compression::kLz4);
}

// The same compilation stored four ways must decompress to the same bytes.
TEST(SampleFatbin, EveryCompressionYieldsTheSamePayloads) {
  const ParseResult reference = parseSample("uncompressed");
  ASSERT_EQ(reference.entries.size(), 2u);
  for (std::string_view name : {"sm90", "compress_all", "lz4"}) {
    const ParseResult other = parseSample(name);
    ASSERT_EQ(other.entries.size(), 2u) << name;
    EXPECT_EQ(other.entries[1].payload, reference.entries[1].payload) << name << ": PTX differs";
    EXPECT_EQ(other.entries[0].payload, reference.entries[0].payload) << name << ": ELF differs";
  }
}

TEST(SampleFatbin, ArchAndFamilySpecificVariants) {
  const ParseResult result = parseSample("arch_variants");
  ASSERT_EQ(result.entries.size(), 3u);
  std::size_t seen = 0;
  for (const Entry& entry : result.entries) {
    if (entry.kind == EntryKind::kElf) {
      expectElf(entry, 90);
      EXPECT_EQ(entry.variant, ArchVariant::kArchSpecific);
      ++seen;
    } else if (entry.smArch == 90) {
      expectProbePtx(entry, 90);  // `.target sm_90a` starts with `.target sm_90`
      EXPECT_EQ(entry.variant, ArchVariant::kArchSpecific);
      ++seen;
    } else {
      expectProbePtx(entry, 100);
      EXPECT_EQ(entry.variant, ArchVariant::kFamilySpecific);
      ++seen;
    }
  }
  EXPECT_EQ(seen, 3u);
}

TEST(SampleFatbin, LtoIrEntriesAreCountedAndSkipped) {
  const ParseResult result = parseSample("with_lto_ir");
  EXPECT_EQ(result.skippedEntries, 1u);
  ASSERT_EQ(result.entries.size(), 1u);
  expectElf(result.entries[0], 90);
}

// An executable's .nv_fatbin holds one container per linked translation unit
// (nvcc's static runtime brings its own), back to back.
TEST(SampleFatbin, ProgramSectionHoldsSeveralContainers) {
  const ParseResult result = parseSample("program_section");
  EXPECT_GE(result.containers, 2u);
  std::vector<const Entry*> probeEntries;
  for (const Entry& entry : result.entries) {
    EXPECT_LT(entry.container, result.containers);
    if (entry.payload.find(kProbeKernels[0]) != std::string::npos) probeEntries.push_back(&entry);
  }
  ASSERT_EQ(probeEntries.size(), 2u) << "sm_90 SASS and compute_90 PTX of probe_kernels.cu";
  EXPECT_EQ(probeEntries[0]->container, probeEntries[1]->container) << "one translation unit, one container";
  for (const Entry* entry : probeEntries) {
    if (entry->kind == EntryKind::kPtx) {
      expectProbePtx(*entry, 90);
    } else {
      expectElf(*entry, 90);
    }
  }
}

}  // namespace
}  // namespace agileos::fatbin
