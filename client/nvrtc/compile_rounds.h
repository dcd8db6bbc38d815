// nvrtcCompileProgram with include paths (UNTRUSTED side): the headers a program's includes
// name are found in this process (include_options.h, include_resolver.h) and sent with the
// program; the worker never sees an include path.
//
// First the source's and every supplied header's literal includes are followed; then, while
// NVRTC fails and its log names a header it could not open that the program's directories
// hold, that header is added and the program compiled again, at most kMaxRounds times in all.
// The program keeps what the last compilation produced (log, outputs), so its log is NVRTC's
// own for that compilation and never mentions the earlier ones; a header found nowhere stays
// missing and the log says so in NVRTC's words.
#pragma once

#include <nvrtc.h>

#include <functional>
#include <string>
#include <vector>

#include "client/nvrtc/include_resolver.h"

namespace agileos::client::nvrtc_shim {

inline constexpr int kMaxRounds = 32;

struct ProgramText {
  const std::string& source;
  const std::string& name;
  const std::vector<std::string>& headers;  // the program's own (nvrtcCreateProgram)
  const std::vector<std::string>& includeNames;
};

// One compilation in the worker, with these headers and options; fills *log with its log.
using CompileOnce = std::function<nvrtcResult(const std::vector<std::string>& headers,
                                              const std::vector<std::string>& includeNames,
                                              const std::vector<std::string>& options, std::string* log)>;

// Compiles `program` with the application's `options` through `once`; returns the last status.
nvrtcResult compileWithIncludes(const ProgramText& program, const std::vector<std::string>& options,
                                const CompileOnce& once, const FileReader& reader = readRegularFile);

}  // namespace agileos::client::nvrtc_shim
