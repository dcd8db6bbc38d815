// Context-local storage for a CUDA runtime inside the program (untrusted side).
//
// A CUDA runtime linked into the program (static cudart, or the one inside a math library) keeps
// its state per context in the driver, through a private export table: put, get and remove a
// value under a key (the address of one of the runtime's globals), with a destructor the driver
// calls when the context goes away. Keys, values and destructors are the program's own; nothing
// here reaches the daemon.
//
// The invariant the runtime depends on: a context that is destroyed or reset (cuCtxDestroy,
// cuDevicePrimaryCtxReset, the primary context's last release) loses every entry, and each
// entry's destructor runs once, outside this table's lock (a destructor may call back in).
// Otherwise a runtime that sees its old state after cudaDeviceReset skips re-creating it and
// fails.
#pragma once

#include <cuda.h>

namespace agileos::client::cuda_shim {

using ContextStorageDestructor = void (*)(CUcontext context, void* key, void* value);

// `context` null or (CUcontext)-1 means the calling thread's context (its current one, else the
// primary context). CUDA_ERROR_INVALID_CONTEXT for a context that is not live.
CUresult putContextValue(CUcontext context, void* key, void* value, ContextStorageDestructor destructor);
CUresult removeContextValue(CUcontext context, void* key);             // CUDA_ERROR_INVALID_HANDLE if absent
CUresult getContextValue(void** value, CUcontext context, void* key);  // CUDA_ERROR_INVALID_HANDLE if absent

// Drops every entry of `context`, running their destructors.
void clearContextValues(CUcontext context);

}  // namespace agileos::client::cuda_shim
