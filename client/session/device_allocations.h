// DeviceAllocations: the client's own record of the device memory the worker gave it
// (untrusted side, and trusted by nobody).
//
// The worker checks every pointer; this record only lets the client tell an
// asynchronous call that will surely pass those checks (a memset or copy inside one
// live allocation, or one module variable) from one that may not. The former is sent
// without waiting for its reply; the latter waits, so that a bad pointer gets its
// error from the call itself, as natively.
//
// Thread-safety: all functions are safe to call concurrently.
#pragma once

#include <cstdint>

namespace agileos::client {

// `freeable`: the worker frees this allocation by its base (cudaFree, cudaFreeAsync); false for
// a range the program mapped itself (cuMemMap), which only an unmap ends.
void rememberDeviceAllocation(std::uint64_t base, std::uint64_t size, bool freeable = true);
void forgetDeviceAllocation(std::uint64_t base);
// Where `base` is the base of a live freeable allocation, forgets it and returns true: a free of
// it the worker will surely accept (unless another thread frees it at the same time, which is the
// program's race), so it may be sent without waiting for the reply. Anything else (nothing there,
// or a range the program mapped itself, which stays recorded) returns false.
bool forgetFreeableDeviceAllocation(std::uint64_t base);
void forgetAllDeviceAllocations();  // cudaDeviceReset

// The live allocation that holds `p` (cuMemGetAddressRange, cuPointerGetAttribute's range); false
// when none does.
bool deviceAllocationContaining(std::uint64_t p, std::uint64_t* base, std::uint64_t* size);

// True if [p, p+bytes) lies inside one live allocation or one module variable.
bool surelyDeviceRange(std::uint64_t p, std::uint64_t bytes);

}  // namespace agileos::client
