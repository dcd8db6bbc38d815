#include "client/session/host_allocations.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>

#include "client/common/connection.h"
#include "client/common/log.h"
#include "client/session/page_swap.h"
#include "client/session/worker_calls.h"

namespace agileos::client {
namespace {

cudaError_t allocatePrivate(std::size_t size, std::size_t* mappedSize, void** out) {
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  if (size > SIZE_MAX - page) return cudaErrorMemoryAllocation;
  *mappedSize = (size + page - 1) / page * page;
  void* p = ::mmap(nullptr, *mappedSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return cudaErrorMemoryAllocation;
  ::mlock(p, *mappedSize);  // best effort: RLIMIT_MEMLOCK may refuse, which only costs speed
  *out = p;
  return cudaSuccess;
}

// The worker waits for the device, then unregisters and unmaps its side of a segment.
cudaError_t freeWorkerSegment(std::uint64_t segment) {
  v1::CallRequest request;
  request.mutable_host_free()->set_segment(segment);
  v1::CallReply reply;
  return invoke(request, &reply);
}

// A segment the worker creates, registers and passes to this process. `managed`: placed in the
// worker's managed window and mapped here at the device's address (host_allocations.h); when this
// process already uses that address, *addressTaken is set (if given) and the segment given back.
// `variable`: the memory of a module's __managed__ variable (HostAlloc.managed_variable).
cudaError_t allocateShared(std::size_t size, unsigned flags, bool managed, std::size_t* mappedSize,
                           std::uint64_t* segment, std::uint64_t* deviceAddress, void** out,
                           bool* addressTaken = nullptr, const v1::ManagedVariableRef* variable = nullptr) {
  v1::CallRequest request;
  request.mutable_host_alloc()->set_size(size);
  request.mutable_host_alloc()->set_flags(flags);
  request.mutable_host_alloc()->set_managed(managed);
  if (variable != nullptr) *request.mutable_host_alloc()->mutable_managed_variable() = *variable;
  v1::CallReply reply;
  void* mapping = nullptr;
  const ConnectionState state = Connection::instance().allocateShared(request, &reply, &mapping, managed);
  if (state != ConnectionState::kConnected) return toCudaError(state);
  if (reply.error() == 0 && reply.host_segment().segment() == 0) return cudaErrorUnknown;  // a broken reply
  if (mapping == nullptr && reply.has_host_segment() && reply.host_segment().segment() != 0) {
    // The worker made it but this side could not map it (managed: the address is taken here).
    freeWorkerSegment(reply.host_segment().segment());
    if (managed && addressTaken != nullptr) *addressTaken = true;
    if (managed && firstTime("managed address taken")) {
      AGILEOS_LOG_WARN(
          "a segment at one address for host and device: this process already uses the "
          "address the worker chose (%s)",
          reply.error_detail().c_str());
    }
    return cudaErrorMemoryAllocation;
  }
  if (cudaError_t error = absorbReply(request, reply); error != cudaSuccess) return error;
  *segment = reply.host_segment().segment();
  *mappedSize = reply.host_segment().size();
  *deviceAddress = reply.host_segment().device_address();
  const bool mapped = managed || (flags & cudaHostAllocMapped) != 0;
  if (mapping == nullptr || *mappedSize < size || (mapped && *deviceAddress == 0) ||
      (managed && *deviceAddress != reinterpret_cast<std::uint64_t>(mapping))) {
    // Mapped on the worker's side only, or not as asked: give it back.
    if (mapping != nullptr) ::munmap(mapping, *mappedSize);
    freeWorkerSegment(*segment);
    return cudaErrorMemoryAllocation;
  }
  *out = mapping;
  return cudaSuccess;
}

std::size_t pageSize() { return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)); }

}  // namespace

HostAllocations& HostAllocations::instance() {
  static HostAllocations* allocations = new HostAllocations();
  return *allocations;
}

cudaError_t HostAllocations::allocate(std::size_t size, unsigned flags, void** p) {
  Entry entry{size, 0, flags, 0, 0};
  const bool shared = Connection::instance().sharesHostMemory();
  if (!shared && (flags & cudaHostAllocMapped) != 0) {  // nothing to map it with
    if (firstTime("mapped host memory without shared memory")) {
      AGILEOS_LOG_WARN(
          "device-mapped host memory (cudaHostAllocMapped, CU_MEMHOSTALLOC_DEVICEMAP) needs the "
          "shared-memory "
          "transport; returning not-supported");
    }
    return cudaErrorNotSupported;
  }
  cudaError_t error = cudaSuccess;
  if (!shared) {
    error = allocatePrivate(size, &entry.mappedSize, p);
  } else {
    // Page-locked memory is mapped for the device and placed like managed memory, at one address
    // for this process and the device, whatever the flags: under unified addressing the driver maps
    // every page-locked allocation at its host address, and programs pass cudaMallocHost pointers
    // to kernels (cuda-samples UnifiedMemoryPerf). Should this process use that address already,
    // the segment is mapped anywhere and reached through cudaHostGetDevicePointer. The program's
    // flags are kept as given (cudaHostGetFlags).
    const unsigned placed = flags | cudaHostAllocMapped;
    bool taken = false;
    error = allocateShared(size, placed, true, &entry.mappedSize, &entry.segment, &entry.deviceAddress, p,
                           &taken);
    if (taken)
      error = allocateShared(size, placed, false, &entry.mappedSize, &entry.segment, &entry.deviceAddress, p);
  }
  if (error != cudaSuccess) return error;
  std::lock_guard lock(mutex_);
  entries_[reinterpret_cast<std::uintptr_t>(*p)] = entry;
  return cudaSuccess;
}

std::optional<HostAllocations::Entry> HostAllocations::take(void* p, Kind kind) {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(reinterpret_cast<std::uintptr_t>(p));
  if (it == entries_.end() || it->second.kind != kind) return std::nullopt;
  Entry entry = it->second;
  hints_.erase(it->first);
  entries_.erase(it);
  return entry;
}

cudaError_t HostAllocations::free(void* p) {
  const std::optional<Entry> entry = take(p, Kind::kAllocated);
  if (!entry) return cudaErrorInvalidValue;
  const cudaError_t error = entry->segment != 0 ? freeWorkerSegment(entry->segment) : cudaSuccess;
  ::munmap(p, entry->mappedSize);
  return error;
}

bool HostAllocations::pagesInUse(std::uintptr_t pageStart, std::uintptr_t pageEnd) const {
  // Entries' page ranges are disjoint and ordered like their keys: only the last one starting
  // before pageEnd can meet the range.
  auto it = entries_.lower_bound(pageEnd);
  if (it == entries_.begin()) return false;
  --it;
  const std::uintptr_t start = it->first - it->second.segmentOffset;
  return start < pageEnd && start + it->second.mappedSize > pageStart;
}

cudaError_t HostAllocations::registerRange(void* p, std::size_t size, unsigned flags) {
  if (!Connection::instance().sharesHostMemory()) {
    if (firstTime("host register without shared memory")) {
      AGILEOS_LOG_WARN("cudaHostRegister needs the shared-memory transport; returning not-supported");
    }
    return cudaErrorNotSupported;
  }
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  const std::size_t page = pageSize();
  if (p == nullptr || size == 0 || address > UINTPTR_MAX - size - page) return cudaErrorInvalidValue;
  const std::uintptr_t pageStart = address / page * page;
  const std::uintptr_t pageEnd = (address + size + page - 1) / page * page;
  const std::size_t length = pageEnd - pageStart;
  // One registration at a time: the checks below and the swap must see the same address space.
  std::lock_guard registering(registerMutex_);
  {
    std::lock_guard lock(mutex_);
    if (pagesInUse(pageStart, pageEnd)) return cudaErrorHostMemoryAlreadyRegistered;
  }
  std::string why;
  if (meetsOwnStack(pageStart, pageEnd)) {
    AGILEOS_LOG_WARN("cudaHostRegister of %zu bytes at %p refused: the calling thread's stack", size, p);
    return cudaErrorInvalidValue;
  }
  if (!ownPagesArePrivateAnonymous(pageStart, pageEnd, &why)) {
    AGILEOS_LOG_WARN("cudaHostRegister of %zu bytes at %p refused: %s", size, p, why.c_str());
    return cudaErrorInvalidValue;
  }
  Entry entry{size, 0, flags, 0, 0, Kind::kRegistered, address - pageStart};
  void* shared = nullptr;
  if (cudaError_t error = allocateShared(length, cudaHostAllocMapped, false, &entry.mappedSize,
                                         &entry.segment, &entry.deviceAddress, &shared);
      error != cudaSuccess) {
    return error;
  }
  if (entry.mappedSize != length || !swapInShared(reinterpret_cast<void*>(pageStart), length, shared)) {
    ::munmap(shared, entry.mappedSize);
    freeWorkerSegment(entry.segment);
    return cudaErrorMemoryAllocation;
  }
  std::lock_guard lock(mutex_);
  entries_[address] = entry;
  return cudaSuccess;
}

cudaError_t HostAllocations::unregister(void* p) {
  const std::optional<Entry> entry = take(p, Kind::kRegistered);
  if (!entry) return cudaErrorHostMemoryNotRegistered;
  // The pages become private again here, with their contents (page_swap.h). Should that run out
  // of memory they stay shared, still valid for the program.
  const cudaError_t error = freeWorkerSegment(entry->segment);
  swapOutToPrivate(static_cast<char*>(p) - entry->segmentOffset, entry->mappedSize);
  return error;
}

cudaError_t HostAllocations::allocateManaged(std::size_t size, unsigned flags, void** p) {
  if (!Connection::instance().sharesHostMemory()) {
    if (firstTime("managed memory without shared memory")) {
      AGILEOS_LOG_WARN("cudaMallocManaged needs the shared-memory transport; returning not-supported");
    }
    return cudaErrorNotSupported;
  }
  Entry entry{size, 0, flags, 0, 0, Kind::kManaged, 0};
  if (cudaError_t error =
          allocateShared(size, 0, true, &entry.mappedSize, &entry.segment, &entry.deviceAddress, p);
      error != cudaSuccess) {
    return error;
  }
  std::lock_guard lock(mutex_);
  entries_[reinterpret_cast<std::uintptr_t>(*p)] = entry;
  return cudaSuccess;
}

cudaError_t HostAllocations::allocateManagedVariable(std::uint64_t module, const std::string& name,
                                                     std::size_t size, void** p) {
  if (!Connection::instance().sharesHostMemory()) {
    if (firstTime("managed variables without shared memory")) {
      AGILEOS_LOG_ERROR("__managed__ variables need the shared-memory transport; their module fails to load");
    }
    return cudaErrorNotSupported;
  }
  v1::ManagedVariableRef variable;
  variable.set_module(module);
  variable.set_name(name);
  Entry entry{size, 0, cudaMemAttachGlobal, 0, 0, Kind::kManaged, 0};
  entry.moduleVariable = true;
  if (cudaError_t error = allocateShared(size, 0, true, &entry.mappedSize, &entry.segment,
                                         &entry.deviceAddress, p, nullptr, &variable);
      error != cudaSuccess) {
    return error;
  }
  std::lock_guard lock(mutex_);
  entries_[reinterpret_cast<std::uintptr_t>(*p)] = entry;
  return cudaSuccess;
}

void HostAllocations::forgetManagedVariable(void* p) {
  // The mapping stays: the fatbin is unregistered at exit (an atexit handler the runtime set up
  // before most of the program's own), and host code that still reads the variable then must not
  // fault. The pages are this process's alone once the worker has dropped its side.
  std::lock_guard lock(mutex_);
  auto it = entries_.find(reinterpret_cast<std::uintptr_t>(p));
  if (it != entries_.end() && it->second.moduleVariable) {
    hints_.erase(it->first);
    entries_.erase(it);
  }
}

cudaError_t HostAllocations::freeManaged(void* p) {
  {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(reinterpret_cast<std::uintptr_t>(p));
    if (it != entries_.end() && it->second.moduleVariable) return cudaErrorInvalidValue;
  }
  const std::optional<Entry> entry = take(p, Kind::kManaged);
  if (!entry) return cudaErrorInvalidValue;
  const cudaError_t error = freeWorkerSegment(entry->segment);
  ::munmap(p, entry->mappedSize);
  return error;
}

bool HostAllocations::holdsManaged() const {
  std::lock_guard lock(mutex_);
  return std::any_of(entries_.begin(), entries_.end(),
                     [](const auto& entry) { return entry.second.kind == Kind::kManaged; });
}

bool HostAllocations::isManaged(const void* p, std::uint64_t bytes) const {
  std::lock_guard lock(mutex_);
  const std::optional<Found> found = containing(p);
  return found && found->entry.kind == Kind::kManaged && bytes <= found->entry.size - found->offset;
}

std::optional<HostAllocations::ManagedRange> HostAllocations::managedRange(const void* p,
                                                                           std::uint64_t bytes) const {
  const std::optional<Found> found = containing(p);
  if (bytes == 0 || !found || found->entry.kind != Kind::kManaged ||
      bytes > found->entry.size - found->offset)
    return std::nullopt;
  return ManagedRange{reinterpret_cast<std::uintptr_t>(p) - found->offset, found->offset};
}

bool HostAllocations::adviseManaged(const void* p, std::uint64_t bytes,
                                    const std::function<void(PageHints&)>& change) {
  std::lock_guard lock(mutex_);
  const std::optional<ManagedRange> range = managedRange(p, bytes);
  if (!range) return false;
  hints_[range->base].apply(range->offset, bytes, change);
  return true;
}

bool HostAllocations::managedHints(const void* p, std::uint64_t bytes, PageHints* common) const {
  std::lock_guard lock(mutex_);
  const std::optional<ManagedRange> range = managedRange(p, bytes);
  if (!range) return false;
  auto it = hints_.find(range->base);
  *common = it == hints_.end() ? PageHints{} : it->second.common(range->offset, bytes);
  return true;
}

bool HostAllocations::isManagedBase(const void* p) const {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(reinterpret_cast<std::uintptr_t>(p));
  return it != entries_.end() && it->second.kind == Kind::kManaged;
}

std::optional<HostAllocations::Kind> HostAllocations::kindOf(const void* p) const {
  std::lock_guard lock(mutex_);
  const std::optional<Found> found = containing(p);
  if (!found) return std::nullopt;
  return found->entry.kind;
}

std::optional<HostAllocations::Found> HostAllocations::containing(const void* p) const {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  auto it = entries_.upper_bound(address);
  if (it == entries_.begin()) return std::nullopt;
  --it;
  const std::uint64_t offset = address - it->first;
  if (offset >= it->second.size) return std::nullopt;
  return Found{it->second, offset};
}

std::optional<unsigned> HostAllocations::flagsOf(const void* p) const {
  std::lock_guard lock(mutex_);
  const std::optional<Found> found = containing(p);
  if (!found || found->entry.kind == Kind::kManaged) return std::nullopt;  // cudaHostGetFlags refuses it
  const unsigned mapped = found->entry.deviceAddress != 0 ? unsigned{cudaHostAllocMapped} : 0u;
  return found->entry.flags | mapped;
}

std::optional<void*> HostAllocations::hostAddressOfDeviceRange(std::uint64_t device,
                                                               std::uint64_t bytes) const {
  std::lock_guard lock(mutex_);
  for (const auto& [key, entry] : entries_) {
    if (entry.deviceAddress == 0) continue;
    // The segment's device mapping starts at deviceAddress and covers mappedSize bytes; the
    // program's range starts segmentOffset bytes into it, at `key`.
    const std::uint64_t begin = entry.deviceAddress + entry.segmentOffset;
    if (device < begin || device - begin >= entry.size || bytes > entry.size - (device - begin)) continue;
    return reinterpret_cast<void*>(key + (device - begin));
  }
  return std::nullopt;
}

std::optional<std::uint64_t> HostAllocations::deviceAddressOf(const void* p) const {
  std::lock_guard lock(mutex_);
  const std::optional<Found> found = containing(p);
  if (!found || found->entry.deviceAddress == 0) return std::nullopt;
  return found->entry.deviceAddress + found->entry.segmentOffset + found->offset;
}

std::optional<SharedHostRange> HostAllocations::sharedRange(const void* p, std::uint64_t bytes) const {
  std::lock_guard lock(mutex_);
  const std::optional<Found> found = containing(p);
  if (!found || found->entry.segment == 0 || bytes > found->entry.size - found->offset) return std::nullopt;
  return SharedHostRange{found->entry.segment, found->entry.segmentOffset + found->offset};
}

}  // namespace agileos::client
