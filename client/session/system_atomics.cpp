#include "client/session/system_atomics.h"

#include <algorithm>
#include <mutex>
#include <set>
#include <thread>

#include "client/common/log.h"
#include "client/session/host_allocations.h"
#include "client/session/stream_event_calls.h"

namespace agileos::client {
namespace {

// Kernels found waiting for the host (kSystemAtomicsWaitLimit passed): launched without the wait.
struct WaitingKernels {
  std::mutex mutex;
  std::set<std::uint64_t> functions;
};

WaitingKernels& waitingKernels() {
  static auto* instance = new WaitingKernels;  // never destroyed: launches may come in exit handlers
  return *instance;
}

bool knownToWait(std::uint64_t function) {
  WaitingKernels& kernels = waitingKernels();
  std::lock_guard lock(kernels.mutex);
  return kernels.functions.contains(function);
}

}  // namespace

void runBeforeTheHost(std::uint64_t function, cudaStream_t stream, DefaultStream spelling) {
  if (!HostAllocations::instance().holdsManaged() || knownToWait(function)) return;
  cudaEvent_t finished = nullptr;
  if (createEvent(cudaEventDisableTiming, &finished) != cudaSuccess) return;
  if (recordEvent(finished, stream, 0, spelling) == cudaSuccess) {
    const auto deadline = std::chrono::steady_clock::now() + kSystemAtomicsWaitLimit;
    auto pause = std::chrono::microseconds(20);
    cudaError_t state = queryEvent(finished);
    while (state == cudaErrorNotReady && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(1000));
      state = queryEvent(finished);
    }
    if (state == cudaErrorNotReady) {
      {
        WaitingKernels& kernels = waitingKernels();
        std::lock_guard lock(kernels.mutex);
        kernels.functions.insert(function);
      }
      AGILEOS_LOG_WARN(
          "a kernel with system-scope atomics still runs %lld s after its launch: taken to wait for the "
          "host, it is launched without waiting from now on (its atomics on managed memory are then not "
          "atomic against the host's)",
          static_cast<long long>(kSystemAtomicsWaitLimit.count()));
    }
  }
  destroyEvent(finished);
}

}  // namespace agileos::client
