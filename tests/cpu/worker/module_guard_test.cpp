// The memory guard on the worker's module-loading path (worker/module_guard.h): which
// fatbin entry is loaded, rewritten or refused for each setting, and a guarded module
// loading and launching through the real WorkerRuntime on the fake GPU.
#include "worker/module_guard.h"

#include <driver_types.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <span>

#include "memmgr/address_layout.h"
#include "ptx/parser.h"
#include "tests/cpu/support/temp_dir.h"
#include "tests/cpu/worker/support/guard_settings.h"
#include "tests/cpu/worker/support/requests.h"
#include "tests/cpu/worker/support/test_fatbins.h"
#include "tests/cpu/worker/support/worker_harness.h"
#include "worker/module_cache/compiled_module_cache.h"
#include "worker/session_guard.h"

namespace agileos::worker::testing {
namespace {

TEST(ModuleGuard, OffLoadsTheSassAsBefore) {
  const PreparedImage image =
      prepareModuleImage(entriesOf(TestFatbin::kSm90), 90, guardConfig(GuardMode::kOff));
  ASSERT_TRUE(image.ok) << image.detail;
  EXPECT_FALSE(image.ptx);
  EXPECT_FALSE(image.guarded);
  EXPECT_EQ(image.image.rfind("\x7f"
                              "ELF",
                              0),
            0u);
}

// A module that calls cudaGraphSetConditional loads from its PTX with AgileOS's definition
// (ptx/graph_conditionals.h) whatever the guard setting: its SASS would get the driver's, which
// stores through the program's handle where no check sees it. Without PTX it is refused.
TEST(ModuleGuard, GraphConditionalsTakeThePtxWithTheirDefinitionUnderEverySetting) {
  for (GuardMode mode : {GuardMode::kOff, GuardMode::kTrap, GuardMode::kReport}) {
    const PreparedImage image =
        prepareModuleImage(entriesOf(TestFatbin::kConditionalSm90), 90, guardConfig(mode));
    ASSERT_TRUE(image.ok) << image.detail;
    EXPECT_TRUE(image.ptx) << "never the SASS";
    EXPECT_EQ(image.guarded, mode != GuardMode::kOff);
    EXPECT_EQ(image.image.find(".extern .func cudaGraphSetConditional"), std::string::npos);
    EXPECT_NE(image.image.find(".func cudaGraphSetConditional("), std::string::npos) << image.image;
  }
  const PreparedImage sassOnly =
      prepareModuleImage(entriesOf(TestFatbin::kConditionalSassOnly), 90, guardConfig(GuardMode::kOff));
  EXPECT_FALSE(sassOnly.ok);
  EXPECT_EQ(sassOnly.error, cudaErrorNoKernelImageForDevice);
  EXPECT_NE(sassOnly.detail.find("cudaGraphSetConditional"), std::string::npos) << sassOnly.detail;
}

TEST(ModuleGuard, TrapRewritesThePtxAndNeverLoadsTheSass) {
  const PreparedImage image =
      prepareModuleImage(entriesOf(TestFatbin::kSm90), 90, guardConfig(GuardMode::kTrap));
  ASSERT_TRUE(image.ok) << image.detail;
  EXPECT_TRUE(image.ptx);
  EXPECT_TRUE(image.guarded);
  EXPECT_GT(image.checkedAccesses, 0u);
  EXPECT_NE(image.image.find("%agileos_guard"), std::string::npos);
  EXPECT_NE(image.image.find("0xf0fc0000000"), std::string::npos) << "hits go to the fault window";
  EXPECT_EQ(image.image.back(), '\0') << "the driver reads PTX as a C string";

  // Older PTX (compute_75) is guarded and JIT-compiled for the device too.
  const PreparedImage older =
      prepareModuleImage(entriesOf(TestFatbin::kDefaultArch), 90, guardConfig(GuardMode::kTrap));
  ASSERT_TRUE(older.ok) << older.detail;
  EXPECT_TRUE(older.guarded);
  EXPECT_EQ(older.smArch, 75u);
}

TEST(ModuleGuard, ReportCountsInsteadOfTrapping) {
  const PreparedImage image =
      prepareModuleImage(entriesOf(TestFatbin::kSm90), 90, guardConfig(GuardMode::kReport));
  ASSERT_TRUE(image.ok) << image.detail;
  EXPECT_NE(image.image.find("red.global.add.u64"), std::string::npos);
  EXPECT_EQ(image.image.find("trap;"), std::string::npos);
}

// PTX in nvcc 4's style (ISA 1.4, sm_10), as cuda-samples' matrixMulDynlinkJIT hands it to
// cuModuleLoadDataEx. The driver's JIT linker, which the worker compiles with, takes only PTX 3.1
// and later (the fake backend refuses older text as it does), so under every setting the worker
// loads it parsed and printed at 3.1 (ptx/separate_compilation.h).
constexpr char kLegacyPtx[] = R"(	.version 1.4
	.target sm_10, map_f64_to_f32
	.file	1	"C:/Temp/legacy\kernel.cudafe2.gpu"
	.entry legacy_fill (
		.param .u64 __cudaparm_legacy_fill_out)
	{
	.reg .u32 %r<4>;
	.reg .u64 %rd<4>;
	.loc	1	3	0
$LDWbegin_legacy_fill:
	cvt.u32.u16 	%r1, %tid.x;
	ld.param.u64 	%rd1, [__cudaparm_legacy_fill_out];
	cvt.u64.u32 	%rd2, %r1;
	mul.lo.u64 	%rd3, %rd2, 4;
	add.u64 	%rd1, %rd1, %rd3;
	st.global.u32 	[%rd1+0], %r1;
	exit;
$LDWend_legacy_fill:
	}
)";

TEST(ModuleGuard, PtxOlderThanSeparateCompilationTakesLoadsRaisedUnderEverySetting) {
  for (GuardMode mode : {GuardMode::kOff, GuardMode::kTrap, GuardMode::kReport}) {
    SCOPED_TRACE(static_cast<int>(mode));
    WorkerHarness harness;
    TestClient client = harness.attach(1, guardConfig(mode));
    v1::CallRequest load;
    load.mutable_module_load_image()->set_image(std::string(kLegacyPtx) + '\0');
    const v1::CallReply loaded = client.call(load);
    ASSERT_EQ(loaded.error(), cudaSuccess) << describe(loaded);
    v1::CallRequest get;
    get.mutable_module_get_function()->set_module(loaded.module_loaded().module());
    get.mutable_module_get_function()->set_name("legacy_fill");
    const v1::CallReply function = client.call(get);
    ASSERT_EQ(function.error(), cudaSuccess) << describe(function);
    EXPECT_EQ(function.function_info().param_buffer_size(), 8u);
    const memmgr::DevicePtr out = client.malloc(4096);
    std::string params(8, '\0');
    std::memcpy(params.data(), &out, sizeof out);
    EXPECT_EQ(client.call(requests::launchKernel(function.function_info().token(), params)).error(),
              cudaSuccess);
  }
  // What reaches the JIT linker says 3.1; the target and its option stay.
  fatbin::Entry entry;
  entry.kind = fatbin::EntryKind::kPtx;
  entry.smArch = 10;
  entry.payload.assign(kLegacyPtx, kLegacyPtx + sizeof kLegacyPtx - 1);
  for (GuardMode mode : {GuardMode::kOff, GuardMode::kTrap}) {
    const PreparedImage image = prepareModuleImage({entry}, 90, guardConfig(mode));
    ASSERT_TRUE(image.ok) << image.detail;
    EXPECT_NE(image.image.find(".version 3.1"), std::string::npos) << image.image;
    EXPECT_EQ(image.image.find(".version 1.4"), std::string::npos);
    EXPECT_NE(image.image.find("map_f64_to_f32"), std::string::npos);
  }
}

TEST(ModuleGuard, SassOnlyModulesAreRefusedOrAllowedUnguardedAsConfigured) {
  const PreparedImage refused =
      prepareModuleImage(entriesOf(TestFatbin::kSm90SassOnly), 90, guardConfig(GuardMode::kTrap, false));
  EXPECT_FALSE(refused.ok);
  EXPECT_EQ(refused.error, cudaErrorNoKernelImageForDevice);
  EXPECT_NE(refused.detail.find("only SASS"), std::string::npos) << refused.detail;
  EXPECT_NE(refused.detail.find("PTX"), std::string::npos) << "the error names what is missing";

  const PreparedImage allowed =
      prepareModuleImage(entriesOf(TestFatbin::kSm90SassOnly), 90, guardConfig(GuardMode::kTrap, true));
  ASSERT_TRUE(allowed.ok) << allowed.detail;
  EXPECT_FALSE(allowed.guarded);
  EXPECT_FALSE(allowed.ptx);
}

TEST(ModuleGuard, NothingForThisDeviceIsStillNoKernelImage) {
  const PreparedImage image =
      prepareModuleImage(entriesOf(TestFatbin::kCompute100PtxOnly), 90, guardConfig(GuardMode::kTrap));
  EXPECT_FALSE(image.ok);
  EXPECT_EQ(image.error, cudaErrorNoKernelImageForDevice);
}

TEST(ModuleGuard, AGuardedModuleLoadsAndLaunchesThroughTheRuntime) {
  WorkerHarness harness;
  TestClient client = harness.attach(1, guardConfig(GuardMode::kTrap));
  const TestClient::LoadedModule module = client.loadModule(readTestFatbin(TestFatbin::kSm90));
  ASSERT_NE(module.module, 0u);
  const v1::FunctionInfo& add = module.functions.at(kAddKernel);
  EXPECT_EQ(add.error(), 0);
  EXPECT_EQ(add.param_buffer_size(), kAddKernelParamBytes) << "parameters learned from the guarded module";
  EXPECT_EQ(client.call(requests::launchKernel(add.token(), std::string(kAddKernelParamBytes, '\0'))).error(),
            0);
  EXPECT_EQ(harness.gpu().launches().size(), 1u);
  // A SASS-only module with SASS refused: the client gets the error, and nothing is loaded.
  TestClient strict = harness.attach(2, guardConfig(GuardMode::kTrap, false));
  const v1::CallReply refused =
      strict.call(requests::moduleLoad(readTestFatbin(TestFatbin::kSm90SassOnly), kAllKernels, {}));
  EXPECT_EQ(refused.error(), cudaErrorNoKernelImageForDevice);
  EXPECT_NE(refused.error_detail().find("only SASS"), std::string::npos);
}

v1::CallRequest guardStatusQuery() {
  v1::CallRequest request;
  request.mutable_guard_status_query();
  return request;
}

v1::CallRequest deviceSynchronize() {
  v1::CallRequest request;
  request.mutable_device_synchronize();
  return request;
}

GuardConfig policy(ptx::GuardPolicy p) {
  GuardConfig c;
  c.enabled = true;
  c.ptx.policy = p;
  return c;
}

// A guarded kernel's hit, as the fake GPU runs no kernels: the count in the guard page
// (the first protected allocation of the client, found through the test canary's neighbour).
void recordHits(WorkerHarness& harness, std::uint64_t page, std::uint64_t hits) {
  ASSERT_TRUE(harness.gpu().writeDevice(page, &hits, sizeof hits));
}

TEST(ModuleGuard, PoisonFailsTheNextSynchronizeAndEveryLaterCallButNotOtherClients) {
  WorkerHarness harness;
  harness.setGuardContext({nullptr, true});
  TestClient client = harness.attach(1, policy(ptx::GuardPolicy::kPoison));
  TestClient other = harness.attach(2, policy(ptx::GuardPolicy::kPoison));
  const TestClient::LoadedModule module = client.loadModule(readTestFatbin(TestFatbin::kSm90));
  ASSERT_NE(module.module, 0u);
  const v1::FunctionInfo& add = module.functions.at(kAddKernel);
  v1::CallReply status = client.call(guardStatusQuery());
  ASSERT_EQ(status.error(), 0) << status.error_detail();
  EXPECT_EQ(status.guard_status().policy(), "poison");
  EXPECT_EQ(status.guard_status().hits(), 0u);
  ASSERT_TRUE(memmgr::kModuleRange.contains(status.guard_status().canary_address()));
  EXPECT_TRUE(status.guard_status().canary_intact());
  // The canary is the client's first protected allocation, the guard page the second.
  const std::uint64_t page = status.guard_status().canary_address() + kGuardPageBytes;

  EXPECT_EQ(client.call(requests::launchKernel(add.token(), std::string(kAddKernelParamBytes, '\0'))).error(),
            0);
  EXPECT_EQ(client.call(deviceSynchronize()).error(), 0) << "no hit, no fault";
  EXPECT_EQ(client.call(requests::launchKernel(add.token(), std::string(kAddKernelParamBytes, '\0'))).error(),
            0);
  recordHits(harness, page, 3);
  const v1::CallReply synced = client.call(deviceSynchronize());
  EXPECT_EQ(synced.error(), cudaErrorIllegalAddress);
  EXPECT_NE(synced.error_detail().find("poison"), std::string::npos) << synced.error_detail();
  EXPECT_EQ(client.call(requests::memAlloc(256)).error(), cudaErrorIllegalAddress) << "sticky for the client";
  status = client.call(guardStatusQuery());
  ASSERT_EQ(status.error(), 0);
  EXPECT_TRUE(status.guard_status().poisoned());
  EXPECT_EQ(status.guard_status().hits(), 3u);
  // Another client of the same worker is untouched.
  EXPECT_EQ(other.call(requests::memAlloc(256)).error(), 0);
  EXPECT_EQ(other.call(deviceSynchronize()).error(), 0);
}

TEST(ModuleGuard, ACanaryThatCannotBeReadIsAnErrorNotADamagedCanary) {
  WorkerHarness harness;
  harness.setGuardContext({nullptr, true});
  TestClient client = harness.attach(1, policy(ptx::GuardPolicy::kTrap));
  ASSERT_NE(client.loadModule(readTestFatbin(TestFatbin::kSm90)).module, 0u);
  EXPECT_TRUE(client.call(guardStatusQuery()).guard_status().canary_intact());
  // As after a trap: the context is lost and nothing can be read back.
  harness.gpu().failNext(FakeGpuCall::kCopyDeviceToHost, CUDA_ERROR_ILLEGAL_ADDRESS);
  const v1::CallReply lost = client.call(guardStatusQuery());
  EXPECT_NE(lost.error(), 0);
  EXPECT_FALSE(lost.has_guard_status()) << "no verdict on the canary";
}

TEST(ModuleGuard, ReportAndSinkLogHitsWithoutFailingAndTrapNeedsNoState) {
  for (ptx::GuardPolicy p :
       {ptx::GuardPolicy::kReport, ptx::GuardPolicy::kSink, ptx::GuardPolicy::kRemapOr}) {
    SCOPED_TRACE(ptx::toString(p));
    WorkerHarness harness;
    harness.setGuardContext({nullptr, true});
    TestClient client = harness.attach(1, policy(p));
    const TestClient::LoadedModule module = client.loadModule(readTestFatbin(TestFatbin::kSm90));
    const v1::FunctionInfo& add = module.functions.at(kAddKernel);
    const std::uint64_t page =
        client.call(guardStatusQuery()).guard_status().canary_address() + kGuardPageBytes;
    EXPECT_EQ(
        client.call(requests::launchKernel(add.token(), std::string(kAddKernelParamBytes, '\0'))).error(), 0);
    recordHits(harness, page, 2);
    EXPECT_EQ(client.call(deviceSynchronize()).error(), 0);
    EXPECT_EQ(client.call(guardStatusQuery()).guard_status().hits(), 2u);
    EXPECT_FALSE(client.call(guardStatusQuery()).guard_status().poisoned());
  }
  WorkerHarness harness;
  TestClient client = harness.attach(1, policy(ptx::GuardPolicy::kTrap));
  ASSERT_NE(client.loadModule(readTestFatbin(TestFatbin::kSm90)).module, 0u);
  const v1::CallReply status = client.call(guardStatusQuery());
  EXPECT_EQ(status.guard_status().policy(), "trap");
  EXPECT_EQ(status.guard_status().canary_address(), 0u)
      << "no test hook unless the worker was started with it";
  EXPECT_EQ(harness.memory().bytesInUse(1), 0u);
}

TEST(ModuleGuard, UnderRequireProtectedStateTheGuardAppliesOnlyWhileThereIsSomethingToProtect) {
  GuardConfig whenProtected = policy(ptx::GuardPolicy::kTrap);
  whenProtected.always = false;
  {
    WorkerHarness harness;
    TestClient client = harness.attach(1, whenProtected);
    // PTX-only for sm_90 (the fake loads no SASS), loaded as it is.
    ASSERT_NE(client.loadModule(readTestFatbin(TestFatbin::kDefaultArch)).module, 0u);
    const v1::CallReply status = client.call(guardStatusQuery());
    EXPECT_EQ(status.guard_status().policy(), "trap");
    EXPECT_FALSE(status.guard_status().applied()) << "nothing protected in this context";
    EXPECT_EQ(harness.memory().protectedBytes(1), 0u);
  }
  {
    // The test canary is protected state: now the guard applies.
    WorkerHarness harness;
    harness.setGuardContext({nullptr, true});
    TestClient client = harness.attach(1, whenProtected);
    ASSERT_NE(client.loadModule(readTestFatbin(TestFatbin::kSm90)).module, 0u);
    EXPECT_TRUE(client.call(guardStatusQuery()).guard_status().applied());
  }
}

TEST(ModuleGuard, CompiledModulesAreCachedAndLoadedFromTheCache) {
  const test_support::TempDir root("agileos-guard-cache-test");
  const std::string dir = root.file("modules");
  std::string error;
  auto cache =
      CompiledModuleCache::open(dir, 1 << 24, std::string(CompiledModuleCache::kKeyBytes, 'k'), &error);
  ASSERT_NE(cache, nullptr) << error;
  {
    WorkerHarness harness;
    harness.setGuardContext({cache.get(), false});
    TestClient first = harness.attach(1, policy(ptx::GuardPolicy::kTrap));
    ASSERT_NE(first.loadModule(readTestFatbin(TestFatbin::kSm90)).module, 0u);
    std::size_t files = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir))
      files += entry.path().extension() == ".cubin";
    EXPECT_EQ(files, 1u);
    // The same program again (another client): found in the cache, loads and launches.
    TestClient second = harness.attach(2, policy(ptx::GuardPolicy::kTrap));
    const TestClient::LoadedModule module = second.loadModule(readTestFatbin(TestFatbin::kSm90));
    ASSERT_NE(module.module, 0u);
    EXPECT_EQ(second
                  .call(requests::launchKernel(module.functions.at(kAddKernel).token(),
                                               std::string(kAddKernelParamBytes, '\0')))
                  .error(),
              0);
  }
}

// ---- the code-loading gate (worker/handlers/module_loading.h) ----

// sass_only = allow, as by default; `always` as configured.
GuardConfig allowingSass(ptx::GuardPolicy p, bool always) {
  GuardConfig c = policy(p);
  c.allowSassOnly = true;
  c.always = always;
  return c;
}

FakeGpuConfig loadingElf() {
  FakeGpuConfig config;
  config.acceptElfImages = true;  // so a SASS image the gate lets through really loads
  return config;
}

// The SASS (ELF) of the SASS-only test fatbin: what cudaLibraryLoadData may send as a raw image.
std::string sassOnlyElf() {
  for (const fatbin::Entry& entry : entriesOf(TestFatbin::kSm90SassOnly)) {
    if (entry.kind == fatbin::EntryKind::kElf) return entry.payload;
  }
  ADD_FAILURE() << "the SASS-only fatbin has no ELF";
  return {};
}

v1::CallRequest loadImage(const std::string& image) {
  v1::CallRequest request;
  request.mutable_module_load_image()->set_image(image);
  return request;
}

v1::CallReply loadSassOnlyFatbin(TestClient& client) {
  return client.call(requests::moduleLoad(readTestFatbin(TestFatbin::kSm90SassOnly), {}, {}));
}

TEST(CodeLoadingGate, SassOnlyCodeIsRefusedInAContextWithProtectedStateWhateverSassOnlySays) {
  for (bool always : {true, false}) {
    SCOPED_TRACE(always ? "require = always" : "require = protected_state");
    {
      // The escape suite's canary is protected state.
      WorkerHarness harness(loadingElf());
      harness.setGuardContext({nullptr, true});
      TestClient client = harness.attach(1, allowingSass(ptx::GuardPolicy::kTrap, always));
      const v1::CallReply refused = loadSassOnlyFatbin(client);
      EXPECT_EQ(refused.error(), cudaErrorNoKernelImageForDevice);
      EXPECT_NE(refused.error_detail().find("protected state"), std::string::npos) << refused.error_detail();
      EXPECT_NE(refused.error_detail().find("only SASS"), std::string::npos) << refused.error_detail();
      // A raw ELF image (cudaLibraryLoadData) goes through the same gate.
      const v1::CallReply elf = client.call(loadImage(sassOnlyElf()));
      EXPECT_EQ(elf.error(), cudaErrorNoKernelImageForDevice) << describe(elf);
      EXPECT_FALSE(harness.memory().runsUnguardedCode(1));
    }
    {
      // Protected memory of the client's (module state, a cuFFT work area: the same accounting).
      WorkerHarness harness(loadingElf());
      TestClient client = harness.attach(1, allowingSass(ptx::GuardPolicy::kTrap, always));
      memmgr::DevicePtr state = 0;
      ASSERT_EQ(harness.memory().allocateProtected(1, 4096, &state), CUDA_SUCCESS);
      EXPECT_EQ(loadSassOnlyFatbin(client).error(), cudaErrorNoKernelImageForDevice);
      EXPECT_EQ(client.call(loadImage(sassOnlyElf())).error(), cudaErrorNoKernelImageForDevice);
      ASSERT_EQ(harness.memory().freeProtected(1, state), CUDA_SUCCESS);
      // An I/O mapping of a module's is protected state too.
      const std::optional<memmgr::DevicePtr> io = harness.memory().placeIoRange(1, 4096);
      ASSERT_TRUE(io);
      EXPECT_EQ(loadSassOnlyFatbin(client).error(), cudaErrorNoKernelImageForDevice);
      ASSERT_TRUE(harness.memory().releaseIoRange(1, *io));
      // With none left, the same module loads.
      EXPECT_EQ(loadSassOnlyFatbin(client).error(), 0);
    }
  }
}

TEST(CodeLoadingGate, SassOnlyCodeLoadsWithoutProtectedStateAndTheContextThenGainsNone) {
  WorkerHarness harness(loadingElf());
  TestClient client = harness.attach(1, allowingSass(ptx::GuardPolicy::kTrap, true));
  TestClient other = harness.attach(2, allowingSass(ptx::GuardPolicy::kTrap, true));
  const v1::CallReply loaded = loadSassOnlyFatbin(client);
  ASSERT_EQ(loaded.error(), 0) << describe(loaded);
  EXPECT_NE(loaded.module_loaded().module(), 0u);
  EXPECT_TRUE(harness.memory().runsUnguardedCode(1));
  // Every later step that would give this client's context protected state is refused.
  memmgr::DevicePtr state = 0;
  EXPECT_EQ(harness.memory().allocateProtected(1, 4096, &state), CUDA_ERROR_NOT_PERMITTED);
  EXPECT_FALSE(harness.memory().placeIoRange(1, 4096));
  EXPECT_EQ(harness.memory().protectedBytes(1), 0u);
  // Another client of the worker is not marked.
  EXPECT_FALSE(harness.memory().runsUnguardedCode(2));
  EXPECT_EQ(harness.memory().allocateProtected(2, 4096, &state), CUDA_SUCCESS);
  // Guarded code still loads for the marked client.
  const TestClient::LoadedModule guarded = client.loadModule(readTestFatbin(TestFatbin::kSm90));
  EXPECT_NE(guarded.module, 0u);
  // The raw ELF too.
  EXPECT_EQ(client.call(loadImage(sassOnlyElf())).error(), 0);
  (void)other;
}

TEST(CodeLoadingGate, TheGuardsOwnPageIsNotProtectedStateEitherWay) {
  // poison needs the guard page; under require = always it exists before the first module.
  WorkerHarness harness(loadingElf());
  TestClient client = harness.attach(1, allowingSass(ptx::GuardPolicy::kPoison, true));
  ASSERT_NE(client.loadModule(readTestFatbin(TestFatbin::kSm90)).module, 0u);
  EXPECT_GT(harness.memory().protectedBytes(1), 0u) << "the guard page";
  EXPECT_EQ(loadSassOnlyFatbin(client).error(), 0) << "the guard page alone does not keep SASS out";
  EXPECT_TRUE(harness.memory().runsUnguardedCode(1));
  ASSERT_NE(client.loadModule(readTestFatbin(TestFatbin::kSm90)).module, 0u) << "guarded PTX still loads";
  EXPECT_TRUE(client.call(guardStatusQuery()).guard_status().applied());
}

// PTX loaded while the guard does not apply (require = protected_state, no protected state)
// is not marked: protected modules attach before any code, so what the context can gain later
// is the client's own (a cuFFT work area), and a program that launched a kernel first must
// still be able to make a cuFFT plan. Only code that can never be guarded (SASS) is marked.
TEST(CodeLoadingGate, PtxLoadedUnguardedUnderRequireProtectedStateIsNotMarked) {
  WorkerHarness harness;
  TestClient client = harness.attach(1, allowingSass(ptx::GuardPolicy::kTrap, false));
  ASSERT_NE(client.loadModule(readTestFatbin(TestFatbin::kDefaultArch)).module, 0u);
  EXPECT_FALSE(client.call(guardStatusQuery()).guard_status().applied());
  EXPECT_FALSE(harness.memory().runsUnguardedCode(1));
  memmgr::DevicePtr state = 0;
  EXPECT_EQ(harness.memory().allocateProtected(1, 4096, &state), CUDA_SUCCESS);
  ASSERT_NE(client.loadModule(readTestFatbin(TestFatbin::kSm90)).module, 0u);
  EXPECT_TRUE(client.call(guardStatusQuery()).guard_status().applied()) << "from now on modules are guarded";
}

TEST(CodeLoadingGate, UnderPolicyOffNothingIsMarked) {
  WorkerHarness harness(loadingElf());
  TestClient client = harness.attach(1, guardConfig(GuardMode::kOff));
  EXPECT_EQ(loadSassOnlyFatbin(client).error(), 0);
  EXPECT_FALSE(harness.memory().runsUnguardedCode(1));
}

// ---- the ELF image check before the driver (fatbin::checkElfImage, issue 14) ----

// The driver never sees an ELF image that fails the check: a client's raw cubin, or what the
// compiled-module cache returns. The client gets cudaErrorInvalidKernelImage and the reason.
TEST(ElfImageCheck, AMalformedRawCubinNeverReachesTheDriver) {
  WorkerHarness harness(loadingElf());
  TestClient client = harness.attach(1, guardConfig(GuardMode::kOff));
  const std::string good = sassOnlyElf();
  ASSERT_GT(good.size(), 64u);
  std::string truncated = good.substr(0, good.size() - 1);
  std::string otherMachine = good;
  otherMachine[18] = 62;  // e_machine = EM_X86_64
  for (const std::string* image : {&truncated, &otherMachine}) {
    const std::uint64_t loadsBefore = harness.gpu().callCount(FakeGpuCall::kModuleLoad);
    const v1::CallReply refused = client.call(loadImage(*image));
    EXPECT_EQ(refused.error(), cudaErrorInvalidKernelImage) << describe(refused);
    EXPECT_EQ(refused.error_detail().rfind("ELF image refused: byte offset 0x", 0), 0u)
        << refused.error_detail();
    EXPECT_EQ(harness.gpu().callCount(FakeGpuCall::kModuleLoad), loadsBefore) << "the driver saw it";
  }
  EXPECT_EQ(harness.gpu().liveModules(), 0u);
  // The real cubin passes and loads.
  EXPECT_EQ(client.call(loadImage(good)).error(), 0);
  EXPECT_EQ(harness.gpu().liveModules(), 1u);
}

TEST(ElfImageCheck, AMalformedCubinFromTheCompiledModuleCacheNeverReachesTheDriver) {
  const test_support::TempDir root("agileos-elf-check-cache-test");
  const std::string dir = root.file("modules");
  std::string error;
  auto cache =
      CompiledModuleCache::open(dir, 1 << 24, std::string(CompiledModuleCache::kKeyBytes, 'k'), &error);
  ASSERT_NE(cache, nullptr) << error;
  WorkerHarness harness;
  harness.setGuardContext({cache.get(), false});
  TestClient first = harness.attach(1, policy(ptx::GuardPolicy::kTrap));
  ASSERT_NE(first.loadModule(readTestFatbin(TestFatbin::kSm90)).module, 0u);
  // The one entry (the fake JIT's output) replaced by a damaged cubin under a valid MAC: what a
  // cache written by a faulty compiler, or by someone holding the key, would return.
  std::string key;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".cubin") key = entry.path().stem().string();
  }
  ASSERT_FALSE(key.empty());
  const std::string elf = sassOnlyElf();
  cache->store(key, elf.substr(0, elf.size() / 2));
  TestClient second = harness.attach(2, policy(ptx::GuardPolicy::kTrap));
  const v1::CallReply refused =
      second.call(requests::moduleLoad(readTestFatbin(TestFatbin::kSm90), kAllKernels, kAllVariables));
  EXPECT_EQ(refused.error(), cudaErrorInvalidKernelImage) << describe(refused);
  EXPECT_NE(refused.error_detail().find("ELF image refused"), std::string::npos) << refused.error_detail();
}

// ---- the check of the emitted text before the JIT (ptx::checkEmittedText) ----

TEST(EmittedTextCheck, TheGuardsOutputPassesAndTextThatWouldCompileUnguardedAccessesIsRefused) {
  std::string text;
  for (const fatbin::Entry& entry : entriesOf(TestFatbin::kSm90)) {
    if (entry.kind == fatbin::EntryKind::kPtx) text = entry.payload;
  }
  ASSERT_FALSE(text.empty());
  const ptx::ParseResult parsed = ptx::parse(text);
  ASSERT_TRUE(parsed.ok) << parsed.error;
  const ptx::GuardOptions options = guardOptionsFor(ptx::GuardPolicy::kTrap, 0);
  const ptx::GuardResult guarded = ptx::guardModule(parsed.module, options);
  ASSERT_TRUE(guarded.ok) << guarded.error;
  PreparedImage good;
  ASSERT_TRUE(emitGuardedImage(guarded, options, &good)) << good.detail;
  EXPECT_TRUE(good.ok);
  EXPECT_TRUE(good.guarded);
  EXPECT_EQ(good.image.back(), '\0');

  // As if the rewrite had left accesses unchecked: the emitted text reads back as the module
  // handed over, but the independent checker finds its accesses unguarded.
  ptx::GuardResult unchecked = guarded;
  unchecked.module = parsed.module;
  PreparedImage refused;
  EXPECT_FALSE(emitGuardedImage(unchecked, options, &refused));
  EXPECT_FALSE(refused.ok);
  EXPECT_EQ(refused.error, cudaErrorInvalidPtx);
  EXPECT_TRUE(refused.image.empty()) << "nothing to compile";
  EXPECT_NE(refused.detail.find("unguarded"), std::string::npos) << refused.detail;
}

}  // namespace
}  // namespace agileos::worker::testing
