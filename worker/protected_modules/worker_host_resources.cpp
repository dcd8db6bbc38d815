#include "worker/protected_modules/worker_host_resources.h"

#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <limits>

#include "agileos/module_abi.h"
#include "memmgr/address_layout.h"

namespace agileos::worker::protected_modules {
namespace {

// Attempts at a placement before giving up (each failed one was taken by a foreign mapping).
constexpr int kPlacementAttempts = 8;

}  // namespace

WorkerHostResources::~WorkerHostResources() {
  std::lock_guard lock(mutex_);
  while (!mappings_.empty()) {
    const auto [address, bytes] = *mappings_.begin();
    unmapLocked(address, bytes);
  }
  for (std::uint64_t placement : unusable_) memory_.releaseIoRange(client_, placement);
  unusable_.clear();
}

int WorkerHostResources::exportProtected(std::uint64_t device_address, int* fd) {
  const CUresult result = memory_.exportProtected(client_, device_address, fd);
  if (result == CUDA_SUCCESS) return AGILEOS_MODULE_OK;
  return result == CUDA_ERROR_INVALID_VALUE ? AGILEOS_MODULE_EPERM : AGILEOS_MODULE_EIO;
}

int WorkerHostResources::mapIo(int fd, std::uint64_t offset, std::uint64_t bytes, bool deviceMemory,
                               std::uint64_t* address) {
  const std::uint64_t page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  if (bytes == 0 || offset % page != 0 || bytes > memmgr::kMmioWindow.size ||
      offset > std::numeric_limits<std::uint64_t>::max() - bytes) {
    return AGILEOS_MODULE_EINVAL;
  }
  struct stat status {};
  if (::fstat(fd, &status) != 0) return AGILEOS_MODULE_EINVAL;
  // A file (a memfd) must hold the whole range, or the GPU would fault on the missing pages.
  if (S_ISREG(status.st_mode) && offset + bytes > static_cast<std::uint64_t>(status.st_size)) {
    return AGILEOS_MODULE_ERANGE;
  }
  const std::uint64_t mappedBytes = (bytes + page - 1) / page * page;

  std::lock_guard lock(mutex_);
  for (int attempt = 0; attempt < kPlacementAttempts; ++attempt) {
    const std::optional<memmgr::DevicePtr> placement = memory_.placeIoRange(client_, mappedBytes);
    if (!placement) return AGILEOS_MODULE_ENOMEM;
    void* want = reinterpret_cast<void*>(*placement);
    void* got = ::mmap(want, mappedBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, fd,
                       static_cast<off_t>(offset));
    if (got == MAP_FAILED) {
      const int error = errno;
      if (error == EEXIST) {  // a foreign mapping holds the address: keep it out of use, try the next
        unusable_.push_back(*placement);
        continue;
      }
      memory_.releaseIoRange(client_, *placement);
      return error == ENOMEM ? AGILEOS_MODULE_ENOMEM : AGILEOS_MODULE_EINVAL;
    }
    if (got != want) {  // a kernel without MAP_FIXED_NOREPLACE treats it as a hint
      ::munmap(got, mappedBytes);
      memory_.releaseIoRange(client_, *placement);
      spdlog::error("client {}: mmap placed an I/O mapping at {} instead of {}; refused", client_, got, want);
      return AGILEOS_MODULE_EIO;
    }
    CUdeviceptr device = 0;
    CUresult result = gpu_.bindContext();
    if (result == CUDA_SUCCESS) result = gpu_.hostRegisterMapped(got, mappedBytes, deviceMemory, &device);
    if (result != CUDA_SUCCESS || device != *placement) {
      if (result == CUDA_SUCCESS) gpu_.hostUnregister(got);
      ::munmap(got, mappedBytes);
      memory_.releaseIoRange(client_, *placement);
      spdlog::error(
          "client {}: an I/O mapping at {:#x} could not be registered for the GPU at its own address "
          "(CUresult {}, device address {:#x})",
          client_, *placement, static_cast<int>(result), device);
      return AGILEOS_MODULE_EIO;
    }
    mappings_.emplace(*placement, mappedBytes);
    *address = *placement;
    return AGILEOS_MODULE_OK;
  }
  return AGILEOS_MODULE_ENOMEM;
}

int WorkerHostResources::unmapIo(std::uint64_t address) {
  std::lock_guard lock(mutex_);
  auto it = mappings_.find(address);
  if (it == mappings_.end()) return AGILEOS_MODULE_EPERM;
  return unmapLocked(address, it->second);
}

int WorkerHostResources::unmapLocked(std::uint64_t address, std::uint64_t mappedBytes) {
  mappings_.erase(address);
  void* host = reinterpret_cast<void*>(address);
  // The GPU must be done with the range before its pages go: module teardown runs after the
  // session's work has drained (session_teardown synchronizes the context first).
  int rc = AGILEOS_MODULE_OK;
  if (gpu_.bindContext() != CUDA_SUCCESS || gpu_.hostUnregister(host) != CUDA_SUCCESS)
    rc = AGILEOS_MODULE_EIO;
  if (::munmap(host, mappedBytes) != 0) rc = AGILEOS_MODULE_EIO;
  if (rc == AGILEOS_MODULE_OK) {
    memory_.releaseIoRange(client_, address);
  } else {
    unusable_.push_back(address);  // never placed again while something may still be there
  }
  return rc;
}

int WorkerHostResources::checkExactUserAllocation(std::uint64_t device_address, std::uint64_t bytes) {
  const std::optional<memmgr::Allocation> found = memory_.table().find(device_address);
  if (!found || found->owner != client_ || found->kind != memmgr::AllocationKind::kUser ||
      found->base != device_address || found->size != bytes) {
    return AGILEOS_MODULE_EPERM;
  }
  return AGILEOS_MODULE_OK;
}

int WorkerHostResources::exportUserAllocation(std::uint64_t device_address, std::uint64_t bytes, int* fd,
                                              std::uint64_t* handle_bytes, std::uint64_t* offset) {
  const CUresult result =
      memory_.exportUserAllocation(client_, device_address, bytes, fd, handle_bytes, offset);
  if (result == CUDA_SUCCESS) return AGILEOS_MODULE_OK;
  return result == CUDA_ERROR_INVALID_VALUE ? AGILEOS_MODULE_EPERM : AGILEOS_MODULE_EIO;
}

std::size_t WorkerHostResources::liveMappings() const {
  std::lock_guard lock(mutex_);
  return mappings_.size();
}

}  // namespace agileos::worker::protected_modules
