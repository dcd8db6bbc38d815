#include "client/library_shim/unsupported.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "client/common/log.h"

namespace agileos::client::library_shim {

const UnsupportedEntry* findUnsupported(std::span<const UnsupportedEntry> entries, const char* symbol) {
  if (symbol == nullptr) return nullptr;
  const auto found = std::lower_bound(
      entries.begin(), entries.end(), symbol,
      [](const UnsupportedEntry& entry, const char* name) { return std::strcmp(entry.symbol, name) < 0; });
  if (found == entries.end() || std::strcmp(found->symbol, symbol) != 0) return nullptr;
  return &*found;
}

int reportUnsupported(std::span<const UnsupportedEntry> entries, const char* library, const char* symbol,
                      int fallback) {
  const UnsupportedEntry* entry = findUnsupported(entries, symbol);
  if (firstTime(std::string("unsupported:") + (symbol != nullptr ? symbol : ""))) {
    if (entry != nullptr) {
      AGILEOS_LOG_WARN("%s is not supported by AgileOS (%s); returning %s", entry->symbol, entry->reason,
                       entry->result_name);
    } else {
      AGILEOS_LOG_WARN("%s: %s has no row in the shim's API table; failing closed", library,
                       symbol != nullptr ? symbol : "(null)");
    }
  }
  return entry != nullptr ? entry->result : fallback;
}

}  // namespace agileos::client::library_shim
