// Contexts and each thread's current context (untrusted side), in the session library so that
// both shims see one state: the driver shim's cuCtx* calls work on it, and the runtime shim binds
// the primary context to a thread as libcudart does (bindPrimaryContextIfNoneCurrent below).
//
// A worker serves one device through one CUDA context, so every context a program has is a
// handle onto that one: the device's primary context (cuDevicePrimaryCtxRetain), and any it
// creates with cuCtxCreate. They share the session's memory, modules, streams and events, as
// the runtime shim's calls do; what a context of its own keeps apart is its flags and its place
// on each thread's stack. Destroying a created context releases the handle only, never memory:
// what the program allocated stays until it frees it or the session ends (the worker releases
// everything then).
//
// Each thread has a stack of current contexts (cuCtxPushCurrent, cuCtxPopCurrent; cuCtxSetCurrent
// replaces the top). A call that needs a context and finds none current on its thread uses the
// primary context, as a program that mixes the runtime and driver APIs expects after any runtime
// call; cuCtxGetCurrent still answers what the thread really has current.
#pragma once

#include <cuda.h>

#include <cstddef>

namespace agileos::client {

// The device ordinal a worker's client sees: always 0.
inline constexpr CUdevice kOnlyDevice = 0;

CUcontext primaryContext();
// A context this process holds: the primary one, or a created one not yet destroyed.
bool isLiveContext(CUcontext context);

// A context's number, unique in the process and never reused: the primary context is 1, created
// contexts count on from 2 in the order they were made (the driver numbers its contexts so too;
// cuCtxGetId answers it).
unsigned long long contextNumber(CUcontext context);

CUcontext createContext(unsigned flags);
// CUDA_ERROR_INVALID_CONTEXT unless `context` was created and is live; removes it from this
// thread's stack (other threads that still have it current find it gone at their next call).
CUresult destroyContext(CUcontext context);

unsigned contextFlags(CUcontext context);
void setContextFlags(CUcontext context, unsigned flags);

// The primary context's retain count and flags (cuDevicePrimaryCtx*).
void retainPrimary();
CUresult releasePrimary();  // CUDA_ERROR_INVALID_CONTEXT when it is not retained
bool primaryActive();

// The calling thread's context stack.
inline constexpr std::size_t kMaxContextStackDepth = 256;
CUcontext currentContext();                 // null when none
void setCurrentContext(CUcontext context);  // null pops the top, as cuCtxSetCurrent(NULL) does
// False when the stack already holds kMaxContextStackDepth contexts (cuCtxPushCurrent then fails
// with CUDA_ERROR_OUT_OF_MEMORY; real programs nest a few).
bool pushCurrentContext(CUcontext context);
CUcontext popCurrentContext();  // null when the stack was empty

// What libcudart does at each call that needs a context: a thread with no current context gets
// the primary one made current (so cuCtxGetCurrent after cudaSetDevice, a launch or a copy on a new
// thread answers the primary context; libraries such as cuBLAS check that before they work). A
// thread-local read and nothing else when a context is current. The runtime shim calls it; the
// driver shim never does (a driver call leaves the thread's stack as it finds it).
void bindPrimaryContextIfNoneCurrent();

// The context a call works in: the thread's current one, else the primary context. Fails with
// CUDA_ERROR_CONTEXT_IS_DESTROYED when the current one was destroyed.
CUresult requireContext();
// That context itself (whether live or not: requireContext checks).
CUcontext workingContext();

}  // namespace agileos::client
