// Kernels with system-scope atomics run before the host goes on (untrusted side).
//
// A kernel's system-scope atomics (atomicAdd_system and its kin; ptx/system_atomics.h) are meant
// to be atomic against the host's own atomics on the same memory. Here managed memory is a host
// segment the GPU reaches over PCIe, where the GPU's atomics are not atomic against the CPU's
// (docs/architecture.md, "Mapped, registered and managed host memory"); natively pages migrate on
// faults, so each side's atomics run where the page is. While the program holds managed memory, a
// launch of such a kernel therefore returns only once the kernel has finished: the host's
// atomics, which come after the launch in the program, then run after the kernel's, never at the
// same time, and the sum of both is what it is natively. The device reports
// concurrentManagedAccess = 0, under which CUDA does not let the host touch managed memory while
// a kernel runs at all, so this only orders what that attribute already forbids.
//
// A kernel that waits for the host (a flag the host sets after the launch) would never finish
// first: after kWaitLimit the launch returns with the kernel still running, and that kernel's
// launches return at once from then on (logged once). Other threads of the program are not held.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>

#include "client/session/streams.h"

namespace agileos::client {

inline constexpr std::chrono::seconds kSystemAtomicsWaitLimit{10};

// After a launch of the kernel `function` (a worker token) on `stream` succeeded: waits, as above,
// when its PTX uses system-scope atomics and the program holds managed memory.
void runBeforeTheHost(std::uint64_t function, cudaStream_t stream, DefaultStream spelling);

}  // namespace agileos::client
