// Page-by-page hints of one managed allocation (managed_hints.h records and answers them): which
// pages are read-mostly, their preferred location, who accesses them, where they were last
// prefetched. Pure bookkeeping, no CUDA call.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <map>

namespace agileos::client {

// A location as the driver records it: cudaMemLocationType numbering (CUmemLocationType's too),
// kInvalid when none was set.
struct HintLocation {
  int type = cudaMemLocationTypeInvalid;
  int id = 0;
  bool operator==(const HintLocation&) const = default;
};

struct PageHints {
  bool readMostly = false;
  HintLocation preferred;
  bool accessedByDevice = false;  // cudaMemAdviseSetAccessedBy for device 0 (the only device)
  bool accessedByHost = false;    // ... for the host (cudaCpuDeviceId)
  HintLocation lastPrefetch;
  bool operator==(const PageHints&) const = default;
};

class ManagedHints {
 public:
  static constexpr std::uint64_t kPageBytes = 4096;

  // Applies `change` to every page that [offset, offset + bytes) touches (bytes > 0).
  template <typename Change>
  void apply(std::uint64_t offset, std::uint64_t bytes, Change change);

  // What all pages that [offset, offset + bytes) touches share (bytes > 0): each field is set only
  // where every page has it (readMostly and accessedBy* true, a location the same everywhere).
  PageHints common(std::uint64_t offset, std::uint64_t bytes) const;

 private:
  struct Run {
    std::uint64_t end;  // in pages, exclusive
    PageHints hints;
  };
  // Splits runs so that one starts at `page` (a no-op at a run's start or outside every run).
  void splitAt(std::uint64_t page);
  // Disjoint runs of pages with hints, by first page; pages in no run have default hints.
  std::map<std::uint64_t, Run> runs_;
};

template <typename Change>
void ManagedHints::apply(std::uint64_t offset, std::uint64_t bytes, Change change) {
  const std::uint64_t first = offset / kPageBytes;
  const std::uint64_t last = (offset + bytes - 1) / kPageBytes + 1;  // exclusive
  splitAt(first);
  splitAt(last);
  std::uint64_t page = first;
  auto it = runs_.lower_bound(first);
  while (page < last) {
    if (it == runs_.end() || it->first > page) {  // a gap of default pages up to the next run
      const std::uint64_t gapEnd = it == runs_.end() ? last : std::min(it->first, last);
      it = runs_.emplace_hint(it, page, Run{gapEnd, PageHints{}});
    }
    change(it->second.hints);
    page = it->second.end;
    ++it;
  }
}

}  // namespace agileos::client
