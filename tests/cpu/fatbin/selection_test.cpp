// selectForDevice on real samples and on hand-made entry lists.
#include <gtest/gtest.h>

#include <string_view>

#include "tests/cpu/fatbin/fatbin_test_support.h"
#include "worker/fatbin/fatbin_reader.h"

namespace agileos::fatbin {
namespace {

std::vector<Entry> sampleEntries(std::string_view name) {
  ParseResult result = parse(testing::readSample(name));
  EXPECT_TRUE(result.ok) << result.error;
  return std::move(result.entries);
}

// "ELF 90", "PTX 75", or "none": what was chosen, in one comparable string.
std::string describe(const Entry* entry) {
  if (entry == nullptr) return "none";
  return std::string(entry->kind == EntryKind::kElf ? "ELF " : "PTX ") + std::to_string(entry->smArch);
}

std::string select(const std::vector<Entry>& entries, std::uint32_t deviceSm,
                   SelectionPolicy policy = SelectionPolicy::kPreferSass) {
  return describe(selectForDevice(entries, deviceSm, policy));
}

TEST(Selection, DefaultArchSample) {
  const std::vector<Entry> entries = sampleEntries("default_arch");  // sm_75 SASS + compute_75 PTX
  EXPECT_EQ(select(entries, 75), "ELF 75");
  EXPECT_EQ(select(entries, 80), "PTX 75");
  EXPECT_EQ(select(entries, 90), "PTX 75");
  EXPECT_EQ(select(entries, 70), "none");
  EXPECT_EQ(select(entries, 75, SelectionPolicy::kPtxOnly), "PTX 75");
  EXPECT_EQ(select(entries, 90, SelectionPolicy::kPtxOnly), "PTX 75");
}

TEST(Selection, Sm90Sample) {
  const std::vector<Entry> entries = sampleEntries("sm90");
  EXPECT_EQ(select(entries, 90), "ELF 90");
  EXPECT_EQ(select(entries, 90, SelectionPolicy::kPtxOnly), "PTX 90");
  EXPECT_EQ(select(entries, 75), "none");
  EXPECT_EQ(select(entries, 80), "none");
  EXPECT_EQ(select(entries, 100), "PTX 90");
}

TEST(Selection, MultiGencodeSample) {
  const std::vector<Entry> entries = sampleEntries("multi_gencode");  // SASS 75, 80, 90 + PTX 90
  EXPECT_EQ(select(entries, 75), "ELF 75");
  EXPECT_EQ(select(entries, 80), "ELF 80");
  EXPECT_EQ(select(entries, 90), "ELF 90");
  EXPECT_EQ(select(entries, 86), "none") << "SASS fits only its exact architecture";
  EXPECT_EQ(select(entries, 120), "PTX 90");
  EXPECT_EQ(select(entries, 80, SelectionPolicy::kPtxOnly), "none");
  EXPECT_EQ(select(entries, 90, SelectionPolicy::kPtxOnly), "PTX 90");
}

TEST(Selection, ArchAndFamilySpecificPtxFitOnlyTheirDevices) {
  const std::vector<Entry> entries = sampleEntries("arch_variants");  // sm_90a, compute_90a, compute_100f
  EXPECT_EQ(select(entries, 90), "ELF 90");
  EXPECT_EQ(select(entries, 90, SelectionPolicy::kPtxOnly), "PTX 90");
  EXPECT_EQ(select(entries, 100), "PTX 100");
  EXPECT_EQ(select(entries, 103), "PTX 100") << "same family";
  EXPECT_EQ(select(entries, 110), "none") << "compute_100f is not forward compatible, compute_90a neither";
  EXPECT_EQ(select(entries, 89), "none");
}

TEST(Selection, NewestFittingPtxWinsAndTiesGoToTheFirst) {
  std::vector<Entry> entries(4);
  for (Entry& entry : entries) entry.kind = EntryKind::kPtx;
  entries[0].smArch = 70;
  entries[1].smArch = 80;
  entries[2].smArch = 75;
  entries[3].smArch = 80;
  entries[3].payload = "second compute_80";
  EXPECT_EQ(selectForDevice(entries, 86, SelectionPolicy::kPreferSass), &entries[1]);
  EXPECT_EQ(selectForDevice(entries, 79, SelectionPolicy::kPreferSass), &entries[2]);
  EXPECT_EQ(selectForDevice(entries, 60, SelectionPolicy::kPreferSass), nullptr);
}

TEST(Selection, PtxOnlyNeverReturnsSass) {
  std::vector<Entry> entries(1);
  entries[0].kind = EntryKind::kElf;
  entries[0].smArch = 90;
  EXPECT_EQ(selectForDevice(entries, 90, SelectionPolicy::kPreferSass), &entries[0]);
  EXPECT_EQ(selectForDevice(entries, 90, SelectionPolicy::kPtxOnly), nullptr);
  EXPECT_EQ(selectForDevice({}, 90, SelectionPolicy::kPreferSass), nullptr);
}

}  // namespace
}  // namespace agileos::fatbin
