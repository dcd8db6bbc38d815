#include "client/session/resource_epoch.h"

#include <atomic>

namespace agileos::client {
namespace {
std::atomic<std::uint64_t> epoch{1};
}  // namespace

void noteResourcesReleased() { epoch.fetch_add(1, std::memory_order_acq_rel); }
std::uint64_t resourceEpoch() { return epoch.load(std::memory_order_acquire); }

}  // namespace agileos::client
