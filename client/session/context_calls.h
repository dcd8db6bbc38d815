// The context's own state, shared by the runtime and the driver shims (untrusted side): its
// synchronization, reset, limits and cache preference. CUlimit and cudaLimit, CUfunc_cache and
// cudaFuncCache number their values alike; the worker checks them. Each returns the call's error
// without recording it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace agileos::client {

// Waits for all work of the context; on success every stream is known to be idle.
cudaError_t synchronizeDevice();
// Destroys every allocation, stream and event, array and texture or surface object of the
// session's context (cudaDeviceReset, cuDevicePrimaryCtxReset); loaded code stays loaded.
cudaError_t resetDevice();

cudaError_t contextLimit(int limit, std::uint64_t* value);
// The worker charges what a raised limit sets aside to the client's quota.
cudaError_t setContextLimit(int limit, std::uint64_t value);
cudaError_t contextCacheConfig(int* config);
cudaError_t setContextCacheConfig(int config);
// cudaCtxResetPersistingL2Cache: the context's persisting L2 lines back to normal.
cudaError_t resetPersistingL2Cache();

// Shared-memory bank size (cudaDeviceGet/SetSharedMemConfig, cudaFuncSetSharedMemConfig and the
// driver's cuCtx/cuFunc forms, all deprecated). Only Kepler could change it; every architecture a
// worker serves (sm_75 and later) has fixed four-byte banks, for which the driver documents that
// the query answers that size and the settings do nothing. So the answer is that constant, and a
// setting succeeds once its value is one of cudaSharedMemConfig's (CUsharedconfig numbers them
// alike); the caller first checks the context or function it names, as the driver does.
inline constexpr int kFixedSharedMemBankSize = cudaSharedMemBankSizeFourByte;
cudaError_t checkSharedMemBankSetting(int config);

}  // namespace agileos::client
