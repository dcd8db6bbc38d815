#include "client/session/managed_hints.h"

#include <sched.h>

#include <cstring>
#include <optional>

#include "client/session/host_allocations.h"

namespace agileos::client {

namespace {

// The legacy int form of a location: a device ordinal, cudaCpuDeviceId for the host (any host
// location), cudaInvalidDeviceId for none.
int legacyDevice(const HintLocation& location) {
  switch (location.type) {
    case cudaMemLocationTypeDevice:
      return location.id;
    case cudaMemLocationTypeInvalid:
      return cudaInvalidDeviceId;
    default:
      return cudaCpuDeviceId;
  }
}

// The answer of each attribute that is one int; nullopt for any other attribute.
std::optional<int> intAnswer(const PageHints& hints, int attribute) {
  switch (attribute) {
    case cudaMemRangeAttributeReadMostly:
      return hints.readMostly ? 1 : 0;
    case cudaMemRangeAttributePreferredLocation:
      return legacyDevice(hints.preferred);
    case cudaMemRangeAttributeLastPrefetchLocation:
      return legacyDevice(hints.lastPrefetch);
    case cudaMemRangeAttributePreferredLocationType:
      return hints.preferred.type;
    case cudaMemRangeAttributePreferredLocationId:
      return hints.preferred.id;
    case cudaMemRangeAttributeLastPrefetchLocationType:
      return hints.lastPrefetch.type;
    case cudaMemRangeAttributeLastPrefetchLocationId:
      return hints.lastPrefetch.id;
    default:
      return std::nullopt;
  }
}

HintLocation recorded(int type, int id) {
  switch (type) {
    case cudaMemLocationTypeDevice:
      return {type, id};
    case cudaMemLocationTypeHostNuma:
      return {type, id};
    case cudaMemLocationTypeHostNumaCurrent: {
      unsigned cpu = 0, node = 0;
      if (::getcpu(&cpu, &node) != 0) node = 0;
      return {cudaMemLocationTypeHostNuma, static_cast<int>(node)};
    }
    default:
      return {cudaMemLocationTypeHost, 0};
  }
}

bool validLocation(int type, int id) {
  switch (type) {
    case cudaMemLocationTypeDevice:
      return id == 0;  // a worker serves one device
    case cudaMemLocationTypeHost:
    case cudaMemLocationTypeHostNuma:
    case cudaMemLocationTypeHostNumaCurrent:
      return true;
    default:
      return false;
  }
}

}  // namespace

cudaError_t adviseManaged(const void* p, std::size_t count, int advice, int locationType, int locationId) {
  if (advice < cudaMemAdviseSetReadMostly || advice > cudaMemAdviseUnsetAccessedBy)
    return cudaErrorInvalidValue;
  const bool namesLocation = advice != cudaMemAdviseSetReadMostly && advice != cudaMemAdviseUnsetReadMostly;
  if (namesLocation && !validLocation(locationType, locationId)) return cudaErrorInvalidValue;
  const HintLocation location = recorded(locationType, locationId);
  const bool host = location.type != cudaMemLocationTypeDevice;
  const bool managed = HostAllocations::instance().adviseManaged(p, count, [&](PageHints& page) {
    switch (advice) {
      case cudaMemAdviseSetReadMostly:
      case cudaMemAdviseUnsetReadMostly:
        page.readMostly = advice == cudaMemAdviseSetReadMostly;
        break;
      case cudaMemAdviseSetPreferredLocation:
        page.preferred = location;
        break;
      case cudaMemAdviseUnsetPreferredLocation:
        page.preferred = HintLocation{};
        break;
      default:  // cudaMemAdviseSetAccessedBy, cudaMemAdviseUnsetAccessedBy
        (host ? page.accessedByHost : page.accessedByDevice) = advice == cudaMemAdviseSetAccessedBy;
        break;
    }
  });
  return managed ? cudaSuccess : cudaErrorInvalidValue;
}

cudaError_t prefetchManaged(const void* p, std::size_t count, int locationType, int locationId) {
  if (!validLocation(locationType, locationId)) return cudaErrorInvalidValue;
  const HintLocation location = recorded(locationType, locationId);
  const bool managed = HostAllocations::instance().adviseManaged(
      p, count, [&](PageHints& page) { page.lastPrefetch = location; });
  return managed ? cudaSuccess : cudaErrorInvalidValue;
}

cudaError_t managedRangeAttribute(void* data, std::size_t dataSize, int attribute, const void* devPtr,
                                  std::size_t count) {
  if (data == nullptr || count == 0) return cudaErrorInvalidValue;
  PageHints hints;
  if (!HostAllocations::instance().managedHints(devPtr, count, &hints)) return cudaErrorInvalidValue;
  if (attribute == cudaMemRangeAttributeAccessedBy) {
    if (dataSize == 0 || dataSize % sizeof(int) != 0) return cudaErrorInvalidValue;
    // Written in place, slot by slot, into the program's array (whatever size it claims: no copy
    // of that size is made here).
    const std::size_t slots = dataSize / sizeof(int);
    std::size_t next = 0;
    const auto put = [&](int device) {
      std::memcpy(static_cast<char*>(data) + next++ * sizeof(int), &device, sizeof(int));
    };
    if (hints.accessedByDevice && next < slots) put(0);
    if (hints.accessedByHost && next < slots) put(cudaCpuDeviceId);
    while (next < slots) put(cudaInvalidDeviceId);
    return cudaSuccess;
  }
  const std::optional<int> answer = intAnswer(hints, attribute);
  if (!answer || dataSize != sizeof(int)) return cudaErrorInvalidValue;
  std::memcpy(data, &*answer, sizeof(int));
  return cudaSuccess;
}

}  // namespace agileos::client
