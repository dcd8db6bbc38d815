// A counter of the moments this process may have released something a library call could
// name: device memory (cudaFree), streams (cudaStreamDestroy), everything (cudaDeviceReset).
// The library shims read it (agileos_resource_epoch) to tell a call whose arguments the worker
// already accepted, with nothing released since, from one it must wait for: only the former may
// be sent without waiting. The worker checks every call either way; the epoch only decides when
// the program learns of a refusal (UNTRUSTED side).
#pragma once

#include <cstdint>

namespace agileos::client {

// Called before the release is sent, so a call that read the old value was sent before it.
void noteResourcesReleased();
std::uint64_t resourceEpoch();

}  // namespace agileos::client
