#include "worker/module_guard.h"

#include <driver_types.h>
#include <spdlog/spdlog.h>

#include "ptx/guard.h"
#include "ptx/parser.h"
#include "ptx/printer.h"

namespace agileos::worker {

std::optional<std::pair<bool, ptx::GuardPolicy>> parseGuardSetting(const std::string& text) {
  if (text == "off") return std::pair{false, ptx::GuardPolicy::kTrap};
  if (auto policy = ptx::parseGuardPolicy(text)) return std::pair{true, *policy};
  return std::nullopt;
}

const char* policyName(const GuardConfig& config) {
  return config.enabled ? ptx::toString(config.ptx.policy) : "off";
}

PreparedImage prepareModuleImage(const std::vector<fatbin::Entry>& entries, std::uint32_t sm,
                                 const GuardConfig& config) {
  PreparedImage prepared;
  const bool guard = config.enabled;
  const fatbin::Entry* entry = fatbin::selectForDevice(
      entries, sm, guard ? fatbin::SelectionPolicy::kPtxOnly : fatbin::SelectionPolicy::kPreferSass);
  if (entry == nullptr && guard) {
    // No PTX to guard: only SASS can be left, and only where the setting allows it.
    const fatbin::Entry* sass = fatbin::selectForDevice(entries, sm, fatbin::SelectionPolicy::kPreferSass);
    if (sass != nullptr && !config.allowSassOnly) {
      prepared.error = cudaErrorNoKernelImageForDevice;
      prepared.detail = "the kernel memory guard needs PTX, and this module offers only SASS (sm_" +
                        std::to_string(sass->smArch) + "): recompile with PTX for compute_" +
                        std::to_string(sm) + " or lower";
      return prepared;
    }
    if (sass != nullptr) {
      spdlog::warn(
          "a module offers only SASS (sm_{}): loaded WITHOUT the memory guard, as this worker allows "
          "(a dedicated context without protected state)",
          sass->smArch);
    }
    entry = sass;
  }
  if (entry == nullptr) {
    prepared.error = cudaErrorNoKernelImageForDevice;
    prepared.detail =
        "fatbin has neither SASS for sm_" + std::to_string(sm) + " nor PTX for an architecture <= it";
    return prepared;
  }
  prepared.smArch = entry->smArch;
  prepared.ptx = entry->kind == fatbin::EntryKind::kPtx;
  if (!guard || !prepared.ptx) {
    prepared.image = entry->payload;
    if (prepared.ptx) prepared.image.push_back('\0');  // the driver reads PTX as a C string
    prepared.ok = true;
    return prepared;
  }
  const ptx::ParseResult parsed = ptx::parse(entry->payload);
  if (!parsed.ok) {
    prepared.error = cudaErrorInvalidPtx;
    prepared.detail = "the module's PTX cannot be parsed for the guard: " + parsed.error;
    return prepared;
  }
  const ptx::GuardResult guarded = ptx::guardModule(parsed.module, config.ptx);
  if (!guarded.ok) {
    prepared.error = cudaErrorInvalidPtx;
    prepared.detail = "the kernel memory guard refuses the module: " + guarded.error;
    return prepared;
  }
  prepared.image = ptx::print(guarded.module);
  prepared.image.push_back('\0');
  prepared.guarded = true;
  prepared.checkedAccesses = guarded.checkedAccesses;
  prepared.ok = true;
  return prepared;
}

}  // namespace agileos::worker
