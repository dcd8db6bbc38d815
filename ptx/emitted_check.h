// The last gate before the JIT: the text the worker hands to the driver, checked as the
// driver will read it.
//
// The guard rewrites a parsed module and the printer emits it; this check does not trust
// either. It parses the emitted text from scratch, requires the fresh tree to equal the
// module that was checked (so the printer emitted exactly what the guard saw, and the
// front end reads it back the same way: a fixed point), and runs the independent checker
// (findUnguardedAccesses) on the fresh tree, which must find nothing. Any failure refuses
// the load. Defence in depth: the rewrite and this check must each hold on their own.
#pragma once

#include <string>
#include <string_view>

#include "ptx/ast.h"
#include "ptx/guard.h"

namespace agileos::ptx {

// Why `text` must not be compiled (empty when it may). `checked` is the guarded module the
// text was printed from; `options` and `registerPrefix` are the guard's (GuardResult).
std::string checkEmittedText(std::string_view text, const Module& checked, const GuardOptions& options,
                             const std::string& registerPrefix);

}  // namespace agileos::ptx
