// ClientSession: everything the worker holds on behalf of one client.
//
// Every client-visible object (stream, event, module, function) lives in one
// of this session's handle tables, so a token is only ever resolved within the
// client that owns it. Device memory is owned through the MemoryManager,
// keyed by the same ClientId.
//
// Thread-safety: the tables are internally synchronized; a session may serve
// calls from several transport threads at once.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "memmgr/address_layout.h"
#include "worker/array_texture/array_table.h"
#include "worker/driver_limit_cost.h"
#include "worker/graph_memory.h"
#include "worker/handle_table.h"
#include "worker/host_memory/managed_variables.h"
#include "worker/host_memory/shared_host_segment.h"
#include "worker/launch_chains.h"
#include "worker/protected_modules/module_set.h"
#include "worker/session_guard.h"
#include "worker/stream_ordered_memory.h"
#include "worker/tensor_maps/tensor_map_table.h"

namespace agileos::worker {

// A client's page-locked host memory bound when the daemon sends none (in-process tests, an older
// daemon). The daemon sends each client its share of memory.pinned_total_bytes.
inline constexpr std::uint64_t kDefaultPinnedHostQuotaBytes = 32ull << 30;

using memmgr::ClientId;

class LibraryObject;  // worker/adapters/library_adapter.h

struct StreamRecord {
  CUstream stream = nullptr;
  unsigned flags = 0;
  int priority = 0;
};

struct EventRecord {
  CUevent event = nullptr;
  unsigned flags = 0;
};

struct ParamLayout {
  std::uint32_t offset = 0;
  std::uint32_t size = 0;
};

struct FunctionRecord {
  CUfunction function = nullptr;
  Token module = 0;
  // Shared and immutable once learned: every launch copies the record, which must not
  // cost an allocation.
  std::shared_ptr<const std::vector<ParamLayout>> params;
  std::uint32_t paramBufferSize = 0;  // end of the last parameter
  // Local memory per thread (CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES). The driver grows the
  // context's stack to it at launch, for every resident thread (context_limits.h).
  std::uint32_t localBytes = 0;
  // The byte offsets of the parameters its guarded PTX reads tensor maps from (ptx/tensor_maps.h);
  // null when none (or when its module was not guarded). Checked at every launch
  // (worker/handlers/tensor_map_handlers.h).
  std::shared_ptr<const std::vector<std::uint32_t>> tensorMapOffsets;
};

struct GlobalRange {
  memmgr::DevicePtr base = 0;
  std::uint64_t size = 0;
};

struct ModuleRecord {
  CUmodule module = nullptr;
  std::vector<Token> functions;
  std::vector<GlobalRange> globals;  // registered in the MemoryManager as module globals
  // Charged to the client's quota (DriverShare::kModuleImages) while the module is loaded.
  std::uint64_t deviceBytes = 0;
  // Kernels of its guarded PTX that read tensor maps from parameters (ptx::GuardResult::tensorMaps).
  std::vector<ptx::KernelTensorMaps> tensorMaps;
  // Kernels whose PTX uses system-scope atomics (systemAtomicKernels, worker/module_guard.h).
  std::vector<std::string> systemAtomicKernels;
  // The module's __managed__ variables (worker/host_memory/managed_variables.h); null if none.
  std::shared_ptr<ManagedVariableTable> managed;
};

// Images the trusted side produced for a client (CUBINs from the NVRTC adapter), by SHA-256,
// with the PTX they were compiled from: when the client loads such an image, the PTX is offered
// beside it, so the kernel memory guard applies to it like to any other code (an NVRTC CUBIN
// cannot bypass the guard). Bounded; the oldest entry goes first.
class ImageSubstitutes {
 public:
  static constexpr std::size_t kMaxEntries = 256;
  void add(std::string imageHash, std::string ptx) {
    std::lock_guard lock(mutex_);
    if (entries_.size() >= kMaxEntries) entries_.erase(entries_.begin());
    std::erase_if(entries_, [&](const auto& entry) { return entry.first == imageHash; });
    entries_.emplace_back(std::move(imageHash), std::move(ptx));
  }
  std::optional<std::string> find(const std::string& imageHash) const {
    std::lock_guard lock(mutex_);
    for (const auto& [hash, ptx] : entries_) {
      if (hash == imageHash) return ptx;
    }
    return std::nullopt;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::pair<std::string, std::string>> entries_;  // oldest first
};

// Per-client state of a library adapter that outlives single objects (a cuFFT work-area pool),
// by library name; cleared after the client's library objects at the end of its session.
class LibraryStates {
 public:
  template <typename T, typename Make>
  std::shared_ptr<T> getOrCreate(std::string_view library, Make make) {
    std::lock_guard lock(mutex_);
    auto& slot = states_[std::string(library)];
    if (!slot) slot = make();
    return std::static_pointer_cast<T>(slot);
  }
  void clear() {
    std::map<std::string, std::shared_ptr<LibraryObject>> states;
    {
      std::lock_guard lock(mutex_);
      states.swap(states_);
    }
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<LibraryObject>> states_;
};

class ClientSession {
 public:
  ClientSession(ClientId id, std::string sessionToken) : id_(id), sessionToken_(std::move(sessionToken)) {}

  ClientId id() const { return id_; }
  const std::string& sessionToken() const { return sessionToken_; }

  HandleTable<StreamRecord> streams;
  HandleTable<EventRecord> events;
  HandleTable<ModuleRecord> modules;
  HandleTable<FunctionRecord> functions;
  // CUDA arrays and texture and surface objects (worker/handlers/array_texture_handlers.cpp).
  ArrayTable arrays;
  // The tensor maps the worker encoded for this client (worker/tensor_maps/tensor_map_table.h).
  TensorMapTable tensorMaps;
  // Instantiated launch chains for held launches (worker/launch_batch.h), by stream.
  LaunchChainCache launchChains;
  // Stream-ordered allocations, their pending frees and the client's memory pools.
  StreamOrderedMemory streamOrdered;
  // Graph allocation reservations (graph memory nodes), this client's only.
  GraphMemory graphMemory;
  // Page-locked host memory shared with the client (HostAlloc); only over the
  // shared-memory transport. `hostSegmentBytes` is their total size, never more than
  // `pinnedHostQuotaBytes` (set at attach, immutable after).
  HandleTable<std::shared_ptr<SharedHostSegment>> hostSegments;
  std::atomic<std::uint64_t> hostSegmentBytes{0};
  std::uint64_t pinnedHostQuotaBytes = kDefaultPinnedHostQuotaBytes;

  // Objects of trusted library adapters (cuFFT plans, ...) this client created.
  HandleTable<std::shared_ptr<LibraryObject>> libraryObjects;
  LibraryStates libraryStates;
  ImageSubstitutes imageSubstitutes;
  // The adapter operations the daemon admitted for this client ("library.operation" or
  // "library.*"); set at attach, immutable after.
  std::vector<std::string> adapterOperations;

  // The kernel memory guard for this client's modules (policy from the attach).
  SessionGuard guard;

  // The client's protected module instances (from the attach; null for a session made
  // without one). The pointer is set before the session is shared and never changes; the set
  // is torn down by releaseSession and kept across cudaDeviceReset (like protected memory).
  std::unique_ptr<worker::protected_modules::ModuleSet> protectedModules;

  // The context limits this client changed (cudaDeviceSetLimit, or a launch whose kernel needs
  // a bigger stack: coverLocalMemory), keyed by CUlimit, with the values before its first
  // change: what the rise costs is charged to its quota
  // (MemoryManager::setDriverCharge), and cudaDeviceReset and the end of the session put the
  // initial values back (restoreContextLimits), so the next client of this context starts
  // from the defaults. `limitsMutex` makes each change and its charge one step.
  std::mutex limitsMutex;
  std::map<int, LimitChange> changedLimits;
  // The per-thread stack the context has and this client's quota covers; 0 until known. A
  // launch whose kernel needs no more local memory than this passes with one load
  // (coverLocalMemory); written under limitsMutex, only ever with the context's real value.
  std::atomic<std::size_t> stackCovered{0};

  // Calls dispatched for this client (the daemon's admin API).
  std::atomic<std::uint64_t> calls{0};

  // Set once the session is being torn down; calls racing with teardown are refused.
  std::atomic<bool> closing{false};

 private:
  const ClientId id_;
  const std::string sessionToken_;
};

}  // namespace agileos::worker
