// The cuFFT adapter: cuFFT plans live in the worker, one LibraryObject per plan in the
// client's session, and every execution is checked first (proto/adapters/cufft_operations.h
// for the operations).
//
// Invariants:
// - No cuFFT call runs on a client's buffer before the buffer is checked against the client's
//   live allocations over the whole extent the plan implies (plan_extent.h), input and output,
//   or the one buffer of an in-place transform; the work area likewise, at every execution
//   (memory set as a work area may have been freed since).
// - cuFFT never allocates on its own: auto-allocation is always off in the library. A plan the
//   client leaves on auto-allocation gets its work area from the worker's protected memory,
//   which no client call can free or name; a client-supplied work area must be a live user
//   allocation at least as large as the plan's work size.
// - Callbacks and multi-GPU extensions are not declared operations, so they never reach cuFFT.
#pragma once

#include <memory>

#include "worker/adapters/library_adapter.h"

namespace agileos::adapters::cufft {

std::unique_ptr<worker::LibraryAdapter> makeCufftAdapter(const worker::AdapterEnvironment& environment);

}  // namespace agileos::adapters::cufft
