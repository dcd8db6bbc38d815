// The kernel memory guard on the worker's code-loading path (issue 4, first wiring).
//
// GuardConfig is the worker's setting (`--guard=off|trap`; report is refused by the worker
// until its counter is read,
// `--guard-sass-only=allow|refuse`, from the daemon's worker.args): with the guard on,
// a fatbin's PTX for the device is parsed, rewritten by ptx::guardModule and the
// rewritten text is what the driver JIT-compiles; SASS is never loaded unless the
// module has no usable PTX and the setting allows SASS-only modules (a dedicated
// context with no protected state: the logs say the module runs unguarded).
//
// Thread-safety: prepareModuleImage() is pure apart from logging.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "worker/fatbin/fatbin_reader.h"

namespace agileos::worker {

struct GuardConfig {
  enum class Mode : std::uint8_t { kOff, kTrap, kReport };
  Mode mode = Mode::kOff;
  bool allowSassOnly = true;
};

const char* toString(GuardConfig::Mode mode);
std::optional<GuardConfig::Mode> parseGuardMode(const std::string& text);

struct PreparedImage {
  bool ok = false;
  int error = 0;       // cudaError_t when !ok
  std::string detail;  // why, for the client's log
  std::string image;   // what the driver loads (PTX with its NUL, or an ELF cubin)
  bool guarded = false;
  std::size_t checkedAccesses = 0;
  std::uint32_t smArch = 0;
  bool ptx = false;
};

// Chooses the fatbin entry for a device of compute capability `sm` and prepares it per `config`.
PreparedImage prepareModuleImage(const std::vector<fatbin::Entry>& entries, std::uint32_t sm,
                                 const GuardConfig& config);

}  // namespace agileos::worker
