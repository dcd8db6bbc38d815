// selectForDevice: which entry of a parsed fatbin a device can load.
#include "worker/fatbin/fatbin_reader.h"

namespace agileos::fatbin {
namespace {

std::uint32_t majorVersion(std::uint32_t sm) { return sm / 10; }

bool sassFits(const Entry& entry, std::uint32_t deviceSm) {
  return entry.kind == EntryKind::kElf && entry.smArch == deviceSm;
}

bool ptxFits(const Entry& entry, std::uint32_t deviceSm) {
  if (entry.kind != EntryKind::kPtx || entry.smArch > deviceSm) return false;
  switch (entry.variant) {
    case ArchVariant::kGeneric:
      return true;
    case ArchVariant::kArchSpecific:
      return entry.smArch == deviceSm;
    case ArchVariant::kFamilySpecific:
      return majorVersion(entry.smArch) == majorVersion(deviceSm);
  }
  return false;
}

}  // namespace

const Entry* selectForDevice(const std::vector<Entry>& entries, std::uint32_t deviceSm,
                             SelectionPolicy policy) {
  if (policy == SelectionPolicy::kPreferSass) {
    for (const Entry& entry : entries) {
      if (sassFits(entry, deviceSm)) return &entry;
    }
  }
  const Entry* newestPtx = nullptr;
  for (const Entry& entry : entries) {
    // Strictly greater: among equal architectures the earliest entry wins.
    if (ptxFits(entry, deviceSm) && (newestPtx == nullptr || entry.smArch > newestPtx->smArch)) {
      newestPtx = &entry;
    }
  }
  return newestPtx;
}

}  // namespace agileos::fatbin
