#include "client/session/graph_memory.h"

#include <map>
#include <mutex>

#include "agileos/v1/client_api.pb.h"
#include "client/session/device_allocations.h"
#include "client/session/resource_epoch.h"
#include "client/session/worker_calls.h"

namespace agileos::client {
namespace {

struct Record {
  std::uint64_t size = 0;
  bool live = false;
};

struct Registry {
  std::mutex mutex;
  std::map<std::uint64_t, Record> byBase;
  std::uint64_t generation = 0;
};

Registry& registry() {
  static auto* instance = new Registry;  // never destroyed: graphs may go in exit handlers
  return *instance;
}

v1::CallRequest graphStep(v1::StreamOrderedMemory::Step step, std::uint64_t address = 0,
                          std::uint64_t size = 0) {
  v1::CallRequest request;
  auto* args = request.mutable_stream_ordered_memory();
  args->set_step(step);
  args->set_address(address);
  args->set_size(size);
  return request;
}

void setLive(std::uint64_t base, bool live) {
  Registry& all = registry();
  std::lock_guard lock(all.mutex);
  if (auto it = all.byBase.find(base); it != all.byBase.end()) it->second.live = live;
}

}  // namespace

GraphAllocation::~GraphAllocation() {
  {
    Registry& all = registry();
    std::lock_guard lock(all.mutex);
    if (generation_ != all.generation) return;  // a device reset took it with everything else
    all.byBase.erase(base_);
  }
  // A live allocation stays the program's (and in its record of device memory) until it is freed;
  // one that is not live may go now.
  noteResourcesReleased();
  v1::CallReply reply;
  // A refusal changes nothing here: the worker then holds no such reservation of this client.
  invoke(graphStep(v1::StreamOrderedMemory::GRAPH_RELEASE, base_), &reply);
}

cudaError_t reserveGraphAllocation(std::uint64_t size, std::shared_ptr<GraphAllocation>* out) {
  if (size == 0) return cudaErrorInvalidValue;
  v1::CallReply reply;
  if (cudaError_t error = invoke(graphStep(v1::StreamOrderedMemory::GRAPH_RESERVE, 0, size), &reply);
      error != cudaSuccess) {
    return error;
  }
  const std::uint64_t base = reply.stream_ordered_memory_result().address();
  Registry& all = registry();
  std::lock_guard lock(all.mutex);
  all.byBase[base] = Record{size, false};
  *out = std::make_shared<GraphAllocation>(base, size, all.generation);
  return cudaSuccess;
}

bool isGraphAllocation(std::uint64_t base, std::uint64_t* size) {
  Registry& all = registry();
  std::lock_guard lock(all.mutex);
  auto it = all.byBase.find(base);
  if (it == all.byBase.end()) return false;
  if (size != nullptr) *size = it->second.size;
  return true;
}

bool graphAllocationLive(std::uint64_t base) {
  Registry& all = registry();
  std::lock_guard lock(all.mutex);
  auto it = all.byBase.find(base);
  return it != all.byBase.end() && it->second.live;
}

bool graphAllocationContaining(std::uint64_t p, std::uint64_t* base, std::uint64_t* size) {
  Registry& all = registry();
  std::lock_guard lock(all.mutex);
  auto it = all.byBase.upper_bound(p);
  if (it == all.byBase.begin()) return false;
  --it;
  if (p - it->first >= it->second.size) return false;
  *base = it->first;
  *size = it->second.size;
  return true;
}

cudaError_t activateGraphAllocation(std::uint64_t base, std::uint64_t stream) {
  v1::CallRequest request = graphStep(v1::StreamOrderedMemory::GRAPH_ACTIVATE, base);
  request.mutable_stream_ordered_memory()->set_stream(stream);
  v1::CallReply reply;
  if (cudaError_t error = invoke(request, &reply); error != cudaSuccess) {
    return error;
  }
  std::uint64_t size = 0;
  if (isGraphAllocation(base, &size)) rememberDeviceAllocation(base, size);
  setLive(base, true);
  return cudaSuccess;
}

cudaError_t freeGraphAllocation(std::uint64_t base, std::uint64_t stream) {
  v1::CallRequest request = graphStep(v1::StreamOrderedMemory::FREE, base);
  request.mutable_stream_ordered_memory()->set_stream(stream);
  // Forgotten first, as in freeDevice: a racing async call on this memory waits for the verdict.
  // A live allocation's free is sent without waiting (as cudaFreeAsync's is, memory_pools.cpp).
  const bool surelyAccepted = forgetFreeableDeviceAllocation(base);
  noteResourcesReleased();
  v1::CallReply reply;
  const cudaError_t error = surelyAccepted ? invokeAsync(request) : invoke(request, &reply);
  if (error == cudaSuccess) setLive(base, false);
  return error;
}

void noteGraphAllocationFreed(std::uint64_t base) { setLive(base, false); }

cudaError_t graphMemoryTrim() {
  v1::CallReply reply;
  return invoke(graphStep(v1::StreamOrderedMemory::GRAPH_TRIM), &reply);
}

cudaError_t graphMemoryAttribute(cudaGraphMemAttributeType attribute, void* value) {
  if (value == nullptr) return cudaErrorInvalidValue;
  if (attribute != cudaGraphMemAttrUsedMemCurrent && attribute != cudaGraphMemAttrUsedMemHigh &&
      attribute != cudaGraphMemAttrReservedMemCurrent && attribute != cudaGraphMemAttrReservedMemHigh) {
    return cudaErrorInvalidValue;
  }
  v1::CallReply reply;
  if (cudaError_t error = invoke(graphStep(v1::StreamOrderedMemory::GRAPH_USAGE), &reply);
      error != cudaSuccess)
    return error;
  const v1::StreamOrderedMemoryResult& usage = reply.stream_ordered_memory_result();
  unsigned long long bytes = 0;
  switch (attribute) {
    case cudaGraphMemAttrUsedMemCurrent:
      bytes = usage.used_bytes();
      break;
    case cudaGraphMemAttrUsedMemHigh:
      bytes = usage.used_high();
      break;
    case cudaGraphMemAttrReservedMemCurrent:
      bytes = usage.reserved_bytes();
      break;
    default:
      bytes = usage.reserved_high();
      break;
  }
  *static_cast<unsigned long long*>(value) = bytes;
  return cudaSuccess;
}

cudaError_t setGraphMemoryAttribute(cudaGraphMemAttributeType attribute, const void* value) {
  if (value == nullptr) return cudaErrorInvalidValue;
  // Only the high-water marks may be set, and only to 0 (which resets them to the current value).
  if (*static_cast<const unsigned long long*>(value) != 0) return cudaErrorInvalidValue;
  v1::StreamOrderedMemory::Step step;
  if (attribute == cudaGraphMemAttrUsedMemHigh) {
    step = v1::StreamOrderedMemory::GRAPH_RESET_USED_HIGH;
  } else if (attribute == cudaGraphMemAttrReservedMemHigh) {
    step = v1::StreamOrderedMemory::GRAPH_RESET_RESERVED_HIGH;
  } else {
    return cudaErrorInvalidValue;
  }
  v1::CallReply reply;
  return invoke(graphStep(step), &reply);
}

void forgetAllGraphAllocations() {
  Registry& all = registry();
  std::lock_guard lock(all.mutex);
  all.byBase.clear();
  ++all.generation;
}

}  // namespace agileos::client
