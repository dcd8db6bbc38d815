// The operations of the NVRTC adapter (adapters/adapter_declaration.h): what
// libagileos_nvrtc.so sends and adapters/nvrtc/nvrtc_adapter.cpp runs.
#pragma once

#include <array>

#include "adapters/adapter_declaration.h"

namespace agileos::adapters::nvrtc {

namespace op {
using enum ArgKind;
// source, program name, header sources, header include names, options, name expressions
inline constexpr std::array kCompile{kText, kText, kTexts, kTexts, kTexts, kTexts};
inline constexpr std::array kNone = std::array<ArgKind, 0>{};
}  // namespace op

inline constexpr std::array kOperations{
    // -> log (text), PTX (blob), CUBIN (blob, empty unless a real architecture was asked
    //    for), lowered names (texts, in the order of the name expressions)
    OperationDecl{"compile", op::kCompile}, OperationDecl{"version", op::kNone},  // -> major, minor
    OperationDecl{"supported_archs", op::kNone},                                  // -> integers
};

inline constexpr LibraryDecl kLibrary{"nvrtc", kOperations};

}  // namespace agileos::adapters::nvrtc
