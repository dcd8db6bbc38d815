// What the NVRTC adapter lets a client's compilation read (see nvrtc_adapter.h): pure
// functions over the untrusted inputs, tested on the CPU (tests/cpu/adapters).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace agileos::adapters::nvrtc {

// Why `option` is refused, or nullopt if it is on the allowlist. Options that make NVRTC read
// or write files (-I, --include-path, --pre-include, -include, the PCH options, -time,
// --fdevice-time-trace) and options whose output the adapter does not return (OptiX IR) are
// refused; so is anything unknown. (The client shim resolves include paths on its own side and
// sends the headers: client/nvrtc/include_options.h.)
std::optional<std::string> refuseOption(std::string_view option);

// Why `text` (a source or a header) is refused, or nullopt. Every #include, #include_next,
// #import and #embed directive (also behind digraphs, comments and line continuations) and
// every __has_include / __has_embed must name, as a literal "..." or <...>, one of
// `headerNames`; a computed include is refused. Two exceptions read no file even without the
// jail, since no include path reaches NVRTC: `#include <name>` and `__has_include(<name>)` of a
// relative name without "..", which NVRTC then reports missing (or absent); and a computed
// __has_include inside a #define that starts its line (a library's wrapper macro: what it
// probes is named where it is used; the jail answers every probe "no").
std::optional<std::string> refuseSource(std::string_view text, const std::vector<std::string>& headerNames);

// The compute architecture to compile PTX for when the options name a real one ("sm_90" in
// -arch=sm_90 -> "compute_90"), and the options with that replacement; nullopt if they name
// no real architecture.
std::optional<std::vector<std::string>> withVirtualArchitecture(const std::vector<std::string>& options);

}  // namespace agileos::adapters::nvrtc
