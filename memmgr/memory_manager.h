// MemoryManager: the worker's GPU memory, laid out as in address_layout.h.
//
// create() reserves the three fixed ranges with cuMemAddressReserve and fails
// unless each is granted exactly. User allocations are placed in kUserRange:
// requests below kSmallAllocationLimit are carved out of granularity-sized
// chunks (one chunk serves one client only, so no two clients ever share a
// physical page); larger ones get their own mapping rounded up to the
// granularity. Every user pointer is 256-byte aligned, as cudaMalloc's are.
//
// Ownership: the MemoryManager owns every physical handle and mapping it made
// and releases them in releaseClient() and its destructor.
// Thread-safety: all public methods are safe to call concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "memmgr/allocation_table.h"
#include "memmgr/vmm_backend.h"

namespace agileos::memmgr {

inline constexpr std::uint64_t kSmallAllocationLimit = 1u << 20;
inline constexpr std::uint64_t kAllocationAlignment = 256;

class MemoryManager {
 public:
  // Returns nullptr and sets *error when a range cannot be reserved exactly.
  static std::unique_ptr<MemoryManager> create(VmmBackend& backend, std::string* error);
  ~MemoryManager();
  MemoryManager(const MemoryManager&) = delete;
  MemoryManager& operator=(const MemoryManager&) = delete;

  // cudaMalloc semantics: size 0 gives *out = 0 and CUDA_SUCCESS; exhaustion gives
  // CUDA_ERROR_OUT_OF_MEMORY and changes nothing.
  CUresult allocate(ClientId client, std::uint64_t size, DevicePtr* out);

  // cudaFree semantics: p == 0 is a no-op success; anything that is not the exact
  // base of a live kUser allocation of `client` gives CUDA_ERROR_INVALID_VALUE and
  // changes nothing.
  CUresult free(ClientId client, DevicePtr p);

  // Validation of an untrusted range against the client's live allocations
  // (including its module globals). Protected ranges are refused arithmetically
  // before any lookup.
  PointerCheck check(ClientId client, DevicePtr p, std::uint64_t n) const;

  // Records a module global so copies to it validate; it is removed by
  // forgetModuleGlobal or releaseClient, never by free().
  bool registerModuleGlobal(ClientId client, DevicePtr p, std::uint64_t size);
  void forgetModuleGlobal(ClientId client, DevicePtr p);

  // Frees everything `client` holds; its memory is scrubbed before reuse.
  void releaseClient(ClientId client);

  std::uint64_t bytesInUse(ClientId client) const;
  std::size_t granularity() const { return granularity_; }
  const AllocationTable& table() const { return table_; }

 private:
  explicit MemoryManager(VmmBackend& backend, std::size_t granularity);
  struct State;  // chunks, size-class free lists, VA free list (memory_manager.cpp)

  VmmBackend& backend_;
  std::size_t granularity_;
  AllocationTable table_;
  mutable std::mutex mutex_;
  std::unique_ptr<State> state_;
};

}  // namespace agileos::memmgr
