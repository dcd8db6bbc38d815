#include "client/session/memory_calls.h"

#include "agileos/v1/client_api.pb.h"
#include "client/session/device_allocations.h"
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
  if (error == cudaSuccess) noteDeviceIdle(mark);  // the free synchronized the device
  return error;
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
