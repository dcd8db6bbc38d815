#include "worker/adapters/nvrtc/compiler/jail.h"

namespace agileos::adapters::nvrtc::jail {

std::string lockDown(const Limits& limits) {
  // Order matters: descriptors first (none may survive into the namespaces to name a host
  // directory), then the empty root (needs capabilities), then the privilege drop, then the
  // limits, and the seccomp filter last (it forbids the system calls the steps before use).
  if (std::string error = closeExtraDescriptors(); !error.empty()) return error;
  bool privileged = false;
  if (std::string error = enterEmptyRoot(limits, &privileged); !error.empty()) return error;
  if (std::string error = dropPrivileges(limits, privileged); !error.empty()) return error;
  if (std::string error = applyLimits(limits); !error.empty()) return error;
  return installSeccompFilter();
}

}  // namespace agileos::adapters::nvrtc::jail
