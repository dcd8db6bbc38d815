#include "client/session/array_copies.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "client/common/connection.h"
#include "client/session/array_registry.h"
#include "client/session/error_state.h"
#include "client/session/streams.h"
#include "client/session/worker_calls.h"

namespace agileos::client {
namespace {

void describeEnd(const ArrayCopyEnd& end, v1::ArrayCopyEnd* out) {
  out->set_array(end.array);
  out->set_x(end.x);
  out->set_y(end.y);
  out->set_z(end.z);
  if (end.array != 0) return;
  out->set_pitch(end.pitch);
  out->set_rows(end.rows);
}

// A piece of a copy with a host end: slices [z0, z0 + nz) and rows [y0, y0 + ny) of the box.
struct Piece {
  std::uint64_t z0, nz, y0, ny;
};

char* hostRow(const ArrayCopyEnd& end, std::uint64_t y, std::uint64_t z) {
  return static_cast<char*>(end.pointer) + ((end.z + z) * end.rows + end.y + y) * end.pitch + end.x;
}

// Sends one piece whose host bytes are packed tight (pitch = widthBytes, rows = ny) in `buffer`.
cudaError_t sendPiece(const ArrayCopy& copy, const Piece& piece, bool toArray, char* packed,
                      StagedCalls* staged, CopyTarget target) {
  const std::uint64_t bytes = copy.widthBytes * piece.ny * piece.nz;
  v1::CallRequest request;
  v1::ArrayTexture* args = request.mutable_array_texture();
  args->set_step(v1::ArrayTexture::COPY);
  args->set_width_bytes(copy.widthBytes);
  args->set_height(piece.ny);
  args->set_depth(piece.nz);
  args->set_stream(target.stream);
  args->set_async(target.async);
  const ArrayCopyEnd& arrayEnd = toArray ? copy.dst : copy.src;
  v1::ArrayCopyEnd* array = toArray ? args->mutable_dst() : args->mutable_src();
  v1::ArrayCopyEnd* host = toArray ? args->mutable_src() : args->mutable_dst();
  array->set_array(arrayEnd.array);
  array->set_x(arrayEnd.x);
  array->set_y(arrayEnd.y + piece.y0);
  array->set_z(arrayEnd.z + piece.z0);
  host->set_pitch(copy.widthBytes);
  host->set_rows(piece.ny);
  if (staged != nullptr) {
    staged->describeChunk(0, bytes, host->mutable_host());
  } else {
    host->set_inline_host(true);
    if (toArray) args->set_data(packed, bytes);
  }
  v1::CallReply reply;
  cudaError_t error = cudaSuccess;
  if (staged != nullptr) {
    if (staged->submit(request) != TransportStatus::kOk || staged->next(&reply) != TransportStatus::kOk) {
      return cudaErrorDevicesUnavailable;
    }
    error = absorbReply(request, reply);
  } else {
    error = invoke(request, &reply);
  }
  if (error != cudaSuccess) return error;
  if (!toArray && staged == nullptr) {
    if (reply.array_texture_result().data().size() != bytes) return cudaErrorUnknown;
    std::memcpy(packed, reply.array_texture_result().data().data(), bytes);
  }
  return cudaSuccess;
}

// False when the array is one this process knows (ArrayRegistry) and the box does not fit in it.
// An array it does not know is left to the worker, which refuses it.
bool withinKnownArray(const ArrayCopyEnd& end, const ArrayCopy& copy) {
  const std::optional<ArrayInfo> info = ArrayRegistry::instance().array(end.array);
  if (!info) return true;
  const std::uint64_t widthBytes = std::uint64_t{info->extent.width} * info->elementBytes;
  const std::uint64_t height = std::max<std::uint64_t>(info->extent.height, 1);
  const std::uint64_t depth = std::max<std::uint64_t>(info->extent.depth, 1);
  return end.x <= widthBytes && copy.widthBytes <= widthBytes - end.x && end.y <= height &&
         copy.height <= height - end.y && end.z <= depth && copy.depth <= depth - end.z;
}

cudaError_t copyHostSide(const ArrayCopy& copy, CopyTarget target) {
  const bool toArray = copy.dst.array != 0;
  const ArrayCopyEnd& host = toArray ? copy.src : copy.dst;
  std::unique_ptr<StagedCalls> staged = Connection::instance().stage();
  const std::uint64_t limit = staged ? staged->chunkBytes() : kCopyChunkBytes;
  if (copy.widthBytes > limit) return cudaErrorInvalidValue;  // a row larger than a piece: no array has one
  std::string scratch;
  const std::uint64_t sliceBytes = copy.widthBytes * copy.height;
  for (std::uint64_t z = 0; z < copy.depth;) {
    Piece piece{z, 1, 0, copy.height};
    if (sliceBytes <= limit) {
      piece.nz = std::min<std::uint64_t>(copy.depth - z, limit / sliceBytes);
    }
    for (std::uint64_t y = 0; y < copy.height;) {
      if (sliceBytes > limit) {
        piece.y0 = y;
        piece.ny = std::min<std::uint64_t>(copy.height - y, limit / copy.widthBytes);
      }
      const std::uint64_t bytes = copy.widthBytes * piece.ny * piece.nz;
      char* packed = nullptr;
      if (staged) {
        packed = reinterpret_cast<char*>(staged->chunk(0));
      } else {
        scratch.resize(bytes);
        packed = scratch.data();
      }
      if (toArray) {
        for (std::uint64_t k = 0; k < piece.nz; ++k)
          for (std::uint64_t r = 0; r < piece.ny; ++r)
            std::memcpy(packed + (k * piece.ny + r) * copy.widthBytes,
                        hostRow(host, piece.y0 + r, piece.z0 + k), copy.widthBytes);
      }
      if (cudaError_t error = sendPiece(copy, piece, toArray, packed, staged.get(), target);
          error != cudaSuccess) {
        return error;
      }
      if (!toArray) {
        for (std::uint64_t k = 0; k < piece.nz; ++k)
          for (std::uint64_t r = 0; r < piece.ny; ++r)
            std::memcpy(hostRow(host, piece.y0 + r, piece.z0 + k),
                        packed + (k * piece.ny + r) * copy.widthBytes, copy.widthBytes);
      }
      y += piece.ny;
    }
    z += piece.nz;
  }
  return cudaSuccess;
}

}  // namespace

cudaError_t copyWithArray(const ArrayCopy& copy, CopyTarget target) {
  if (cudaError_t sticky = stickyError(); sticky != cudaSuccess) return sticky;
  if (copy.src.array == 0 && copy.dst.array == 0) return cudaErrorInvalidValue;
  if (copy.widthBytes == 0 || copy.height == 0 || copy.depth == 0) return cudaSuccess;
  if (target.async) noteWorkPosted(target.stream);
  const bool hostEnd = (copy.src.array == 0 && !copy.src.device) || (copy.dst.array == 0 && !copy.dst.device);
  if (hostEnd) {
    const ArrayCopyEnd& host = copy.src.array == 0 ? copy.src : copy.dst;
    if (host.pointer == nullptr || copy.widthBytes > host.pitch - std::min(host.pitch, host.x)) {
      return cudaErrorInvalidValue;
    }
    if (host.x > host.pitch || (copy.depth > 1 && copy.height > host.rows)) return cudaErrorInvalidPitchValue;
    // The host bytes are read (or written) before the worker sees the copy: a box past the
    // array's extent is refused first, as natively, not after reading past the program's buffer.
    const ArrayCopyEnd& arrayEnd = copy.src.array != 0 ? copy.src : copy.dst;
    if (!withinKnownArray(arrayEnd, copy)) return cudaErrorInvalidValue;
    return copyHostSide(copy, target);
  }
  v1::CallRequest request;
  v1::ArrayTexture* args = request.mutable_array_texture();
  args->set_step(v1::ArrayTexture::COPY);
  describeEnd(copy.src, args->mutable_src());
  describeEnd(copy.dst, args->mutable_dst());
  if (copy.src.array == 0) args->mutable_src()->set_device(reinterpret_cast<std::uint64_t>(copy.src.pointer));
  if (copy.dst.array == 0) args->mutable_dst()->set_device(reinterpret_cast<std::uint64_t>(copy.dst.pointer));
  args->set_width_bytes(copy.widthBytes);
  args->set_height(copy.height);
  args->set_depth(copy.depth);
  args->set_stream(target.stream);
  args->set_async(target.async);
  v1::CallReply reply;
  if (cudaError_t error = invoke(request, &reply); error != cudaSuccess) return error;
  // A synchronous call on a stream (the per-thread default stream's spelling) returns once the
  // copy is done; the worker left it enqueued. (A copy with host bytes is done at its reply.)
  if (!target.async || target.returnsEarly) return cudaSuccess;
  v1::CallRequest wait;
  wait.mutable_stream_synchronize()->set_stream(target.stream);
  return invoke(wait, &reply);
}

}  // namespace agileos::client
