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
        "launch attribute %d is not offered by AgileOS (it names an event, or is unknown); the "
        "launch fails with not-supported",
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
      case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW: {
        // The enums as integers (the program may have put any bits there); the worker checks them.
        const CUaccessPolicyWindow& window = attribute.value.accessPolicyWindow;
        std::memcpy(&value.x, &window.hitProp, sizeof value.x);
        std::memcpy(&value.y, &window.missProp, sizeof value.y);
        value.windowBase = reinterpret_cast<std::uint64_t>(window.base_ptr);
        value.windowBytes = window.num_bytes;
        value.hitRatio = window.hitRatio;
        break;
      }
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

void launchAttributeValueOf(const LaunchAttributeValue& in, CUlaunchAttributeValue* out) {
  std::memset(out, 0, sizeof *out);
  switch (in.id) {
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
    case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
      out->clusterDim.x = in.x;
      out->clusterDim.y = in.y;
      out->clusterDim.z = in.z;
      return;
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
      out->memSyncDomainMap.default_ = static_cast<unsigned char>(in.x);
      out->memSyncDomainMap.remote = static_cast<unsigned char>(in.y);
      return;
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
      out->accessPolicyWindow.base_ptr = reinterpret_cast<void*>(in.windowBase);
      out->accessPolicyWindow.num_bytes = in.windowBytes;
      out->accessPolicyWindow.hitRatio = in.hitRatio;
      out->accessPolicyWindow.hitProp = static_cast<CUaccessProperty>(in.x);
      out->accessPolicyWindow.missProp = static_cast<CUaccessProperty>(in.y);
      return;
    default:
      std::memcpy(out, &in.x, sizeof in.x);  // one 32-bit word at the union's start
      return;
  }
}

}  // namespace agileos::client
