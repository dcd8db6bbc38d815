// Runs one compilation in agileos-nvrtc-compiler (worker/adapters/nvrtc/compiler/), the jailed helper
// process, for the NVRTC adapter (and the CPU tests, which call it with no source policy in
// front, so that the jail alone is what they test).
//
// Invariants:
// - Every compilation gets a fresh process; it is started with posix_spawn (no fork of the
//   multi-threaded worker), with stdin/stdout/stderr on pipes and no other descriptor, default
//   signal dispositions, an empty signal mask, its own process group and an environment of
//   LD_LIBRARY_PATH and the sanitizers' options only.
// - The call is bounded: a wall-clock deadline, after which the process group is SIGKILLed, and
//   caps on the result and on stderr; the process is always reaped before the call returns.
// - Only an exit status of 0 with a well-formed result (nvrtc_wire.h) counts as a result; any
//   other ending (the jail refused, a crash, a limit, the deadline) is a failure with a reason.
#pragma once

#include <optional>
#include <string>

#include "worker/adapters/nvrtc/nvrtc_wire.h"

namespace agileos::adapters::nvrtc {

struct CompilerSettings {
  std::string executable;             // the helper's path
  unsigned cpuSeconds = 60;           // RLIMIT_CPU for the compilation
  unsigned memoryMb = 4096;           // RLIMIT_AS of the helper process (NVRTC included)
  unsigned timeoutSeconds = 0;        // wall clock; 0: 2 * cpuSeconds + 10
  unsigned uid = 65534, gid = 65534;  // the ids a root-started helper drops to
};

// The settings from the worker's environment: AGILEOS_NVRTC_COMPILER (default: the directory of
// /proc/self/exe, then agileos-nvrtc-compiler), AGILEOS_NVRTC_CPU_SECONDS,
// AGILEOS_NVRTC_MEMORY_MB, AGILEOS_NVRTC_TIMEOUT_S, AGILEOS_NVRTC_UID, AGILEOS_NVRTC_GID.
// A value that does not parse or is out of range is ignored with the default kept; *warnings
// gets a line for each.
CompilerSettings compilerSettingsFromEnvironment(std::string* warnings);

struct CompilerOutcome {
  std::optional<CompileResult> result;  // set only when the helper finished and its reply parsed
  nvrtcResult failureStatus = NVRTC_ERROR_INTERNAL_ERROR;  // when there is no result
  std::string failure;      // why there is no result, for the client's log (no host detail)
  std::string diagnostics;  // the helper's exit and its stderr (bounded), for the worker's log
};

CompilerOutcome runCompiler(const CompilerSettings& settings, const CompileRequest& request);

}  // namespace agileos::adapters::nvrtc
