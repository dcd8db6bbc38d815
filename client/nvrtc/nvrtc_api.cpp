// libagileos_nvrtc.so: the implemented NVRTC entry points (the `implemented` rows of
// client/nvrtc/nvrtc_api.tsv). UNTRUSTED side: programs are kept in this process
// (client/nvrtc/program.h); only the compilation and the library queries go to the worker's
// NVRTC adapter (proto/adapters/nvrtc_operations.h: names, argument order and kinds).
#include <nvrtc.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "client/library_shim/library_call_client.h"
#include "client/nvrtc/compile_rounds.h"
#include "client/nvrtc/library_facts.h"
#include "client/nvrtc/program.h"
#include "client/nvrtc/worker_calls.h"

namespace agileos::client::nvrtc_shim {
namespace {

using library_shim::LibraryReply;

// Pointers to the strings of `strings`, for a TEXTS value.
std::vector<const char*> pointersTo(const std::vector<std::string>& strings) {
  std::vector<const char*> pointers;
  pointers.reserve(strings.size());
  for (const std::string& s : strings) pointers.push_back(s.c_str());
  return pointers;
}

// Runs one compilation of `program` (its mutex held) in the worker, with `headerTexts` under
// `headerNames` (the program's own and those found in this process) and `options` (without
// include paths), and keeps what it produced.
nvrtcResult compileOnce(Program& program, const std::vector<std::string>& headerTexts,
                        const std::vector<std::string>& headerNames,
                        const std::vector<std::string>& options) {
  const std::vector<const char*> headers = pointersTo(headerTexts);
  const std::vector<const char*> includeNames = pointersTo(headerNames);
  const std::vector<const char*> optionTexts = pointersTo(options);
  const std::vector<const char*> expressions = pointersTo(program.nameExpressions);
  const agileos_value args[] = {
      library_shim::textValue(program.source), library_shim::textValue(program.name),
      library_shim::textsValue(headers),       library_shim::textsValue(includeNames),
      library_shim::textsValue(optionTexts),   library_shim::textsValue(expressions),
  };
  const LibraryReply reply =
      LibraryReply::call(names::kLibrary, "nvrtcCompileProgram", names::kCompile, args);
  const int status = reply.status(kCodes);

  // -> log (text), PTX (blob), CUBIN (blob), lowered names (texts, one per name expression),
  //    LTO IR (blob; absent from a worker that predates it, which returns none)
  std::string log, ptx, cubin, ltoir;
  std::vector<std::string> lowered;
  const bool hasLog = reply.text(0, &log);
  const bool complete = hasLog && reply.blob(1, &ptx) && reply.blob(2, &cubin) && reply.texts(3, &lowered) &&
                        lowered.size() == program.nameExpressions.size() &&
                        (reply.resultCount() < 5 || reply.blob(4, &ltoir));
  // A compilation the worker answered counts as one, successful or not (as in NVRTC, no name
  // expression may be added after it); one that never reached the worker does not.
  if (reply.answered()) program.compileAttempted = true;
  const bool succeeded = status == NVRTC_SUCCESS && complete;
  program.compiled = succeeded;
  program.log = hasLog ? std::move(log) : std::string();
  if (succeeded) {
    if (ptx.empty() || ptx.back() != '\0') ptx.push_back('\0');
    program.ptx = std::move(ptx);
    program.cubin = std::move(cubin);
    program.ltoir = std::move(ltoir);
    program.loweredNames = std::move(lowered);
  } else {
    program.ptx.assign(1, '\0');
    program.cubin.clear();
    program.ltoir.clear();
    program.loweredNames.clear();
  }
  if (status == NVRTC_SUCCESS && !complete) return asResult(reply.malformed(kCodes));
  return asResult(status);
}

// Compiles `program` (its mutex held) with `options` as given by the application: include paths
// resolved here (compile_rounds.h), the rest sent to the worker.
nvrtcResult compile(Program& program, const std::vector<std::string>& options) {
  const ProgramText text{program.source, program.name, program.headers, program.includeNames};
  return compileWithIncludes(
      text, options,
      [&](const std::vector<std::string>& headers, const std::vector<std::string>& names,
          const std::vector<std::string>& forwarded, std::string* log) {
        const nvrtcResult result = compileOnce(program, headers, names, forwarded);
        *log = program.log;
        return result;
      });
}

// Copies `bytes` to `out` for nvrtcGetPTX and friends.
nvrtcResult copyOut(const std::string& bytes, char* out) {
  if (out == nullptr) return NVRTC_ERROR_INVALID_INPUT;
  if (!bytes.empty()) std::memcpy(out, bytes.data(), bytes.size());
  return NVRTC_SUCCESS;
}

// Runs `read` on the program `prog` names, under its mutex.
template <typename Read>
nvrtcResult withProgram(nvrtcProgram prog, Read read) {
  const std::shared_ptr<Program> program = programs().find(prog);
  if (!program) return NVRTC_ERROR_INVALID_PROGRAM;
  std::lock_guard lock(program->mutex);
  return read(*program);
}

}  // namespace
}  // namespace agileos::client::nvrtc_shim

namespace shim = agileos::client::nvrtc_shim;

// --- library --------------------------------------------------------------------------------

AGILEOS_SHIM_EXPORT const char* nvrtcGetErrorString(nvrtcResult result) {
  // The strings libnvrtc.so.13 returns (tests/cpu/library_shims compares every code with it).
  switch (result) {
    case NVRTC_SUCCESS:
      return "NVRTC_SUCCESS";
    case NVRTC_ERROR_OUT_OF_MEMORY:
      return "NVRTC_ERROR_OUT_OF_MEMORY";
    case NVRTC_ERROR_PROGRAM_CREATION_FAILURE:
      return "NVRTC_ERROR_PROGRAM_CREATION_FAILURE";
    case NVRTC_ERROR_INVALID_INPUT:
      return "NVRTC_ERROR_INVALID_INPUT";
    case NVRTC_ERROR_INVALID_PROGRAM:
      return "NVRTC_ERROR_INVALID_PROGRAM";
    case NVRTC_ERROR_INVALID_OPTION:
      return "NVRTC_ERROR_INVALID_OPTION";
    case NVRTC_ERROR_COMPILATION:
      return "NVRTC_ERROR_COMPILATION";
    case NVRTC_ERROR_BUILTIN_OPERATION_FAILURE:
      return "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE";
    case NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION:
      return "NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION";
    case NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION:
      return "NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION";
    case NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID:
      return "NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID";
    case NVRTC_ERROR_INTERNAL_ERROR:
      return "NVRTC_ERROR_INTERNAL_ERROR";
    case NVRTC_ERROR_TIME_FILE_WRITE_FAILED:
      return "NVRTC_ERROR_TIME_FILE_WRITE_FAILED";
    case NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED:
      return "NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED";
    case NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED:
      return "NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED";
    case NVRTC_ERROR_PCH_CREATE:
      return "NVRTC_ERROR_PCH_CREATE";
    case NVRTC_ERROR_CANCELLED:
      return "NVRTC_ERROR_CANCELLED";
    case NVRTC_ERROR_TIME_TRACE_FILE_WRITE_FAILED:
      return "NVRTC_ERROR_TIME_TRACE_FILE_WRITE_FAILED";
  }
  return "NVRTC_ERROR unknown";
}

AGILEOS_SHIM_EXPORT nvrtcResult nvrtcVersion(int* major, int* minor) {
  if (major == nullptr || minor == nullptr) return NVRTC_ERROR_INVALID_INPUT;
  return shim::facts().version(major, minor);
}

AGILEOS_SHIM_EXPORT nvrtcResult nvrtcGetNumSupportedArchs(int* numArchs) {
  if (numArchs == nullptr) return NVRTC_ERROR_INVALID_INPUT;
  std::vector<int> archs;
  const nvrtcResult result = shim::facts().supportedArchs(&archs);
  if (result == NVRTC_SUCCESS) *numArchs = static_cast<int>(archs.size());
  return result;
}

AGILEOS_SHIM_EXPORT nvrtcResult nvrtcGetSupportedArchs(int* supportedArchs) {
  if (supportedArchs == nullptr) return NVRTC_ERROR_INVALID_INPUT;
  std::vector<int> archs;
  const nvrtcResult result = shim::facts().supportedArchs(&archs);
  if (result == NVRTC_SUCCESS && !archs.empty())
    std::memcpy(supportedArchs, archs.data(), archs.size() * sizeof(int));
  return result;
}

// --- programs -------------------------------------------------------------------------------

AGILEOS_SHIM_EXPORT nvrtcResult nvrtcCreateProgram(nvrtcProgram* prog, const char* src, const char* name,
                                                   int numHeaders, const char* const* headers,
                                                   const char* const* includeNames) {
  if (prog == nullptr) return NVRTC_ERROR_INVALID_PROGRAM;
  if (src == nullptr || numHeaders < 0) return NVRTC_ERROR_INVALID_INPUT;
  if (numHeaders > 0 && (headers == nullptr || includeNames == nullptr)) return NVRTC_ERROR_INVALID_INPUT;
  for (int i = 0; i < numHeaders; ++i) {
    if (headers[i] == nullptr || includeNames[i] == nullptr) return NVRTC_ERROR_INVALID_INPUT;
  }
  try {
    auto program = std::make_shared<shim::Program>();
    program->source = src;
    program->name = name != nullptr ? name : "default_program";
    program->headers.assign(headers, headers + numHeaders);
    program->includeNames.assign(includeNames, includeNames + numHeaders);
    *prog = shim::programs().add(std::move(program));
  } catch (const std::bad_alloc&) {
    return NVRTC_ERROR_OUT_OF_MEMORY;
  }
  return NVRTC_SUCCESS;
}

AGILEOS_SHIM_EXPORT nvrtcResult nvrtcDestroyProgram(nvrtcProgram* prog) {
  if (prog == nullptr || !shim::programs().remove(*prog)) return NVRTC_ERROR_INVALID_PROGRAM;
  *prog = nullptr;
  return NVRTC_SUCCESS;
}

AGILEOS_SHIM_EXPORT nvrtcResult nvrtcAddNameExpression(nvrtcProgram prog, const char* const name_expression) {
  return shim::withProgram(prog, [&](shim::Program& program) {
    if (name_expression == nullptr) return NVRTC_ERROR_INVALID_INPUT;
    if (program.compileAttempted) return NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION;
    program.nameExpressions.emplace_back(name_expression);
    return NVRTC_SUCCESS;
  });
}

AGILEOS_SHIM_EXPORT nvrtcResult nvrtcCompileProgram(nvrtcProgram prog, int numOptions,
                                                    const char* const* options) {
  return shim::withProgram(prog, [&](shim::Program& program) {
    if (numOptions < 0) return NVRTC_ERROR_INVALID_INPUT;
    if (numOptions > 0 && options == nullptr) return NVRTC_ERROR_INVALID_OPTION;
    std::vector<std::string> texts;
    for (int i = 0; i < numOptions; ++i) {
      if (options[i] == nullptr) return NVRTC_ERROR_INVALID_OPTION;
      texts.emplace_back(options[i]);
    }
    return shim::compile(program, texts);
  });
}

AGILEOS_SHIM_EXPORT nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram prog, size_t* logSizeRet) {
  return shim::withProgram(prog, [&](shim::Program& program) {
    if (logSizeRet == nullptr) return NVRTC_ERROR_INVALID_INPUT;
    *logSizeRet = program.log.size() + 1;
    return NVRTC_SUCCESS;
  });
}

AGILEOS_SHIM_EXPORT nvrtcResult nvrtcGetProgramLog(nvrtcProgram prog, char* log) {
  return shim::withProgram(prog, [&](shim::Program& program) {
    if (log == nullptr) return NVRTC_ERROR_INVALID_INPUT;
    std::memcpy(log, program.log.c_str(), program.log.size() + 1);
    return NVRTC_SUCCESS;
  });
}

AGILEOS_SHIM_EXPORT nvrtcResult nvrtcGetPTXSize(nvrtcProgram prog, size_t* ptxSizeRet) {
  return shim::withProgram(prog, [&](shim::Program& program) {
    if (ptxSizeRet == nullptr) return NVRTC_ERROR_INVALID_INPUT;
    *ptxSizeRet = program.ptx.size();
    return NVRTC_SUCCESS;
  });
}

AGILEOS_SHIM_EXPORT nvrtcResult nvrtcGetPTX(nvrtcProgram prog, char* ptx) {
  return shim::withProgram(prog, [&](shim::Program& program) { return shim::copyOut(program.ptx, ptx); });
}

AGILEOS_SHIM_EXPORT nvrtcResult nvrtcGetCUBINSize(nvrtcProgram prog, size_t* cubinSizeRet) {
  return shim::withProgram(prog, [&](shim::Program& program) {
    if (cubinSizeRet == nullptr) return NVRTC_ERROR_INVALID_INPUT;
    *cubinSizeRet = program.cubin.size();
    return NVRTC_SUCCESS;
  });
}

AGILEOS_SHIM_EXPORT nvrtcResult nvrtcGetCUBIN(nvrtcProgram prog, char* cubin) {
  return shim::withProgram(prog, [&](shim::Program& program) { return shim::copyOut(program.cubin, cubin); });
}

AGILEOS_SHIM_EXPORT nvrtcResult nvrtcGetLTOIRSize(nvrtcProgram prog, size_t* LTOIRSizeRet) {
  return shim::withProgram(prog, [&](shim::Program& program) {
    if (LTOIRSizeRet == nullptr) return NVRTC_ERROR_INVALID_INPUT;
    *LTOIRSizeRet = program.ltoir.size();
    return NVRTC_SUCCESS;
  });
}

AGILEOS_SHIM_EXPORT nvrtcResult nvrtcGetLTOIR(nvrtcProgram prog, char* LTOIR) {
  return shim::withProgram(prog, [&](shim::Program& program) { return shim::copyOut(program.ltoir, LTOIR); });
}

AGILEOS_SHIM_EXPORT nvrtcResult nvrtcGetLoweredName(nvrtcProgram prog, const char* const name_expression,
                                                    const char** lowered_name) {
  return shim::withProgram(prog, [&](shim::Program& program) {
    if (name_expression == nullptr || lowered_name == nullptr) return NVRTC_ERROR_INVALID_INPUT;
    if (!program.compiled) return NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION;
    for (std::size_t i = 0; i < program.nameExpressions.size(); ++i) {
      if (program.nameExpressions[i] == name_expression) {
        *lowered_name = program.loweredNames[i].c_str();
        return NVRTC_SUCCESS;
      }
    }
    return NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID;
  });
}
