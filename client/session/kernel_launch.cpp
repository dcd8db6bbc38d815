#include "client/session/kernel_launch.h"

#include <google/protobuf/arena.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "agileos/v1/client_api.pb.h"
#include "client/session/error_state.h"
#include "client/session/function_calls.h"
#include "client/session/stream_capture.h"
#include "client/session/system_atomics.h"
#include "client/session/worker_calls.h"

namespace agileos::client {
namespace {

// The device's launch limits, from the cached device description.
struct DeviceLimits {
  bool known = false;
  unsigned maxThreadsPerBlock = 0;
  unsigned maxBlock[3] = {};
  unsigned maxGrid[3] = {};
  unsigned sharedPerBlock = 0;  // without opting in to more
};

const DeviceLimits& deviceLimits() {
  static const DeviceLimits limits = [] {
    DeviceLimits out;
    cudaError_t error = cudaSuccess;
    const agileos::v1::DeviceInfo* info = deviceInfo(&error);
    if (info == nullptr) return out;
    int found = 0;
    for (const agileos::v1::DeviceAttribute& attribute : info->attributes()) {
      const auto value = static_cast<unsigned>(std::max(attribute.value(), 0));
      switch (attribute.attribute()) {
        case cudaDevAttrMaxThreadsPerBlock:
          out.maxThreadsPerBlock = value;
          ++found;
          break;
        case cudaDevAttrMaxBlockDimX:
          out.maxBlock[0] = value;
          ++found;
          break;
        case cudaDevAttrMaxBlockDimY:
          out.maxBlock[1] = value;
          ++found;
          break;
        case cudaDevAttrMaxBlockDimZ:
          out.maxBlock[2] = value;
          ++found;
          break;
        case cudaDevAttrMaxGridDimX:
          out.maxGrid[0] = value;
          ++found;
          break;
        case cudaDevAttrMaxGridDimY:
          out.maxGrid[1] = value;
          ++found;
          break;
        case cudaDevAttrMaxGridDimZ:
          out.maxGrid[2] = value;
          ++found;
          break;
        case cudaDevAttrMaxSharedMemoryPerBlock:
          out.sharedPerBlock = value;
          ++found;
          break;
        default:
          break;
      }
    }
    out.known = found == 8;
    return out;
  }();
  return limits;
}

bool within(const dim3& d, const unsigned (&limit)[3]) {
  return d.x >= 1 && d.y >= 1 && d.z >= 1 && d.x <= limit[0] && d.y <= limit[1] && d.z <= limit[2];
}

// True if the driver will surely accept this launch, so it need not wait for the reply.
bool surelyAccepted(const KernelLayout& layout, dim3 grid, dim3 block, std::size_t sharedMem,
                    std::uint64_t stream) {
  const DeviceLimits& limits = deviceLimits();
  if (!limits.known || layout.maxThreadsPerBlock <= 0) return false;
  if (!within(grid, limits.maxGrid) || !within(block, limits.maxBlock)) return false;
  const std::uint64_t threads = std::uint64_t{block.x} * block.y * block.z;
  if (threads > limits.maxThreadsPerBlock ||
      threads > static_cast<std::uint64_t>(layout.maxThreadsPerBlock)) {
    return false;
  }
  // Beyond the default, only up to what the program opted in to (the function's current limit, as
  // the worker last answered it: the answer is dropped whenever the program sets an attribute).
  std::uint64_t optedIn = 0;
  if (sharedMem + layout.staticSharedBytes > limits.sharedPerBlock &&
      !(rememberedDynamicSharedLimit(layout.token, &optedIn) && sharedMem <= optedIn)) {
    return false;
  }
  return isKnownStream(stream);
}

// True if the driver will surely accept these launch attributes on this grid, so that a launch
// with them, like a plain one, need not wait for its reply: a portable cluster (at most 8 blocks)
// that tiles the grid, a priority (the driver clamps it), programmatic stream serialization, a
// cluster scheduling policy and a memory synchronization domain that are members of their enums.
// Anything else (a larger cluster, a domain map, ...) waits, so its error comes back with it.
// (cuBLASLt launches every Hopper GEMM with a cluster: waiting for each would cost a round trip.)
bool attributesSurelyAccepted(std::span<const LaunchAttributeValue> attributes, const dim3& grid) {
  constexpr int kClusterDimension = cudaLaunchAttributeClusterDimension,
                kSchedulingPolicy = cudaLaunchAttributeClusterSchedulingPolicyPreference,
                kStreamSerialization = cudaLaunchAttributeProgrammaticStreamSerialization,
                kPriority = cudaLaunchAttributePriority, kMemSyncDomain = cudaLaunchAttributeMemSyncDomain;
  constexpr std::uint64_t kPortableClusterBlocks = 8;
  for (const LaunchAttributeValue& attribute : attributes) {
    switch (attribute.id) {
      case kClusterDimension: {
        const std::uint32_t x = attribute.x, y = attribute.y, z = attribute.z;
        if (x == 0 || y == 0 || z == 0 || grid.x % x != 0 || grid.y % y != 0 || grid.z % z != 0) return false;
        // Each edge first: the product of three 32-bit edges can wrap around 2^64.
        if (x > kPortableClusterBlocks || y > kPortableClusterBlocks || z > kPortableClusterBlocks ||
            std::uint64_t{x} * y * z > kPortableClusterBlocks) {
          return false;
        }
        break;
      }
      case kPriority:
        break;
      case kStreamSerialization:
      case kMemSyncDomain:
        if (attribute.x > 1) return false;
        break;
      case kSchedulingPolicy:
        if (attribute.x > 2) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

// Checks, packs (fill(buffer) writes the layout's bufferSize bytes) and sends one launch.
template <typename FillParams>
cudaError_t launchPacked(const KernelLayout& layout, const LaunchShape& shape, FillParams fill) {
  std::uint64_t streamToken = 0;
  if (cudaError_t error = resolveStream(shape.stream, shape.spelling, &streamToken); error != cudaSuccess) {
    return error;
  }
  if (anyCapture()) {
    KernelWork work;
    work.layout = layout;
    work.function = shape.function;
    work.grid = shape.grid;
    work.block = shape.block;
    work.sharedMem = shape.sharedMem;
    work.cooperative = shape.cooperative;
    work.attributes.assign(shape.attributes.begin(), shape.attributes.end());
    work.params.assign(layout.bufferSize, '\0');
    fill(work.params.data());
    for (const auto& [offset, size] : layout.params)
      work.parameterPointers.push_back(work.params.data() + offset);
    if (auto captured = capturedWork(streamToken, NodeKind::kKernel, std::move(work))) return *captured;
  }
  // The request lives in an arena on the stack: a launch, the hottest call, allocates
  // nothing for its message (larger parameter blocks spill to the heap as usual).
  alignas(std::max_align_t) char arenaBlock[2048];
  google::protobuf::ArenaOptions arenaOptions;
  arenaOptions.initial_block = arenaBlock;
  arenaOptions.initial_block_size = sizeof arenaBlock;
  google::protobuf::Arena arena(arenaOptions);
  v1::CallRequest& request = *google::protobuf::Arena::CreateMessage<v1::CallRequest>(&arena);
  v1::LaunchKernel* launch = request.mutable_launch_kernel();
  launch->set_function(layout.token);
  writeLaunchShape(shape, launch);
  launch->set_stream(streamToken);
  launch->set_cooperative(shape.cooperative);
  std::string* params = launch->mutable_params();
  params->assign(layout.bufferSize, '\0');
  fill(params->data());
  noteWorkPosted(streamToken);
  cudaError_t result = cudaSuccess;
  if (!shape.cooperative && attributesSurelyAccepted(shape.attributes, shape.grid) &&
      surelyAccepted(layout, shape.grid, shape.block, shape.sharedMem, streamToken)) {
    result = invokeAsync(request);
  } else {
    v1::CallReply reply;
    result = invoke(request, &reply);
  }
  if (result == cudaSuccess && layout.systemScopeAtomics)
    runBeforeTheHost(layout.token, shape.stream, shape.spelling);
  return result;
}

}  // namespace

void writeLaunchAttribute(const LaunchAttributeValue& attribute, v1::LaunchAttribute* out) {
  out->set_id(attribute.id);
  out->set_x(attribute.x);
  out->set_y(attribute.y);
  out->set_z(attribute.z);
  if (attribute.id == cudaLaunchAttributeAccessPolicyWindow) {
    out->set_window_base(attribute.windowBase);
    out->set_window_bytes(attribute.windowBytes);
    out->set_hit_ratio(attribute.hitRatio);
  }
}

LaunchAttributeValue launchAttributeFromWire(const v1::LaunchAttribute& wire) {
  LaunchAttributeValue value{wire.id(), wire.x(), wire.y(), wire.z()};
  value.windowBase = wire.window_base();
  value.windowBytes = wire.window_bytes();
  value.hitRatio = wire.hit_ratio();
  return value;
}

void writeLaunchAttributes(std::span<const LaunchAttributeValue> attributes,
                           google::protobuf::RepeatedPtrField<v1::LaunchAttribute>* wire) {
  for (const LaunchAttributeValue& attribute : attributes) writeLaunchAttribute(attribute, wire->Add());
}

cudaError_t launchKernel(const KernelLayout& layout, const LaunchShape& shape, void* const* args) {
  if (cudaError_t sticky = stickyError(); sticky != cudaSuccess) return sticky;
  if (shape.sharedMem > UINT32_MAX) return cudaErrorInvalidValue;
  if (!layout.params.empty() && args == nullptr) return cudaErrorInvalidValue;
  return launchPacked(layout, shape, [&](char* buffer) {
    for (std::size_t i = 0; i < layout.params.size(); ++i) {
      const auto [offset, size] = layout.params[i];
      std::memcpy(buffer + offset, args[i], size);
    }
  });
}

cudaError_t launchKernelWithBuffer(const KernelLayout& layout, const LaunchShape& shape, const void* buffer,
                                   std::size_t size) {
  if (cudaError_t sticky = stickyError(); sticky != cudaSuccess) return sticky;
  if (shape.sharedMem > UINT32_MAX) return cudaErrorInvalidValue;
  if (layout.bufferSize > 0 && (buffer == nullptr || size < layout.bufferSize)) return cudaErrorInvalidValue;
  return launchPacked(layout, shape, [&](char* packed) {
    if (layout.bufferSize > 0) std::memcpy(packed, buffer, layout.bufferSize);
  });
}

}  // namespace agileos::client
