// Module loading from real nvcc fatbins, parameter layouts, launches and module
// variables. The fake runs PTX only (it refuses SASS like a driver that has no
// matching architecture), so which entry the worker selects is observable.
#include <gtest/gtest.h>

#include <cstring>

#include "memmgr/address_layout.h"
#include "tests/cpu/worker/support/worker_harness.h"

namespace agileos::worker::testing {
namespace {

using memmgr::DevicePtr;

FakeGpuConfig device(int major, int minor) {
  FakeGpuConfig config;
  config.computeMajor = major;
  config.computeMinor = minor;
  return config;
}

void expectLayout(const v1::FunctionInfo& info, const std::vector<ExpectedParam>& expected,
                  std::uint32_t bufferSize) {
  ASSERT_EQ(info.params_size(), static_cast<int>(expected.size())) << info.name();
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(info.params(static_cast<int>(i)).offset(), expected[i].offset) << info.name() << " param " << i;
    EXPECT_EQ(info.params(static_cast<int>(i)).size(), expected[i].size) << info.name() << " param " << i;
  }
  EXPECT_EQ(info.param_buffer_size(), bufferSize) << info.name();
}

TEST(Modules, DefaultArchFatbinLoadsThroughItsPtxOnAnSm90Device) {
  // nvcc's default fatbin holds sm_75 SASS and compute_75 PTX: on sm_90 there is
  // no matching SASS, so the newest PTX at or below sm_90 is the one to JIT.
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  const auto module = client.loadModule(readTestFatbin(TestFatbin::kDefaultArch));
  EXPECT_NE(module.module, 0u);
  EXPECT_EQ(worker.gpu().liveModules(), 1u);
  ASSERT_EQ(module.functions.size(), 3u);
  expectLayout(module.functions.at(kAddKernel), kAddKernelParams, kAddKernelParamBytes);
  expectLayout(module.functions.at(kPairKernel), kPairKernelParams, kPairKernelParamBytes);
  expectLayout(module.functions.at(kEmptyKernel), {}, 0);
  EXPECT_EQ(module.variables.at(kCounterVariable).size(), 4u);
  EXPECT_EQ(module.variables.at(kTableVariable).size(), 64u);
  EXPECT_EQ(module.variables.at(kCoefficientsVariable).size(), 32u);
}

TEST(Modules, EntrySelectionFollowsTheDevice) {
  struct Case {
    const char* what;
    TestFatbin fatbin;
    FakeGpuConfig device;
    int error;  // 0: loads (PTX selected)
  };
  const Case cases[] = {
      // Exact SASS is preferred; the fake cannot run SASS and refuses it like an image it cannot load.
      {"sm_90 SASS on sm_90", TestFatbin::kSm90, device(9, 0), cudaErrorInvalidKernelImage},
      {"sm_75 SASS on sm_75", TestFatbin::kDefaultArch, device(7, 5), cudaErrorInvalidKernelImage},
      {"compute_75 PTX on sm_80", TestFatbin::kDefaultArch, device(8, 0), 0},
      {"compute_90 PTX is too new for sm_80", TestFatbin::kSm90, device(8, 0),
       cudaErrorNoKernelImageForDevice},
      {"compute_100 PTX is too new for sm_90", TestFatbin::kCompute100PtxOnly, device(9, 0),
       cudaErrorNoKernelImageForDevice},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    WorkerHarness worker(c.device);
    TestClient client = worker.attach(1);
    const v1::CallReply reply = client.call(requests::moduleLoad(readTestFatbin(c.fatbin), kAllKernels, {}));
    EXPECT_EQ(reply.error(), c.error) << describe(reply);
    EXPECT_EQ(worker.gpu().liveModules(), c.error == 0 ? 1u : 0u);
    EXPECT_EQ(worker.gpu().callCount(FakeGpuCall::kModuleLoad),
              c.error == cudaErrorNoKernelImageForDevice ? 0u : 1u)
        << "the driver is asked to load only an entry that fits the device";
    if (c.error != 0) {
      EXPECT_FALSE(reply.has_module_loaded());
    }
  }
}

TEST(Modules, MalformedFatbinsAndNamesAreRefusedBeforeTheDriver) {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  const std::string fatbin = readTestFatbin(TestFatbin::kDefaultArch);
  const std::vector<std::pair<v1::CallRequest, int>> cases = {
      {requests::moduleLoad("", kAllKernels, {}), cudaErrorInvalidKernelImage},
      {requests::moduleLoad("definitely not a fatbin", kAllKernels, {}), cudaErrorInvalidKernelImage},
      {requests::moduleLoad(fatbin.substr(0, fatbin.size() / 2), kAllKernels, {}),
       cudaErrorInvalidKernelImage},
      {requests::moduleLoad(fatbin, {""}, {}), cudaErrorInvalidValue},
      {requests::moduleLoad(fatbin, {std::string("agileos_worker_add\0x", 20)}, {}), cudaErrorInvalidValue},
      {requests::moduleLoad(fatbin, {std::string(4097, 'k')}, {}), cudaErrorInvalidValue},
      {requests::moduleLoad(fatbin, {}, {std::string(1, '\0')}), cudaErrorInvalidValue},
      {requests::moduleLoad(fatbin, std::vector<std::string>(65537, "k"), {}), cudaErrorInvalidValue},
  };
  for (const auto& [request, error] : cases) {
    const v1::CallReply reply = client.call(request);
    EXPECT_EQ(reply.error(), error) << describe(reply);
    EXPECT_FALSE(reply.error_detail().empty());
  }
  EXPECT_EQ(worker.gpu().callCount(FakeGpuCall::kModuleLoad), 0u);
}

TEST(Modules, UnknownSymbolsAreReportedPerNameWithoutFailingTheLoad) {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  const v1::CallReply reply = client.call(requests::moduleLoad(readTestFatbin(TestFatbin::kDefaultArch),
                                                               {kAddKernel, "no_such_kernel"},
                                                               {"no_such_variable", kCounterVariable}));
  ASSERT_EQ(reply.error(), 0) << describe(reply);
  const v1::ModuleLoaded& loaded = reply.module_loaded();
  ASSERT_EQ(loaded.functions_size(), 2);
  EXPECT_EQ(loaded.functions(0).error(), 0);
  EXPECT_NE(loaded.functions(0).token(), 0u);
  EXPECT_EQ(loaded.functions(1).error(), cudaErrorInvalidDeviceFunction);
  EXPECT_EQ(loaded.functions(1).token(), 0u);
  ASSERT_EQ(loaded.variables_size(), 2);
  EXPECT_EQ(loaded.variables(0).error(), cudaErrorInvalidSymbol);
  EXPECT_EQ(loaded.variables(0).dptr(), 0u);
  EXPECT_EQ(loaded.variables(1).error(), 0);
}

TEST(Modules, DriverFailureToLoadIsReportedWithItsLog) {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  worker.gpu().failNext(FakeGpuCall::kModuleLoad, CUDA_ERROR_INVALID_PTX);
  const v1::CallReply reply =
      client.call(requests::moduleLoad(readTestFatbin(TestFatbin::kDefaultArch), kAllKernels, {}));
  EXPECT_EQ(reply.error(), cudaErrorInvalidPtx);
  EXPECT_FALSE(reply.has_module_loaded());
  EXPECT_EQ(worker.gpu().liveModules(), 0u);
}

std::string addKernelParams(DevicePtr out, DevicePtr in, std::int32_t bias, std::uint32_t n) {
  std::string blob(kAddKernelParamBytes, '\0');
  std::memcpy(blob.data() + 0, &out, 8);
  std::memcpy(blob.data() + 8, &in, 8);
  std::memcpy(blob.data() + 16, &bias, 4);
  std::memcpy(blob.data() + 20, &n, 4);
  return blob;
}

TEST(Modules, LaunchWithACorrectlySizedBlobIsHandedToTheDriverAsIs) {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  const auto module = client.loadModule(readTestFatbin(TestFatbin::kDefaultArch));
  const DevicePtr out = client.malloc(1024), in = client.malloc(1024);
  const std::uint64_t stream = client.createStream();
  const std::string blob = addKernelParams(out, in, -7, 256);

  const v1::CallReply reply = client.call(
      requests::launchKernel(module.function(kAddKernel), blob, {2, 1, 1}, {128, 1, 1}, stream, 64));
  ASSERT_EQ(reply.error(), 0) << describe(reply);
  ASSERT_EQ(client.call(requests::launchKernel(module.function(kEmptyKernel), "")).error(), 0);

  const auto launches = worker.gpu().launches();
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_EQ(launches[0].kernel, kAddKernel);
  EXPECT_EQ(launches[0].params, blob);
  EXPECT_EQ(launches[0].config.gridX, 2u);
  EXPECT_EQ(launches[0].config.blockX, 128u);
  EXPECT_EQ(launches[0].config.sharedMemBytes, 64u);
  EXPECT_NE(launches[0].stream, nullptr);
  EXPECT_EQ(launches[1].kernel, kEmptyKernel);
  EXPECT_TRUE(launches[1].params.empty());
}

TEST(Modules, AggregateAndNarrowParametersArePassedAtTheDriversOffsets) {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  const auto module = client.loadModule(readTestFatbin(TestFatbin::kDefaultArch));
  std::string blob(kPairKernelParamBytes, '\0');
  for (const ExpectedParam& param : kPairKernelParams) {
    for (std::uint32_t i = 0; i < param.size; ++i)
      blob[param.offset + i] = static_cast<char>(0x40 + param.offset + i);
  }
  ASSERT_EQ(client.call(requests::launchKernel(module.function(kPairKernel), blob)).error(), 0);
  ASSERT_EQ(worker.gpu().launches().size(), 1u);
  EXPECT_EQ(worker.gpu().launches()[0].params, blob);
}

TEST(Modules, LaunchWithAWronglySizedBlobIsRefused) {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  const auto module = client.loadModule(readTestFatbin(TestFatbin::kDefaultArch));
  const std::string blob = addKernelParams(0, 0, 0, 0);
  for (const std::string& wrong : {blob.substr(0, 23), blob + "x", std::string(), std::string(4096, 'p')}) {
    const v1::CallReply reply = client.call(requests::launchKernel(module.function(kAddKernel), wrong));
    EXPECT_EQ(reply.error(), cudaErrorInvalidValue) << wrong.size() << " bytes";
  }
  EXPECT_EQ(client.call(requests::launchKernel(module.function(kEmptyKernel), "x")).error(),
            cudaErrorInvalidValue);
  EXPECT_EQ(worker.gpu().callCount(FakeGpuCall::kLaunchKernel), 0u);
}

TEST(Modules, LaunchConfigurationErrorsComeFromTheDriver) {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  const auto module = client.loadModule(readTestFatbin(TestFatbin::kDefaultArch));
  const std::uint64_t empty = module.function(kEmptyKernel);
  EXPECT_EQ(client.call(requests::launchKernel(empty, "", {0, 1, 1})).error(), cudaErrorInvalidValue);
  EXPECT_EQ(client.call(requests::launchKernel(empty, "", {1, 1, 1}, {2048, 1, 1})).error(),
            cudaErrorInvalidValue);
  EXPECT_EQ(client.call(requests::launchKernel(empty, "", {}, {}, 0, 200000)).error(), cudaErrorInvalidValue);
  v1::CallRequest noDimensions = requests::launchKernel(empty, "");
  noDimensions.mutable_launch_kernel()->clear_grid();
  noDimensions.mutable_launch_kernel()->clear_block();
  EXPECT_EQ(client.call(noDimensions).error(), cudaErrorInvalidValue);
  EXPECT_TRUE(worker.gpu().launches().empty());
}

TEST(Modules, VariablesAreRegisteredAndUsableAsCopyTargets) {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  const auto module = client.loadModule(readTestFatbin(TestFatbin::kDefaultArch));
  const DevicePtr counter = module.variable(kCounterVariable);
  const DevicePtr coefficients = module.variable(kCoefficientsVariable);
  EXPECT_EQ(memmgr::classify(counter), memmgr::RegionKind::kOutside);

  client.write(counter, std::string("\x2a\0\0\0", 4));
  std::int32_t onDevice = 0;
  ASSERT_TRUE(worker.gpu().readDevice(counter, &onDevice, 4));
  EXPECT_EQ(onDevice, 42);
  EXPECT_EQ(client.read(counter, 4), std::string("\x2a\0\0\0", 4));
  client.write(coefficients, std::string(32, 'c'));  // cudaMemcpyToSymbol on a __constant__
  EXPECT_EQ(client.read(coefficients + 16, 16), std::string(16, 'c'));
  const DevicePtr scratch = client.malloc(64);
  EXPECT_EQ(client.call(requests::memcpyDtoD(scratch, coefficients, 32)).error(), 0);

  const std::size_t transfersBefore = worker.gpu().transfers().size();
  EXPECT_EQ(client.call(requests::memcpyHtoD(counter, "12345")).error(), cudaErrorInvalidValue)
      << "past its end";
  EXPECT_EQ(client.call(requests::memset(counter - 4, 0, 8)).error(), cudaErrorInvalidValue)
      << "before its start";
  EXPECT_EQ(worker.gpu().transfers().size(), transfersBefore);
  EXPECT_EQ(client.call(requests::memFree(counter)).error(), cudaErrorInvalidValue)
      << "variables are not freeable";
  EXPECT_EQ(client.read(counter, 4), std::string("\x2a\0\0\0", 4));
}

TEST(Modules, AnotherClientCannotTouchAClientsVariables) {
  WorkerHarness worker;
  TestClient owner = worker.attach(1);
  TestClient other = worker.attach(2);
  const auto module = owner.loadModule(readTestFatbin(TestFatbin::kDefaultArch));
  const DevicePtr counter = module.variable(kCounterVariable);
  const std::size_t transfersBefore = worker.gpu().transfers().size();
  EXPECT_EQ(other.call(requests::memcpyHtoD(counter, "evil")).error(), cudaErrorInvalidValue);
  EXPECT_EQ(other.call(requests::memcpyDtoH(counter, 4)).error(), cudaErrorInvalidValue);
  EXPECT_EQ(worker.gpu().transfers().size(), transfersBefore);
}

TEST(Modules, EachLoadHasItsOwnVariables) {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  const auto first = client.loadModule(readTestFatbin(TestFatbin::kDefaultArch));
  const auto second = client.loadModule(readTestFatbin(TestFatbin::kDefaultArch));
  ASSERT_NE(first.variable(kCounterVariable), second.variable(kCounterVariable));
  client.write(first.variable(kCounterVariable), "1111");
  client.write(second.variable(kCounterVariable), "2222");
  EXPECT_EQ(client.read(first.variable(kCounterVariable), 4), "1111");
}

TEST(Modules, UnloadMakesFunctionsStaleAndVariablesUnaddressable) {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  const auto module = client.loadModule(readTestFatbin(TestFatbin::kDefaultArch));
  const DevicePtr counter = module.variable(kCounterVariable);
  ASSERT_EQ(client.call(requests::moduleUnload(module.module)).error(), 0);
  EXPECT_EQ(worker.gpu().liveModules(), 0u);
  const std::size_t transfersBefore = worker.gpu().transfers().size();
  EXPECT_EQ(client.call(requests::memcpyHtoD(counter, "1234")).error(), cudaErrorInvalidValue);
  EXPECT_EQ(worker.gpu().transfers().size(), transfersBefore)
      << "a copy to an unloaded variable reached the driver";
  EXPECT_EQ(client.call(requests::launchKernel(module.function(kEmptyKernel), "")).error(),
            cudaErrorInvalidDeviceFunction);
  EXPECT_EQ(client.call(requests::moduleUnload(module.module)).error(), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(worker.memory().table().bytesOwnedBy(1), 0u);
  EXPECT_TRUE(worker.gpu().misuse().empty());
}

TEST(Modules, FunctionAttributesOccupancyAndCacheConfig) {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  const auto module = client.loadModule(readTestFatbin(TestFatbin::kDefaultArch));
  const std::uint64_t add = module.function(kAddKernel);

  v1::CallReply reply = client.call(requests::funcGetAttributes(add));
  ASSERT_EQ(reply.error(), 0) << describe(reply);
  EXPECT_EQ(reply.func_attributes().max_threads_per_block(), 1024);
  EXPECT_EQ(reply.func_attributes().ptx_version(), 90);  // .version 9.0 of nvcc 13's PTX
  EXPECT_EQ(reply.func_attributes().binary_version(), 90);
  EXPECT_EQ(reply.func_attributes().max_dynamic_shared_size_bytes(), 48 << 10);

  EXPECT_EQ(
      client.call(requests::funcSetAttribute(add, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 100000))
          .error(),
      0);
  EXPECT_EQ(client.call(requests::funcGetAttributes(add)).func_attributes().max_dynamic_shared_size_bytes(),
            100000);
  EXPECT_EQ(
      client.call(requests::funcSetAttribute(add, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 300000))
          .error(),
      cudaErrorInvalidValue);
  EXPECT_EQ(client.call(requests::funcSetCacheConfig(add, CU_FUNC_CACHE_PREFER_SHARED)).error(), 0);

  reply = client.call(requests::occupancyMaxActiveBlocks(add, 256));
  ASSERT_EQ(reply.error(), 0);
  EXPECT_EQ(reply.block_count().num_blocks(), 8);

  const std::uint64_t callsBefore = worker.gpu().callCount();
  EXPECT_EQ(client.call(requests::funcSetAttribute(add, CU_FUNC_ATTRIBUTE_NUM_REGS, 1)).error(),
            cudaErrorInvalidValue);
  EXPECT_EQ(client.call(requests::funcSetCacheConfig(add, 7)).error(), cudaErrorInvalidValue);
  EXPECT_EQ(client.call(requests::occupancyMaxActiveBlocks(add, 0)).error(), cudaErrorInvalidValue);
  EXPECT_EQ(worker.gpu().callCount(), callsBefore) << "refused attribute calls reached the driver";
}

// cudaLaunchCooperativeKernel: the flag selects cuLaunchCooperativeKernel; the
// same validation as an ordinary launch comes first.
TEST(Modules, CooperativeLaunchesReachTheDriverAsCooperative) {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  const auto module = client.loadModule(readTestFatbin(TestFatbin::kDefaultArch));
  const DevicePtr out = client.malloc(1024), in = client.malloc(1024);
  const std::uint64_t stream = client.createStream();
  const std::string blob = addKernelParams(out, in, 3, 256);

  v1::CallReply reply = client.call(
      requests::cooperativeLaunch(module.function(kAddKernel), blob, {4, 1, 1}, {64, 1, 1}, stream));
  ASSERT_EQ(reply.error(), 0) << describe(reply);
  ASSERT_EQ(client.call(requests::launchKernel(module.function(kAddKernel), blob)).error(), 0);
  EXPECT_EQ(worker.gpu().callCount(FakeGpuCall::kLaunchCooperativeKernel), 1u);
  EXPECT_EQ(worker.gpu().callCount(FakeGpuCall::kLaunchKernel), 1u);
  const auto launches = worker.gpu().launches();
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_TRUE(launches[0].cooperative);
  EXPECT_EQ(launches[0].params, blob);
  EXPECT_EQ(launches[0].config.gridX, 4u);
  EXPECT_NE(launches[0].stream, nullptr);
  EXPECT_FALSE(launches[1].cooperative);

  // A grid that cannot be resident at once is the driver's refusal.
  const unsigned tooMany = FakeGpuBackend::kMultiprocessors * 32 + 1;
  EXPECT_EQ(
      client.call(requests::cooperativeLaunch(module.function(kEmptyKernel), "", {tooMany, 1, 1}, {32, 1, 1}))
          .error(),
      cudaErrorCooperativeLaunchTooLarge);
  // Refused before the driver: a forged stream, a forged function, a wrong parameter block.
  const std::uint64_t callsBefore = worker.gpu().callCount(FakeGpuCall::kLaunchCooperativeKernel);
  EXPECT_EQ(
      client.call(requests::cooperativeLaunch(module.function(kAddKernel), blob, {}, {}, 0x1234567)).error(),
      cudaErrorInvalidResourceHandle);
  EXPECT_EQ(client.call(requests::cooperativeLaunch(0xfeedface, blob)).error(),
            cudaErrorInvalidDeviceFunction);
  EXPECT_EQ(client.call(requests::cooperativeLaunch(module.function(kAddKernel), blob + "x")).error(),
            cudaErrorInvalidValue);
  EXPECT_EQ(worker.gpu().callCount(FakeGpuCall::kLaunchCooperativeKernel), callsBefore);
  EXPECT_TRUE(worker.gpu().misuse().empty());
}

}  // namespace
}  // namespace agileos::worker::testing
