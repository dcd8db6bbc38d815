// The seccomp filter of agileos-sandbox: a deny list over a default of "allow", compiled with
// libseccomp into a classic BPF program that bubblewrap installs (--seccomp FD) right before it
// starts the program.
//
// Why a deny list: the program is an arbitrary CUDA application (and its shells, interpreters and
// helper programs), so it must be free to open files, make sockets, fork and exec. The files it
// can reach are what the allow-list root holds (sandbox_plan.h); the filter takes away the calls
// that reach the kernel's own interfaces or other processes, or could undo the sandbox, whatever
// the program's C library calls.
//
// Invariants: calls of another architecture (x86 int 0x80, x32) kill the process, so no number
// outside the list escapes it; every listed call fails with EPERM (programs that probe for a
// feature see "not permitted", not a crash).
#pragma once

#include <string>
#include <vector>

namespace agileos::sandbox {

// The names of the system calls the filter refuses outright (for the docs and the tests).
const std::vector<std::string>& refusedSystemCalls();

// Writes the compiled filter to a new memory file; returns its descriptor (not close-on-exec,
// positioned at 0), or -1 with *error.
int compileSeccompFilter(std::string* error);

}  // namespace agileos::sandbox
