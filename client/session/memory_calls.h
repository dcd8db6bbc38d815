// Device memory, shared by the runtime and the driver shims (untrusted side): allocation, release
// and the quota's view of the device. Each returns the call's error without recording it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "agileos/v1/client_api.pb.h"

namespace agileos::client {

// Allocates `size` bytes of the client's user range; *dptr is 0 on failure.
cudaError_t allocateDevice(std::uint64_t size, std::uint64_t* dptr);
// Frees an allocation by its base address; synchronizes the device first, as cudaFree does.
cudaError_t freeDevice(std::uint64_t dptr);
// Free and total bytes as the client's quota sees them.
cudaError_t deviceMemoryInfo(std::uint64_t* free, std::uint64_t* total);

// One step of the driver's virtual-memory API (proto VirtualMemory); the worker confines it to the
// client's own reservations (memmgr/memory_manager.h). A mapping is remembered as device memory
// (device_allocations.h) once the worker made it, and forgotten before it is unmapped; the unmap
// waits for the device, as cudaFree does.
cudaError_t virtualMemoryStep(const v1::VirtualMemory& step, v1::VirtualMemoryResult* result);

}  // namespace agileos::client
