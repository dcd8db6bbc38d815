// Tests of the test double itself: the worker's tests are only as good as the
// fake's fidelity to the driver (misuse answers measured on an H200, see
// fake_gpu_backend.h) and its bookkeeping.
#include "worker/testing/fake_gpu/fake_gpu_backend.h"

#include <gtest/gtest.h>

#include <cstring>

namespace agileos::worker {
namespace {

constexpr std::size_t kGranule = 2u << 20;
constexpr memmgr::DevicePtr kBase = 0xF8000000000ull;

class FakeGpuBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_EQ(gpu.init(0, &error), CUDA_SUCCESS) << error;
  }

  // Reserves 8 granules at kBase and maps one physical granule, accessible, at `va`.
  void mapAccessible(memmgr::DevicePtr va, memmgr::PhysicalHandle* handle = nullptr) {
    if (gpu.liveReservations() == 0) {
      memmgr::DevicePtr got = 0;
      ASSERT_EQ(gpu.reserve(kBase, 8 * kGranule, &got), CUDA_SUCCESS);
      ASSERT_EQ(got, kBase);
    }
    memmgr::PhysicalHandle physical = 0;
    ASSERT_EQ(gpu.createPhysical(kGranule, &physical), CUDA_SUCCESS);
    ASSERT_EQ(gpu.map(va, kGranule, physical), CUDA_SUCCESS);
    ASSERT_EQ(gpu.setAccess(va, kGranule), CUDA_SUCCESS);
    if (handle != nullptr) *handle = physical;
  }

  FakeGpuBackend gpu;
};

TEST(FakeGpuBackendInit, CallsBeforeInitAreNotInitialized) {
  FakeGpuBackend gpu;
  std::size_t granularity = 0;
  EXPECT_EQ(gpu.allocationGranularity(&granularity), CUDA_ERROR_NOT_INITIALIZED);
  std::string error;
  EXPECT_EQ(gpu.init(1, &error), CUDA_ERROR_INVALID_DEVICE);
  EXPECT_FALSE(error.empty());
  EXPECT_EQ(gpu.init(0, &error), CUDA_SUCCESS);
  EXPECT_EQ(gpu.allocationGranularity(&granularity), CUDA_SUCCESS);
  EXPECT_EQ(granularity, kGranule);
}

TEST(FakeGpuBackendInit, DescribesTheConfiguredDevice) {
  FakeGpuBackend gpu;
  EXPECT_EQ(gpu.device().name, "AgileOS Fake GPU");
  EXPECT_EQ(gpu.device().computeMajor, 9);
  EXPECT_EQ(gpu.device().computeMinor, 0);
  EXPECT_EQ(gpu.device().uuid.size(), 16u);
  FakeGpuBackend older(FakeGpuConfig{.name = "old", .computeMajor = 7, .computeMinor = 5});
  EXPECT_EQ(older.device().name, "old");
  EXPECT_EQ(older.device().computeMajor, 7);
}

TEST_F(FakeGpuBackendTest, ReserveGrantsTheRequestedAddressUnlessTakenOrConfigured) {
  memmgr::DevicePtr got = 0;
  ASSERT_EQ(gpu.reserve(kBase, 4 * kGranule, &got), CUDA_SUCCESS);
  EXPECT_EQ(got, kBase);
  ASSERT_EQ(gpu.reserve(kBase, kGranule, &got), CUDA_SUCCESS);
  EXPECT_NE(got, kBase) << "an overlapping request is placed elsewhere, as by the driver";
  gpu.grantElsewhere(kBase + 64 * kGranule);
  ASSERT_EQ(gpu.reserve(kBase + 64 * kGranule, kGranule, &got), CUDA_SUCCESS);
  EXPECT_NE(got, kBase + 64 * kGranule);
  EXPECT_EQ(gpu.reserve(kBase, kGranule + 1, &got), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(FakeGpuBackendTest, MapMisuseIsRefusedLikeTheDriver) {
  memmgr::PhysicalHandle first = 0;
  mapAccessible(kBase, &first);
  memmgr::PhysicalHandle second = 0;
  ASSERT_EQ(gpu.createPhysical(kGranule, &second), CUDA_SUCCESS);
  EXPECT_EQ(gpu.map(kBase, kGranule, second), CUDA_ERROR_INVALID_VALUE) << "over a mapped range";
  EXPECT_EQ(gpu.map(kBase + kGranule + 4096, kGranule, second), CUDA_ERROR_INVALID_VALUE) << "unaligned";
  EXPECT_EQ(gpu.map(0x10000000000ull, kGranule, second), CUDA_ERROR_INVALID_VALUE) << "outside a reservation";
  EXPECT_EQ(gpu.map(kBase + kGranule, kGranule, 999), CUDA_ERROR_INVALID_VALUE) << "unknown handle";
  EXPECT_EQ(gpu.setAccess(kBase + 2 * kGranule, kGranule), CUDA_ERROR_INVALID_VALUE) << "unmapped range";
  EXPECT_EQ(gpu.unmap(kBase, kGranule / 2), CUDA_ERROR_INVALID_VALUE) << "part of a mapping";
  EXPECT_EQ(gpu.freeReservation(kBase, 8 * kGranule), CUDA_ERROR_INVALID_VALUE) << "memory still mapped";
  EXPECT_EQ(gpu.freeReservation(kBase, kGranule), CUDA_ERROR_INVALID_VALUE) << "wrong size";
  EXPECT_EQ(gpu.misuse().size(), 8u);
  // The driver maps one handle more than once and releases handles that are mapped.
  EXPECT_EQ(gpu.map(kBase + 2 * kGranule, kGranule, first), CUDA_SUCCESS);
  EXPECT_EQ(gpu.releasePhysical(first), CUDA_SUCCESS);
  EXPECT_EQ(gpu.releasePhysical(first), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(FakeGpuBackendTest, UnmappingAnUnmappedRangeSucceedsButIsRecordedAsMisuse) {
  mapAccessible(kBase);
  EXPECT_EQ(gpu.unmap(kBase, kGranule), CUDA_SUCCESS);
  EXPECT_TRUE(gpu.misuse().empty());
  EXPECT_EQ(gpu.unmap(kBase, kGranule), CUDA_SUCCESS);  // measured: the driver says nothing
  EXPECT_EQ(gpu.misuse().size(), 1u);
}

TEST_F(FakeGpuBackendTest, ReleasedHandleKeepsItsMemoryUntilUnmapped) {
  memmgr::PhysicalHandle handle = 0;
  mapAccessible(kBase, &handle);
  ASSERT_EQ(gpu.copyHostToDevice(kBase, "kept", 4, nullptr, false), CUDA_SUCCESS);
  ASSERT_EQ(gpu.releasePhysical(handle), CUDA_SUCCESS);
  EXPECT_EQ(gpu.livePhysicalHandles(), 0u);
  char out[4] = {};
  ASSERT_EQ(gpu.copyDeviceToHost(out, kBase, 4, nullptr, false), CUDA_SUCCESS);
  EXPECT_EQ(std::string(out, 4), "kept");
  ASSERT_EQ(gpu.unmap(kBase, kGranule), CUDA_SUCCESS);
  EXPECT_EQ(gpu.liveMappings(), 0u);
  EXPECT_EQ(gpu.copyDeviceToHost(out, kBase, 4, nullptr, false), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(FakeGpuBackendTest, TransfersMoveBytesThroughEmulatedMemory) {
  mapAccessible(kBase);
  const std::string data = "0123456789abcdef";
  ASSERT_EQ(gpu.copyHostToDevice(kBase + 100, data.data(), data.size(), nullptr, false), CUDA_SUCCESS);
  ASSERT_EQ(gpu.copyDeviceToDevice(kBase + 4000, kBase + 100, data.size(), nullptr, true), CUDA_SUCCESS);
  ASSERT_EQ(gpu.memsetBytes(kBase + 4004, 'x', 4, nullptr, false), CUDA_SUCCESS);
  std::string out(data.size(), '\0');
  ASSERT_EQ(gpu.copyDeviceToHost(out.data(), kBase + 4000, out.size(), nullptr, false), CUDA_SUCCESS);
  EXPECT_EQ(out, "0123xxxx89abcdef");
  // Overlapping device-to-device copies behave like memmove.
  ASSERT_EQ(gpu.copyDeviceToDevice(kBase + 4002, kBase + 4000, 8, nullptr, false), CUDA_SUCCESS);
  ASSERT_EQ(gpu.copyDeviceToHost(out.data(), kBase + 4000, out.size(), nullptr, false), CUDA_SUCCESS);
  EXPECT_EQ(out,
            "01"
            "0123xxxx"
            "abcdef");
  EXPECT_EQ(gpu.transfers().size(), 6u);
}

TEST_F(FakeGpuBackendTest, TransferTouchingAnInaccessibleByteIsRefusedAndChangesNothing) {
  mapAccessible(kBase);
  const std::string data(64, 'A');
  // Straddles the end of the mapping: the last 32 bytes are reserved but unmapped.
  EXPECT_EQ(gpu.copyHostToDevice(kBase + kGranule - 32, data.data(), 64, nullptr, false),
            CUDA_ERROR_INVALID_VALUE);
  char byte = 1;
  ASSERT_TRUE(gpu.readDevice(kBase + kGranule - 32, &byte, 1));
  EXPECT_EQ(byte, 0) << "a refused copy wrote part of its range";
  EXPECT_EQ(gpu.memsetBytes(kBase + kGranule, 0, 1, nullptr, false), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(gpu.copyDeviceToDevice(kBase, kBase + 3 * kGranule, 8, nullptr, false), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(gpu.copyHostToDevice(0x123450000ull, data.data(), 1, nullptr, false), CUDA_ERROR_INVALID_VALUE);
  // Mapped but without access.
  memmgr::PhysicalHandle handle = 0;
  ASSERT_EQ(gpu.createPhysical(kGranule, &handle), CUDA_SUCCESS);
  ASSERT_EQ(gpu.map(kBase + 4 * kGranule, kGranule, handle), CUDA_SUCCESS);
  EXPECT_EQ(gpu.copyHostToDevice(kBase + 4 * kGranule, data.data(), 1, nullptr, false),
            CUDA_ERROR_INVALID_VALUE);

  const auto transfers = gpu.transfers();
  ASSERT_EQ(transfers.size(), 5u);
  for (const FakeTransfer& transfer : transfers) EXPECT_EQ(transfer.result, CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(transfers[0].dst, kBase + kGranule - 32);
  EXPECT_EQ(transfers[0].bytes, 64u);
}

TEST_F(FakeGpuBackendTest, ZeroFillScrubsWholePagesOfALargeMapping) {
  mapAccessible(kBase);
  const std::string data(kGranule, '\x5a');
  ASSERT_EQ(gpu.copyHostToDevice(kBase, data.data(), data.size(), nullptr, false), CUDA_SUCCESS);
  ASSERT_EQ(gpu.fill(kBase + 1, 0, kGranule - 2), CUDA_SUCCESS);
  std::string out(kGranule, '\0');
  ASSERT_TRUE(gpu.readDevice(kBase, out.data(), out.size()));
  EXPECT_EQ(out.front(), '\x5a');
  EXPECT_EQ(out.back(), '\x5a');
  EXPECT_EQ(out.find_first_not_of('\0', 1), kGranule - 1);
}

TEST_F(FakeGpuBackendTest, StreamsAndEventsAreCountedAndDeadHandlesRefused) {
  CUstream stream = nullptr;
  ASSERT_EQ(gpu.streamCreate(0, 0, &stream), CUDA_SUCCESS);
  CUevent start = nullptr, end = nullptr, untimed = nullptr;
  ASSERT_EQ(gpu.eventCreate(0, &start), CUDA_SUCCESS);
  ASSERT_EQ(gpu.eventCreate(0, &end), CUDA_SUCCESS);
  ASSERT_EQ(gpu.eventCreate(CU_EVENT_DISABLE_TIMING, &untimed), CUDA_SUCCESS);
  EXPECT_EQ(gpu.liveStreams(), 1u);
  EXPECT_EQ(gpu.liveEvents(), 3u);

  float ms = 0;
  EXPECT_EQ(gpu.eventElapsedTime(&ms, start, end), CUDA_ERROR_INVALID_HANDLE) << "unrecorded, as measured";
  ASSERT_EQ(gpu.eventRecord(start, stream, 0), CUDA_SUCCESS);
  ASSERT_EQ(gpu.eventRecord(end, nullptr, 0), CUDA_SUCCESS);
  ASSERT_EQ(gpu.eventRecord(untimed, nullptr, 0), CUDA_SUCCESS);
  ASSERT_EQ(gpu.eventElapsedTime(&ms, start, end), CUDA_SUCCESS);
  EXPECT_FLOAT_EQ(ms, FakeGpuBackend::kEventTickMs);
  EXPECT_EQ(gpu.eventElapsedTime(&ms, start, untimed), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(gpu.eventRecord(start, nullptr, CU_EVENT_RECORD_EXTERNAL), CUDA_ERROR_ILLEGAL_STATE);
  EXPECT_EQ(gpu.streamWaitEvent(stream, end, 0), CUDA_SUCCESS);
  EXPECT_TRUE(gpu.misuse().empty());

  EXPECT_EQ(gpu.streamDestroy(stream), CUDA_SUCCESS);
  EXPECT_EQ(gpu.streamDestroy(stream), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(gpu.streamSynchronize(stream), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(gpu.memsetBytes(kBase, 0, 1, stream, true), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(gpu.eventDestroy(start), CUDA_SUCCESS);
  EXPECT_EQ(gpu.eventDestroy(start), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(gpu.eventQuery(start), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(gpu.misuse().size(), 5u);
  EXPECT_EQ(gpu.liveStreams(), 0u);
  EXPECT_EQ(gpu.liveEvents(), 2u);
  // The driver's special stream handles are always usable.
  EXPECT_EQ(gpu.streamSynchronize(CU_STREAM_LEGACY), CUDA_SUCCESS);
  EXPECT_EQ(gpu.streamSynchronize(CU_STREAM_PER_THREAD), CUDA_SUCCESS);
}

TEST_F(FakeGpuBackendTest, FailNextInjectsOneFailureWithoutEffect) {
  gpu.failNext(FakeGpuCall::kStreamCreate, CUDA_ERROR_OUT_OF_MEMORY);
  CUstream stream = nullptr;
  EXPECT_EQ(gpu.streamCreate(0, 0, &stream), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(gpu.liveStreams(), 0u);
  EXPECT_EQ(gpu.streamCreate(0, 0, &stream), CUDA_SUCCESS);
  EXPECT_EQ(gpu.callCount(FakeGpuCall::kStreamCreate), 2u);
  EXPECT_STREQ(toString(FakeGpuCall::kStreamCreate), "streamCreate");
}

TEST_F(FakeGpuBackendTest, BeforeTransferHookSeesTheRequestOutsideTheLock) {
  mapAccessible(kBase);
  int seen = 0;
  gpu.setBeforeTransferHook([&](const FakeTransfer& transfer) {
    ++seen;
    EXPECT_EQ(transfer.dst, kBase);
    EXPECT_EQ(gpu.liveStreams(), 0u);  // would deadlock if the hook ran under the fake's lock
  });
  EXPECT_EQ(gpu.memsetBytes(kBase, 1, 8, nullptr, false), CUDA_SUCCESS);
  EXPECT_EQ(seen, 1);
}

// PTX with the shapes nvcc 13 emits (see inputs/worker_kernels.cu) plus pointer
// annotations, multi-dimensional arrays and initializers.
constexpr char kPtx[] = R"(
//
// Generated by NVIDIA NVVM Compiler
.version 9.0
.target sm_75
.address_size 64

.global .align 4 .u32 agileos_counter;
.global .align 4 .b8 agileos_table[64];
.const .align 8 .b8 agileos_coefficients[32];
.visible .global .align 8 .u64 initialized[2] = {1, 2};
.global .align 2 .b16 grid[2][3];
.extern .global .align 4 .u32 declared_elsewhere;

.func (.param .b32 func_retval0) helper(.param .b64 helper_param_0)
{
  ret;
}
.visible .entry agileos_worker_pair(
	.param .align 8 .b8 agileos_worker_pair_param_0[16],
	.param .u8 agileos_worker_pair_param_1,
	.param .u16 agileos_worker_pair_param_2,
	.param .f64 agileos_worker_pair_param_3,
	.param .u64 .ptr .global .align 16 agileos_worker_pair_param_4
)
.maxntid 256, 1, 1
{
	.reg .b64 	%rd<3>;
	{ // nested scope
	ld.global.u32 %r1, [agileos_counter];
	}
	ret;
}
/* a comment with .entry fake( */
.visible .entry agileos_worker_empty()
{
	ret;
}
)";

TEST(FakePtxSymbols, FindsEntriesWithDriverLayoutsAndVariablesWithSizes) {
  const fake::PtxSymbols symbols = fake::scanPtxSymbols(kPtx);
  ASSERT_TRUE(symbols.ok) << symbols.error;
  EXPECT_EQ(symbols.versionMajor, 9);
  EXPECT_EQ(symbols.versionMinor, 0);
  EXPECT_EQ(symbols.targetSm, 75);
  ASSERT_EQ(symbols.entries.size(), 2u);
  EXPECT_EQ(symbols.entries[0].name, "agileos_worker_pair");
  const std::vector<std::pair<std::uint32_t, std::uint32_t>> expected = {
      {0, 16}, {16, 1}, {18, 2}, {24, 8}, {32, 8}};
  ASSERT_EQ(symbols.entries[0].params.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(symbols.entries[0].params[i].offset, expected[i].first) << "param " << i;
    EXPECT_EQ(symbols.entries[0].params[i].size, expected[i].second) << "param " << i;
  }
  EXPECT_EQ(symbols.entries[1].name, "agileos_worker_empty");
  EXPECT_TRUE(symbols.entries[1].params.empty());

  const std::vector<std::pair<std::string, std::uint64_t>> variables = {{"agileos_counter", 4},
                                                                        {"agileos_table", 64},
                                                                        {"agileos_coefficients", 32},
                                                                        {"initialized", 16},
                                                                        {"grid", 12}};
  ASSERT_EQ(symbols.variables.size(), variables.size());
  for (std::size_t i = 0; i < variables.size(); ++i) {
    EXPECT_EQ(symbols.variables[i].name, variables[i].first);
    EXPECT_EQ(symbols.variables[i].size, variables[i].second) << variables[i].first;
  }
  EXPECT_TRUE(symbols.variables[2].constant);
}

TEST(FakePtxSymbols, RefusesWhatItCannotLayOut) {
  EXPECT_FALSE(fake::scanPtxSymbols("hello world").ok);
  EXPECT_FALSE(fake::scanPtxSymbols(".version 9.0\n.visible .entry k(.param .v2.u32 p) { ret; }").ok);
  EXPECT_FALSE(fake::scanPtxSymbols(".version 9.0\n.global .align 4 .b8 sized_by_init[] = {1};").ok);
  EXPECT_FALSE(fake::scanPtxSymbols(".version 9.0\n.visible .entry k(.param .u32 a").ok);
  EXPECT_FALSE(fake::scanPtxSymbols(".version 9.0\n.global .texref tex;").ok);
}

TEST_F(FakeGpuBackendTest, ModulesExposeSymbolsAndLaunchesAreRecorded) {
  CUmodule module = nullptr;
  std::string log;
  ASSERT_EQ(gpu.moduleLoad(kPtx, &module, &log), CUDA_SUCCESS) << log;
  CUfunction pair = nullptr, empty = nullptr;
  ASSERT_EQ(gpu.moduleGetFunction(module, "agileos_worker_pair", &pair), CUDA_SUCCESS);
  ASSERT_EQ(gpu.moduleGetFunction(module, "agileos_worker_empty", &empty), CUDA_SUCCESS);
  EXPECT_EQ(gpu.moduleGetFunction(module, "helper", &empty), CUDA_ERROR_NOT_FOUND) << ".func is not an entry";
  std::size_t offset = 0, size = 0;
  EXPECT_EQ(gpu.functionParamInfo(pair, 4, &offset, &size), CUDA_SUCCESS);
  EXPECT_EQ(offset, 32u);
  EXPECT_EQ(gpu.functionParamInfo(pair, 5, &offset, &size), CUDA_ERROR_INVALID_VALUE) << "past the last";

  CUdeviceptr counter = 0;
  std::size_t bytes = 0;
  ASSERT_EQ(gpu.moduleGetGlobal(module, "agileos_counter", &counter, &bytes), CUDA_SUCCESS);
  EXPECT_EQ(bytes, 4u);
  EXPECT_GE(counter, FakeGpuBackend::kModuleDataBase);
  const std::uint32_t value = 42;
  EXPECT_EQ(gpu.copyHostToDevice(counter, &value, 4, nullptr, false), CUDA_SUCCESS);
  EXPECT_EQ(gpu.copyHostToDevice(counter, &value, 5, nullptr, false), CUDA_ERROR_INVALID_VALUE);

  std::uint8_t blob[40];
  for (std::size_t i = 0; i < sizeof blob; ++i) blob[i] = static_cast<std::uint8_t>(i);
  void* params[] = {blob, blob + 16, blob + 18, blob + 24, blob + 32};
  LaunchConfig config;
  config.gridX = 3;
  config.blockX = 128;
  ASSERT_EQ(gpu.launchKernel(pair, config, nullptr, params), CUDA_SUCCESS);
  config.blockX = 2048;
  EXPECT_EQ(gpu.launchKernel(pair, config, nullptr, params), CUDA_ERROR_INVALID_VALUE);
  config.blockX = 1;
  config.gridY = 0;
  EXPECT_EQ(gpu.launchKernel(empty, config, nullptr, nullptr), CUDA_ERROR_INVALID_VALUE);
  const auto launches = gpu.launches();
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0].kernel, "agileos_worker_pair");
  EXPECT_EQ(launches[0].config.gridX, 3u);
  ASSERT_EQ(launches[0].params.size(), 40u);
  // Padding bytes (17, 20-23) are not parameters and are not copied.
  EXPECT_EQ(launches[0].params[16], 16);
  EXPECT_EQ(launches[0].params[17], 0);
  EXPECT_EQ(launches[0].params[33], 33);

  ASSERT_EQ(gpu.moduleUnload(module), CUDA_SUCCESS);
  EXPECT_EQ(gpu.liveModules(), 0u);
  EXPECT_EQ(gpu.copyHostToDevice(counter, &value, 4, nullptr, false), CUDA_ERROR_INVALID_VALUE);
  EXPECT_TRUE(gpu.misuse().empty());
  EXPECT_EQ(gpu.launchKernel(pair, config, nullptr, params), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(gpu.moduleUnload(module), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(gpu.misuse().size(), 2u);
}

TEST_F(FakeGpuBackendTest, ModuleLoadRefusesSassGarbageAndNewerTargets) {
  CUmodule module = nullptr;
  std::string log;
  const char elf[] =
      "\x7f"
      "ELF\x02\x01\x01";
  EXPECT_EQ(gpu.moduleLoad(elf, &module, &log), CUDA_ERROR_INVALID_IMAGE);
  EXPECT_NE(log.find("ELF"), std::string::npos);
  EXPECT_EQ(gpu.moduleLoad("", &module, &log), CUDA_ERROR_INVALID_IMAGE);
  EXPECT_EQ(gpu.moduleLoad("hello world", &module, &log), CUDA_ERROR_INVALID_IMAGE);
  EXPECT_EQ(gpu.moduleLoad(".version 9.0\n.target sm_100\n", &module, &log), CUDA_ERROR_INVALID_PTX);
  EXPECT_EQ(gpu.moduleLoad(".version 9.0\n.entry a()\n{ret;}\n.entry a()\n{ret;}", &module, &log),
            CUDA_ERROR_INVALID_PTX);
  EXPECT_EQ(gpu.liveModules(), 0u);
}

}  // namespace
}  // namespace agileos::worker
