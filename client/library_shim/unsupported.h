// Fail-closed entry points of every shim (UNTRUSTED side; client/cudart, client/cufft,
// client/nvrtc).
//
// Each shim's API table (<library>_api.tsv) declares which exported functions fail closed
// (refused or unsupported), why, and what they return; cmake/api_surface/generate_api_surface.py
// turns those rows into an UnsupportedEntry table, the stubs of the unsupported rows and a
// per-library reportUnsupported(symbol) that calls the one below. Stubs and hand-written
// definitions only name themselves, so no reason text or code is written twice.
#pragma once

#include <span>

namespace agileos::client::library_shim {

struct UnsupportedEntry {
  const char* symbol;
  const char* reason;
  int result;               // what the entry point returns (CUFFT_NOT_SUPPORTED, ...)
  const char* result_name;  // that code's name, for the log
};

// The row of `symbol` in `entries` (sorted by symbol in strcmp order), or null.
const UnsupportedEntry* findUnsupported(std::span<const UnsupportedEntry> entries, const char* symbol);

// The first time `symbol` is reported in this process, logs (warn level, stderr)
//   "<symbol> is not supported by AgileOS (<reason>); returning <code name>"
// and returns its row's code on every call. A symbol without a row (a typo in a hand-written
// definition) is logged as such and returns `fallback`: still a failure.
int reportUnsupported(std::span<const UnsupportedEntry> entries, const char* library, const char* symbol,
                      int fallback);

}  // namespace agileos::client::library_shim
