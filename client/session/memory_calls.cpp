#include "client/session/memory_calls.h"

#include "agileos/v1/client_api.pb.h"
#include "client/session/device_allocations.h"
#include "client/session/graph_memory.h"
#include "client/session/resource_epoch.h"
#include "client/session/streams.h"
#include "client/session/worker_calls.h"

namespace agileos::client {

cudaError_t allocateDevice(std::uint64_t size, std::uint64_t* dptr) {
  v1::CallRequest request;
  request.mutable_mem_alloc()->set_size(size);
  v1::CallReply reply;
  const cudaError_t error = invoke(request, &reply);
  *dptr = error == cudaSuccess ? reply.device_pointer().dptr() : 0;
  if (error == cudaSuccess) rememberDeviceAllocation(*dptr, size);
  return error;
}

cudaError_t freeDevice(std::uint64_t dptr) {
  v1::CallRequest request;
  request.mutable_mem_free()->set_dptr(dptr);
  v1::CallReply reply;
  // Forgotten first: a racing async call on this memory then waits for the worker's verdict.
  forgetDeviceAllocation(dptr);
  noteResourcesReleased();
  const std::uint64_t mark = workMark();
  const cudaError_t error = invoke(request, &reply);
  if (error == cudaSuccess) {
    noteDeviceIdle(mark);  // the free synchronized the device
    noteGraphAllocationFreed(dptr);
  }
  return error;
}

cudaError_t virtualMemoryStep(const v1::VirtualMemory& step, v1::VirtualMemoryResult* result) {
  v1::CallRequest request;
  *request.mutable_virtual_memory() = step;
  const bool unmap = step.step() == v1::VirtualMemory::UNMAP;
  std::uint64_t mark = 0;
  if (unmap) {
    // Forgotten first, as in freeDevice: a racing async call on this memory waits for the verdict.
    const std::uint64_t end = step.address() + step.size();
    std::uint64_t cursor = step.address(), base = 0, size = 0;
    while (cursor < end && deviceAllocationContaining(cursor, &base, &size) && base + size > cursor) {
      forgetDeviceAllocation(base);
      cursor = base + size;
    }
    noteResourcesReleased();
    mark = workMark();
  }
  v1::CallReply reply;
  const cudaError_t error = invoke(request, &reply);
  if (error != cudaSuccess) return error;
  if (unmap) noteDeviceIdle(mark);  // the unmap synchronized the device
  if (step.step() == v1::VirtualMemory::MAP) rememberDeviceAllocation(step.address(), step.size(), false);
  if (result != nullptr) *result = reply.virtual_memory_result();
  return cudaSuccess;
}

cudaError_t deviceMemoryInfo(std::uint64_t* free, std::uint64_t* total) {
  v1::CallRequest request;
  request.mutable_mem_get_info();
  v1::CallReply reply;
  const cudaError_t error = invoke(request, &reply);
  if (error == cudaSuccess) {
    *free = reply.mem_info().free();
    *total = reply.mem_info().total();
  }
  return error;
}

}  // namespace agileos::client
