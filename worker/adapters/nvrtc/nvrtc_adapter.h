// The NVRTC adapter: client containers have no CUDA installation, so run-time compilation is
// served here, in the worker (proto/adapters/nvrtc_operations.h).
//
// Invariants:
// - NVRTC reads files named by #include-like directives and by options (absolute paths, the
//   working directory, the directory of the program's name) and quotes them in its log. So
//   NVRTC never runs in the worker: every compilation runs in a fresh agileos-nvrtc-compiler
//   process (nvrtc_compiler_process.h, compiler/jail.h) that has loaded NVRTC and then locked
//   itself into an empty mount namespace, unprivileged, with seccomp and CPU-time and memory
//   limits, before it reads the request; the client's headers are the only "files" it has. A
//   crash, a limit or a jail that cannot be set up fails the compilation, never the worker.
// - Before that, as a first line, every option must be on an allowlist (nvrtc_source_policy.h:
//   no include paths, pre-includes or precompiled headers: the client shim resolves include
//   paths on its side and sends the headers it found) and every include-like directive in the
//   source and the headers must name one of the headers the client supplied, unless it reads no
//   file even outside the jail (nvrtc_source_policy.h); anything else is refused with a log
//   that says why.
// - Output is data for the client: PTX loads through the kernel memory guard like any PTX; LTO
//   IR (-dlto) is only returned (the program links it itself, e.g. with nvJitLink, and loads
//   the result as an image like any other). A
//   CUBIN it returns is recorded (by SHA-256) with the PTX it was compiled from in the client's
//   session, so loading that CUBIN offers the PTX too, and the guard applies (an NVRTC CUBIN
//   cannot bypass it).
// - Successful results are cached (CompiledModuleCache, keyed by SHA-256 over NVRTC's version
//   and every input), so a program compiling the same kernel again pays nothing.
#pragma once

#include <memory>

#include "worker/adapters/library_adapter.h"

namespace agileos::adapters::nvrtc {

std::unique_ptr<worker::LibraryAdapter> makeNvrtcAdapter(const worker::AdapterEnvironment& environment);

}  // namespace agileos::adapters::nvrtc
