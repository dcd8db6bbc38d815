// NVRTC programs of this process (UNTRUSTED side).
//
// An nvrtcProgram names a Program kept here: what nvrtcCreateProgram and nvrtcAddNameExpression
// were given and, after nvrtcCompileProgram, what the worker's compilation produced. Only the
// compilation runs in the worker (worker/adapters/nvrtc); every other program call is answered here.
//
// The handle the application holds is an opaque number, never an address: it is only ever looked
// up in the registry, and numbers are not reused, so a destroyed or made-up handle is
// NVRTC_ERROR_INVALID_PROGRAM (never another program), and a program stays alive while a call
// that found it runs.
#pragma once

#include <nvrtc.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace agileos::client::nvrtc_shim {

struct Program {
  std::mutex mutex;  // guards everything below
  std::string source;
  std::string name;
  std::vector<std::string> headers;
  std::vector<std::string> includeNames;
  std::vector<std::string> nameExpressions;  // in the order they were added
  bool compileAttempted = false;             // no name expressions may be added after that
  bool compiled = false;                     // the last compilation succeeded: lowered names exist
  std::string log;                           // without the terminating NUL
  std::string ptx = std::string(1, '\0');    // as nvrtcGetPTX writes it: NUL-terminated
  std::string cubin;                         // empty unless compiled for a real architecture
  std::string ltoir;                         // empty unless compiled with -dlto
  std::vector<std::string> loweredNames;     // parallel to nameExpressions once compiled
};

class ProgramRegistry {
 public:
  // Registers `program` and returns its handle.
  nvrtcProgram add(std::shared_ptr<Program> program);
  // The program `handle` names, or null.
  std::shared_ptr<Program> find(nvrtcProgram handle) const;
  // Unregisters `handle`; false if it named no program.
  bool remove(nvrtcProgram handle);
  std::size_t size() const;

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::uintptr_t, std::shared_ptr<Program>> programs_;
  std::uintptr_t next_ = 1;
};

// The process-wide registry (never destroyed: programs may be used from atexit handlers).
ProgramRegistry& programs();

}  // namespace agileos::client::nvrtc_shim
