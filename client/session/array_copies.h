// Copies to, from and between CUDA arrays (untrusted side): one ArrayTexture COPY request per
// piece. Device-side ends travel as addresses (the worker checks the whole pitched span against
// one live allocation); host bytes travel through the shared-memory connection's staging area, or
// inside the messages over gRPC, a run of whole slices or rows of one slice at a time.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "client/session/copy_engine.h"

namespace agileos::client {

// One end of an array copy: an array (token non-zero; x in bytes) or linear memory of `pitch`
// bytes a row and `rows` rows a slice, on the device or the host.
struct ArrayCopyEnd {
  std::uint64_t array = 0;
  void* pointer = nullptr;  // linear memory: the box's origin is (x, y, z) from here
  bool device = false;
  std::uint64_t pitch = 0, rows = 0;
  std::uint64_t x = 0, y = 0, z = 0;
};

struct ArrayCopy {
  ArrayCopyEnd src, dst;
  std::uint64_t widthBytes = 0, height = 1, depth = 1;
};

// At least one end must be an array; a host end is never an array's. Nothing to copy succeeds.
cudaError_t copyWithArray(const ArrayCopy& copy, CopyTarget target);

}  // namespace agileos::client
