#include "client/session/host_allocations.h"

#include <sys/mman.h>
#include <unistd.h>

#include "client/common/connection.h"
#include "client/common/log.h"
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

// A segment the worker creates, registers and passes to this process.
cudaError_t allocateShared(std::size_t size, unsigned flags, std::size_t* mappedSize, std::uint64_t* segment,
                           std::uint64_t* deviceAddress, void** out) {
  v1::CallRequest request;
  request.mutable_host_alloc()->set_size(size);
  request.mutable_host_alloc()->set_flags(flags);
  v1::CallReply reply;
  void* mapping = nullptr;
  const ConnectionState state = Connection::instance().allocateShared(request, &reply, &mapping);
  if (state != ConnectionState::kConnected) return toCudaError(state);
  if (cudaError_t error = absorbReply(request, reply); error != cudaSuccess) return error;
  *segment = reply.host_segment().segment();
  *mappedSize = reply.host_segment().size();
  *deviceAddress = reply.host_segment().device_address();
  if (mapping == nullptr || ((flags & cudaHostAllocMapped) != 0 &&
                             *deviceAddress == 0)) {  // mapped on the worker's side only: give it back
    v1::CallRequest release;
    release.mutable_host_free()->set_segment(*segment);
    v1::CallReply ignored;
    invoke(release, &ignored);
    return cudaErrorMemoryAllocation;
  }
  *out = mapping;
  return cudaSuccess;
}

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
  const cudaError_t error =
      shared ? allocateShared(size, flags, &entry.mappedSize, &entry.segment, &entry.deviceAddress, p)
             : allocatePrivate(size, &entry.mappedSize, p);
  if (error != cudaSuccess) return error;
  std::lock_guard lock(mutex_);
  entries_[reinterpret_cast<std::uintptr_t>(*p)] = entry;
  return cudaSuccess;
}

cudaError_t HostAllocations::free(void* p) {
  Entry entry{};
  {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(reinterpret_cast<std::uintptr_t>(p));
    if (it == entries_.end()) return cudaErrorInvalidValue;
    entry = it->second;
    entries_.erase(it);
  }
  cudaError_t error = cudaSuccess;
  if (entry.segment != 0) {
    // The worker waits for the device, then unregisters and unmaps its side.
    v1::CallRequest request;
    request.mutable_host_free()->set_segment(entry.segment);
    v1::CallReply reply;
    error = invoke(request, &reply);
  }
  ::munmap(p, entry.mappedSize);
  return error;
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
  if (!found) return std::nullopt;
  return found->entry.flags;
}

std::optional<std::uint64_t> HostAllocations::deviceAddressOf(const void* p) const {
  std::lock_guard lock(mutex_);
  const std::optional<Found> found = containing(p);
  if (!found || found->entry.deviceAddress == 0) return std::nullopt;
  return found->entry.deviceAddress + found->offset;
}

std::optional<SharedHostRange> HostAllocations::sharedRange(const void* p, std::uint64_t bytes) const {
  std::lock_guard lock(mutex_);
  const std::optional<Found> found = containing(p);
  if (!found || found->entry.segment == 0 || bytes > found->entry.size - found->offset) return std::nullopt;
  return SharedHostRange{found->entry.segment, found->offset};
}

}  // namespace agileos::client
