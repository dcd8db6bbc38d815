// HostBuffer: the host memory behind one piece of FakeGpuBackend's emulated
// device memory. TEST-ONLY.
//
// Anonymous memory that the kernel commits on first touch, so a large emulated
// allocation costs host memory only for the bytes a test writes. data() is
// nullptr when the mapping could not be made.
// Thread-safety: none; FakeGpuBackend serializes access.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace agileos::worker::fake {

class HostBuffer {
 public:
  explicit HostBuffer(std::size_t size) : size_(std::max<std::size_t>(size, 1)) {
    void* memory =
        ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    data_ = memory == MAP_FAILED ? nullptr : static_cast<std::uint8_t*>(memory);
  }
  ~HostBuffer() {
    if (data_ != nullptr) ::munmap(data_, size_);
  }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  std::uint8_t* data() const { return data_; }
  std::size_t size() const { return size_; }

  // Sets [begin, begin+bytes) of any HostBuffer to `value`. Zero fills hand whole
  // pages back to the kernel (they read as zero again), so scrubbing a large
  // mapping does not commit it.
  static void fill(std::uint8_t* begin, std::uint8_t value, std::size_t bytes) {
    static const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    const auto first = reinterpret_cast<std::uintptr_t>(begin);
    const std::uintptr_t pagesBegin = (first + page - 1) / page * page;
    const std::uintptr_t pagesEnd = (first + bytes) / page * page;
    if (value != 0 || pagesEnd <= pagesBegin ||
        ::madvise(reinterpret_cast<void*>(pagesBegin), pagesEnd - pagesBegin, MADV_DONTNEED) != 0) {
      std::memset(begin, value, bytes);
      return;
    }
    std::memset(begin, 0, pagesBegin - first);
    std::memset(reinterpret_cast<void*>(pagesEnd), 0, first + bytes - pagesEnd);
  }

 private:
  std::size_t size_;
  std::uint8_t* data_;
};

}  // namespace agileos::worker::fake
