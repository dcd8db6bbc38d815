// AgileOS's own entry points (client/include/agileos/guard.h), exported in the version
// node AGILEOS_1 (agileos_extensions.map). They ask the worker (GuardStatusQuery).
#include <algorithm>
#include <cstring>

#include "agileos/guard.h"
#include "client/session/error_state.h"
#include "client/session/worker_calls.h"

namespace {

cudaError_t queryGuard(agileos::v1::GuardStatus* status) {
  agileos::v1::CallRequest request;
  request.mutable_guard_status_query();
  agileos::v1::CallReply reply;
  // Not recorded as the last error: a status query must not change the program's error state.
  const cudaError_t error = agileos::client::invokeStatusQuery(request, &reply);
  if (error != cudaSuccess) return error;
  if (!reply.has_guard_status()) return cudaErrorUnknown;
  *status = reply.guard_status();
  return cudaSuccess;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) cudaError_t agileosGuardStatus(int* canaryIntact,
                                                                                 unsigned long long* hits,
                                                                                 char* policy,
                                                                                 size_t policyBytes) {
  agileos::v1::GuardStatus status;
  if (const cudaError_t error = queryGuard(&status); error != cudaSuccess) return error;
  if (canaryIntact != nullptr)
    *canaryIntact = status.canary_address() == 0 ? -1 : (status.canary_intact() ? 1 : 0);
  if (hits != nullptr) *hits = status.hits();
  if (policy != nullptr && policyBytes > 0) {
    const std::size_t n = std::min(policyBytes - 1, status.policy().size());
    std::memcpy(policy, status.policy().data(), n);
    policy[n] = '\0';
  }
  return cudaSuccess;
}

extern "C" __attribute__((visibility("default"))) cudaError_t agileosGuardCanary(unsigned long long* address,
                                                                                 unsigned long long* bytes) {
  agileos::v1::GuardStatus status;
  if (const cudaError_t error = queryGuard(&status); error != cudaSuccess) return error;
  if (status.canary_address() == 0) return cudaErrorNotSupported;
  if (address != nullptr) *address = status.canary_address();
  if (bytes != nullptr) *bytes = status.canary_bytes();
  return cudaSuccess;
}
