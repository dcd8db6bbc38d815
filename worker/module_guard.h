// The kernel memory guard on the worker's code-loading path.
//
// GuardConfig is one client's setting (from the daemon's attach; the policy the daemon
// admitted, with the addresses of the client's guard state in protected memory): with
// the guard on, a fatbin's PTX for the device is parsed, rewritten by ptx::guardModule,
// printed, and the printed text is checked as the driver will read it
// (ptx::checkEmittedText: parsed afresh, equal to the module the guard checked, no unguarded
// access) before it is what the driver JIT-compiles; SASS is never loaded unless the module
// has no usable PTX, the setting allows SASS-only modules AND the client's context holds no
// protected state (GuardConfig::protectedState). Whether unguarded code may load at all is
// decided by the one gate every loading path goes through (worker/handlers/module_loading.h),
// which fills in protectedState; this function only prepares the image.
//
// Thread-safety: prepareModuleImage() is pure apart from logging.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ptx/guard.h"
#include "ptx/managed_variables.h"
#include "ptx/module_link.h"
#include "worker/fatbin/fatbin_reader.h"

namespace agileos::worker {

struct GuardConfig {
  bool enabled = false;  // off: modules load as they are
  // false (guard.require = protected_state): only while the client's context holds
  // protected state; true: every module.
  bool always = true;
  ptx::GuardOptions ptx;  // the policy and, except for trap, the client's guard state
  // guard.sass_only = allow: a module with only SASS may load unguarded, but never while
  // protectedState is set, whatever this says.
  bool allowSassOnly = true;
  // Whether the client's context holds protected state now (set by the gate, not by the
  // attach): SASS-only code is refused then.
  bool protectedState = false;
  // The client's protected modules' device code (load order, with their constants): linked
  // into every module of the client that defines their placeholders (ptx/module_link.h). With
  // any, a module must offer PTX (SASS cannot be linked) and is always parsed.
  std::vector<ptx::DeviceModule> deviceModules;
  // The client registered __managed__ variables for this module (ModuleLoad): its PTX is loaded,
  // whatever the guard setting, with the variables rewritten (ptx/managed_variables.h); SASS
  // would give them the driver's own managed memory, which the client cannot reach.
  bool managedVariables = false;
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
  std::size_t linkedFunctions = 0;                // module placeholders replaced by trusted code
  std::vector<ptx::KernelTensorMaps> tensorMaps;  // guarded: kernels with tensor-map parameters
  // Every parsed PTX image has its __managed__ variables rewritten (ptx/managed_variables.h)
  // before the link and the guard: these are they, for the loader to bind.
  std::vector<ptx::ManagedVariable> managedVariables;
};

// The kernels whose PTX (the fatbin's PTX entry for `sm`, whichever entry loads; for a separately
// compiled image without one, its relocatable objects' PTX) uses system-scope atomics
// (ptx/system_atomics.h); empty when none do, when there is no such PTX or when it cannot be read.
// A hint for the client (FunctionInfo.system_scope_atomics), never a decision here. The objects are
// parsed for this at every load of such an image (the stand-in parses them only when it is needed).
std::vector<std::string> systemAtomicKernels(const std::vector<fatbin::Entry>& entries, std::uint32_t sm,
                                             const std::vector<std::string_view>& relocatableObjects = {});

// Chooses the fatbin entry for a device of compute capability `sm` and prepares it per `config`.
PreparedImage prepareModuleImage(const std::vector<fatbin::Entry>& entries, std::uint32_t sm,
                                 const GuardConfig& config);

// The same for a separately compiled (-rdc) image whose relocatable objects' PTX may stand in
// (worker/fatbin/relocatable_objects.h): `entries` are the linked image's, prepared first. Only
// when they cannot load for want of PTX (cudaErrorNoKernelImageForDevice, and no PTX for the device
// among them) are the objects (the client's bytes) parsed and their PTX prepared instead, under
// the same config: one object's PTX as it is,
// several objects' PTX merged into one module (ptx/object_merge.h). Its own refusal then says that
// the relocatable PTX was tried. Where the linked SASS may load, it does: the stand-in never
// replaces code that would run.
PreparedImage prepareModuleImage(const std::vector<fatbin::Entry>& entries, std::uint32_t sm,
                                 const GuardConfig& config,
                                 const std::vector<std::string_view>& relocatableObjects);

// The last step of a guarded preparation (prepareModuleImage ends with it): prints
// `guarded.module`, checks the text as the driver will read it (ptx::checkEmittedText with the
// `options` the module was guarded with) and fills `prepared` (image with its NUL, guarded,
// checkedAccesses, ok). A text the check refuses is never returned: `prepared` gets
// cudaErrorInvalidPtx and the reason, and false is returned.
bool emitGuardedImage(const ptx::GuardResult& guarded, const ptx::GuardOptions& options,
                      PreparedImage* prepared);

}  // namespace agileos::worker
