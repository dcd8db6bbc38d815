#include "worker/array_texture/array_geometry.h"

#include <algorithm>
#include <limits>

namespace agileos::worker::arrays {
namespace {

std::uint32_t formatBytes(unsigned format) {
  switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
      return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
      return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
      return 4;
    default:
      return 0;
  }
}

// a * b, or nullopt when it exceeds 2^64 - 1.
std::optional<std::uint64_t> multiply(std::uint64_t a, std::uint64_t b) {
  if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a) return std::nullopt;
  return a * b;
}

std::uint64_t roundUp(std::uint64_t value, std::uint64_t to) { return (value + to - 1) / to * to; }

}  // namespace

std::uint32_t elementBytes(unsigned format, unsigned channels) {
  if (channels != 1 && channels != 2 && channels != 4) return 0;
  return formatBytes(format) * channels;
}

std::string checkDescriptor(const CUDA_ARRAY3D_DESCRIPTOR& descriptor, unsigned levels) {
  if (elementBytes(descriptor.Format, descriptor.NumChannels) == 0) {
    return "an array format or channel count the worker does not admit";
  }
  if ((descriptor.Flags & ~kAdmittedArrayFlags) != 0) return "array flags the worker does not admit";
  if (descriptor.Width == 0 || descriptor.Width > kMaxArrayWidth || descriptor.Height > kMaxArrayWidth ||
      descriptor.Depth > kMaxArrayDepth) {
    return "an array extent outside the device's limits";
  }
  if (descriptor.Height == 0 && descriptor.Depth != 0 && (descriptor.Flags & CUDA_ARRAY3D_LAYERED) == 0) {
    return "a 3D array without height";
  }
  if ((descriptor.Flags & CUDA_ARRAY3D_CUBEMAP) != 0) {
    const bool layered = (descriptor.Flags & CUDA_ARRAY3D_LAYERED) != 0;
    if (descriptor.Width != descriptor.Height || descriptor.Depth == 0 || descriptor.Depth % 6 != 0 ||
        (!layered && descriptor.Depth != 6)) {
      return "a cubemap whose faces are not square or not six (a multiple of six when layered)";
    }
  }
  if ((descriptor.Flags & CUDA_ARRAY3D_LAYERED) != 0 && descriptor.Depth == 0) {
    return "a layered array without layers";
  }
  if (levels > 0) {
    std::uint64_t largest = std::max<std::uint64_t>(descriptor.Width, descriptor.Height);
    if ((descriptor.Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP)) == 0)
      largest = std::max<std::uint64_t>(largest, descriptor.Depth);
    unsigned most = 1;
    while ((largest >>= 1) != 0) ++most;
    if (levels > most) return "more mipmap levels than the array's extent has";
  }
  return {};
}

Extent levelExtent(const CUDA_ARRAY3D_DESCRIPTOR& descriptor, unsigned level) {
  auto halve = [level](std::uint64_t n) { return std::max<std::uint64_t>(1, level >= 64 ? 0 : n >> level); };
  Extent extent;
  extent.width = halve(descriptor.Width);
  extent.height = descriptor.Height == 0 ? 1 : halve(descriptor.Height);
  const bool layers = (descriptor.Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP)) != 0;
  if (descriptor.Depth == 0) {
    extent.depth = 1;
  } else {
    extent.depth = layers ? descriptor.Depth : halve(descriptor.Depth);
  }
  return extent;
}

CUDA_ARRAY3D_DESCRIPTOR levelDescriptor(const CUDA_ARRAY3D_DESCRIPTOR& descriptor, unsigned level) {
  const Extent extent = levelExtent(descriptor, level);
  CUDA_ARRAY3D_DESCRIPTOR out = descriptor;
  out.Width = extent.width;
  out.Height = descriptor.Height == 0 ? 0 : extent.height;
  out.Depth = descriptor.Depth == 0 ? 0 : extent.depth;
  return out;
}

std::uint64_t chargedBytes(const CUDA_ARRAY3D_DESCRIPTOR& descriptor, unsigned levels) {
  const std::uint64_t element = elementBytes(descriptor.Format, descriptor.NumChannels);
  std::uint64_t total = 0;
  for (unsigned level = 0; level < std::max(levels, 1u); ++level) {
    const Extent extent = levelExtent(descriptor, level);
    // Bounded by checkDescriptor: 2^18 * 16 bytes a row, 2^18 rows, 2^16 slices, 19 levels.
    total += roundUp(extent.width * element, 512) * extent.height * extent.depth;
  }
  // As module memory was measured to be placed (docs/security-model.md): 2 MiB pages above 1 MiB.
  return total > (1ull << 20) ? roundUp(total, 2ull << 20) : roundUp(total, 64ull << 10);
}

std::string checkArrayBox(const Extent& extent, std::uint32_t elementBytes, const Box& box) {
  if (elementBytes == 0) return "an array of unknown element size";
  const auto rowBytes = multiply(extent.width, elementBytes);
  if (!rowBytes || box.x % elementBytes != 0 || box.widthBytes % elementBytes != 0) {
    return "a copy that does not start and end on the array's elements";
  }
  if (box.x > *rowBytes || box.widthBytes > *rowBytes - box.x || box.y > extent.height ||
      box.height > extent.height - box.y || box.z > extent.depth || box.depth > extent.depth - box.z) {
    return "a copy outside the array's extent";
  }
  return {};
}

std::optional<std::uint64_t> pitchedSpan(std::uint64_t pitch, std::uint64_t rows, const Box& box) {
  if (box.widthBytes == 0 || box.height == 0 || box.depth == 0) return 0;
  if (box.x > pitch || box.widthBytes > pitch - box.x) return std::nullopt;
  if (box.depth > 1 && (box.y > rows || box.height > rows - box.y)) return std::nullopt;
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  if (box.z > kMax - (box.depth - 1) || box.y > kMax - (box.height - 1)) return std::nullopt;
  const auto sliceRows = multiply(box.z + box.depth - 1, rows);
  if (!sliceRows || *sliceRows > kMax - (box.y + box.height - 1)) return std::nullopt;
  const auto rowBytes = multiply(*sliceRows + box.y + box.height - 1, pitch);
  if (!rowBytes || *rowBytes > kMax - (box.x + box.widthBytes)) return std::nullopt;
  return *rowBytes + box.x + box.widthBytes;
}

}  // namespace agileos::worker::arrays
