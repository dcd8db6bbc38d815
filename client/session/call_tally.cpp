#include "client/session/call_tally.h"

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "proto/wire/wire_operations.h"

namespace agileos::client {
namespace {

// Field numbers of CallRequest's oneof are below this (the table test keeps them so).
constexpr std::size_t kMaxOp = 128;

struct Counts {
  std::array<std::atomic<unsigned long long>, kMaxOp> waited{};
  std::array<std::atomic<unsigned long long>, kMaxOp> notWaited{};
};
// Never destroyed: calls may be made from other exit handlers.
Counts& counts = *new Counts();

void printTally() {
  for (const wire::WireOperation& operation : wire::wireOperations()) {
    const auto op = static_cast<std::size_t>(operation.op);
    if (op >= kMaxOp) continue;
    const unsigned long long waited = counts.waited[op].load(), notWaited = counts.notWaited[op].load();
    if (waited + notWaited == 0) continue;
    std::fprintf(stderr, "[agileos tally] %-28.*s waited %llu, without waiting %llu\n",
                 static_cast<int>(operation.name.size()), operation.name.data(), waited, notWaited);
  }
}

bool enabled() {
  static const bool on = [] {
    const char* value = std::getenv("AGILEOS_CALL_TALLY");
    const bool yes = value != nullptr && std::strcmp(value, "1") == 0;
    if (yes) std::atexit(printTally);
    return yes;
  }();
  return on;
}

}  // namespace

void tallyCall(v1::CallRequest::OpCase op, bool waited) {
  if (!enabled()) return;
  const auto index = static_cast<std::size_t>(op);
  if (index >= kMaxOp) return;
  (waited ? counts.waited : counts.notWaited)[index].fetch_add(1, std::memory_order_relaxed);
}

}  // namespace agileos::client
