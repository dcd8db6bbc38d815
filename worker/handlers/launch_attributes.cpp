#include "worker/handlers/launch_attributes.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace agileos::worker {

bool readLaunchAttribute(const v1::LaunchAttribute& wire, CUlaunchAttribute* out, std::string* reason,
                         const WindowCheck& window) {
  std::memset(out, 0, sizeof *out);
  out->id = static_cast<CUlaunchAttributeID>(wire.id());
  CUlaunchAttributeValue& value = out->value;
  switch (wire.id()) {
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
    case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
      // Any size: the driver judges it (cuBLAS asks the occupancy of sizes it cannot launch and
      // expects the driver's answer, not a refusal).
      value.clusterDim.x = wire.x();
      value.clusterDim.y = wire.y();
      value.clusterDim.z = wire.z();
      return true;
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
      if (wire.x() > CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING) break;
      value.clusterSchedulingPolicyPreference = static_cast<CUclusterSchedulingPolicy>(wire.x());
      return true;
    case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
      if (wire.x() > 1) break;
      value.programmaticStreamSerializationAllowed = static_cast<int>(wire.x());
      return true;
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:
      value.priority = static_cast<int>(wire.x());  // two's complement; the driver clamps it
      return true;
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
      if (wire.x() > CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE) break;
      value.memSyncDomain = static_cast<CUlaunchMemSyncDomain>(wire.x());
      return true;
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
      if (wire.x() > 255 || wire.y() > 255) break;
      value.memSyncDomainMap.default_ = static_cast<unsigned char>(wire.x());
      value.memSyncDomainMap.remote = static_cast<unsigned char>(wire.y());
      return true;
    case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
      if (wire.x() < CU_SYNC_POLICY_AUTO || wire.x() > CU_SYNC_POLICY_BLOCKING_SYNC) break;
      value.syncPolicy = static_cast<CUsynchronizationPolicy>(wire.x());
      return true;
    case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      value.sharedMemCarveout = wire.x();
      return true;
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW: {
      const float ratio = wire.hit_ratio();
      if (!std::isfinite(ratio) || ratio < 0.f || ratio > 1.f || wire.x() > CU_ACCESS_PROPERTY_PERSISTING ||
          wire.y() > CU_ACCESS_PROPERTY_PERSISTING) {
        break;
      }
      std::uint64_t bytes = wire.window_bytes();
      if (bytes != 0 && !window(wire.window_base(), &bytes)) {
        *reason = "an access policy window outside the client's memory";
        return false;
      }
      // A window of no bytes turns the hint off; its base is then not the client's to name.
      value.accessPolicyWindow.base_ptr = bytes == 0 ? nullptr : reinterpret_cast<void*>(wire.window_base());
      value.accessPolicyWindow.num_bytes = bytes;
      value.accessPolicyWindow.hitRatio = ratio;
      value.accessPolicyWindow.hitProp = static_cast<CUaccessProperty>(wire.x());
      value.accessPolicyWindow.missProp = static_cast<CUaccessProperty>(wire.y());
      return true;
    }
    default:
      *reason = "launch attribute " + std::to_string(wire.id()) + " is not offered";
      return false;
  }
  *reason = "launch attribute " + std::to_string(wire.id()) + " has a value out of its range";
  return false;
}

void writeLaunchAttribute(const CUlaunchAttribute& attribute, v1::LaunchAttribute* wire) {
  const CUlaunchAttributeValue& value = attribute.value;
  wire->Clear();
  wire->set_id(static_cast<int>(attribute.id));
  switch (attribute.id) {
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
    case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
      wire->set_x(value.clusterDim.x);
      wire->set_y(value.clusterDim.y);
      wire->set_z(value.clusterDim.z);
      return;
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
      wire->set_x(value.memSyncDomainMap.default_);
      wire->set_y(value.memSyncDomainMap.remote);
      return;
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
      wire->set_window_base(reinterpret_cast<std::uint64_t>(value.accessPolicyWindow.base_ptr));
      wire->set_window_bytes(value.accessPolicyWindow.num_bytes);
      wire->set_hit_ratio(value.accessPolicyWindow.hitRatio);
      wire->set_x(static_cast<std::uint32_t>(value.accessPolicyWindow.hitProp));
      wire->set_y(static_cast<std::uint32_t>(value.accessPolicyWindow.missProp));
      return;
    default: {
      // Every other admitted value is one 32-bit word at the union's start.
      std::uint32_t word = 0;
      std::memcpy(&word, &value, sizeof word);
      wire->set_x(word);
      return;
    }
  }
}

bool readLaunchAttributes(const google::protobuf::RepeatedPtrField<v1::LaunchAttribute>& wire,
                          std::vector<CUlaunchAttribute>* attributes, std::string* reason,
                          const WindowCheck& window) {
  if (wire.size() > kMaxLaunchAttributes) {
    *reason = "a launch may carry at most 16 attributes";
    return false;
  }
  attributes->resize(static_cast<std::size_t>(wire.size()));
  for (int i = 0; i < wire.size(); ++i) {
    if (!readLaunchAttribute(wire.Get(i), &(*attributes)[static_cast<std::size_t>(i)], reason, window))
      return false;
  }
  return true;
}

}  // namespace agileos::worker
