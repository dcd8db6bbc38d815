#include "worker/host_memory/shared_host_segment.h"

#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "proto/shm/sealed_memfd.h"

namespace agileos::worker {

std::shared_ptr<SharedHostSegment> SharedHostSegment::create(GpuBackend& gpu, std::uint64_t bytes,
                                                             bool mapped, CUresult* result,
                                                             std::string* error, std::uint64_t placeAt,
                                                             bool* addressTaken) {
  if (addressTaken != nullptr) *addressTaken = false;
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  *result = CUDA_ERROR_OUT_OF_MEMORY;
  if (bytes == 0 || bytes > (1ull << 46)) {
    *result = CUDA_ERROR_INVALID_VALUE;
    *error = "bad size " + std::to_string(bytes);
    return nullptr;
  }
  const std::uint64_t size = (bytes + page - 1) / page * page;
  const int fd = shm::createSealedMemfd("agileos-pinned", size, error);
  if (fd < 0) return nullptr;
  if (placeAt != 0 && (placeAt % page != 0 || !mapped)) {
    *result = CUDA_ERROR_INVALID_VALUE;
    *error = "a placed segment must be page aligned and mapped for the device";
    ::close(fd);
    return nullptr;
  }
  const int placement = placeAt != 0 ? MAP_FIXED_NOREPLACE : 0;
  void* base = ::mmap(reinterpret_cast<void*>(placeAt), size, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_POPULATE | placement, fd, 0);
  if (base == MAP_FAILED || (placeAt != 0 && reinterpret_cast<std::uint64_t>(base) != placeAt)) {
    // A kernel older than 4.17 takes MAP_FIXED_NOREPLACE as a hint: elsewhere is a failure too.
    const int saved = errno;
    if (base != MAP_FAILED) ::munmap(base, size);
    if (addressTaken != nullptr) *addressTaken = placeAt != 0 && (base != MAP_FAILED || saved == EEXIST);
    *error = std::string("mmap: ") + (base != MAP_FAILED ? "placed elsewhere" : std::strerror(saved));
    ::close(fd);
    return nullptr;
  }
  CUdeviceptr device = 0;
  if (mapped) {
    // Mapped for the device's loads and stores: without the registration there is nothing to
    // hand out.
    *result = gpu.hostRegisterMapped(base, size, false, &device);
    if (*result != CUDA_SUCCESS) {
      *error = "the driver did not map the segment for the device (" +
               std::to_string(static_cast<int>(*result)) + ")";
      ::munmap(base, size);
      ::close(fd);
      return nullptr;
    }
    if (placeAt != 0 && device != placeAt) {
      // Without unified addressing the device would see the segment elsewhere: one pointer
      // could not serve both sides, so there is no managed memory to give.
      gpu.hostUnregister(base);
      ::munmap(base, size);
      ::close(fd);
      *result = CUDA_ERROR_NOT_SUPPORTED;
      *error = "the device's address of a managed segment differs from the host's";
      return nullptr;
    }
    return std::shared_ptr<SharedHostSegment>(
        new SharedHostSegment(gpu, fd, static_cast<std::uint8_t*>(base), size, true, device));
  }
  // Unregistered memory still works (the driver then stages copies itself), only slower:
  // a refused registration (a locked-memory limit, say) costs speed, not the allocation.
  const CUresult registered = gpu.hostRegister(base, size);
  if (registered != CUDA_SUCCESS) {
    spdlog::warn("cuMemHostRegister of {} bytes failed ({}); the segment stays pageable", size,
                 static_cast<int>(registered));
  }
  *result = CUDA_SUCCESS;
  return std::shared_ptr<SharedHostSegment>(
      new SharedHostSegment(gpu, fd, static_cast<std::uint8_t*>(base), size, registered == CUDA_SUCCESS, 0));
}

int SharedHostSegment::takeFd() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

SharedHostSegment::~SharedHostSegment() {
  if (const CUresult result = registered_ ? gpu_.hostUnregister(base_) : CUDA_SUCCESS;
      result != CUDA_SUCCESS) {
    spdlog::warn("cuMemHostUnregister of a shared host segment failed ({})", static_cast<int>(result));
  }
  ::munmap(base_, size_);
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace agileos::worker
