#include "proto/shm/sealed_memfd.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace agileos::shm {

int createSealedMemfd(const char* name, std::uint64_t bytes, std::string* error) {
  if (bytes == 0 || bytes > static_cast<std::uint64_t>(INT64_MAX)) {
    *error = "bad shared-memory size " + std::to_string(bytes);
    return -1;
  }
  const int fd = ::memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) {
    *error = std::string("memfd_create: ") + std::strerror(errno);
    return -1;
  }
  const auto size = static_cast<off_t>(bytes);
  int rc = ::ftruncate(fd, size);
  if (rc == 0) {
    const int fallocateError = ::posix_fallocate(fd, 0, size);  // returns the error, not errno
    if (fallocateError != 0) {
      errno = fallocateError;
      rc = -1;
    }
  }
  if (rc == 0) rc = ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
  if (rc != 0) {
    *error = std::string("sizing or sealing shared memory: ") + std::strerror(errno);
    ::close(fd);
    return -1;
  }
  return fd;
}

bool sizeIsSealed(int fd) {
  const int seals = ::fcntl(fd, F_GET_SEALS);
  return seals >= 0 && (seals & F_SEAL_SHRINK) != 0 && (seals & F_SEAL_GROW) != 0;
}

}  // namespace agileos::shm
