// A MAP_SHARED read-write mapping of a file the client passed (the queue memfd; the host
// backend's buffer). Touching a mapped page past the file's end raises SIGBUS, which would kill
// the service, so the mapping is refused unless the file is a regular file at least as long as
// the mapping, and the file is sealed against shrinking where it allows seals (memfds made with
// MFD_ALLOW_SEALING). A file that allows no seals is mapped anyway: it comes from the trusted
// worker, which never shrinks it.
//
// Thread-safety: the mapping's bytes are shared with other processes; the object itself is
// immutable after map().
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace agileos::services::storage {

class SharedFileMapping {
 public:
  SharedFileMapping() = default;
  SharedFileMapping(SharedFileMapping&& other) noexcept;
  SharedFileMapping& operator=(SharedFileMapping&& other) noexcept;
  SharedFileMapping(const SharedFileMapping&) = delete;
  SharedFileMapping& operator=(const SharedFileMapping&) = delete;
  ~SharedFileMapping();

  // Maps `bytes` (> 0) of fd from offset 0. 0, or a negative errno with *reason.
  int map(int fd, std::uint64_t bytes, std::string* reason);
  void unmap();

  std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace agileos::services::storage
