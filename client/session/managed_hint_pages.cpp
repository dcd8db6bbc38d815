#include "client/session/managed_hint_pages.h"

#include <iterator>

namespace agileos::client {

void ManagedHints::splitAt(std::uint64_t page) {
  auto it = runs_.upper_bound(page);
  if (it == runs_.begin()) return;
  --it;
  if (it->first == page || it->second.end <= page) return;
  Run tail = it->second;
  it->second.end = page;
  runs_.emplace(page, tail);
}

PageHints ManagedHints::common(std::uint64_t offset, std::uint64_t bytes) const {
  const std::uint64_t first = offset / kPageBytes;
  const std::uint64_t last = (offset + bytes - 1) / kPageBytes + 1;
  bool any = false;
  PageHints shared;
  const auto meet = [&](const PageHints& page) {
    if (!any) {
      shared = page;
      any = true;
      return;
    }
    shared.readMostly = shared.readMostly && page.readMostly;
    shared.accessedByDevice = shared.accessedByDevice && page.accessedByDevice;
    shared.accessedByHost = shared.accessedByHost && page.accessedByHost;
    if (!(shared.preferred == page.preferred)) shared.preferred = HintLocation{};
    if (!(shared.lastPrefetch == page.lastPrefetch)) shared.lastPrefetch = HintLocation{};
  };
  std::uint64_t page = first;
  auto it = runs_.upper_bound(first);
  if (it != runs_.begin() && std::prev(it)->second.end > first) --it;
  while (page < last) {
    if (it == runs_.end() || it->first > page) {  // pages with default hints
      meet(PageHints{});
      page = it == runs_.end() ? last : it->first;
      continue;
    }
    meet(it->second.hints);
    page = it->second.end;
    ++it;
  }
  return shared;
}

}  // namespace agileos::client
