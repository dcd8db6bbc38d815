#include "proto/shm/mapped_region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>

#include "proto/shm/sealed_memfd.h"

namespace agileos::shm {
namespace {

std::string errnoText(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

}  // namespace

std::unique_ptr<MappedRegion> MappedRegion::create(const RegionSizes& sizes, std::string* error) {
  RegionGeometry geometry;
  if (!computeGeometry(sizes, &geometry)) {
    *error = "unusable shared-memory region sizes";
    return nullptr;
  }
  const int fd = createSealedMemfd("agileos-call-region", geometry.regionBytes, error);
  if (fd < 0) return nullptr;
  void* base = ::mmap(nullptr, geometry.regionBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    *error = errnoText("mmap");
    ::close(fd);
    return nullptr;
  }
  // The fresh file is zero; construct the control block's atomics and publish the geometry.
  auto* control = new (base) ControlBlock{};
  control->geometry = geometry;
  return std::unique_ptr<MappedRegion>(
      new MappedRegion(fd, static_cast<std::uint8_t*>(base), geometry.regionBytes, geometry));
}

std::unique_ptr<MappedRegion> MappedRegion::attach(int fd, std::string* error) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size < static_cast<off_t>(sizeof(ControlBlock))) {
    *error = "the region fd is not a region";
    ::close(fd);
    return nullptr;
  }
  const auto size = static_cast<std::uint64_t>(st.st_size);
  void* base = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    *error = errnoText("mmap");
    ::close(fd);
    return nullptr;
  }
  RegionGeometry geometry;
  std::memcpy(&geometry, base, sizeof geometry);  // one copy, then checked and kept
  std::unique_ptr<MappedRegion> region(
      new MappedRegion(fd, static_cast<std::uint8_t*>(base), size, geometry));
  if (!validGeometry(geometry, size)) {
    *error = "the region's geometry is invalid or of another version";
    return nullptr;
  }
  return region;
}

MappedRegion::~MappedRegion() {
  ::munmap(base_, size_);
  ::close(fd_);
}

}  // namespace agileos::shm
