// The guard options every PTX test and fuzzer uses: the worker's layout (memmgr/address_layout.h)
// with the guard state where a client's guard page would put it, so tests check exactly the
// rewrite the worker makes. Header only: the fuzzers in tests/fuzz include it too.
#pragma once

#include "memmgr/address_layout.h"
#include "ptx/guard.h"

namespace agileos::ptx::testing {

inline constexpr GuardPolicy kAllPolicies[] = {GuardPolicy::kTrap, GuardPolicy::kRemapOr,
                                               GuardPolicy::kPoison, GuardPolicy::kSink,
                                               GuardPolicy::kReport};

inline GuardOptions guardOptions(GuardPolicy policy = GuardPolicy::kTrap) {
  GuardOptions o;
  o.policy = policy;
  o.protectedBegin = memmgr::kIoAperture.begin;
  o.protectedEnd = memmgr::kModuleRange.end();
  o.hitCounter = memmgr::kModuleRange.begin;
  o.sink = memmgr::kModuleRange.begin + 0x10000;
  o.redirectLimit = 0x40000;
  o.faultWindow = memmgr::kGuardFaultWindow.begin;
  o.remapBase = memmgr::kUserRange.begin;
  o.remapMask = 0x1fffff;
  return o;
}

}  // namespace agileos::ptx::testing
