#include "client/session/launch_attributes.h"

#include <cuda.h>

#include <cstdint>
#include <cstring>

#include "client/common/log.h"

namespace agileos::client {
namespace {

// The runtime's and the driver's attribute lists are one layout: an id padded to 8 bytes, then
// a 64-byte value union whose members start at its first byte.
static_assert(sizeof(cudaLaunchAttribute) == sizeof(CUlaunchAttribute));
static_assert(offsetof(cudaLaunchAttribute, val) == offsetof(CUlaunchAttribute, value));
constexpr bool sameId(cudaLaunchAttributeID runtime, CUlaunchAttributeID driver) {
  return static_cast<int>(runtime) == static_cast<int>(driver);
}
static_assert(sameId(cudaLaunchAttributeClusterDimension, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) &&
              sameId(cudaLaunchAttributeCooperative, CU_LAUNCH_ATTRIBUTE_COOPERATIVE) &&
              sameId(cudaLaunchAttributePriority, CU_LAUNCH_ATTRIBUTE_PRIORITY) &&
              sameId(cudaLaunchAttributeMemSyncDomainMap, CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP) &&
              sameId(cudaLaunchAttributePreferredSharedMemoryCarveout,
                     CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT));

cudaError_t notPassedOn(int id) {
  if (firstTime("launch attribute:" + std::to_string(id))) {
    AGILEOS_LOG_WARN(
        "launch attribute %d is not offered by AgileOS (it names an event or an address, or is "
        "unknown); the launch fails with not-supported",
        id);
  }
  return cudaErrorNotSupported;
}

}  // namespace

cudaError_t readLaunchAttributes(const void* attributes, unsigned count, LaunchAttributes* out) {
  if (count != 0 && attributes == nullptr) return cudaErrorInvalidValue;
  if (count > kMaxLaunchAttributes) return cudaErrorInvalidValue;
  *out = LaunchAttributes{};
  const auto* list = static_cast<const CUlaunchAttribute*>(attributes);
  for (unsigned i = 0; i < count; ++i) {
    const CUlaunchAttribute& attribute = list[i];
    int id = 0;
    static_assert(sizeof id == sizeof attribute.id);
    std::memcpy(&id, &attribute.id, sizeof id);
    // Every value this reads starts at the union's first byte: three 32-bit words for a cluster's
    // dimensions, one for a scalar (enums read as integers), two bytes for the domain map.
    std::uint32_t words[3];
    std::memcpy(words, &attribute.value, sizeof words);
    LaunchAttributeValue value{id, words[0], 0, 0};
    switch (id) {
      case CU_LAUNCH_ATTRIBUTE_IGNORE:
        continue;
      case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
        out->cooperative = words[0] != 0;
        continue;
      case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
      case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
        value.y = words[1];
        value.z = words[2];
        break;
      case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
        value.x = attribute.value.memSyncDomainMap.default_;
        value.y = attribute.value.memSyncDomainMap.remote;
        break;
      case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
      case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
      case CU_LAUNCH_ATTRIBUTE_PRIORITY:
      case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
      case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
      case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
        break;
      default:
        return notPassedOn(id);
    }
    out->values[out->count++] = value;
  }
  return cudaSuccess;
}

}  // namespace agileos::client
