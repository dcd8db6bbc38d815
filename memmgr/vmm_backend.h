// The slice of the CUDA driver's virtual-memory API that the memory manager uses.
//
// The worker's real backend forwards to cuMem* on its device; tests use an
// in-process fake. Every method returns the driver's CUresult unchanged so the
// memory manager can map failures to the CUDA error a client expects.
//
// Thread-safety: implementations must be callable from any thread once the
// worker's context is current; the memory manager serializes its own calls.
#pragma once

#include <cuda.h>  // CUresult and friends: types only, no libcuda linkage needed

#include <cstddef>
#include <cstdint>

#include "memmgr/address_layout.h"

namespace agileos::memmgr {

using PhysicalHandle = std::uint64_t;  // CUmemGenericAllocationHandle

class VmmBackend {
 public:
  virtual ~VmmBackend() = default;

  // cuMemGetAllocationGranularity (minimum) for pinned device memory.
  virtual CUresult allocationGranularity(std::size_t* bytes) = 0;
  // cuMemAddressReserve with `fixed` as the requested address; `*got` is what the driver granted.
  virtual CUresult reserve(DevicePtr fixed, std::size_t size, DevicePtr* got) = 0;
  virtual CUresult freeReservation(DevicePtr base, std::size_t size) = 0;
  // cuMemCreate of pinned device memory on the worker's device.
  virtual CUresult createPhysical(std::size_t size, PhysicalHandle* handle) = 0;
  // cuMemCreate of pinned device memory with generic compression requested
  // (allocFlags.compressionType = CU_MEM_ALLOCATION_COMP_GENERIC). The driver may grant the memory
  // without compression; `*compressed` is what it granted (read back from the handle's properties).
  // Backends without compression create plain memory.
  virtual CUresult createCompressiblePhysical(std::size_t size, PhysicalHandle* handle, bool* compressed) {
    *compressed = false;
    return createPhysical(size, handle);
  }
  // cuMemGetAllocationGranularity (minimum) for compressible memory; a backend without compression
  // answers with the plain granularity.
  virtual CUresult compressibleGranularity(std::size_t* bytes) { return allocationGranularity(bytes); }
  // cuMemCreate of pinned device memory that can be exported as a POSIX file descriptor
  // (requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR), for protected memory
  // shared with a service process. Backends without it refuse.
  virtual CUresult createExportablePhysical(std::size_t size, PhysicalHandle* handle) {
    (void)size;
    (void)handle;
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  // cuMemExportToShareableHandle of a handle from createExportablePhysical: a new descriptor the
  // caller owns (closes).
  virtual CUresult exportToFd(PhysicalHandle handle, int* fd) {
    (void)handle;
    (void)fd;
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  virtual CUresult releasePhysical(PhysicalHandle handle) = 0;
  // cuMemMap of `handle` at offset 0 onto [va, va+size).
  virtual CUresult map(DevicePtr va, std::size_t size, PhysicalHandle handle) = 0;
  // cuMemSetAccess: read/write for the worker's device.
  virtual CUresult setAccess(DevicePtr va, std::size_t size) = 0;
  virtual CUresult unmap(DevicePtr va, std::size_t size) = 0;
  // Synchronous byte fill, used to scrub memory before it changes owner.
  virtual CUresult fill(DevicePtr va, std::uint8_t value, std::size_t size) = 0;
};

}  // namespace agileos::memmgr
