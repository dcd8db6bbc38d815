// Kernel launches, shared by the runtime shim (cudaLaunchKernel and <<<>>>) and the driver shim
// (cuLaunchKernel) (untrusted side).
//
// Launch dimensions and shared-memory sizes are not judged here: the driver refuses bad ones,
// and the worker returns what it said. What the client does decide is whether it must wait for
// that answer: a launch the driver will surely accept (dimensions within the device's and the
// kernel's limits, default shared memory, a stream this process created) goes out without
// waiting for its reply, like a native launch, and any error it still causes is reported at the
// next synchronizing call. Every other launch waits, so its error is returned by the launch.
//
// Parameters are packed at the offsets the worker learned from the driver (KernelLayout); the
// client never guesses a layout.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "agileos/v1/client_api.pb.h"
#include "client/session/module_registry.h"
#include "client/session/streams.h"

namespace agileos::client {

// One of cuLaunchKernelEx's attributes as it travels (v1::LaunchAttribute): the id and its
// value's fields in the driver union's order. Which ids are offered is decided by the worker
// (worker/handlers/launch_attributes.h); the shims pass on the ones they can read.
struct LaunchAttributeValue {
  int id = 0;
  std::uint32_t x = 0, y = 0, z = 0;
  // The access policy window's base, size and hit ratio (hitProp and missProp in x and y).
  std::uint64_t windowBase = 0, windowBytes = 0;
  float hitRatio = 0.f;
};

struct LaunchShape {
  dim3 grid;
  dim3 block;
  std::size_t sharedMem = 0;
  cudaStream_t stream = nullptr;  // as the program spelled it (CUstream is the same handle)
  DefaultStream spelling = DefaultStream::kLegacy;
  bool cooperative = false;  // every block resident at once (cuLaunchCooperativeKernel)
  // Owned by the caller. A launch with attributes goes without waiting only when the driver will
  // surely accept them too (kernel_launch.cpp: a portable cluster that tiles the grid, ...).
  std::span<const LaunchAttributeValue> attributes;
  // The kernel as the program named it (a host stub, a cudaKernel_t or a CUfunction): kept by a
  // stream capture for cudaGraphKernelNodeGetParams; null where the caller has none.
  const void* function = nullptr;
};

void writeLaunchAttributes(std::span<const LaunchAttributeValue> attributes,
                           google::protobuf::RepeatedPtrField<v1::LaunchAttribute>* wire);
void writeLaunchAttribute(const LaunchAttributeValue& attribute, v1::LaunchAttribute* wire);
LaunchAttributeValue launchAttributeFromWire(const v1::LaunchAttribute& wire);

// A launch's grid, block, dynamic shared memory and attributes into a message that has those
// fields (v1::LaunchKernel, v1::OccupancyClusters). The caller has checked that sharedMem fits in
// 32 bits.
template <typename Message>
void writeLaunchShape(const LaunchShape& shape, Message* message) {
  message->mutable_grid()->set_x(shape.grid.x);
  message->mutable_grid()->set_y(shape.grid.y);
  message->mutable_grid()->set_z(shape.grid.z);
  message->mutable_block()->set_x(shape.block.x);
  message->mutable_block()->set_y(shape.block.y);
  message->mutable_block()->set_z(shape.block.z);
  message->set_shared_mem_bytes(static_cast<std::uint32_t>(shape.sharedMem));
  writeLaunchAttributes(shape.attributes, message->mutable_attributes());
}

// Both check the sticky error, the parameters and the stream, in that order, then launch.
// One pointer per parameter, each to a value of the parameter's size (CUDA's kernelParams and
// cudaLaunchKernel's args). May be null only for a kernel without parameters.
cudaError_t launchKernel(const KernelLayout& layout, const LaunchShape& shape, void* const* args);

// The parameters as one buffer laid out like the kernel's parameter block (cuLaunchKernel's
// `extra` with CU_LAUNCH_PARAM_BUFFER_POINTER); `size` must cover every parameter.
cudaError_t launchKernelWithBuffer(const KernelLayout& layout, const LaunchShape& shape, const void* buffer,
                                   std::size_t size);

}  // namespace agileos::client
