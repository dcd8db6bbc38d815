// UniqueFd: sole owner of one file descriptor, closed when the owner goes away. The storage
// service receives descriptors from clients (SCM_RIGHTS) on every path, refused ones included;
// holding each in a UniqueFd from the moment it arrives is what keeps it from leaking.
#pragma once

#include <unistd.h>

#include <utility>

namespace agileos::services::storage {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace agileos::services::storage
