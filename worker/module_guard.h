// The kernel memory guard on the worker's code-loading path.
//
// GuardConfig is one client's setting (from the daemon's attach; the policy the daemon
// admitted, with the addresses of the client's guard state in protected memory): with
// the guard on, a fatbin's PTX for the device is parsed, rewritten by ptx::guardModule
// and the rewritten text is what the driver JIT-compiles; SASS is never loaded unless
// the module has no usable PTX and the setting allows SASS-only modules (a dedicated
// context with no protected state: the logs say the module runs unguarded).
//
// Thread-safety: prepareModuleImage() is pure apart from logging.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ptx/guard.h"
#include "ptx/module_link.h"
#include "worker/fatbin/fatbin_reader.h"

namespace agileos::worker {

struct GuardConfig {
  bool enabled = false;  // off: modules load as they are
  // false (guard.require = protected_state): only while the client's context holds
  // protected state; true: every module.
  bool always = true;
  ptx::GuardOptions ptx;  // the policy and, except for trap, the client's guard state
  bool allowSassOnly = true;
  // The client's protected modules' device code (load order, with their constants): linked
  // into every module of the client that defines their placeholders (ptx/module_link.h). With
  // any, a module must offer PTX (SASS cannot be linked) and is always parsed.
  std::vector<ptx::DeviceModule> deviceModules;
};

// "off" or a policy name (ptx::parseGuardPolicy) -> whether the guard is on, and its policy.
std::optional<std::pair<bool, ptx::GuardPolicy>> parseGuardSetting(const std::string& text);
const char* policyName(const GuardConfig& config);  // "off" or the policy

struct PreparedImage {
  bool ok = false;
  int error = 0;       // cudaError_t when !ok
  std::string detail;  // why, for the client's log
  std::string image;   // what the driver loads (PTX with its NUL, or an ELF cubin)
  bool guarded = false;
  std::size_t checkedAccesses = 0;
  std::uint32_t smArch = 0;
  bool ptx = false;
  std::size_t linkedFunctions = 0;  // module placeholders replaced by trusted code
};

// Chooses the fatbin entry for a device of compute capability `sm` and prepares it per `config`.
PreparedImage prepareModuleImage(const std::vector<fatbin::Entry>& entries, std::uint32_t sm,
                                 const GuardConfig& config);

}  // namespace agileos::worker
