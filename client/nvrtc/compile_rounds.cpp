#include "client/nvrtc/compile_rounds.h"

#include "client/nvrtc/include_options.h"

namespace agileos::client::nvrtc_shim {

nvrtcResult compileWithIncludes(const ProgramText& program, const std::vector<std::string>& options,
                                const CompileOnce& once, const FileReader& reader) {
  const IncludeOptions split = splitIncludeOptions(options);
  HeaderSet headers(program.name, program.source.size(), program.headers, program.includeNames,
                    split.includePaths, reader);
  headers.addIncludesOf(program.name, program.source);
  for (std::size_t i = 0; i < program.headers.size(); ++i)
    headers.addIncludesOf(program.includeNames[i], program.headers[i]);

  std::string log;
  nvrtcResult result = once(headers.headers(), headers.includeNames(), split.forwarded, &log);
  for (int round = 1; round < kMaxRounds && result == NVRTC_ERROR_COMPILATION; ++round) {
    bool added = false;
    for (const MissingHeader& missing : missingHeadersIn(log)) added = headers.addMissing(missing) || added;
    if (!added) break;
    result = once(headers.headers(), headers.includeNames(), split.forwarded, &log);
  }
  return result;
}

}  // namespace agileos::client::nvrtc_shim
