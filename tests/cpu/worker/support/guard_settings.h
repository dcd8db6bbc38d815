// The guard settings the module-loading tests prepare images under (module_guard_test.cpp,
// relocatable_stand_in_test.cpp), and a test fatbin's parsed entries.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "memmgr/address_layout.h"
#include "tests/cpu/worker/support/test_fatbins.h"
#include "worker/fatbin/fatbin_reader.h"
#include "worker/module_guard.h"
#include "worker/session_guard.h"

namespace agileos::worker::testing {

// Off; the trap policy; the report policy (which needs the client's guard page: the start of the
// module range here).
enum class GuardMode { kOff, kTrap, kReport };

inline GuardConfig guardConfig(GuardMode mode, bool allowSassOnly = true) {
  GuardConfig c;
  c.enabled = mode != GuardMode::kOff;
  c.ptx = guardOptionsFor(mode == GuardMode::kReport ? ptx::GuardPolicy::kReport : ptx::GuardPolicy::kTrap,
                          mode == GuardMode::kReport ? memmgr::kModuleRange.begin : 0);
  c.allowSassOnly = allowSassOnly;
  return c;
}

// Every entry of a test fatbin, payloads decompressed (a parse failure fails the test).
inline std::vector<fatbin::Entry> entriesOf(TestFatbin which) {
  const std::string bytes = readTestFatbin(which);
  fatbin::ParseResult parsed = fatbin::parse(
      std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
  EXPECT_TRUE(parsed.ok) << parsed.error;
  return std::move(parsed.entries);
}

}  // namespace agileos::worker::testing
