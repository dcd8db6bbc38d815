#include "client/cuda/launch_attributes.h"

#include <cstdint>
#include <cstring>
#include <mutex>
#include <set>

#include "client/common/log.h"

namespace agileos::client::cuda_shim {
namespace {

int idOf(const CUlaunchAttribute& attribute) {
  int id = 0;
  static_assert(sizeof id == sizeof attribute.id);
  std::memcpy(&id, &attribute.id, sizeof id);
  return id;
}

CUresult notPassedOn(int id) {
  static std::mutex mutex;
  static auto* reported = new std::set<int>();  // never destroyed: launches may come during exit
  std::lock_guard lock(mutex);
  if (reported->insert(id).second) {
    AGILEOS_LOG_WARN(
        "cuLaunchKernelEx: launch attribute %d is not offered by AgileOS (it names an event or an "
        "address, or is unknown); returning CUDA_ERROR_NOT_SUPPORTED",
        id);
  }
  return CUDA_ERROR_NOT_SUPPORTED;
}

}  // namespace

CUresult readLaunchAttributes(const CUlaunchConfig& config, LaunchAttributes* out) {
  if (config.numAttrs != 0 && config.attrs == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (config.numAttrs > kMaxLaunchAttributes) return CUDA_ERROR_INVALID_VALUE;
  *out = LaunchAttributes{};
  for (unsigned i = 0; i < config.numAttrs; ++i) {
    const CUlaunchAttribute& attribute = config.attrs[i];
    const int id = idOf(attribute);
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
  return CUDA_SUCCESS;
}

}  // namespace agileos::client::cuda_shim
