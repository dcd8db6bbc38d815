// MappedRegion: one shared-memory call region (ring_layout.h) mapped into this process.
//
// create() is the worker's: it makes a memfd of the computed size, reserves its pages
// (so touching the region can never SIGBUS the worker for lack of memory), seals it
// against shrinking and growing (so the client cannot ftruncate it under the worker's
// feet), maps it, and initialises the control block. attach() is the client's: it maps a
// received fd and validates the geometry against the mapped size.
//
// Ownership: the object owns the mapping and the fd; both are released by the destructor.
// Thread-safety: the object itself is immutable after construction.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "proto/shm/ring_layout.h"

namespace agileos::shm {

class MappedRegion {
 public:
  // Worker side. Returns null with *error set on failure.
  static std::unique_ptr<MappedRegion> create(const RegionSizes& sizes, std::string* error);
  // Client side; takes ownership of `fd` (closed on failure too). Returns null with *error set
  // if the fd cannot be mapped or does not hold a valid region of this version.
  static std::unique_ptr<MappedRegion> attach(int fd, std::string* error);

  ~MappedRegion();
  MappedRegion(const MappedRegion&) = delete;
  MappedRegion& operator=(const MappedRegion&) = delete;

  int fd() const { return fd_; }
  std::uint8_t* base() const { return base_; }
  std::uint64_t size() const { return size_; }
  ControlBlock& control() const { return *reinterpret_cast<ControlBlock*>(base_); }
  // The geometry in PRIVATE memory: computed (worker) or copied once and validated (client).
  // Neither side reads the shared copy again, so a peer rewriting it changes nothing.
  const RegionGeometry& geometry() const { return geometry_; }

 private:
  MappedRegion(int fd, std::uint8_t* base, std::uint64_t size, const RegionGeometry& geometry)
      : fd_(fd), base_(base), size_(size), geometry_(geometry) {}

  int fd_;
  std::uint8_t* base_;
  std::uint64_t size_;
  RegionGeometry geometry_;
};

}  // namespace agileos::shm
