// The include-path options of an nvrtcCompileProgram call (UNTRUSTED side).
//
// The worker's NVRTC can read no file of the client (it runs in a jail on another machine's
// file system), so include paths are resolved here, in the program's own process, which reads
// exactly the files native NVRTC would have read for it (include_resolver.h); the worker gets
// the headers, never the paths. Every spelling NVRTC accepts is taken out of what is sent:
// `-I dir` (two options), `-Idir`, `-I=dir`, `--include-path=dir`, `--include-path dir`. An
// empty directory (a trailing `-I`, `--include-path=`) is the working directory, as in NVRTC.
// Repeats of a directory are dropped (NVRTC would search it again and find the same files).
#pragma once

#include <string>
#include <vector>

namespace agileos::client::nvrtc_shim {

struct IncludeOptions {
  std::vector<std::string> includePaths;  // in the order given, each once
  std::vector<std::string> forwarded;     // every other option, in order, for the worker
};

IncludeOptions splitIncludeOptions(const std::vector<std::string>& options);

}  // namespace agileos::client::nvrtc_shim
