// The stack the driver grows at launch is charged like a raised limit (issue 14,
// worker/handlers/context_limits.h). The fake device holds 132 x 2048 threads, so each byte of
// stack per thread costs 264 KiB; like the driver, it grows the stack to a launched kernel's
// local memory and keeps stacks in multiples of 16 bytes.
#include <gtest/gtest.h>

#include "tests/cpu/worker/support/worker_harness.h"

namespace agileos::worker::testing {
namespace {

constexpr std::uint64_t kThreads = 132 * 2048;
constexpr std::size_t kInitialStack = 1024;

struct QuotaClient {
  WorkerHarness worker;
  TestClient client;
  TestClient::LoadedModule module;

  QuotaClient(int emptyKernelLocalBytes, std::uint64_t quota)
      : worker(FakeGpuConfig{.memoryBytes = 4ull << 30,
                             .localBytesByKernel = {{kEmptyKernel, emptyKernelLocalBytes}}}),
        client(attachWithQuota(worker, quota)),
        module(client.loadModule(readTestFatbin(TestFatbin::kDefaultArch))) {}

  static TestClient attachWithQuota(WorkerHarness& worker, std::uint64_t quota) {
    EXPECT_TRUE(worker.runtime().attach(1, WorkerHarness::tokenFor(1), {}, {}, {}, quota));
    return TestClient(worker.runtime(), 1, WorkerHarness::tokenFor(1));
  }
  v1::CallReply launchEmpty() {
    return client.call(requests::launchKernel(module.function(kEmptyKernel), ""));
  }
  std::size_t stack() {
    return client.call(requests::deviceGetLimit(CU_LIMIT_STACK_SIZE)).limit_value().value();
  }
};

TEST(StackGrowth, ALaunchThatNeedsABiggerStackIsChargedBeforeTheDriverSeesIt) {
  QuotaClient q(3000, 1ull << 30);
  ASSERT_EQ(q.launchEmpty().error(), 0);
  EXPECT_EQ(q.stack(), 3008u) << "the worker raised the stack to the kernel's local memory";
  const std::uint64_t charge = (3008 - kInitialStack) * kThreads;
  EXPECT_EQ(q.worker.memory().driverCharge(1, memmgr::DriverShare::kContextLimits), charge)
      << "charged as the driver rounded it";
  EXPECT_EQ(q.client.call(requests::memGetInfo()).mem_info().free(),
            (1ull << 30) - q.worker.memory().chargedBytes(1));
  EXPECT_EQ(q.worker.memory().chargedBytes(1),
            charge + q.worker.memory().driverCharge(1, memmgr::DriverShare::kModuleImages));

  // Every later launch of a kernel the stack covers costs one atomic load: no driver call.
  const std::uint64_t limitCalls =
      q.worker.gpu().callCount(FakeGpuCall::kGetLimit) + q.worker.gpu().callCount(FakeGpuCall::kSetLimit);
  ASSERT_EQ(q.launchEmpty().error(), 0);
  ASSERT_EQ(q.client
                .call(requests::launchKernel(q.module.function(kPairKernel),
                                             std::string(kPairKernelParamBytes, '\0')))
                .error(),
            0);
  EXPECT_EQ(
      q.worker.gpu().callCount(FakeGpuCall::kGetLimit) + q.worker.gpu().callCount(FakeGpuCall::kSetLimit),
      limitCalls);
  EXPECT_EQ(q.worker.gpu().launches().size(), 3u);
  EXPECT_EQ(q.worker.memory().driverCharge(1, memmgr::DriverShare::kContextLimits), charge);
}

TEST(StackGrowth, ALaunchWhoseStackDoesNotFitTheQuotaIsRefusedAndChangesNothing) {
  // 4 KiB per thread sets aside 3 KiB x 132 x 2048 = 792 MiB more than the context's own 1 KiB.
  QuotaClient q(4096, 512ull << 20);
  const v1::CallReply refused = q.launchEmpty();
  EXPECT_EQ(refused.error(), cudaErrorMemoryAllocation) << describe(refused);
  EXPECT_NE(refused.error_detail().find("4096 bytes of local memory per thread"), std::string::npos)
      << describe(refused);
  EXPECT_EQ(q.worker.gpu().callCount(FakeGpuCall::kLaunchKernel), 0u) << "the driver never saw the launch";
  EXPECT_EQ(q.worker.gpu().callCount(FakeGpuCall::kSetLimit), 0u);
  EXPECT_EQ(q.stack(), kInitialStack);
  EXPECT_EQ(q.worker.memory().driverCharge(1, memmgr::DriverShare::kContextLimits), 0u);
  EXPECT_EQ(q.client.call(requests::memGetInfo()).mem_info().free(),
            (512ull << 20) - q.worker.memory().driverCharge(1, memmgr::DriverShare::kModuleImages));
  // Its other kernels launch; its memory is still its own.
  ASSERT_EQ(q.client
                .call(requests::launchKernel(q.module.function(kPairKernel),
                                             std::string(kPairKernelParamBytes, '\0')))
                .error(),
            0);
  EXPECT_NE(q.client.malloc(500ull << 20), 0u);
}

TEST(StackGrowth, AStackTheQuotaPaidForCannotBeLoweredAndThenGrownForFree) {
  QuotaClient q(2048, 1ull << 30);
  ASSERT_EQ(q.launchEmpty().error(), 0);
  const std::uint64_t charge = (2048 - kInitialStack) * kThreads;
  ASSERT_EQ(q.worker.memory().driverCharge(1, memmgr::DriverShare::kContextLimits), charge);
  ASSERT_EQ(q.client.call(requests::deviceSetLimit(CU_LIMIT_STACK_SIZE, kInitialStack)).error(), 0);
  EXPECT_EQ(q.worker.memory().driverCharge(1, memmgr::DriverShare::kContextLimits), 0u)
      << "lowering gives the memory back";
  ASSERT_EQ(q.launchEmpty().error(), 0);
  EXPECT_EQ(q.stack(), 2048u);
  EXPECT_EQ(q.worker.memory().driverCharge(1, memmgr::DriverShare::kContextLimits), charge)
      << "and the next launch charges it again";
}

TEST(StackGrowth, AResetPutsTheStackBackAndTheNextLaunchChargesItAgain) {
  QuotaClient q(2048, 1ull << 30);
  ASSERT_EQ(q.launchEmpty().error(), 0);
  ASSERT_EQ(q.client.call(requests::deviceReset()).error(), 0);
  EXPECT_EQ(q.stack(), kInitialStack);
  EXPECT_EQ(q.worker.memory().driverCharge(1, memmgr::DriverShare::kContextLimits), 0u);
  const auto module = q.client.loadModule(readTestFatbin(TestFatbin::kDefaultArch));
  ASSERT_EQ(q.client.call(requests::launchKernel(module.function(kEmptyKernel), "")).error(), 0);
  EXPECT_EQ(q.worker.memory().driverCharge(1, memmgr::DriverShare::kContextLimits),
            (2048 - kInitialStack) * kThreads);
}

TEST(StackGrowth, TheNextClientOfTheContextStartsFromTheContextsOwnStack) {
  WorkerHarness worker(FakeGpuConfig{.localBytesByKernel = {{kEmptyKernel, 8192}}});
  {
    TestClient first = worker.attach(1);
    const auto module = first.loadModule(readTestFatbin(TestFatbin::kDefaultArch));
    ASSERT_EQ(first.call(requests::launchKernel(module.function(kEmptyKernel), "")).error(), 0);
    ASSERT_EQ(first.call(requests::deviceGetLimit(CU_LIMIT_STACK_SIZE)).limit_value().value(), 8192u);
  }
  ASSERT_TRUE(worker.runtime().release(1));
  TestClient next = worker.attach(2);
  EXPECT_EQ(next.call(requests::deviceGetLimit(CU_LIMIT_STACK_SIZE)).limit_value().value(), kInitialStack);
  EXPECT_EQ(worker.memory().driverCharge(2, memmgr::DriverShare::kContextLimits), 0u);
}

// A kernel's local memory comes from the driver when its function is resolved, never from the
// client; a function whose attribute cannot be read is not resolved (fail closed).
TEST(StackGrowth, AFunctionWhoseLocalMemoryCannotBeReadIsNotResolved) {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  const auto loaded = client.loadModule(readTestFatbin(TestFatbin::kDefaultArch), {kEmptyKernel});
  ASSERT_NE(loaded.function(kEmptyKernel), 0u);
  v1::CallRequest load = requests::moduleLoad(readTestFatbin(TestFatbin::kDefaultArch), {kEmptyKernel}, {});
  worker.gpu().failNext(FakeGpuCall::kFunctionGetAttribute, CUDA_ERROR_INVALID_VALUE);
  const v1::CallReply reply = client.call(load);
  ASSERT_EQ(reply.error(), 0) << describe(reply);
  ASSERT_EQ(reply.module_loaded().functions_size(), 1);
  EXPECT_EQ(reply.module_loaded().functions(0).error(), cudaErrorInvalidDeviceFunction);
  EXPECT_EQ(reply.module_loaded().functions(0).token(), 0u);
}

}  // namespace
}  // namespace agileos::worker::testing
