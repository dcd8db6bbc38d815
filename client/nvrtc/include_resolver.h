// The headers a program's includes name, found in its own process (UNTRUSTED side).
//
// Native NVRTC reads a header the program did not supply from the file system of the program's
// process: for `#include "x"`, the directory of the including file (the program name's for the
// source, relative to the working directory), then each include path; for `#include <x>`, each
// include path. The worker's NVRTC can read no file (it runs in a jail), so this does that search
// here, where it reads only files the program could read itself, and supplies what it finds as
// in-memory headers (nvrtcCreateProgram's headers and include names). NVRTC matches an in-memory
// header by the name as the directive spells it, so each header is supplied under that spelling.
//
// Two ways to find them, both bounded:
// - addIncludesOf: every literal #include / __has_include operand of a text, followed through the
//   headers it finds (every branch, taken or not: a header found here that NVRTC never opens costs
//   only bytes). Conditional includes of files that do not exist are simply not found.
// - addMissing: a name NVRTC's log says it could not open (missingHeadersIn), which catches what
//   no scan of the literal text can see (an include through a macro).
// Invariants:
// - The program's own headers are never replaced, and a name is supplied once: NVRTC would use
//   the supplied header first, so a second file with that spelling (the same quoted name under
//   two directories) cannot be represented; the first found is kept, and a different second is
//   logged once.
// - A file is read only if it is a regular file, at most the bytes left under the worker's limit
//   (64 MiB for the source and headers together, 4096 headers), and holds no NUL (the worker
//   refuses such text); otherwise it stays missing, and the program sees NVRTC's own error.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agileos::client::nvrtc_shim {

// Reads the file at `path` if it is a regular file of at most `maxBytes`; nullopt otherwise.
using FileReader = std::function<std::optional<std::string>(const std::string& path, std::size_t maxBytes)>;
// The process's own file system.
std::optional<std::string> readRegularFile(const std::string& path, std::size_t maxBytes);

struct IncludeName {
  std::string name;
  bool quoted = false;  // "name" (also searches the includer's directory) rather than <name>
};
// The literal operands of the #include, #include_next, #import and __has_include(_next)
// directives of `text`, in order (line continuations and comments are handled; an operand that
// is not a literal is skipped).
std::vector<IncludeName> includesIn(std::string_view text);

struct MissingHeader {
  std::string includer;  // the file NVRTC was reading, as its log names it
  std::string name;
  bool quoted = true;  // false when the directive NVRTC quotes below the error spells <name>
};
// What NVRTC's log says it could not open ("X(1): catastrophic error: cannot open source file
// \"h\"", also "could not open source file").
std::vector<MissingHeader> missingHeadersIn(std::string_view log);

// The worker's limits on one compilation (worker/adapters/nvrtc/nvrtc_adapter.cpp).
struct HeaderLimits {
  std::size_t maxHeaders = 4096;
  std::size_t maxBytes = 64u << 20;  // the source and every header together
};

class HeaderSet {
 public:
  using Limits = HeaderLimits;
  HeaderSet(std::string programName, std::size_t sourceBytes, std::vector<std::string> headers,
            std::vector<std::string> includeNames, std::vector<std::string> includePaths,
            FileReader reader = readRegularFile, Limits limits = {});

  // Supplies what `text`, read from the file `includer` (a name as NVRTC knows it: the program's
  // name or an include name), includes, and what those include in turn.
  void addIncludesOf(const std::string& includer, std::string_view text);
  // Supplies a header NVRTC could not open, and what it includes. False if nothing was added
  // (not found, already supplied, over a limit).
  bool addMissing(const MissingHeader& missing);

  const std::vector<std::string>& headers() const { return headers_; }
  const std::vector<std::string>& includeNames() const { return includeNames_; }
  std::size_t added() const { return headers_.size() - given_; }

 private:
  struct Found {
    std::string path;
    std::string text;
  };
  std::optional<Found> find(const IncludeName& include, const std::string& includerDirectory);
  bool supply(const std::string& includer, const IncludeName& include, std::vector<std::string>* pending);
  void scanPending(std::vector<std::string> pending);

  std::string programName_;
  std::vector<std::string> headers_, includeNames_;
  std::size_t given_;  // the program's own headers come first
  std::vector<std::string> includePaths_;
  FileReader reader_;
  Limits limits_;
  std::size_t bytes_;
  // The directory a file's quoted includes search first, by the name NVRTC knows it by.
  std::map<std::string, std::string> directoryOf_;
  std::map<std::string, std::string>
      pathOf_;  // include name -> the file supplied under it ("": the program's)
  std::map<std::string, std::size_t> indexOf_;  // include name -> its place in headers_
};

}  // namespace agileos::client::nvrtc_shim
