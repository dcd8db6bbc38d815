#include "client/session/memory_pools.h"

#include <map>
#include <memory>
#include <mutex>

#include "agileos/v1/client_api.pb.h"
#include "client/session/device_allocations.h"
#include "client/session/graph_memory.h"
#include "client/session/resource_epoch.h"
#include "client/session/stream_capture.h"
#include "client/session/streams.h"
#include "client/session/worker_calls.h"

namespace agileos::client {
namespace {

// The worker's id of every device's default pool (proto StreamOrderedMemory).
constexpr std::uint64_t kWorkerDefaultPool = 1;

// What the program may set on a pool. The release threshold is also sent to the worker, which
// keeps that many bytes of completed frees cached for the pool's next allocations.
struct PoolRecord {
  std::uint64_t workerId = 0;
  int device = 0;
  std::uint64_t releaseThreshold = 0;
  int reuseFollowEventDependencies = 1;
  int reuseAllowOpportunistic = 1;
  int reuseAllowInternalDependencies = 1;
};

struct Pools {
  std::mutex mutex;
  // By handle (the record's address); a handle not in here is not a pool.
  std::map<const PoolRecord*, std::unique_ptr<PoolRecord>> records;
  std::map<int, PoolRecord*> defaults;  // per device, made on first use
  std::map<int, PoolRecord*> current;   // per device; absent: the default
};

Pools& pools() {
  static Pools* instance = new Pools;  // never destroyed: calls may come from exit handlers
  return *instance;
}

cudaMemPool_t handleOf(PoolRecord* record) { return reinterpret_cast<cudaMemPool_t>(record); }

// The record of a handle the program gave, under the lock; null when it is not a live pool.
PoolRecord* find(Pools& all, cudaMemPool_t pool) {
  auto it = all.records.find(reinterpret_cast<const PoolRecord*>(pool));
  return it == all.records.end() ? nullptr : it->second.get();
}

PoolRecord* defaultRecordLocked(Pools& all, int device) {
  PoolRecord*& record = all.defaults[device];
  if (record == nullptr) {
    auto made = std::make_unique<PoolRecord>();
    made->workerId = kWorkerDefaultPool;
    made->device = device;
    record = made.get();
    all.records.emplace(record, std::move(made));
  }
  return record;
}

cudaError_t poolStep(v1::StreamOrderedMemory::Step step, std::uint64_t workerPool,
                     v1::StreamOrderedMemoryResult* result, std::uint64_t size = 0) {
  v1::CallRequest request;
  auto* args = request.mutable_stream_ordered_memory();
  args->set_step(step);
  args->set_pool(workerPool);
  args->set_size(size);
  v1::CallReply reply;
  const cudaError_t error = invoke(request, &reply);
  if (error == cudaSuccess && result != nullptr) *result = reply.stream_ordered_memory_result();
  return error;
}

// The worker id of a live pool handle, or 0.
std::uint64_t workerIdOf(cudaMemPool_t pool) {
  Pools& all = pools();
  std::lock_guard lock(all.mutex);
  const PoolRecord* record = find(all, pool);
  return record == nullptr ? 0 : record->workerId;
}

// The device of a live pool handle; false when it is not one.
bool deviceOf(cudaMemPool_t pool, int* device) {
  Pools& all = pools();
  std::lock_guard lock(all.mutex);
  const PoolRecord* record = find(all, pool);
  if (record == nullptr) return false;
  *device = record->device;
  return true;
}

}  // namespace

cudaError_t defaultMemoryPool(int device, cudaMemPool_t* pool) {
  if (pool == nullptr) return cudaErrorInvalidValue;
  if (cudaError_t error = checkDeviceOrdinal(device); error != cudaSuccess) return error;
  Pools& all = pools();
  std::lock_guard lock(all.mutex);
  *pool = handleOf(defaultRecordLocked(all, device));
  return cudaSuccess;
}

cudaError_t currentMemoryPool(int device, cudaMemPool_t* pool) {
  if (pool == nullptr) return cudaErrorInvalidValue;
  if (cudaError_t error = checkDeviceOrdinal(device); error != cudaSuccess) return error;
  Pools& all = pools();
  std::lock_guard lock(all.mutex);
  auto it = all.current.find(device);
  *pool = handleOf(it != all.current.end() ? it->second : defaultRecordLocked(all, device));
  return cudaSuccess;
}

cudaError_t setCurrentMemoryPool(int device, cudaMemPool_t pool) {
  if (cudaError_t error = checkDeviceOrdinal(device); error != cudaSuccess) return error;
  Pools& all = pools();
  std::lock_guard lock(all.mutex);
  PoolRecord* record = find(all, pool);
  if (record == nullptr || record->device != device) return cudaErrorInvalidValue;
  all.current[device] = record;
  return cudaSuccess;
}

cudaError_t createMemoryPool(const cudaMemPoolProps* props, cudaMemPool_t* pool) {
  if (props == nullptr || pool == nullptr) return cudaErrorInvalidValue;
  if (props->allocType != cudaMemAllocationTypePinned) return cudaErrorInvalidValue;
  if (props->location.type != cudaMemLocationTypeDevice) return cudaErrorNotSupported;
  if (cudaError_t error = checkDeviceOrdinal(props->location.id); error != cudaSuccess) return error;
  // Shareable handles (exporting the pool to another process) would cross the client boundary.
  if (props->handleTypes != cudaMemHandleTypeNone) return cudaErrorNotSupported;
  v1::StreamOrderedMemoryResult result;
  if (cudaError_t error = poolStep(v1::StreamOrderedMemory::POOL_CREATE, 0, &result, props->maxSize);
      error != cudaSuccess) {
    return error;
  }
  auto made = std::make_unique<PoolRecord>();
  made->workerId = result.pool();
  made->device = props->location.id;
  Pools& all = pools();
  std::lock_guard lock(all.mutex);
  PoolRecord* record = made.get();
  all.records.emplace(record, std::move(made));
  *pool = handleOf(record);
  return cudaSuccess;
}

cudaError_t destroyMemoryPool(cudaMemPool_t pool) {
  std::uint64_t workerId = 0;
  {
    Pools& all = pools();
    std::lock_guard lock(all.mutex);
    PoolRecord* record = find(all, pool);
    if (record == nullptr || record->workerId == kWorkerDefaultPool) return cudaErrorInvalidValue;
    workerId = record->workerId;
    // A device whose current pool this was uses its default pool again.
    for (auto it = all.current.begin(); it != all.current.end();) {
      it = it->second == record ? all.current.erase(it) : std::next(it);
    }
    all.records.erase(record);
  }
  return poolStep(v1::StreamOrderedMemory::POOL_DESTROY, workerId, nullptr);
}

cudaError_t memoryPoolAttribute(cudaMemPool_t pool, cudaMemPoolAttr attribute, void* value) {
  if (value == nullptr) return cudaErrorInvalidValue;
  std::uint64_t workerId = 0;
  {
    Pools& all = pools();
    std::lock_guard lock(all.mutex);
    const PoolRecord* record = find(all, pool);
    if (record == nullptr) return cudaErrorInvalidValue;
    switch (attribute) {
      case cudaMemPoolReuseFollowEventDependencies:
        *static_cast<int*>(value) = record->reuseFollowEventDependencies;
        return cudaSuccess;
      case cudaMemPoolReuseAllowOpportunistic:
        *static_cast<int*>(value) = record->reuseAllowOpportunistic;
        return cudaSuccess;
      case cudaMemPoolReuseAllowInternalDependencies:
        *static_cast<int*>(value) = record->reuseAllowInternalDependencies;
        return cudaSuccess;
      case cudaMemPoolAttrReleaseThreshold:
        *static_cast<std::uint64_t*>(value) = record->releaseThreshold;
        return cudaSuccess;
      case cudaMemPoolAttrReservedMemCurrent:
      case cudaMemPoolAttrReservedMemHigh:
      case cudaMemPoolAttrUsedMemCurrent:
      case cudaMemPoolAttrUsedMemHigh:
        workerId = record->workerId;
        break;
      default:
        return cudaErrorInvalidValue;
    }
  }
  v1::StreamOrderedMemoryResult usage;
  if (cudaError_t error = poolStep(v1::StreamOrderedMemory::POOL_USAGE, workerId, &usage);
      error != cudaSuccess)
    return error;
  std::uint64_t bytes = 0;
  switch (attribute) {
    case cudaMemPoolAttrReservedMemCurrent:
      bytes = usage.reserved_bytes();
      break;
    case cudaMemPoolAttrReservedMemHigh:
      bytes = usage.reserved_high();
      break;
    case cudaMemPoolAttrUsedMemCurrent:
      bytes = usage.used_bytes();
      break;
    default:
      bytes = usage.used_high();
      break;
  }
  *static_cast<std::uint64_t*>(value) = bytes;
  return cudaSuccess;
}

cudaError_t setMemoryPoolAttribute(cudaMemPool_t pool, cudaMemPoolAttr attribute, const void* value) {
  if (value == nullptr) return cudaErrorInvalidValue;
  std::uint64_t workerId = 0, bytes = 0;
  v1::StreamOrderedMemory::Step step = v1::StreamOrderedMemory::STEP_UNSPECIFIED;
  {
    Pools& all = pools();
    std::lock_guard lock(all.mutex);
    PoolRecord* record = find(all, pool);
    if (record == nullptr) return cudaErrorInvalidValue;
    switch (attribute) {
      case cudaMemPoolReuseFollowEventDependencies:
        record->reuseFollowEventDependencies = *static_cast<const int*>(value) != 0;
        return cudaSuccess;
      case cudaMemPoolReuseAllowOpportunistic:
        record->reuseAllowOpportunistic = *static_cast<const int*>(value) != 0;
        return cudaSuccess;
      case cudaMemPoolReuseAllowInternalDependencies:
        record->reuseAllowInternalDependencies = *static_cast<const int*>(value) != 0;
        return cudaSuccess;
      case cudaMemPoolAttrReleaseThreshold:
        bytes = *static_cast<const std::uint64_t*>(value);  // read once: the program's memory
        record->releaseThreshold = bytes;
        workerId = record->workerId;
        step = v1::StreamOrderedMemory::POOL_SET_RELEASE_THRESHOLD;
        break;
      case cudaMemPoolAttrReservedMemHigh:
      case cudaMemPoolAttrUsedMemHigh:
        // Only 0 may be written: it resets the mark to the current value.
        if (*static_cast<const std::uint64_t*>(value) != 0) return cudaErrorInvalidValue;
        workerId = record->workerId;
        step = attribute == cudaMemPoolAttrUsedMemHigh ? v1::StreamOrderedMemory::POOL_RESET_USED_HIGH
                                                       : v1::StreamOrderedMemory::POOL_RESET_RESERVED_HIGH;
        break;
      default:  // the current byte counts are read-only
        return cudaErrorInvalidValue;
    }
  }
  return poolStep(step, workerId, nullptr, bytes);
}

cudaError_t trimMemoryPool(cudaMemPool_t pool, size_t minBytesToKeep) {
  const std::uint64_t workerId = workerIdOf(pool);
  if (workerId == 0) return cudaErrorInvalidValue;
  return poolStep(v1::StreamOrderedMemory::POOL_TRIM, workerId, nullptr, minBytesToKeep);
}

cudaError_t setMemoryPoolAccess(cudaMemPool_t pool, const cudaMemAccessDesc* descs, size_t count) {
  int device = 0;
  if (!deviceOf(pool, &device)) return cudaErrorInvalidValue;
  if (count != 0 && descs == nullptr) return cudaErrorInvalidValue;
  // A client has one device, which always reads and writes its own pools: only that can be set.
  for (size_t i = 0; i < count; ++i) {
    if (descs[i].location.type != cudaMemLocationTypeDevice) return cudaErrorInvalidValue;
    if (cudaError_t error = checkDeviceOrdinal(descs[i].location.id); error != cudaSuccess) return error;
    if (descs[i].location.id != device || descs[i].flags != cudaMemAccessFlagsProtReadWrite)
      return cudaErrorInvalidDevice;
  }
  return cudaSuccess;
}

cudaError_t memoryPoolAccess(cudaMemAccessFlags* flags, cudaMemPool_t pool, const cudaMemLocation* location) {
  if (flags == nullptr || location == nullptr) return cudaErrorInvalidValue;
  int device = 0;
  if (!deviceOf(pool, &device)) return cudaErrorInvalidValue;
  if (location->type != cudaMemLocationTypeDevice) return cudaErrorInvalidValue;
  if (cudaError_t error = checkDeviceOrdinal(location->id); error != cudaSuccess) return error;
  *flags = location->id == device ? cudaMemAccessFlagsProtReadWrite : cudaMemAccessFlagsProtNone;
  return cudaSuccess;
}

cudaError_t allocateAsync(void** ptr, size_t size, cudaMemPool_t pool, cudaStream_t stream,
                          DefaultStream spelling) {
  if (ptr == nullptr) return cudaErrorInvalidValue;
  if (pool == nullptr) {
    if (cudaError_t error = currentMemoryPool(0, &pool); error != cudaSuccess) return error;
  }
  const std::uint64_t workerId = workerIdOf(pool);
  if (workerId == 0) return cudaErrorInvalidValue;
  std::uint64_t token = 0;
  if (cudaError_t error = resolveStream(stream, spelling, &token); error != cudaSuccess) return error;
  // On a capturing stream: an allocation node, whose address is fixed now (graph_memory.h).
  std::uint64_t captured = 0;
  if (auto result = capturedAllocation(token, size, &captured)) {
    *ptr = reinterpret_cast<void*>(captured);
    return *result;
  }
  v1::CallRequest request;
  auto* args = request.mutable_stream_ordered_memory();
  args->set_step(v1::StreamOrderedMemory::ALLOC);
  args->set_size(size);
  args->set_stream(token);
  args->set_pool(workerId);
  v1::CallReply reply;
  const cudaError_t error = invoke(request, &reply);
  const std::uint64_t address = error == cudaSuccess ? reply.stream_ordered_memory_result().address() : 0;
  *ptr = reinterpret_cast<void*>(address);
  if (address != 0) rememberDeviceAllocation(address, size);
  return error;
}

cudaError_t freeAsync(void* ptr, cudaStream_t stream, DefaultStream spelling) {
  std::uint64_t token = 0;
  if (cudaError_t error = resolveStream(stream, spelling, &token); error != cudaSuccess) return error;
  const auto address = reinterpret_cast<std::uint64_t>(ptr);
  if (auto result = capturedFree(token, address)) return *result;  // a free node
  v1::CallRequest request;
  auto* args = request.mutable_stream_ordered_memory();
  args->set_step(v1::StreamOrderedMemory::FREE);
  args->set_address(address);
  args->set_stream(token);
  // Forgotten first, as in freeDevice: a racing async call on this memory waits for the verdict.
  // A free the client's own record says the worker will accept (the base of a live allocation)
  // is sent without waiting, as a launch is: it is stream-ordered work, and a refusal, which only
  // a racing free of the same memory could cause, comes back on a later reply. Anything else
  // waits, so that a bad pointer gets its error from this call, as natively. The worker checks
  // every free either way.
  bool surelyAccepted = false;
  if (address != 0) {
    // (A stream the client does not know waits too: the worker's refusal must come from this call.)
    surelyAccepted = isKnownStream(token) && forgetFreeableDeviceAllocation(address);
    noteResourcesReleased();
  }
  v1::CallReply reply;
  const cudaError_t error = surelyAccepted ? invokeAsync(request) : invoke(request, &reply);
  if (error == cudaSuccess && address != 0) {
    noteWorkPosted(token);  // the free's event on the stream
    noteGraphAllocationFreed(address);
  }
  return error;
}

void forgetAllMemoryPools() {
  Pools& all = pools();
  std::lock_guard lock(all.mutex);
  all.current.clear();
  // Default pools stay valid handles (the worker's default pool survives a reset); explicit pools
  // are gone. The worker's default pool starts over, so its attributes are the defaults again.
  for (auto it = all.records.begin(); it != all.records.end();) {
    if (it->second->workerId != kWorkerDefaultPool) {
      it = all.records.erase(it);
      continue;
    }
    const int device = it->second->device;
    *it->second = PoolRecord{};
    it->second->workerId = kWorkerDefaultPool;
    it->second->device = device;
    ++it;
  }
}

}  // namespace agileos::client
