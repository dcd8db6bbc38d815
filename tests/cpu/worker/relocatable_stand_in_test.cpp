// A separately compiled (-rdc) image's relocatable PTX standing in for its linked SASS
// (worker/fatbin/relocatable_objects.h, prepareModuleImage with a stand-in in worker/module_guard.h):
// only where the linked SASS cannot load, under every guard setting, and through the runtime.
// The linked images here are SASS-only fatbins of the same sources (what a device link gives:
// SASS, no PTX); the objects are nvcc -rdc=true fatbins, as a version-2 wrapper lists them.
#include <driver_types.h>
#include <gtest/gtest.h>

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "memmgr/address_layout.h"
#include "tests/cpu/worker/support/guard_settings.h"
#include "tests/cpu/worker/support/requests.h"
#include "tests/cpu/worker/support/test_fatbins.h"
#include "tests/cpu/worker/support/worker_harness.h"
#include "worker/fatbin/relocatable_objects.h"
#include "worker/module_guard.h"

namespace agileos::worker::testing {
namespace {

// A program's relocatable objects as the worker receives them: their bytes, and views of those.
struct Objects {
  Objects(std::initializer_list<TestFatbin> which) {
    for (TestFatbin object : which) bytes.push_back(readTestFatbin(object));
    views.assign(bytes.begin(), bytes.end());
  }
  Objects(const Objects&) = delete;  // the views name these bytes
  Objects& operator=(const Objects&) = delete;
  std::vector<std::string> bytes;
  std::vector<std::string_view> views;
};

fatbin::RelocatableStandIn standInOf(std::initializer_list<TestFatbin> which) {
  const Objects objects(which);
  return fatbin::relocatableStandIn(objects.views);
}

bool isElf(const std::string& image) {
  return image.rfind(
             "\x7f"
             "ELF",
             0) == 0;
}

TEST(RelocatableStandIn, EachObjectsPtxIsKeptAndNothingElse) {
  const fatbin::RelocatableStandIn standIn = standInOf({TestFatbin::kSm90RdcObject});
  EXPECT_TRUE(standIn.unavailable.empty()) << standIn.unavailable;
  ASSERT_EQ(standIn.objects.size(), 1u);
  ASSERT_FALSE(standIn.objects[0].empty());
  for (const fatbin::Entry& entry : standIn.objects[0]) EXPECT_EQ(entry.kind, fatbin::EntryKind::kPtx);
  const fatbin::RelocatableStandIn two =
      standInOf({TestFatbin::kSm90RdcObject, TestFatbin::kConditionalRdcObject});
  EXPECT_TRUE(two.unavailable.empty()) << two.unavailable;
  EXPECT_EQ(two.objects.size(), 2u);
  const fatbin::RelocatableStandIn none = fatbin::relocatableStandIn({});
  EXPECT_TRUE(none.objects.empty());
  EXPECT_TRUE(none.unavailable.empty());
}

TEST(RelocatableStandIn, AnObjectWithoutPtxOrABadObjectGivesNoStandInAndSaysWhy) {
  const fatbin::RelocatableStandIn sassOnly =
      standInOf({TestFatbin::kSm90RdcObject, TestFatbin::kSm90RdcSassObject});
  EXPECT_TRUE(sassOnly.objects.empty());
  EXPECT_NE(sassOnly.unavailable.find("object 1 carries no PTX"), std::string::npos) << sassOnly.unavailable;

  std::string truncated = readTestFatbin(TestFatbin::kSm90RdcObject);
  truncated.resize(truncated.size() / 2);
  const fatbin::RelocatableStandIn bad = fatbin::relocatableStandIn({std::string_view(truncated)});
  EXPECT_TRUE(bad.objects.empty());
  EXPECT_NE(bad.unavailable.find("refused"), std::string::npos) << bad.unavailable;

  const std::string garbage(64, '\x5a');
  const fatbin::RelocatableStandIn notAFatbin = fatbin::relocatableStandIn({std::string_view(garbage)});
  EXPECT_TRUE(notAFatbin.objects.empty());
  EXPECT_FALSE(notAFatbin.unavailable.empty());
}

// Several objects: their PTX is merged into one module (ptx/object_merge.h), which carries every
// object's kernels and is guarded as one.
TEST(RelocatableStandIn, SeveralObjectsStandInMergedIntoOneModule) {
  const Objects objects({TestFatbin::kSm90RdcObject, TestFatbin::kConditionalRdcObject});
  for (GuardMode mode : {GuardMode::kOff, GuardMode::kTrap, GuardMode::kReport}) {
    SCOPED_TRACE(static_cast<int>(mode));
    const PreparedImage image = prepareModuleImage(entriesOf(TestFatbin::kConditionalSassOnly), 90,
                                                   guardConfig(mode, false), objects.views);
    ASSERT_TRUE(image.ok) << image.detail;
    EXPECT_TRUE(image.ptx);
    EXPECT_EQ(image.guarded, mode != GuardMode::kOff);
    EXPECT_NE(image.image.find(kAddKernel), std::string::npos) << "the first object's kernels";
    EXPECT_NE(image.image.find("countDown"), std::string::npos) << "the second object's kernels";
    EXPECT_NE(image.image.find(".func cudaGraphSetConditional("), std::string::npos);
  }
}

// graphConditionalNodes's case: the linked SASS calls the driver's cudaGraphSetConditional, which
// AgileOS never loads; the object's PTX gets AgileOS's definition instead, under every setting.
TEST(RelocatableStandIn, ConditionalsLoadFromTheObjectsPtxUnderEverySetting) {
  const Objects objects({TestFatbin::kConditionalRdcObject});
  for (GuardMode mode : {GuardMode::kOff, GuardMode::kTrap, GuardMode::kReport}) {
    SCOPED_TRACE(static_cast<int>(mode));
    const PreparedImage image =
        prepareModuleImage(entriesOf(TestFatbin::kConditionalSassOnly), 90, guardConfig(mode), objects.views);
    ASSERT_TRUE(image.ok) << image.detail;
    EXPECT_TRUE(image.ptx);
    EXPECT_EQ(image.guarded, mode != GuardMode::kOff);
    EXPECT_EQ(image.image.find(".extern .func cudaGraphSetConditional"), std::string::npos);
    EXPECT_NE(image.image.find(".func cudaGraphSetConditional("), std::string::npos);
  }
  // Without the objects it stays refused, as before.
  const PreparedImage alone =
      prepareModuleImage(entriesOf(TestFatbin::kConditionalSassOnly), 90, guardConfig(GuardMode::kOff),
                         std::vector<std::string_view>{});
  EXPECT_FALSE(alone.ok);
  EXPECT_NE(alone.detail.find("cudaGraphSetConditional"), std::string::npos) << alone.detail;
}

// Where the linked SASS may load, it does: the stand-in never replaces code that would run.
TEST(RelocatableStandIn, LinkedSassThatMayLoadIsNotReplaced) {
  const Objects objects({TestFatbin::kSm90RdcObject});
  for (const GuardConfig& setting : {guardConfig(GuardMode::kOff), guardConfig(GuardMode::kTrap, true)}) {
    const PreparedImage image =
        prepareModuleImage(entriesOf(TestFatbin::kSm90SassOnly), 90, setting, objects.views);
    ASSERT_TRUE(image.ok) << image.detail;
    EXPECT_FALSE(image.ptx);
    EXPECT_TRUE(isElf(image.image));
  }
}

// Where SASS may not load (sass_only = refuse; protected state in the context; protected-module
// functions to link; __managed__ variables to rewrite) the object's PTX is guarded instead.
TEST(RelocatableStandIn, WhereSassIsRefusedTheObjectsPtxIsGuarded) {
  const Objects objects({TestFatbin::kSm90RdcObject});
  GuardConfig beside = guardConfig(GuardMode::kTrap, true);
  beside.protectedState = true;
  for (const GuardConfig& setting : {guardConfig(GuardMode::kTrap, false), beside}) {
    const PreparedImage image =
        prepareModuleImage(entriesOf(TestFatbin::kSm90SassOnly), 90, setting, objects.views);
    ASSERT_TRUE(image.ok) << image.detail;
    EXPECT_TRUE(image.ptx);
    EXPECT_TRUE(image.guarded);
    EXPECT_GT(image.checkedAccesses, 0u);
  }
  GuardConfig managed = guardConfig(GuardMode::kOff);
  managed.managedVariables = true;
  const PreparedImage withManaged = prepareModuleImage(entriesOf(TestFatbin::kManagedSassOnly), 90, managed,
                                                       Objects({TestFatbin::kManagedRdcObject}).views);
  ASSERT_TRUE(withManaged.ok) << withManaged.detail;
  EXPECT_TRUE(withManaged.ptx);
  EXPECT_FALSE(withManaged.managedVariables.empty()) << "the object's variables are rewritten and bound";
}

TEST(RelocatableStandIn, WithoutAUsableStandInTheRefusalSaysWhy) {
  const GuardConfig strict = guardConfig(GuardMode::kTrap, false);
  const PreparedImage noPtx = prepareModuleImage(entriesOf(TestFatbin::kSm90SassOnly), 90, strict,
                                                 Objects({TestFatbin::kSm90RdcSassObject}).views);
  EXPECT_FALSE(noPtx.ok);
  EXPECT_EQ(noPtx.error, cudaErrorNoKernelImageForDevice);
  EXPECT_NE(noPtx.detail.find("only SASS"), std::string::npos) << noPtx.detail;
  EXPECT_NE(noPtx.detail.find("no PTX"), std::string::npos) << noPtx.detail;

  // Two objects that define the same kernels cannot be one module.
  const PreparedImage twice =
      prepareModuleImage(entriesOf(TestFatbin::kSm90SassOnly), 90, strict,
                         Objects({TestFatbin::kSm90RdcObject, TestFatbin::kSm90RdcObject}).views);
  EXPECT_FALSE(twice.ok);
  EXPECT_NE(twice.detail.find("cannot be merged"), std::string::npos) << twice.detail;
}

// Through the worker: a ModuleLoad that offers the objects loads where SASS is refused, its kernels
// resolve by name and launch; the same load without them is refused.
TEST(RelocatableStandIn, AModuleLoadOfferingItsObjectsLoadsWhereSassIsRefused) {
  WorkerHarness harness;
  TestClient client = harness.attach(1, guardConfig(GuardMode::kTrap, false));
  v1::CallRequest load = requests::moduleLoad(readTestFatbin(TestFatbin::kSm90SassOnly), kAllKernels, {});
  const v1::CallReply refused = client.call(load);
  EXPECT_EQ(refused.error(), cudaErrorNoKernelImageForDevice);
  load.mutable_module_load()->add_relocatable_objects(readTestFatbin(TestFatbin::kSm90RdcObject));
  const v1::CallReply loaded = client.call(load);
  ASSERT_EQ(loaded.error(), cudaSuccess) << loaded.error_detail();
  const v1::FunctionInfo* add = nullptr;
  for (const v1::FunctionInfo& info : loaded.module_loaded().functions())
    if (info.name() == kAddKernel) add = &info;
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->error(), 0);
  EXPECT_EQ(
      client.call(requests::launchKernel(add->token(), std::string(add->param_buffer_size(), '\0'))).error(),
      cudaSuccess);
  EXPECT_EQ(harness.gpu().launches().size(), 1u);

  // ModuleLoadImage (the driver API's loads) offers them the same way.
  v1::CallRequest image;
  image.mutable_module_load_image()->set_image(readTestFatbin(TestFatbin::kSm90SassOnly));
  EXPECT_EQ(client.call(image).error(), cudaErrorNoKernelImageForDevice);
  image.mutable_module_load_image()->add_relocatable_objects(readTestFatbin(TestFatbin::kSm90RdcObject));
  const v1::CallReply imageLoaded = client.call(image);
  EXPECT_EQ(imageLoaded.error(), cudaSuccess) << imageLoaded.error_detail();
}

}  // namespace
}  // namespace agileos::worker::testing
