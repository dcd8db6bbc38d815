// The memory guard on the worker's module-loading path (worker/module_guard.h): which
// fatbin entry is loaded, rewritten or refused for each setting, and a guarded module
// loading and launching through the real WorkerRuntime on the fake GPU.
#include "worker/module_guard.h"

#include <driver_types.h>
#include <gtest/gtest.h>

#include <span>

#include "tests/cpu/worker/support/requests.h"
#include "tests/cpu/worker/support/test_fatbins.h"
#include "tests/cpu/worker/support/worker_harness.h"

namespace agileos::worker::testing {
namespace {

std::vector<fatbin::Entry> entriesOf(TestFatbin which) {
  const std::string bytes = readTestFatbin(which);
  fatbin::ParseResult parsed = fatbin::parse(
      std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
  EXPECT_TRUE(parsed.ok) << parsed.error;
  return std::move(parsed.entries);
}

GuardConfig config(GuardConfig::Mode mode, bool allowSassOnly = true) {
  GuardConfig c;
  c.mode = mode;
  c.allowSassOnly = allowSassOnly;
  return c;
}

TEST(ModuleGuard, OffLoadsTheSassAsBefore) {
  const PreparedImage image =
      prepareModuleImage(entriesOf(TestFatbin::kSm90), 90, config(GuardConfig::Mode::kOff));
  ASSERT_TRUE(image.ok) << image.detail;
  EXPECT_FALSE(image.ptx);
  EXPECT_FALSE(image.guarded);
  EXPECT_EQ(image.image.rfind("\x7f"
                              "ELF",
                              0),
            0u);
}

TEST(ModuleGuard, TrapRewritesThePtxAndNeverLoadsTheSass) {
  const PreparedImage image =
      prepareModuleImage(entriesOf(TestFatbin::kSm90), 90, config(GuardConfig::Mode::kTrap));
  ASSERT_TRUE(image.ok) << image.detail;
  EXPECT_TRUE(image.ptx);
  EXPECT_TRUE(image.guarded);
  EXPECT_GT(image.checkedAccesses, 0u);
  EXPECT_NE(image.image.find("%agileos_guard"), std::string::npos);
  EXPECT_NE(image.image.find("trap;"), std::string::npos);
  EXPECT_EQ(image.image.back(), '\0') << "the driver reads PTX as a C string";

  // Older PTX (compute_75) is guarded and JIT-compiled for the device too.
  const PreparedImage older =
      prepareModuleImage(entriesOf(TestFatbin::kDefaultArch), 90, config(GuardConfig::Mode::kTrap));
  ASSERT_TRUE(older.ok) << older.detail;
  EXPECT_TRUE(older.guarded);
  EXPECT_EQ(older.smArch, 75u);
}

TEST(ModuleGuard, ReportCountsInsteadOfTrapping) {
  const PreparedImage image =
      prepareModuleImage(entriesOf(TestFatbin::kSm90), 90, config(GuardConfig::Mode::kReport));
  ASSERT_TRUE(image.ok) << image.detail;
  EXPECT_NE(image.image.find("red.global.add.u64"), std::string::npos);
  EXPECT_EQ(image.image.find("trap;"), std::string::npos);
}

TEST(ModuleGuard, SassOnlyModulesAreRefusedOrAllowedUnguardedAsConfigured) {
  const PreparedImage refused =
      prepareModuleImage(entriesOf(TestFatbin::kSm90SassOnly), 90, config(GuardConfig::Mode::kTrap, false));
  EXPECT_FALSE(refused.ok);
  EXPECT_EQ(refused.error, cudaErrorNoKernelImageForDevice);
  EXPECT_NE(refused.detail.find("only SASS"), std::string::npos) << refused.detail;
  EXPECT_NE(refused.detail.find("PTX"), std::string::npos) << "the error names what is missing";

  const PreparedImage allowed =
      prepareModuleImage(entriesOf(TestFatbin::kSm90SassOnly), 90, config(GuardConfig::Mode::kTrap, true));
  ASSERT_TRUE(allowed.ok) << allowed.detail;
  EXPECT_FALSE(allowed.guarded);
  EXPECT_FALSE(allowed.ptx);
}

TEST(ModuleGuard, NothingForThisDeviceIsStillNoKernelImage) {
  const PreparedImage image =
      prepareModuleImage(entriesOf(TestFatbin::kCompute100PtxOnly), 90, config(GuardConfig::Mode::kTrap));
  EXPECT_FALSE(image.ok);
  EXPECT_EQ(image.error, cudaErrorNoKernelImageForDevice);
}

TEST(ModuleGuard, AGuardedModuleLoadsAndLaunchesThroughTheRuntime) {
  WorkerHarness harness;
  harness.runtime().setGuard(config(GuardConfig::Mode::kTrap));
  TestClient client = harness.attach(1);
  const TestClient::LoadedModule module = client.loadModule(readTestFatbin(TestFatbin::kSm90));
  ASSERT_NE(module.module, 0u);
  const v1::FunctionInfo& add = module.functions.at(kAddKernel);
  EXPECT_EQ(add.error(), 0);
  EXPECT_EQ(add.param_buffer_size(), kAddKernelParamBytes) << "parameters learned from the guarded module";
  EXPECT_EQ(client.call(requests::launchKernel(add.token(), std::string(kAddKernelParamBytes, '\0'))).error(), 0);
  EXPECT_EQ(harness.gpu().launches().size(), 1u);
  // A SASS-only module with SASS refused: the client gets the error, and nothing is loaded.
  harness.runtime().setGuard(config(GuardConfig::Mode::kTrap, false));
  const v1::CallReply refused =
      client.call(requests::moduleLoad(readTestFatbin(TestFatbin::kSm90SassOnly), kAllKernels, {}));
  EXPECT_EQ(refused.error(), cudaErrorNoKernelImageForDevice);
  EXPECT_NE(refused.error_detail().find("only SASS"), std::string::npos);
}

}  // namespace
}  // namespace agileos::worker::testing
