// The worker compiles every PTX text with the driver's JIT linker (cuLinkAddData, then
// cuLinkComplete), so that it holds the cubin, and knows its device footprint, before the driver
// loads it (worker/handlers/module_handlers.cpp). The linker compiles its PTX input as separate
// (relocatable) code, which ptxas admits only from PTX ISA 3.1 on ("'Compile only(-c)' requires
// PTX ISA .version 3.1 or later"); the driver's whole-program JIT (cuModuleLoadData) takes older
// PTX, and programs still hand it some: cuda-samples' matrixMulDynlinkJIT embeds nvcc 4's PTX 1.4.
//
// Such a module's .version is raised to 3.1 in the module the worker prints, so that the linker
// compiles it. The raise keeps the program: the .target (with map_f64_to_f32) still decides what
// the code means on the old architectures (subnormals, default rounding of sm_1x), and ptxas
// gives the same code for the module at either version (tests/cpu/ptx/separate_compilation_test).
// A construct that PTX 3.1 no longer takes fails at the JIT, closed, with its log.
#pragma once

#include <optional>
#include <string_view>

#include "ptx/ast.h"
#include "ptx/versions.h"

namespace agileos::ptx {

// The first PTX ISA version that separate compilation takes.
inline constexpr Version kSeparateCompilationVersion{3, 1};

// The version a PTX text's leading `.version` directive declares (after whitespace and comments,
// as the lexer skips them), or nullopt when the text does not begin so or the number is unreadable.
// Reads only as far as that directive: it decides whether a text must be parsed to be raised.
std::optional<Version> leadingVersion(std::string_view text);

// Whether `text` declares a version below kSeparateCompilationVersion.
bool needsVersionRaise(std::string_view text);

// Raises the module's .version directive to kSeparateCompilationVersion when it is lower; returns
// whether it changed the module.
bool raiseVersionForSeparateCompilation(Module* module);

}  // namespace agileos::ptx
