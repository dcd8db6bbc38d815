#include "worker/handlers/launch_attributes.h"

#include <cstdint>
#include <cstring>

namespace agileos::worker {
namespace {

bool readOne(const v1::LaunchAttribute& wire, CUlaunchAttribute* out, std::string* reason) {
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
    default:
      *reason = "launch attribute " + std::to_string(wire.id()) + " is not offered";
      return false;
  }
  *reason = "launch attribute " + std::to_string(wire.id()) + " has a value out of its range";
  return false;
}

}  // namespace

bool readLaunchAttributes(const google::protobuf::RepeatedPtrField<v1::LaunchAttribute>& wire,
                          std::vector<CUlaunchAttribute>* attributes, std::string* reason) {
  if (wire.size() > kMaxLaunchAttributes) {
    *reason = "a launch may carry at most 16 attributes";
    return false;
  }
  attributes->resize(static_cast<std::size_t>(wire.size()));
  for (int i = 0; i < wire.size(); ++i) {
    if (!readOne(wire.Get(i), &(*attributes)[static_cast<std::size_t>(i)], reason)) return false;
  }
  return true;
}

}  // namespace agileos::worker
