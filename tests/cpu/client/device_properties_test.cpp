// fillDeviceProperties / findAttribute: every cudaDeviceProp field lands where libcudart would
// put it, with the right width, and nothing the worker did not report shows up.
#include "client/cudart/device_properties.h"

#include <gtest/gtest.h>

#include <climits>
#include <cstddef>
#include <cstring>
#include <string>

namespace agileos::client {
namespace {

// One past the largest CUdevice_attribute of CUDA 13.0 (CU_DEVICE_ATTRIBUTE_MAX).
constexpr int kAttributeEnd = 148;

// A value per attribute that no other attribute has, so a field fed from the wrong attribute
// shows a wrong number.
int distinctValue(int attribute) { return attribute * 7 + 1; }

void addAttribute(v1::DeviceInfo& info, int attribute, int value) {
  v1::DeviceAttribute* entry = info.add_attributes();
  entry->set_attribute(attribute);
  entry->set_value(value);
}

v1::DeviceInfo everyAttribute() {
  v1::DeviceInfo info;
  for (int attribute = 1; attribute < kAttributeEnd; ++attribute) {
    addAttribute(info, attribute, distinctValue(attribute));
  }
  return info;
}

// A prop full of garbage, as the application's uninitialised stack variable may be.
cudaDeviceProp garbageProp() {
  cudaDeviceProp prop;
  std::memset(&prop, 0xAB, sizeof(prop));
  return prop;
}

bool allZero(const void* bytes, std::size_t size) {
  const auto* p = static_cast<const unsigned char*>(bytes);
  for (std::size_t i = 0; i < size; ++i) {
    if (p[i] != 0) return false;
  }
  return true;
}

int v(cudaDeviceAttr attribute) { return distinctValue(static_cast<int>(attribute)); }
std::size_t sz(cudaDeviceAttr attribute) { return static_cast<std::size_t>(v(attribute)); }

TEST(DevicePropertiesTest, ScalarIntFieldsComeFromTheirAttributes) {
  cudaDeviceProp prop = garbageProp();
  fillDeviceProperties(everyAttribute(), &prop);

  EXPECT_EQ(prop.regsPerBlock, v(cudaDevAttrMaxRegistersPerBlock));
  EXPECT_EQ(prop.warpSize, v(cudaDevAttrWarpSize));
  EXPECT_EQ(prop.maxThreadsPerBlock, v(cudaDevAttrMaxThreadsPerBlock));
  EXPECT_EQ(prop.major, v(cudaDevAttrComputeCapabilityMajor));
  EXPECT_EQ(prop.minor, v(cudaDevAttrComputeCapabilityMinor));
  EXPECT_EQ(prop.multiProcessorCount, v(cudaDevAttrMultiProcessorCount));
  EXPECT_EQ(prop.integrated, v(cudaDevAttrIntegrated));
  EXPECT_EQ(prop.canMapHostMemory, v(cudaDevAttrCanMapHostMemory));
  EXPECT_EQ(prop.maxTexture1D, v(cudaDevAttrMaxTexture1DWidth));
  EXPECT_EQ(prop.maxTexture1DMipmap, v(cudaDevAttrMaxTexture1DMipmappedWidth));
  EXPECT_EQ(prop.maxTextureCubemap, v(cudaDevAttrMaxTextureCubemapWidth));
  EXPECT_EQ(prop.maxSurface1D, v(cudaDevAttrMaxSurface1DWidth));
  EXPECT_EQ(prop.maxSurfaceCubemap, v(cudaDevAttrMaxSurfaceCubemapWidth));
  EXPECT_EQ(prop.concurrentKernels, v(cudaDevAttrConcurrentKernels));
  EXPECT_EQ(prop.ECCEnabled, v(cudaDevAttrEccEnabled));
  EXPECT_EQ(prop.pciBusID, v(cudaDevAttrPciBusId));
  EXPECT_EQ(prop.pciDeviceID, v(cudaDevAttrPciDeviceId));
  EXPECT_EQ(prop.pciDomainID, v(cudaDevAttrPciDomainId));
  EXPECT_EQ(prop.tccDriver, v(cudaDevAttrTccDriver));
  EXPECT_EQ(prop.asyncEngineCount, v(cudaDevAttrAsyncEngineCount));
  EXPECT_EQ(prop.unifiedAddressing, v(cudaDevAttrUnifiedAddressing));
  EXPECT_EQ(prop.memoryBusWidth, v(cudaDevAttrGlobalMemoryBusWidth));
  EXPECT_EQ(prop.l2CacheSize, v(cudaDevAttrL2CacheSize));
  EXPECT_EQ(prop.persistingL2CacheMaxSize, v(cudaDevAttrMaxPersistingL2CacheSize));
  EXPECT_EQ(prop.maxThreadsPerMultiProcessor, v(cudaDevAttrMaxThreadsPerMultiProcessor));
  EXPECT_EQ(prop.streamPrioritiesSupported, v(cudaDevAttrStreamPrioritiesSupported));
  EXPECT_EQ(prop.globalL1CacheSupported, v(cudaDevAttrGlobalL1CacheSupported));
  EXPECT_EQ(prop.localL1CacheSupported, v(cudaDevAttrLocalL1CacheSupported));
  EXPECT_EQ(prop.regsPerMultiprocessor, v(cudaDevAttrMaxRegistersPerMultiprocessor));
  EXPECT_EQ(prop.managedMemory, v(cudaDevAttrManagedMemory));
  EXPECT_EQ(prop.isMultiGpuBoard, v(cudaDevAttrIsMultiGpuBoard));
  EXPECT_EQ(prop.multiGpuBoardGroupID, v(cudaDevAttrMultiGpuBoardGroupID));
  EXPECT_EQ(prop.hostNativeAtomicSupported, v(cudaDevAttrHostNativeAtomicSupported));
  EXPECT_EQ(prop.pageableMemoryAccess, v(cudaDevAttrPageableMemoryAccess));
  EXPECT_EQ(prop.concurrentManagedAccess, v(cudaDevAttrConcurrentManagedAccess));
  EXPECT_EQ(prop.computePreemptionSupported, v(cudaDevAttrComputePreemptionSupported));
  EXPECT_EQ(prop.canUseHostPointerForRegisteredMem, v(cudaDevAttrCanUseHostPointerForRegisteredMem));
  EXPECT_EQ(prop.cooperativeLaunch, v(cudaDevAttrCooperativeLaunch));
  EXPECT_EQ(prop.pageableMemoryAccessUsesHostPageTables,
            v(cudaDevAttrPageableMemoryAccessUsesHostPageTables));
  EXPECT_EQ(prop.directManagedMemAccessFromHost, v(cudaDevAttrDirectManagedMemAccessFromHost));
  EXPECT_EQ(prop.maxBlocksPerMultiProcessor, v(cudaDevAttrMaxBlocksPerMultiprocessor));
  EXPECT_EQ(prop.accessPolicyMaxWindowSize, v(cudaDevAttrMaxAccessPolicyWindowSize));
  EXPECT_EQ(prop.hostRegisterSupported, v(cudaDevAttrHostRegisterSupported));
  EXPECT_EQ(prop.sparseCudaArraySupported, v(cudaDevAttrSparseCudaArraySupported));
  EXPECT_EQ(prop.hostRegisterReadOnlySupported, v(cudaDevAttrHostRegisterReadOnlySupported));
  EXPECT_EQ(prop.timelineSemaphoreInteropSupported, v(cudaDevAttrTimelineSemaphoreInteropSupported));
  EXPECT_EQ(prop.memoryPoolsSupported, v(cudaDevAttrMemoryPoolsSupported));
  EXPECT_EQ(prop.gpuDirectRDMASupported, v(cudaDevAttrGPUDirectRDMASupported));
  EXPECT_EQ(prop.gpuDirectRDMAWritesOrdering, v(cudaDevAttrGPUDirectRDMAWritesOrdering));
  EXPECT_EQ(prop.deferredMappingCudaArraySupported, v(cudaDevAttrDeferredMappingCudaArraySupported));
  EXPECT_EQ(prop.ipcEventSupported, v(cudaDevAttrIpcEventSupport));
  EXPECT_EQ(prop.clusterLaunch, v(cudaDevAttrClusterLaunch));
  // 129: CU_DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS (cudaDevAttrReserved129 in the runtime enum).
  EXPECT_EQ(prop.unifiedFunctionPointers, distinctValue(129));
  EXPECT_EQ(prop.deviceNumaConfig, v(cudaDevAttrNumaConfig));
  EXPECT_EQ(prop.deviceNumaId, v(cudaDevAttrNumaId));
  EXPECT_EQ(prop.mpsEnabled, v(cudaDevAttrMpsEnabled));
  EXPECT_EQ(prop.hostNumaId, v(cudaDevAttrHostNumaId));
  EXPECT_EQ(prop.hostNumaMultinodeIpcSupported, v(cudaDevAttrHostNumaMultinodeIpcSupported));
}

TEST(DevicePropertiesTest, SizeAndBitmaskFieldsComeFromTheirAttributes) {
  cudaDeviceProp prop = garbageProp();
  fillDeviceProperties(everyAttribute(), &prop);

  EXPECT_EQ(prop.sharedMemPerBlock, sz(cudaDevAttrMaxSharedMemoryPerBlock));
  EXPECT_EQ(prop.memPitch, sz(cudaDevAttrMaxPitch));
  EXPECT_EQ(prop.totalConstMem, sz(cudaDevAttrTotalConstantMemory));
  EXPECT_EQ(prop.textureAlignment, sz(cudaDevAttrTextureAlignment));
  EXPECT_EQ(prop.texturePitchAlignment, sz(cudaDevAttrTexturePitchAlignment));
  EXPECT_EQ(prop.surfaceAlignment, sz(cudaDevAttrSurfaceAlignment));
  EXPECT_EQ(prop.sharedMemPerMultiprocessor, sz(cudaDevAttrMaxSharedMemoryPerMultiprocessor));
  EXPECT_EQ(prop.sharedMemPerBlockOptin, sz(cudaDevAttrMaxSharedMemoryPerBlockOptin));
  EXPECT_EQ(prop.reservedSharedMemPerBlock, sz(cudaDevAttrReservedSharedMemoryPerBlock));

  EXPECT_EQ(prop.gpuDirectRDMAFlushWritesOptions,
            static_cast<unsigned>(v(cudaDevAttrGPUDirectRDMAFlushWritesOptions)));
  EXPECT_EQ(prop.memoryPoolSupportedHandleTypes,
            static_cast<unsigned>(v(cudaDevAttrMemoryPoolSupportedHandleTypes)));
  EXPECT_EQ(prop.gpuPciDeviceID, static_cast<unsigned>(v(cudaDevAttrGpuPciDeviceId)));
  EXPECT_EQ(prop.gpuPciSubsystemID, static_cast<unsigned>(v(cudaDevAttrGpuPciSubsystemId)));
}

TEST(DevicePropertiesTest, ArrayElementsComeFromTheirAttributesInOrder) {
  cudaDeviceProp prop = garbageProp();
  fillDeviceProperties(everyAttribute(), &prop);

  EXPECT_EQ(prop.maxThreadsDim[0], v(cudaDevAttrMaxBlockDimX));
  EXPECT_EQ(prop.maxThreadsDim[1], v(cudaDevAttrMaxBlockDimY));
  EXPECT_EQ(prop.maxThreadsDim[2], v(cudaDevAttrMaxBlockDimZ));
  EXPECT_EQ(prop.maxGridSize[0], v(cudaDevAttrMaxGridDimX));
  EXPECT_EQ(prop.maxGridSize[1], v(cudaDevAttrMaxGridDimY));
  EXPECT_EQ(prop.maxGridSize[2], v(cudaDevAttrMaxGridDimZ));
  EXPECT_EQ(prop.maxTexture2D[0], v(cudaDevAttrMaxTexture2DWidth));
  EXPECT_EQ(prop.maxTexture2D[1], v(cudaDevAttrMaxTexture2DHeight));
  EXPECT_EQ(prop.maxTexture2DMipmap[0], v(cudaDevAttrMaxTexture2DMipmappedWidth));
  EXPECT_EQ(prop.maxTexture2DMipmap[1], v(cudaDevAttrMaxTexture2DMipmappedHeight));
  EXPECT_EQ(prop.maxTexture2DLinear[0], v(cudaDevAttrMaxTexture2DLinearWidth));
  EXPECT_EQ(prop.maxTexture2DLinear[1], v(cudaDevAttrMaxTexture2DLinearHeight));
  EXPECT_EQ(prop.maxTexture2DLinear[2], v(cudaDevAttrMaxTexture2DLinearPitch));
  EXPECT_EQ(prop.maxTexture2DGather[0], v(cudaDevAttrMaxTexture2DGatherWidth));
  EXPECT_EQ(prop.maxTexture2DGather[1], v(cudaDevAttrMaxTexture2DGatherHeight));
  EXPECT_EQ(prop.maxTexture3D[0], v(cudaDevAttrMaxTexture3DWidth));
  EXPECT_EQ(prop.maxTexture3D[1], v(cudaDevAttrMaxTexture3DHeight));
  EXPECT_EQ(prop.maxTexture3D[2], v(cudaDevAttrMaxTexture3DDepth));
  EXPECT_EQ(prop.maxTexture3DAlt[0], v(cudaDevAttrMaxTexture3DWidthAlt));
  EXPECT_EQ(prop.maxTexture3DAlt[1], v(cudaDevAttrMaxTexture3DHeightAlt));
  EXPECT_EQ(prop.maxTexture3DAlt[2], v(cudaDevAttrMaxTexture3DDepthAlt));
  EXPECT_EQ(prop.maxTexture1DLayered[0], v(cudaDevAttrMaxTexture1DLayeredWidth));
  EXPECT_EQ(prop.maxTexture1DLayered[1], v(cudaDevAttrMaxTexture1DLayeredLayers));
  EXPECT_EQ(prop.maxTexture2DLayered[0], v(cudaDevAttrMaxTexture2DLayeredWidth));
  EXPECT_EQ(prop.maxTexture2DLayered[1], v(cudaDevAttrMaxTexture2DLayeredHeight));
  EXPECT_EQ(prop.maxTexture2DLayered[2], v(cudaDevAttrMaxTexture2DLayeredLayers));
  EXPECT_EQ(prop.maxTextureCubemapLayered[0], v(cudaDevAttrMaxTextureCubemapLayeredWidth));
  EXPECT_EQ(prop.maxTextureCubemapLayered[1], v(cudaDevAttrMaxTextureCubemapLayeredLayers));
  EXPECT_EQ(prop.maxSurface2D[0], v(cudaDevAttrMaxSurface2DWidth));
  EXPECT_EQ(prop.maxSurface2D[1], v(cudaDevAttrMaxSurface2DHeight));
  EXPECT_EQ(prop.maxSurface3D[0], v(cudaDevAttrMaxSurface3DWidth));
  EXPECT_EQ(prop.maxSurface3D[1], v(cudaDevAttrMaxSurface3DHeight));
  EXPECT_EQ(prop.maxSurface3D[2], v(cudaDevAttrMaxSurface3DDepth));
  EXPECT_EQ(prop.maxSurface1DLayered[0], v(cudaDevAttrMaxSurface1DLayeredWidth));
  EXPECT_EQ(prop.maxSurface1DLayered[1], v(cudaDevAttrMaxSurface1DLayeredLayers));
  EXPECT_EQ(prop.maxSurface2DLayered[0], v(cudaDevAttrMaxSurface2DLayeredWidth));
  EXPECT_EQ(prop.maxSurface2DLayered[1], v(cudaDevAttrMaxSurface2DLayeredHeight));
  EXPECT_EQ(prop.maxSurface2DLayered[2], v(cudaDevAttrMaxSurface2DLayeredLayers));
  EXPECT_EQ(prop.maxSurfaceCubemapLayered[0], v(cudaDevAttrMaxSurfaceCubemapLayeredWidth));
  EXPECT_EQ(prop.maxSurfaceCubemapLayered[1], v(cudaDevAttrMaxSurfaceCubemapLayeredLayers));
}

TEST(DevicePropertiesTest, FieldsWithoutAnAttributeStayZero) {
  cudaDeviceProp prop = garbageProp();
  fillDeviceProperties(everyAttribute(), &prop);

  EXPECT_TRUE(allZero(prop.luid, sizeof(prop.luid)));
  EXPECT_EQ(prop.luidDeviceNodeMask, 0u);
  EXPECT_TRUE(allZero(prop.reserved, sizeof(prop.reserved)));
  // The dedicated DeviceInfo fields were not set: no attribute leaks into them.
  EXPECT_EQ(prop.totalGlobalMem, 0u);
  EXPECT_EQ(prop.name[0], '\0');
  EXPECT_TRUE(allZero(prop.uuid.bytes, sizeof(prop.uuid.bytes)));
}

TEST(DevicePropertiesTest, EmptyInfoGivesAnAllZeroStruct) {
  cudaDeviceProp prop = garbageProp();
  fillDeviceProperties(v1::DeviceInfo(), &prop);
  EXPECT_TRUE(allZero(&prop, sizeof(prop)));
}

TEST(DevicePropertiesTest, MissingAttributesGiveZeroAndOthersAreUnaffected) {
  v1::DeviceInfo info;
  addAttribute(info, cudaDevAttrWarpSize, 32);
  addAttribute(info, cudaDevAttrMaxBlockDimY, 1024);
  addAttribute(info, cudaDevAttrTotalConstantMemory, 65536);

  cudaDeviceProp prop = garbageProp();
  fillDeviceProperties(info, &prop);

  EXPECT_EQ(prop.warpSize, 32);
  EXPECT_EQ(prop.maxThreadsDim[0], 0);
  EXPECT_EQ(prop.maxThreadsDim[1], 1024);
  EXPECT_EQ(prop.maxThreadsDim[2], 0);
  EXPECT_EQ(prop.totalConstMem, 65536u);
  EXPECT_EQ(prop.sharedMemPerBlock, 0u);
  EXPECT_EQ(prop.canMapHostMemory, 0);
  EXPECT_EQ(prop.l2CacheSize, 0);
  EXPECT_EQ(prop.gpuPciDeviceID, 0u);
}

TEST(DevicePropertiesTest, ValuesAtTheEdgesOfTheirTypes) {
  v1::DeviceInfo info;
  addAttribute(info, cudaDevAttrMaxPitch, INT_MAX);                   // size_t field
  addAttribute(info, cudaDevAttrMaxSharedMemoryPerBlock, -1);         // size_t, never negative
  addAttribute(info, cudaDevAttrMemoryPoolSupportedHandleTypes, -1);  // bitmask: all bits
  addAttribute(info, cudaDevAttrGpuPciDeviceId, INT_MIN);             // bitmask: top bit
  addAttribute(info, cudaDevAttrHostNumaId, -1);                      // int: "no NUMA"

  cudaDeviceProp prop = garbageProp();
  fillDeviceProperties(info, &prop);

  EXPECT_EQ(prop.memPitch, static_cast<std::size_t>(INT_MAX));
  EXPECT_EQ(prop.sharedMemPerBlock, static_cast<std::size_t>(UINT_MAX));
  EXPECT_EQ(prop.memoryPoolSupportedHandleTypes, UINT_MAX);
  EXPECT_EQ(prop.gpuPciDeviceID, 0x80000000u);
  EXPECT_EQ(prop.hostNumaId, -1);
}

TEST(DevicePropertiesTest, TotalGlobalMemTakesAll64Bits) {
  v1::DeviceInfo info;
  info.set_total_global_mem(150754820096ull);  // an H200: more than 2^32
  cudaDeviceProp prop = garbageProp();
  fillDeviceProperties(info, &prop);
  EXPECT_EQ(prop.totalGlobalMem, 150754820096ull);
}

TEST(DevicePropertiesTest, ShortNameIsCopiedAndNulPadded) {
  v1::DeviceInfo info;
  info.set_name("NVIDIA H200");
  cudaDeviceProp prop = garbageProp();
  fillDeviceProperties(info, &prop);
  EXPECT_STREQ(prop.name, "NVIDIA H200");
  EXPECT_TRUE(allZero(prop.name + 11, sizeof(prop.name) - 11));
}

TEST(DevicePropertiesTest, LongNameIsTruncatedTo255BytesAndNulTerminated) {
  std::string name;
  for (int i = 0; i < 300; ++i) name.push_back(static_cast<char>('a' + i % 26));
  v1::DeviceInfo info;
  info.set_name(name);
  cudaDeviceProp prop = garbageProp();
  fillDeviceProperties(info, &prop);
  EXPECT_EQ(std::string(prop.name, 255), name.substr(0, 255));
  EXPECT_EQ(prop.name[255], '\0');
  // The byte after the array (uuid) was not overwritten by the long name.
  EXPECT_TRUE(allZero(prop.uuid.bytes, sizeof(prop.uuid.bytes)));
}

TEST(DevicePropertiesTest, NameOfExactly255BytesFits) {
  const std::string name(255, 'x');
  v1::DeviceInfo info;
  info.set_name(name);
  cudaDeviceProp prop = garbageProp();
  fillDeviceProperties(info, &prop);
  EXPECT_EQ(std::string(prop.name), name);
}

TEST(DevicePropertiesTest, UuidBytesAreCopiedInOrder) {
  std::string uuid;
  for (int i = 0; i < 16; ++i) uuid.push_back(static_cast<char>(0xF0 + i));
  v1::DeviceInfo info;
  info.set_uuid(uuid);
  cudaDeviceProp prop = garbageProp();
  fillDeviceProperties(info, &prop);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(static_cast<unsigned char>(prop.uuid.bytes[i]), 0xF0 + i) << "byte " << i;
  }
  EXPECT_TRUE(allZero(prop.luid, sizeof(prop.luid)));
}

TEST(DevicePropertiesTest, UuidOfTheWrongLengthIsLeftZero) {
  for (const std::size_t length : {std::size_t{0}, std::size_t{15}, std::size_t{17}, std::size_t{64}}) {
    v1::DeviceInfo info;
    info.set_uuid(std::string(length, '\x5A'));
    cudaDeviceProp prop = garbageProp();
    fillDeviceProperties(info, &prop);
    EXPECT_TRUE(allZero(prop.uuid.bytes, sizeof(prop.uuid.bytes))) << "length " << length;
    EXPECT_TRUE(allZero(prop.luid, sizeof(prop.luid))) << "length " << length;
  }
}

TEST(DevicePropertiesTest, UnknownAttributesAreIgnored) {
  v1::DeviceInfo info;
  addAttribute(info, 0, 11);
  addAttribute(info, -5, 12);
  addAttribute(info, 5000, 13);
  addAttribute(info, INT_MAX, 14);
  cudaDeviceProp prop = garbageProp();
  fillDeviceProperties(info, &prop);
  EXPECT_TRUE(allZero(&prop, sizeof(prop)));
}

TEST(DevicePropertiesTest, FirstReportOfARepeatedAttributeCounts) {
  v1::DeviceInfo info;
  addAttribute(info, cudaDevAttrMultiProcessorCount, 132);
  addAttribute(info, cudaDevAttrMultiProcessorCount, 7);
  cudaDeviceProp prop = garbageProp();
  fillDeviceProperties(info, &prop);
  EXPECT_EQ(prop.multiProcessorCount, 132);
  EXPECT_EQ(findAttribute(info, cudaDevAttrMultiProcessorCount), 132);
}

TEST(FindAttributeTest, ReturnsReportedValuesAndNulloptOtherwise) {
  v1::DeviceInfo info;
  addAttribute(info, cudaDevAttrCanMapHostMemory, 0);
  addAttribute(info, cudaDevAttrHostNumaId, -1);
  addAttribute(info, cudaDevAttrComputeCapabilityMajor, 9);

  EXPECT_EQ(findAttribute(info, cudaDevAttrCanMapHostMemory), 0);  // reported as 0: not nullopt
  EXPECT_EQ(findAttribute(info, cudaDevAttrHostNumaId), -1);
  EXPECT_EQ(findAttribute(info, cudaDevAttrComputeCapabilityMajor), 9);
  EXPECT_EQ(findAttribute(info, cudaDevAttrComputeCapabilityMinor), std::nullopt);
  EXPECT_EQ(findAttribute(v1::DeviceInfo(), cudaDevAttrWarpSize), std::nullopt);
}

}  // namespace
}  // namespace agileos::client
