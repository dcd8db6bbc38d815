// The operations of the NVRTC adapter (proto/adapters/adapter_declaration.h): what
// libagileos_nvrtc.so (client/nvrtc) sends and worker/adapters/nvrtc/nvrtc_adapter.cpp runs, by the
// names below.
#pragma once

#include <array>

#include "proto/adapters/adapter_declaration.h"

namespace agileos::adapters::nvrtc {

// The names on the wire (AdapterCall.library, AdapterCall.operation) and in the daemon's
// `adapters` configuration ("nvrtc.compile", "nvrtc.*").
namespace names {
inline constexpr char kLibrary[] = "nvrtc";
inline constexpr char kCompile[] = "compile";
inline constexpr char kVersion[] = "version";
inline constexpr char kSupportedArchs[] = "supported_archs";
}  // namespace names

namespace op {
using enum ArgKind;
// source, program name, header sources, header include names, options, name expressions
inline constexpr std::array kCompile{kText, kText, kTexts, kTexts, kTexts, kTexts};
inline constexpr std::array kNone = std::array<ArgKind, 0>{};
}  // namespace op

inline constexpr std::array kOperations{
    // -> log (text), PTX (blob), CUBIN (blob, empty unless a real architecture was asked
    //    for), lowered names (texts, in the order of the name expressions), LTO IR (blob, empty
    //    unless -dlto was asked for; a worker from before LTO IR sends no fifth result)
    OperationDecl{names::kCompile, op::kCompile},
    OperationDecl{names::kVersion, op::kNone},         // -> major, minor
    OperationDecl{names::kSupportedArchs, op::kNone},  // -> integers
};

inline constexpr LibraryDecl kLibrary{names::kLibrary, kOperations};

}  // namespace agileos::adapters::nvrtc
