// FakePtxSymbols: the symbols FakeGpuBackend exposes for a PTX module. TEST-ONLY.
//
// This is not a PTX parser. It scans module-scope statements just far enough to
// give a fake driver what the worker asks a real one for:
// - every `.entry NAME( ... )` with its parameters' offsets and sizes, laid out
//   as the driver does (each parameter aligned to its own alignment);
// - every module-scope `.global` / `.const` variable with its size in bytes.
// Parameter and variable types must be one of .u/.s/.b/.f with 8, 16, 32 or 64
// bits, optionally arrays (`.align N .b8 name[M]`, `name[2][3]`); pointer
// annotations (`.ptr .global .align N`) are accepted and do not change the layout.
// Anything else (vector or packed types, `[]` arrays sized by an initializer, a
// parameter list it cannot read) fails the scan, so a test never runs against a
// layout the scanner guessed. Function bodies are skipped unread.
//
// Thread-safety: scanPtxSymbols is a pure function.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace agileos::worker::fake {

struct PtxParam {
  std::uint32_t offset = 0;
  std::uint32_t size = 0;
};

struct PtxEntry {
  std::string name;
  std::vector<PtxParam> params;
};

struct PtxVariable {
  std::string name;
  std::uint64_t size = 0;
  bool constant = false;  // .const rather than .global
};

struct PtxSymbols {
  bool ok = false;
  std::string error;     // when !ok: what could not be read
  int versionMajor = 0;  // .version 9.0 -> 9, 0
  int versionMinor = 0;
  int targetSm = 0;  // .target sm_75 -> 75; 0 if absent
  std::vector<PtxEntry> entries;
  std::vector<PtxVariable> variables;
};

// Scans NUL-free PTX text. A text without a `.version` directive is not PTX (ok = false).
PtxSymbols scanPtxSymbols(std::string_view ptx);

}  // namespace agileos::worker::fake
