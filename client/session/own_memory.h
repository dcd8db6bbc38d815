// Reading the program's own memory at an address the program passed, without faulting: the
// shim sizes and copies device-code images (registered fatbins, cudaLibraryLoadData) whose
// headers may point anywhere, and a bad pointer must become a CUDA error, not a crash.
#pragma once

#include <sys/uio.h>
#include <unistd.h>

#include <cstddef>

namespace agileos::client {

// Copies `size` bytes at `address` into `out`; false (nothing promised about `out`) when any of
// them is not readable. process_vm_readv on our own pid reports EFAULT instead of raising SIGSEGV.
inline bool readOwnMemory(const void* address, void* out, std::size_t size) {
  if (size == 0) return true;
  iovec local{out, size};
  iovec remote{const_cast<void*>(address), size};
  return ::process_vm_readv(::getpid(), &local, 1, &remote, 1, 0) == static_cast<ssize_t>(size);
}

}  // namespace agileos::client
