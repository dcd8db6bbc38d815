// FunctionInfo.system_scope_atomics: a module load tells the client which kernels the module's
// PTX gives system-scope atomics, whether the SASS or the PTX loads (guard off or on), and
// nothing where no PTX can be read.
#include <gtest/gtest.h>

#include "tests/cpu/worker/support/guard_settings.h"
#include "tests/cpu/worker/support/requests.h"
#include "tests/cpu/worker/support/worker_harness.h"

namespace agileos::worker::testing {
namespace {

constexpr char kSystemKernel[] = "agileos_system_atomics";
constexpr char kDeviceKernel[] = "agileos_device_atomics";

TEST(SystemAtomics, TheEntriesPtxNamesTheKernelsThatUseThem) {
  EXPECT_EQ(systemAtomicKernels(entriesOf(TestFatbin::kSystemAtomicsSm90), 90),
            std::vector<std::string>{kSystemKernel});
  EXPECT_TRUE(systemAtomicKernels(entriesOf(TestFatbin::kSystemAtomicsSassOnly), 90).empty()) << "no PTX";
  EXPECT_TRUE(systemAtomicKernels(entriesOf(TestFatbin::kSm90), 90).empty());
}

// A separately compiled image's linked SASS carries no PTX (cuda-samples' systemWideAtomics is
// built so): its relocatable objects' PTX is read instead, as one program.
TEST(SystemAtomics, ASeparatelyCompiledImageIsReadFromItsObjects) {
  const std::string withAtomics = readTestFatbin(TestFatbin::kSystemAtomicsRdcObject);
  const std::string other = readTestFatbin(TestFatbin::kSm90RdcObject);
  const std::string sassOnly = readTestFatbin(TestFatbin::kSm90RdcSassObject);
  const std::vector<fatbin::Entry> linked = entriesOf(TestFatbin::kSystemAtomicsSassOnly);
  EXPECT_EQ(systemAtomicKernels(linked, 90, {other, withAtomics}), std::vector<std::string>{kSystemKernel});
  EXPECT_TRUE(systemAtomicKernels(linked, 90, {other, sassOnly}).empty());
  EXPECT_TRUE(systemAtomicKernels(linked, 90, {std::string_view("garbage")}).empty())
      << "unreadable: nothing";
}

// The fake GPU emulates PTX only: an sm_100 device loads the module's compute_90 PTX with the guard
// off too. That the flag comes from the PTX whichever image loads is
// TheEntriesPtxNamesTheKernelsThatUseThem's (the SASS is never read).
TEST(SystemAtomics, AModuleLoadFlagsTheKernelsUnderEveryGuardSetting) {
  for (GuardMode mode : {GuardMode::kOff, GuardMode::kTrap}) {
    FakeGpuConfig config;
    config.computeMajor = 10;
    WorkerHarness worker(config);
    TestClient client = worker.attach(1, guardConfig(mode));
    const v1::CallReply loaded = client.call(requests::moduleLoad(
        readTestFatbin(TestFatbin::kSystemAtomicsSm90), {kSystemKernel, kDeviceKernel}, {}));
    ASSERT_EQ(loaded.error(), 0) << describe(loaded);
    ASSERT_EQ(loaded.module_loaded().functions_size(), 2);
    EXPECT_EQ(loaded.module_loaded().functions(0).error(), 0);
    EXPECT_TRUE(loaded.module_loaded().functions(0).system_scope_atomics()) << int(mode);
    EXPECT_FALSE(loaded.module_loaded().functions(1).system_scope_atomics()) << int(mode);
  }
}

TEST(SystemAtomics, SassOnlyModulesFlagNothing) {
  FakeGpuConfig config;
  config.acceptElfImages = true;
  WorkerHarness worker(config);
  TestClient client = worker.attach(1);
  const v1::CallReply loaded = client.call(
      requests::moduleLoad(readTestFatbin(TestFatbin::kSystemAtomicsSassOnly), {kSystemKernel}, {}));
  ASSERT_EQ(loaded.error(), 0) << describe(loaded);
  EXPECT_FALSE(loaded.module_loaded().functions(0).system_scope_atomics()) << "nothing to read";
}

}  // namespace
}  // namespace agileos::worker::testing
