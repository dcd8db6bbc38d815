// Identifiers the daemon mints. Both are monotonic within one daemon run and never reused,
// so a stale id can never name a newer client or worker.
#pragma once

#include <cstdint>

namespace agileos::scheduler {

using ClientId = std::uint64_t;  // 0 is never minted; it means "no client"
using WorkerId = std::uint64_t;  // 0 is never minted; it means "no worker"

}  // namespace agileos::scheduler
