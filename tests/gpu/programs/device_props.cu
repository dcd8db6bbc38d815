// Device identification and limits that do not change from run to run:
// cudaGetDeviceProperties fields, cudaDeviceGetAttribute (cross-checked against
// the properties), versions, limits, the stream priority range, and the errors
// for an invalid device or attribute. cudaMemGetInfo is checked, not printed
// (free memory changes with other tenants).
#include "check.cuh"

struct AttributeCheck {
  const char* name;
  cudaDeviceAttr attribute;
  long long fromProperties;
};

int main() {
  int count = 0, device = -1;
  CHECK_CUDA(cudaGetDeviceCount(&count));
  EXPECT_TRUE(count >= 1, "no device");
  CHECK_CUDA(cudaSetDevice(0));
  CHECK_CUDA(cudaGetDevice(&device));
  std::printf("device count >= 1: yes, current device=%d\n", device);

  cudaDeviceProp p;
  CHECK_CUDA(cudaGetDeviceProperties(&p, 0));
  std::printf("name=%s\n", p.name);
  std::printf("compute capability=%d.%d\n", p.major, p.minor);
  std::printf("totalGlobalMem=%zu\n", p.totalGlobalMem);
  std::printf("multiProcessorCount=%d warpSize=%d\n", p.multiProcessorCount, p.warpSize);
  std::printf("maxThreadsPerBlock=%d maxThreadsDim=(%d,%d,%d) maxGridSize=(%d,%d,%d)\n", p.maxThreadsPerBlock,
              p.maxThreadsDim[0], p.maxThreadsDim[1], p.maxThreadsDim[2], p.maxGridSize[0], p.maxGridSize[1],
              p.maxGridSize[2]);
  std::printf("sharedMemPerBlock=%zu sharedMemPerBlockOptin=%zu sharedMemPerMultiprocessor=%zu\n",
              p.sharedMemPerBlock, p.sharedMemPerBlockOptin, p.sharedMemPerMultiprocessor);
  std::printf("regsPerBlock=%d regsPerMultiprocessor=%d totalConstMem=%zu\n", p.regsPerBlock,
              p.regsPerMultiprocessor, p.totalConstMem);
  std::printf("maxThreadsPerMultiProcessor=%d maxBlocksPerMultiProcessor=%d\n", p.maxThreadsPerMultiProcessor,
              p.maxBlocksPerMultiProcessor);
  std::printf("l2CacheSize=%d memoryBusWidth=%d\n", p.l2CacheSize, p.memoryBusWidth);
  std::printf("unifiedAddressing=%d concurrentKernels=%d streamPrioritiesSupported=%d\n", p.unifiedAddressing,
              p.concurrentKernels, p.streamPrioritiesSupported);
  // Not compared with the native run: AgileOS's virtual device reports mapped and managed
  // memory only over the shared-memory transport (0 over gRPC), where they are host segments
  // shared with the worker; see docs/architecture.md.
  std::fprintf(stderr, "canMapHostMemory=%d managedMemory=%d\n", p.canMapHostMemory, p.managedMemory);

  const AttributeCheck checks[] = {
      {"MaxThreadsPerBlock", cudaDevAttrMaxThreadsPerBlock, p.maxThreadsPerBlock},
      {"MaxBlockDimX", cudaDevAttrMaxBlockDimX, p.maxThreadsDim[0]},
      {"MaxBlockDimZ", cudaDevAttrMaxBlockDimZ, p.maxThreadsDim[2]},
      {"MaxGridDimX", cudaDevAttrMaxGridDimX, p.maxGridSize[0]},
      {"MaxGridDimY", cudaDevAttrMaxGridDimY, p.maxGridSize[1]},
      {"MaxSharedMemoryPerBlock", cudaDevAttrMaxSharedMemoryPerBlock,
       static_cast<long long>(p.sharedMemPerBlock)},
      {"MaxSharedMemoryPerBlockOptin", cudaDevAttrMaxSharedMemoryPerBlockOptin,
       static_cast<long long>(p.sharedMemPerBlockOptin)},
      {"TotalConstantMemory", cudaDevAttrTotalConstantMemory, static_cast<long long>(p.totalConstMem)},
      {"WarpSize", cudaDevAttrWarpSize, p.warpSize},
      {"MaxRegistersPerBlock", cudaDevAttrMaxRegistersPerBlock, p.regsPerBlock},
      {"MultiProcessorCount", cudaDevAttrMultiProcessorCount, p.multiProcessorCount},
      {"ComputeCapabilityMajor", cudaDevAttrComputeCapabilityMajor, p.major},
      {"ComputeCapabilityMinor", cudaDevAttrComputeCapabilityMinor, p.minor},
      {"L2CacheSize", cudaDevAttrL2CacheSize, p.l2CacheSize},
      {"GlobalMemoryBusWidth", cudaDevAttrGlobalMemoryBusWidth, p.memoryBusWidth},
      {"MaxThreadsPerMultiProcessor", cudaDevAttrMaxThreadsPerMultiProcessor, p.maxThreadsPerMultiProcessor},
      {"UnifiedAddressing", cudaDevAttrUnifiedAddressing, p.unifiedAddressing},
      {"ConcurrentKernels", cudaDevAttrConcurrentKernels, p.concurrentKernels},
  };
  for (const AttributeCheck& check : checks) {
    int value = -1;
    CHECK_CUDA(cudaDeviceGetAttribute(&value, check.attribute, 0));
    EXPECT_TRUE(value == check.fromProperties, "attribute %s = %d but cudaDeviceProp says %lld", check.name,
                value, check.fromProperties);
    std::printf("attribute %s=%d\n", check.name, value);
  }

  int driverVersion = 0, runtimeVersion = 0;
  CHECK_CUDA(cudaDriverGetVersion(&driverVersion));
  CHECK_CUDA(cudaRuntimeGetVersion(&runtimeVersion));
  EXPECT_TRUE(driverVersion >= runtimeVersion, "driver %d older than runtime %d", driverVersion,
              runtimeVersion);
  std::printf("runtime version=%d driver version >= runtime: yes\n", runtimeVersion);

  int leastPriority = 0, greatestPriority = 0;
  CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&leastPriority, &greatestPriority));
  std::printf("stream priorities least=%d greatest=%d\n", leastPriority, greatestPriority);

  size_t stack = 0, fifo = 0, heap = 0;
  CHECK_CUDA(cudaDeviceGetLimit(&stack, cudaLimitStackSize));
  CHECK_CUDA(cudaDeviceGetLimit(&fifo, cudaLimitPrintfFifoSize));
  CHECK_CUDA(cudaDeviceGetLimit(&heap, cudaLimitMallocHeapSize));
  std::printf("limits stack=%zu printfFifo=%zu mallocHeap=%zu\n", stack, fifo, heap);
  CHECK_CUDA(cudaDeviceSetLimit(cudaLimitStackSize, 4096));
  CHECK_CUDA(cudaDeviceGetLimit(&stack, cudaLimitStackSize));
  std::printf("stack after set(4096)=%zu\n", stack);

  size_t freeBytes = 0, totalBytes = 0;
  CHECK_CUDA(cudaMemGetInfo(&freeBytes, &totalBytes));
  EXPECT_TRUE(totalBytes > 0 && freeBytes <= totalBytes, "memGetInfo free=%zu total=%zu", freeBytes,
              totalBytes);
  std::fprintf(stderr, "memGetInfo free=%zu total=%zu\n", freeBytes, totalBytes);

  cudaDeviceProp other;
  EXPECT_ERROR("properties of device `count`", cudaGetDeviceProperties(&other, count),
               cudaErrorInvalidDevice);
  int value = 0;
  EXPECT_ERROR("attribute of device `count`", cudaDeviceGetAttribute(&value, cudaDevAttrWarpSize, count),
               cudaErrorInvalidDevice);
  EXPECT_ERROR("attribute 100000", cudaDeviceGetAttribute(&value, static_cast<cudaDeviceAttr>(100000), 0),
               cudaErrorInvalidValue);
  cudaGetLastError();
  std::printf("device_props OK\n");
  return 0;
}
