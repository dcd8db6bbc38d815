// Geometry of CUDA arrays as the worker checks it: element sizes, extents of levels, the
// boxes a copy may touch and the device bytes an array is charged. Pure functions of
// untrusted numbers: every product is bounded first, so none of them can wrap.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <optional>
#include <string>

namespace agileos::worker::arrays {

// The largest width and height, and the largest depth (or layer count), the worker admits: above
// every limit of the device (an H200 reports 131072 for 2D widths and 16384 for 3D extents, 2048
// layers), so the driver keeps refusing what it refuses, and small enough that an extent's byte
// count (times 16 bytes an element, times every level) stays far below 2^64.
inline constexpr std::uint64_t kMaxArrayWidth = 1ull << 18;
inline constexpr std::uint64_t kMaxArrayDepth = 1ull << 16;

// CUDA_ARRAY3D_* flags the worker passes on. Sparse and deferred-mapping arrays (whose memory is
// mapped by cuMemMapArrayAsync) are not admitted.
inline constexpr unsigned kAdmittedArrayFlags = CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_SURFACE_LDST |
                                                CUDA_ARRAY3D_CUBEMAP | CUDA_ARRAY3D_TEXTURE_GATHER |
                                                CUDA_ARRAY3D_DEPTH_TEXTURE | CUDA_ARRAY3D_COLOR_ATTACHMENT;

// Bytes of one element of `channels` channels of `format` (CUarray_format); 0 for a format or a
// channel count the worker does not admit (the eight plain formats; 1, 2 or 4 channels).
std::uint32_t elementBytes(unsigned format, unsigned channels);

// An array's (or one level's) extent in elements; each at least 1 (a descriptor's 0 height or
// depth means 1). For a layered or cubemap array, depth counts layers (faces).
struct Extent {
  std::uint64_t width = 1;
  std::uint64_t height = 1;
  std::uint64_t depth = 1;
};

// Empty when `descriptor` (with `levels` mipmap levels, 0 for a plain array) is one the worker
// admits; otherwise why not.
std::string checkDescriptor(const CUDA_ARRAY3D_DESCRIPTOR& descriptor, unsigned levels);

// The extent of mipmap level `level` (0: the array itself): width and height halve per level,
// never below 1; a 3D array's depth too, a layered or cubemap array keeps its layers. The
// descriptor must have passed checkDescriptor.
Extent levelExtent(const CUDA_ARRAY3D_DESCRIPTOR& descriptor, unsigned level);
// The descriptor of level `level`, as the driver reports it for that level's array.
CUDA_ARRAY3D_DESCRIPTOR levelDescriptor(const CUDA_ARRAY3D_DESCRIPTOR& descriptor, unsigned level);

// The device bytes charged to the client's quota for an array with `levels` levels (0 or 1: one),
// an estimate above what the driver takes: each level's rows padded to 512 bytes (the device's
// texture alignment), the total rounded up to 2 MiB above 1 MiB and to 64 KiB below. The driver does not
// report an array's footprint (cuArrayGetMemoryRequirements answers only for deferred-mapping arrays).
std::uint64_t chargedBytes(const CUDA_ARRAY3D_DESCRIPTOR& descriptor, unsigned levels);

// A box of a copy: `widthBytes` bytes from byte `x` of a row, `height` rows from row `y`,
// `depth` slices from slice `z`.
struct Box {
  std::uint64_t x = 0, y = 0, z = 0;
  std::uint64_t widthBytes = 0, height = 0, depth = 0;
};

// Whether `box` lies inside an array of `extent` with `elementBytes`-byte elements, starting and
// ending on element boundaries. Empty when it does; otherwise why not.
std::string checkArrayBox(const Extent& extent, std::uint32_t elementBytes, const Box& box);

// The bytes of linear memory from its base that a box spans when rows are `pitch` bytes apart and
// slices `rows` rows apart: ((z + depth - 1) * rows + y + height - 1) * pitch + x + widthBytes.
// nullopt when a row does not fit in its pitch (x + widthBytes > pitch), when slices overlap
// (depth > 1 and y + height > rows), or on overflow.
std::optional<std::uint64_t> pitchedSpan(std::uint64_t pitch, std::uint64_t rows, const Box& box);

}  // namespace agileos::worker::arrays
