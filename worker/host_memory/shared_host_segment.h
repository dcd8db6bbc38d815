// SharedHostSegment: page-locked host memory that a client and its worker share
// (cudaMallocHost over the shared-memory transport).
//
// The worker creates a sealed memfd (proto/shm/sealed_memfd.h: every page reserved,
// size fixed, so the client can neither shrink it under the worker's mapping nor make
// a touch SIGBUS), maps it, and registers the mapping with the GPU once; the fd goes
// to the client, which maps the same pages. A copy from or to the segment is then one
// DMA between the client's bytes and the GPU, with no staging.
//
// The contents are the client's and untrusted: the worker never interprets them, it
// only DMAs to and from them, and it bounds every [offset, offset+size) by size().
//
// Lifetime: the destructor unregisters, unmaps and closes. Its owner (the client's
// session table) destroys it only after the context has been synchronized, so no
// enqueued copy still targets the memory.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "worker/backend/gpu_backend.h"

namespace agileos::worker {

class SharedHostSegment {
 public:
  // `bytes` is rounded up to whole pages. Returns null with *result
  // (CUDA_ERROR_INVALID_VALUE for a bad size, CUDA_ERROR_OUT_OF_MEMORY when host memory
  // runs out) and *error set on failure. A registration the driver refuses is logged
  // and the segment is used unregistered, unless it was asked to be `mapped` for the device
  // (cudaHostAllocMapped): then the creation fails with the driver's error.
  //
  // `placeAt` != 0 (managed memory, memmgr::kManagedWindow): the worker's mapping is made exactly
  // there, never over anything mapped (MAP_FIXED_NOREPLACE), the segment is mapped for the device,
  // and the creation fails unless the device's address equals placeAt (unified addressing), so
  // that one address serves the host and the device. *addressTaken is set when the failure is
  // only that something already lies there (the caller may try another address).
  static std::shared_ptr<SharedHostSegment> create(GpuBackend& gpu, std::uint64_t bytes, bool mapped,
                                                   CUresult* result, std::string* error,
                                                   std::uint64_t placeAt = 0, bool* addressTaken = nullptr);
  ~SharedHostSegment();
  SharedHostSegment(const SharedHostSegment&) = delete;
  SharedHostSegment& operator=(const SharedHostSegment&) = delete;

  std::uint8_t* base() const { return base_; }
  std::uint64_t size() const { return size_; }
  // The device's address of base() when the segment is mapped for the device; 0 otherwise.
  CUdeviceptr deviceAddress() const { return device_; }
  // The memfd, handed out once (to pass to the client); -1 afterwards. The caller closes it.
  int takeFd();

 private:
  SharedHostSegment(GpuBackend& gpu, int fd, std::uint8_t* base, std::uint64_t size, bool registered,
                    CUdeviceptr device)
      : gpu_(gpu), fd_(fd), base_(base), size_(size), registered_(registered), device_(device) {}

  GpuBackend& gpu_;
  int fd_;
  std::uint8_t* const base_;
  const std::uint64_t size_;
  const bool registered_;  // with the GPU; false if the driver refused (then copies are staged)
  const CUdeviceptr device_;
};

}  // namespace agileos::worker
