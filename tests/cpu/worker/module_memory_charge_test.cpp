// A module's code, constants and global variables are device memory the driver allocates when it
// loads the module; the worker charges them to the client's quota before it does (issue 14,
// worker/fatbin/elf_device_footprint.h). The fake charges a PTX module the sum of its variables,
// as it allocates them, and a cubin its ELF footprint.
#include <gtest/gtest.h>

#include "tests/cpu/worker/support/worker_harness.h"

namespace agileos::worker::testing {
namespace {

using memmgr::DriverShare;

constexpr std::uint64_t kGlobalBytes = 256ull << 20;

// PTX with a 256 MiB global variable and one kernel, as cudaLibraryLoadData would send it.
std::string bigGlobalPtx() {
  return ".version 8.0\n.target sm_90\n.address_size 64\n"
         ".visible .global .align 1 .b8 agileos_big[" +
         std::to_string(kGlobalBytes) + "];\n.visible .entry agileos_touch()\n{\n\tret;\n}\n";
}

v1::CallRequest loadImage(const std::string& image) {
  v1::CallRequest request;
  request.mutable_module_load_image()->set_image(image);
  return request;
}

TestClient attachWithQuota(WorkerHarness& worker, ClientId id, std::uint64_t quota) {
  EXPECT_TRUE(worker.runtime().attach(id, WorkerHarness::tokenFor(id), {}, {}, {}, quota));
  return TestClient(worker.runtime(), id, WorkerHarness::tokenFor(id));
}

TEST(ModuleMemoryCharge, ModulesAreChargedWhileLoadedAndTheOneThatDoesNotFitIsRefused) {
  WorkerHarness worker(FakeGpuConfig{.memoryBytes = 4ull << 30});
  constexpr std::uint64_t kQuota = 1ull << 30;
  TestClient client = attachWithQuota(worker, 1, kQuota);

  const v1::CallReply first = client.call(loadImage(bigGlobalPtx()));
  ASSERT_EQ(first.error(), 0) << describe(first);
  const std::uint64_t perModule = worker.memory().driverCharge(1, DriverShare::kModuleImages);
  EXPECT_GE(perModule, kGlobalBytes);
  EXPECT_EQ(client.call(requests::memGetInfo()).mem_info().free(), kQuota - perModule);

  std::vector<std::uint64_t> modules = {first.module_loaded().module()};
  v1::CallReply reply;
  while ((reply = client.call(loadImage(bigGlobalPtx()))).error() == 0) {
    modules.push_back(reply.module_loaded().module());
    ASSERT_LE(modules.size(), 4u) << "more modules of 256 MiB than a 1 GiB quota holds";
  }
  EXPECT_EQ(reply.error(), cudaErrorMemoryAllocation) << describe(reply);
  EXPECT_NE(reply.error_detail().find("global variables"), std::string::npos) << describe(reply);
  EXPECT_EQ(modules.size(), kQuota / perModule);
  EXPECT_EQ(worker.gpu().callCount(FakeGpuCall::kModuleLoad), modules.size()) << "refused before the driver";
  EXPECT_EQ(worker.memory().driverCharge(1), perModule * modules.size()) << "the refusal changed nothing";
  EXPECT_EQ(client.call(requests::memAlloc(kQuota - perModule * modules.size() + (2u << 20))).error(),
            cudaErrorMemoryAllocation)
      << "allocations see the modules' memory as spent";

  // Unloading gives the memory back; the module that did not fit now does.
  ASSERT_EQ(client.call(requests::moduleUnload(modules.back())).error(), 0);
  EXPECT_EQ(worker.memory().driverCharge(1), perModule * (modules.size() - 1));
  EXPECT_EQ(client.call(loadImage(bigGlobalPtx())).error(), 0);

  // A device reset keeps the modules loaded, and so their charge; the end of the session ends both.
  ASSERT_EQ(client.call(requests::deviceReset()).error(), 0);
  EXPECT_EQ(worker.memory().driverCharge(1), perModule * modules.size());
  ASSERT_TRUE(worker.runtime().release(1));
  EXPECT_EQ(worker.memory().driverCharge(1), 0u);
}

TEST(ModuleMemoryCharge, AFailedLoadLeavesNoCharge) {
  WorkerHarness worker;
  TestClient client = attachWithQuota(worker, 1, 1ull << 30);
  worker.gpu().failNext(FakeGpuCall::kModuleLoad, CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_NE(client.call(loadImage(bigGlobalPtx())).error(), 0);
  EXPECT_EQ(worker.memory().driverCharge(1), 0u);
}

// A cubin (SASS only, loaded unguarded) is charged its ELF footprint: at least its globals.
TEST(ModuleMemoryCharge, ACubinIsChargedItsElfFootprint) {
  WorkerHarness worker(FakeGpuConfig{.acceptElfImages = true});
  TestClient client = worker.attach(1);
  const v1::CallReply reply =
      client.call(requests::moduleLoad(readTestFatbin(TestFatbin::kSm90SassOnly), {}, {}));
  ASSERT_EQ(reply.error(), 0) << describe(reply);
  // worker_kernels.cu declares an int, 16 floats and 4 __constant__ words; the code takes a page.
  EXPECT_GE(worker.memory().driverCharge(1, DriverShare::kModuleImages), 64u << 10);
}

}  // namespace
}  // namespace agileos::worker::testing
