// Building blocks of the private driver tables served by cuGetExportTable (untrusted side):
// entry() and size() make a table's words, unknownEntry<table, entry> fills an entry whose
// meaning is not known.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstddef>

#include "client/common/log.h"

namespace agileos::client::cuda_shim {

// An entry whose meaning is not known: it fails closed, and says so once. Returning a CUresult
// from a function the caller may declare with other parameters is safe in the SysV ABI (the
// caller owns its arguments).
template <unsigned kTable, unsigned kEntry>
CUresult unknownEntry() {
  static std::atomic<bool> reported{false};
  if (!reported.exchange(true)) {
    AGILEOS_LOG_WARN(
        "a CUDA runtime in the program called entry %u of private driver table %u, which AgileOS "
        "does not serve; returning CUDA_ERROR_NOT_SUPPORTED",
        kEntry, kTable);
  }
  return CUDA_ERROR_NOT_SUPPORTED;
}

template <typename Function>
void* entry(Function* function) {
  return reinterpret_cast<void*>(function);
}

// A table's first word: its size in bytes.
inline void* size(std::size_t entries) { return reinterpret_cast<void*>(entries * sizeof(void*)); }

}  // namespace agileos::client::cuda_shim
