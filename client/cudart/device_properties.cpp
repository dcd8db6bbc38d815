#include "client/cudart/device_properties.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <iterator>
#include <string>
#include <type_traits>
#include <unordered_map>

namespace agileos::client {
namespace {

// The table below maps the fields of CUDA 13.0's cudaDeviceProp. When a toolkit adds fields
// (carved out of `reserved`) or changes the layout, these fire: map the new fields, then
// update the numbers.
static_assert(sizeof(cudaDeviceProp) == 1008, "cudaDeviceProp changed: revisit kFieldSources");
static_assert(offsetof(cudaDeviceProp, reserved) == 784, "cudaDeviceProp gained fields: map them");

// Attribute values are ints. Bitmask fields (unsigned int) keep the bit pattern. Size fields
// (size_t) are non-negative counts of bytes that fit an int; a negative value, which no device
// reports, is read as unsigned 32-bit so that it cannot turn into a size near 2^64.
template <typename Field>
Field fieldValue(int value) {
  if constexpr (std::is_same_v<Field, int>) {
    return value;
  } else if constexpr (std::is_same_v<Field, unsigned int>) {
    return static_cast<unsigned int>(value);
  } else {
    static_assert(std::is_same_v<Field, std::size_t>, "cudaDeviceProp field of an unexpected type");
    return static_cast<std::size_t>(static_cast<unsigned int>(value));
  }
}

using StoreFn = void (*)(cudaDeviceProp& prop, int value);

// Stores into the scalar field `kField` (a pointer to member).
template <auto kField>
void storeField(cudaDeviceProp& prop, int value) {
  auto& field = prop.*kField;
  field = fieldValue<std::remove_reference_t<decltype(field)>>(value);
}

// Stores into element kIndex of the array field `kArray`.
template <auto kArray, std::size_t kIndex>
void storeElement(cudaDeviceProp& prop, int value) {
  auto& array = prop.*kArray;
  static_assert(kIndex < std::extent_v<std::remove_reference_t<decltype(array)>>, "index past the array");
  array[kIndex] = fieldValue<std::remove_reference_t<decltype(array[0])>>(value);
}

struct FieldSource {
  int attribute;
  StoreFn store;
};

#define AGILEOS_FIELD(attr, field) \
  { attr, storeField<&cudaDeviceProp::field> }
#define AGILEOS_ELEMENT(attr, field, index) \
  { attr, storeElement<&cudaDeviceProp::field, index> }

// Every cudaDeviceProp field that libcudart fills from a device attribute, in struct order.
// Checked on the H200 machine: given every attribute the driver reports (and the driver's name,
// uuid and total memory), the result equals the real cudaGetDeviceProperties byte for byte,
// except `reserved`, which libcudart leaves as it found it and fillDeviceProperties zeroes.
// Not here: name, uuid, totalGlobalMem (DeviceInfo has dedicated fields for them), and luid,
// luidDeviceNodeMask, reserved (no attribute; Windows-only or unused, zero on Linux).
constexpr FieldSource kFieldSources[] = {
    AGILEOS_FIELD(cudaDevAttrMaxSharedMemoryPerBlock, sharedMemPerBlock),
    AGILEOS_FIELD(cudaDevAttrMaxRegistersPerBlock, regsPerBlock),
    AGILEOS_FIELD(cudaDevAttrWarpSize, warpSize),
    AGILEOS_FIELD(cudaDevAttrMaxPitch, memPitch),
    AGILEOS_FIELD(cudaDevAttrMaxThreadsPerBlock, maxThreadsPerBlock),
    AGILEOS_ELEMENT(cudaDevAttrMaxBlockDimX, maxThreadsDim, 0),
    AGILEOS_ELEMENT(cudaDevAttrMaxBlockDimY, maxThreadsDim, 1),
    AGILEOS_ELEMENT(cudaDevAttrMaxBlockDimZ, maxThreadsDim, 2),
    AGILEOS_ELEMENT(cudaDevAttrMaxGridDimX, maxGridSize, 0),
    AGILEOS_ELEMENT(cudaDevAttrMaxGridDimY, maxGridSize, 1),
    AGILEOS_ELEMENT(cudaDevAttrMaxGridDimZ, maxGridSize, 2),
    AGILEOS_FIELD(cudaDevAttrTotalConstantMemory, totalConstMem),
    AGILEOS_FIELD(cudaDevAttrComputeCapabilityMajor, major),
    AGILEOS_FIELD(cudaDevAttrComputeCapabilityMinor, minor),
    AGILEOS_FIELD(cudaDevAttrTextureAlignment, textureAlignment),
    AGILEOS_FIELD(cudaDevAttrTexturePitchAlignment, texturePitchAlignment),
    AGILEOS_FIELD(cudaDevAttrMultiProcessorCount, multiProcessorCount),
    AGILEOS_FIELD(cudaDevAttrIntegrated, integrated),
    AGILEOS_FIELD(cudaDevAttrCanMapHostMemory, canMapHostMemory),
    AGILEOS_FIELD(cudaDevAttrMaxTexture1DWidth, maxTexture1D),
    AGILEOS_FIELD(cudaDevAttrMaxTexture1DMipmappedWidth, maxTexture1DMipmap),
    AGILEOS_ELEMENT(cudaDevAttrMaxTexture2DWidth, maxTexture2D, 0),
    AGILEOS_ELEMENT(cudaDevAttrMaxTexture2DHeight, maxTexture2D, 1),
    AGILEOS_ELEMENT(cudaDevAttrMaxTexture2DMipmappedWidth, maxTexture2DMipmap, 0),
    AGILEOS_ELEMENT(cudaDevAttrMaxTexture2DMipmappedHeight, maxTexture2DMipmap, 1),
    AGILEOS_ELEMENT(cudaDevAttrMaxTexture2DLinearWidth, maxTexture2DLinear, 0),
    AGILEOS_ELEMENT(cudaDevAttrMaxTexture2DLinearHeight, maxTexture2DLinear, 1),
    AGILEOS_ELEMENT(cudaDevAttrMaxTexture2DLinearPitch, maxTexture2DLinear, 2),
    AGILEOS_ELEMENT(cudaDevAttrMaxTexture2DGatherWidth, maxTexture2DGather, 0),
    AGILEOS_ELEMENT(cudaDevAttrMaxTexture2DGatherHeight, maxTexture2DGather, 1),
    AGILEOS_ELEMENT(cudaDevAttrMaxTexture3DWidth, maxTexture3D, 0),
    AGILEOS_ELEMENT(cudaDevAttrMaxTexture3DHeight, maxTexture3D, 1),
    AGILEOS_ELEMENT(cudaDevAttrMaxTexture3DDepth, maxTexture3D, 2),
    AGILEOS_ELEMENT(cudaDevAttrMaxTexture3DWidthAlt, maxTexture3DAlt, 0),
    AGILEOS_ELEMENT(cudaDevAttrMaxTexture3DHeightAlt, maxTexture3DAlt, 1),
    AGILEOS_ELEMENT(cudaDevAttrMaxTexture3DDepthAlt, maxTexture3DAlt, 2),
    AGILEOS_FIELD(cudaDevAttrMaxTextureCubemapWidth, maxTextureCubemap),
    AGILEOS_ELEMENT(cudaDevAttrMaxTexture1DLayeredWidth, maxTexture1DLayered, 0),
    AGILEOS_ELEMENT(cudaDevAttrMaxTexture1DLayeredLayers, maxTexture1DLayered, 1),
    AGILEOS_ELEMENT(cudaDevAttrMaxTexture2DLayeredWidth, maxTexture2DLayered, 0),
    AGILEOS_ELEMENT(cudaDevAttrMaxTexture2DLayeredHeight, maxTexture2DLayered, 1),
    AGILEOS_ELEMENT(cudaDevAttrMaxTexture2DLayeredLayers, maxTexture2DLayered, 2),
    AGILEOS_ELEMENT(cudaDevAttrMaxTextureCubemapLayeredWidth, maxTextureCubemapLayered, 0),
    AGILEOS_ELEMENT(cudaDevAttrMaxTextureCubemapLayeredLayers, maxTextureCubemapLayered, 1),
    AGILEOS_FIELD(cudaDevAttrMaxSurface1DWidth, maxSurface1D),
    AGILEOS_ELEMENT(cudaDevAttrMaxSurface2DWidth, maxSurface2D, 0),
    AGILEOS_ELEMENT(cudaDevAttrMaxSurface2DHeight, maxSurface2D, 1),
    AGILEOS_ELEMENT(cudaDevAttrMaxSurface3DWidth, maxSurface3D, 0),
    AGILEOS_ELEMENT(cudaDevAttrMaxSurface3DHeight, maxSurface3D, 1),
    AGILEOS_ELEMENT(cudaDevAttrMaxSurface3DDepth, maxSurface3D, 2),
    AGILEOS_ELEMENT(cudaDevAttrMaxSurface1DLayeredWidth, maxSurface1DLayered, 0),
    AGILEOS_ELEMENT(cudaDevAttrMaxSurface1DLayeredLayers, maxSurface1DLayered, 1),
    AGILEOS_ELEMENT(cudaDevAttrMaxSurface2DLayeredWidth, maxSurface2DLayered, 0),
    AGILEOS_ELEMENT(cudaDevAttrMaxSurface2DLayeredHeight, maxSurface2DLayered, 1),
    AGILEOS_ELEMENT(cudaDevAttrMaxSurface2DLayeredLayers, maxSurface2DLayered, 2),
    AGILEOS_FIELD(cudaDevAttrMaxSurfaceCubemapWidth, maxSurfaceCubemap),
    AGILEOS_ELEMENT(cudaDevAttrMaxSurfaceCubemapLayeredWidth, maxSurfaceCubemapLayered, 0),
    AGILEOS_ELEMENT(cudaDevAttrMaxSurfaceCubemapLayeredLayers, maxSurfaceCubemapLayered, 1),
    AGILEOS_FIELD(cudaDevAttrSurfaceAlignment, surfaceAlignment),
    AGILEOS_FIELD(cudaDevAttrConcurrentKernels, concurrentKernels),
    AGILEOS_FIELD(cudaDevAttrEccEnabled, ECCEnabled),
    AGILEOS_FIELD(cudaDevAttrPciBusId, pciBusID),
    AGILEOS_FIELD(cudaDevAttrPciDeviceId, pciDeviceID),
    AGILEOS_FIELD(cudaDevAttrPciDomainId, pciDomainID),
    AGILEOS_FIELD(cudaDevAttrTccDriver, tccDriver),
    AGILEOS_FIELD(cudaDevAttrAsyncEngineCount, asyncEngineCount),
    AGILEOS_FIELD(cudaDevAttrUnifiedAddressing, unifiedAddressing),
    AGILEOS_FIELD(cudaDevAttrGlobalMemoryBusWidth, memoryBusWidth),
    AGILEOS_FIELD(cudaDevAttrL2CacheSize, l2CacheSize),
    AGILEOS_FIELD(cudaDevAttrMaxPersistingL2CacheSize, persistingL2CacheMaxSize),
    AGILEOS_FIELD(cudaDevAttrMaxThreadsPerMultiProcessor, maxThreadsPerMultiProcessor),
    AGILEOS_FIELD(cudaDevAttrStreamPrioritiesSupported, streamPrioritiesSupported),
    AGILEOS_FIELD(cudaDevAttrGlobalL1CacheSupported, globalL1CacheSupported),
    AGILEOS_FIELD(cudaDevAttrLocalL1CacheSupported, localL1CacheSupported),
    AGILEOS_FIELD(cudaDevAttrMaxSharedMemoryPerMultiprocessor, sharedMemPerMultiprocessor),
    AGILEOS_FIELD(cudaDevAttrMaxRegistersPerMultiprocessor, regsPerMultiprocessor),
    AGILEOS_FIELD(cudaDevAttrManagedMemory, managedMemory),
    AGILEOS_FIELD(cudaDevAttrIsMultiGpuBoard, isMultiGpuBoard),
    AGILEOS_FIELD(cudaDevAttrMultiGpuBoardGroupID, multiGpuBoardGroupID),
    AGILEOS_FIELD(cudaDevAttrHostNativeAtomicSupported, hostNativeAtomicSupported),
    AGILEOS_FIELD(cudaDevAttrPageableMemoryAccess, pageableMemoryAccess),
    AGILEOS_FIELD(cudaDevAttrConcurrentManagedAccess, concurrentManagedAccess),
    AGILEOS_FIELD(cudaDevAttrComputePreemptionSupported, computePreemptionSupported),
    AGILEOS_FIELD(cudaDevAttrCanUseHostPointerForRegisteredMem, canUseHostPointerForRegisteredMem),
    AGILEOS_FIELD(cudaDevAttrCooperativeLaunch, cooperativeLaunch),
    AGILEOS_FIELD(cudaDevAttrMaxSharedMemoryPerBlockOptin, sharedMemPerBlockOptin),
    AGILEOS_FIELD(cudaDevAttrPageableMemoryAccessUsesHostPageTables, pageableMemoryAccessUsesHostPageTables),
    AGILEOS_FIELD(cudaDevAttrDirectManagedMemAccessFromHost, directManagedMemAccessFromHost),
    AGILEOS_FIELD(cudaDevAttrMaxBlocksPerMultiprocessor, maxBlocksPerMultiProcessor),
    AGILEOS_FIELD(cudaDevAttrMaxAccessPolicyWindowSize, accessPolicyMaxWindowSize),
    AGILEOS_FIELD(cudaDevAttrReservedSharedMemoryPerBlock, reservedSharedMemPerBlock),
    AGILEOS_FIELD(cudaDevAttrHostRegisterSupported, hostRegisterSupported),
    AGILEOS_FIELD(cudaDevAttrSparseCudaArraySupported, sparseCudaArraySupported),
    AGILEOS_FIELD(cudaDevAttrHostRegisterReadOnlySupported, hostRegisterReadOnlySupported),
    AGILEOS_FIELD(cudaDevAttrTimelineSemaphoreInteropSupported, timelineSemaphoreInteropSupported),
    AGILEOS_FIELD(cudaDevAttrMemoryPoolsSupported, memoryPoolsSupported),
    AGILEOS_FIELD(cudaDevAttrGPUDirectRDMASupported, gpuDirectRDMASupported),
    AGILEOS_FIELD(cudaDevAttrGPUDirectRDMAFlushWritesOptions, gpuDirectRDMAFlushWritesOptions),
    AGILEOS_FIELD(cudaDevAttrGPUDirectRDMAWritesOrdering, gpuDirectRDMAWritesOrdering),
    AGILEOS_FIELD(cudaDevAttrMemoryPoolSupportedHandleTypes, memoryPoolSupportedHandleTypes),
    AGILEOS_FIELD(cudaDevAttrDeferredMappingCudaArraySupported, deferredMappingCudaArraySupported),
    AGILEOS_FIELD(cudaDevAttrIpcEventSupport, ipcEventSupported),
    AGILEOS_FIELD(cudaDevAttrClusterLaunch, clusterLaunch),
    // The runtime enum names 129 cudaDevAttrReserved129; cuda.h calls it
    // CU_DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS, and it is this field's source.
    AGILEOS_FIELD(cudaDevAttrReserved129, unifiedFunctionPointers),
    AGILEOS_FIELD(cudaDevAttrNumaConfig, deviceNumaConfig),
    AGILEOS_FIELD(cudaDevAttrNumaId, deviceNumaId),
    AGILEOS_FIELD(cudaDevAttrMpsEnabled, mpsEnabled),
    AGILEOS_FIELD(cudaDevAttrHostNumaId, hostNumaId),
    AGILEOS_FIELD(cudaDevAttrGpuPciDeviceId, gpuPciDeviceID),
    AGILEOS_FIELD(cudaDevAttrGpuPciSubsystemId, gpuPciSubsystemID),
    AGILEOS_FIELD(cudaDevAttrHostNumaMultinodeIpcSupported, hostNumaMultinodeIpcSupported),
};

#undef AGILEOS_FIELD
#undef AGILEOS_ELEMENT

// A copy-paste slip in the table (one attribute feeding two fields) is a compile error.
constexpr bool eachAttributeFeedsOneField() {
  for (std::size_t i = 0; i < std::size(kFieldSources); ++i) {
    for (std::size_t j = i + 1; j < std::size(kFieldSources); ++j) {
      if (kFieldSources[i].attribute == kFieldSources[j].attribute) return false;
    }
  }
  return true;
}
static_assert(eachAttributeFeedsOneField(), "an attribute appears twice in kFieldSources");

// attribute -> value, first report wins (as in findAttribute).
std::unordered_map<int, int> indexAttributes(const agileos::v1::DeviceInfo& info) {
  std::unordered_map<int, int> values;
  values.reserve(static_cast<std::size_t>(info.attributes_size()));
  for (const agileos::v1::DeviceAttribute& entry : info.attributes()) {
    values.emplace(entry.attribute(), entry.value());
  }
  return values;
}

}  // namespace

std::optional<int> findAttribute(const agileos::v1::DeviceInfo& info, int attribute) {
  for (const agileos::v1::DeviceAttribute& entry : info.attributes()) {
    if (entry.attribute() == attribute) return entry.value();
  }
  return std::nullopt;
}

void fillDeviceProperties(const agileos::v1::DeviceInfo& info, cudaDeviceProp* prop) {
  // Zeroing the struct we were compiled against (not copying one from elsewhere) gives every
  // unmapped field, and the padding, the value of a fresh cudaDeviceProp.
  std::memset(prop, 0, sizeof(*prop));

  const std::string& name = info.name();
  std::memcpy(prop->name, name.data(), std::min(name.size(), sizeof(prop->name) - 1));

  const std::string& uuid = info.uuid();
  if (uuid.size() == sizeof(prop->uuid.bytes)) std::memcpy(prop->uuid.bytes, uuid.data(), uuid.size());

  prop->totalGlobalMem = static_cast<std::size_t>(info.total_global_mem());

  const std::unordered_map<int, int> values = indexAttributes(info);
  for (const FieldSource& source : kFieldSources) {
    const auto found = values.find(source.attribute);
    if (found != values.end()) source.store(*prop, found->second);
  }
}

}  // namespace agileos::client
