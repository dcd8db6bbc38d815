#include "services/storage/shared_file_mapping.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

namespace agileos::services::storage {

SharedFileMapping::SharedFileMapping(SharedFileMapping&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

SharedFileMapping& SharedFileMapping::operator=(SharedFileMapping&& other) noexcept {
  if (this != &other) {
    unmap();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

SharedFileMapping::~SharedFileMapping() { unmap(); }

void SharedFileMapping::unmap() {
  if (data_ != nullptr) ::munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

int SharedFileMapping::map(int fd, std::uint64_t bytes, std::string* reason) {
  unmap();
  if (bytes == 0 || bytes > std::numeric_limits<std::size_t>::max()) {
    *reason = "mapping size " + std::to_string(bytes) + " out of range";
    return -EINVAL;
  }
  // Seal first, then check the size: once sealed, the size checked is the size for good.
  // EPERM/EINVAL: the file allows no seals (see the header).
  (void)::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK);
  struct stat status;
  if (::fstat(fd, &status) != 0) {
    const int error = errno;
    *reason = std::string("fstat: ") + std::strerror(error);
    return -error;
  }
  if (!S_ISREG(status.st_mode)) {
    *reason = "not a regular file (a memfd was expected)";
    return -EINVAL;
  }
  if (static_cast<std::uint64_t>(status.st_size) < bytes) {
    *reason = "file of " + std::to_string(status.st_size) + " bytes, shorter than the " +
              std::to_string(bytes) + " to map";
    return -EINVAL;
  }
  void* address = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (address == MAP_FAILED) {
    const int error = errno;
    *reason = std::string("mmap: ") + std::strerror(error);
    return -error;
  }
  data_ = static_cast<std::byte*>(address);
  size_ = bytes;
  return 0;
}

}  // namespace agileos::services::storage
