// What the driver shim's copies and fills share (untrusted side): where a call's work runs, and
// the address one side of a rectangle copy names.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "client/session/array_copies.h"
#include "client/session/copy_engine.h"
#include "client/session/streams.h"

namespace agileos::client::cuda_shim {

enum class Ordering { kSynchronous, kAsynchronous };

// Where a copy or fill runs: the legacy stream for a synchronous call (the per-thread default
// stream for a _ptds one), `stream` for an asynchronous one. Checks the context first.
CUresult copyTarget(CUstream stream, DefaultStream spelling, Ordering ordering, CopyTarget* target);

// The address a rectangle side names (its base, `y` rows of `pitch` bytes and `x` bytes on),
// and the kind of memory it is. False for an array (copies naming one go to arrayCopyEnd), an unknown
// memory type, or an offset that overflows; the worker checks the device range itself.
bool rectangleSide(int type, const void* host, CUdeviceptr device, std::size_t x, std::size_t y,
                   std::size_t pitch, std::uintptr_t* address, bool* onDevice, bool* unified);

// A CUmemorytype field of the program's struct, read as an integer: the program may have put any
// bit pattern there, which an enum object cannot hold.
inline int memoryTypeOf(const CUmemorytype& field) {
  int type = 0;
  static_assert(sizeof type == sizeof field);
  std::memcpy(&type, &field, sizeof type);
  return type;
}

// One end of a cuMemcpy2D/3D copy that names an array (api_arrays.cpp): the array, or linear memory
// of the given kind with `pitch` bytes a row and `rows` rows a slice. False for an unknown type.
bool arrayCopyEnd(int type, const void* host, CUdeviceptr device, CUarray array, std::size_t x, std::size_t y,
                  std::size_t z, std::size_t pitch, std::size_t rows, ArrayCopyEnd* end);

// The copy kind of a rectangle copy from the kinds of its two sides.
cudaMemcpyKind rectangleCopyKind(bool srcOnDevice, bool dstOnDevice, bool unified);

}  // namespace agileos::client::cuda_shim
