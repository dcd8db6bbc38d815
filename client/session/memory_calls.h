// Device memory, shared by the runtime and the driver shims (untrusted side): allocation, release
// and the quota's view of the device. Each returns the call's error without recording it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace agileos::client {

// Allocates `size` bytes of the client's user range; *dptr is 0 on failure.
cudaError_t allocateDevice(std::uint64_t size, std::uint64_t* dptr);
// Frees an allocation by its base address; synchronizes the device first, as cudaFree does.
cudaError_t freeDevice(std::uint64_t dptr);
// Free and total bytes as the client's quota sees them.
cudaError_t deviceMemoryInfo(std::uint64_t* free, std::uint64_t* total);

}  // namespace agileos::client
