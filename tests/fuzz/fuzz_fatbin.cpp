// libFuzzer target: fatbin::parse and selectForDevice on arbitrary bytes.
//
// Besides the sanitizers' own checks, it aborts when a result breaks what the
// worker relies on: a failure carries a message and no entries; a success
// carries PTX without NULs, ELF images with the ELF magic, payloads within the
// limits, and a selection that points into the entry list.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "worker/fatbin/fatbin_reader.h"

namespace {

using agileos::fatbin::Entry;
using agileos::fatbin::EntryKind;
using agileos::fatbin::Limits;
using agileos::fatbin::ParseResult;
using agileos::fatbin::SelectionPolicy;

void require(bool condition) {
  if (!condition) std::abort();
}

// Smaller than the defaults so that a decompression bomb costs milliseconds,
// not the fuzzer's memory limit; the code paths are the same.
Limits fuzzLimits() {
  Limits limits;
  limits.maxEntries = 256;
  limits.maxDecompressedBytes = 8u << 20;
  limits.maxTotalBytes = 32u << 20;
  return limits;
}

void checkEntry(const Entry& entry, std::size_t inputSize, const Limits& limits) {
  require(entry.offset < inputSize);
  require(!entry.payload.empty() && entry.payload.size() <= limits.maxDecompressedBytes);
  if (entry.kind == EntryKind::kPtx) {
    require(entry.payload.find('\0') == std::string::npos);
  } else {
    require(entry.kind == EntryKind::kElf);
    require(std::string_view(entry.payload).starts_with(agileos::fatbin::kElfMagic));
  }
}

void checkSelection(const ParseResult& result, std::uint32_t deviceSm, SelectionPolicy policy) {
  const Entry* chosen = agileos::fatbin::selectForDevice(result.entries, deviceSm, policy);
  if (chosen == nullptr) return;
  require(chosen >= result.entries.data() && chosen < result.entries.data() + result.entries.size());
  require(chosen->smArch <= deviceSm);
  if (policy == SelectionPolicy::kPtxOnly) require(chosen->kind == EntryKind::kPtx);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const Limits limits = fuzzLimits();
  const ParseResult result = agileos::fatbin::parse({data, size}, limits);
  if (!result.ok) {
    require(!result.error.empty() && result.entries.empty());
    return 0;
  }
  std::size_t total = 0;
  for (const Entry& entry : result.entries) {
    checkEntry(entry, size, limits);
    total += entry.payload.size();
  }
  require(total <= limits.maxTotalBytes);
  for (std::uint32_t deviceSm : {75u, 80u, 90u, 100u}) {
    checkSelection(result, deviceSm, SelectionPolicy::kPreferSass);
    checkSelection(result, deviceSm, SelectionPolicy::kPtxOnly);
  }
  return 0;
}
