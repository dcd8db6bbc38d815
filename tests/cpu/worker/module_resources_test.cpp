// The resource callbacks of protected module instances inside the worker (ModuleSet with its
// WorkerHostResources), driven through the client's ModuleControl calls with the real resource
// plugin (tests/cpu/modules/host/resource_plugin.c): DMA registrations need an exact allocation of
// the client and end when the client frees it; I/O mappings land in the MMIO window and are
// undone when the client is released.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstring>

#include "agileos/module_abi.h"
#include "memmgr/address_layout.h"
#include "tests/cpu/modules/host/resource_plugin_bytes.h"
#include "tests/cpu/worker/support/mmio_window.h"
#include "tests/cpu/worker/support/worker_harness.h"

namespace agileos::worker::testing {
namespace {

using protected_modules::AdmittedModule;

AdmittedModule resourceModule() { return {"resources", "1.0.0", "", AGILEOS_TEST_RESOURCE_PLUGIN, ""}; }

using agileos::modules::testing::Bytes;
using agileos::modules::testing::valueAt;

class ModuleResourcesTest : public ::testing::Test {
 protected:
  void TearDown() override { worker_.shutDown(); }

  TestClient attached(ClientId id) {
    EXPECT_TRUE(worker_.runtime().attach(id, WorkerHarness::tokenFor(id), {}, {}, {resourceModule()}));
    return TestClient(worker_.runtime(), id, WorkerHarness::tokenFor(id));
  }

  // Runs a command of the resource plugin; the call itself must succeed.
  static std::string control(TestClient& client, std::uint32_t command, const std::string& request) {
    v1::CallRequest call;
    call.mutable_module_control()->set_module("resources");
    call.mutable_module_control()->set_command(command);
    call.mutable_module_control()->set_request(request);
    const v1::CallReply reply = client.call(call);
    EXPECT_EQ(reply.error(), 0) << describe(reply);
    EXPECT_EQ(reply.module_control_result().status(), AGILEOS_MODULE_OK);
    return reply.module_control_result().response();
  }
  static std::pair<int, std::uint64_t> registerDma(TestClient& client, std::uint64_t address,
                                                   std::uint64_t bytes) {
    const std::string r = control(client, 5, Bytes().u64(address).u64(bytes).str());
    return {valueAt<std::int32_t>(r, 0), valueAt<std::uint64_t>(r, 8)};
  }
  static int exportDma(TestClient& client, std::uint64_t registration, std::uint64_t* handle_bytes = nullptr,
                       std::uint64_t* offset = nullptr, std::int64_t* fd_bytes = nullptr) {
    const std::string r = control(client, 7, Bytes().u64(registration).str());
    if (handle_bytes != nullptr) *handle_bytes = valueAt<std::uint64_t>(r, 8);
    if (offset != nullptr) *offset = valueAt<std::uint64_t>(r, 16);
    if (fd_bytes != nullptr) *fd_bytes = valueAt<std::int64_t>(r, 24);
    return valueAt<std::int32_t>(r, 0);
  }
  // The registrations the plugin was told were revoked.
  static std::vector<std::uint64_t> revoked(TestClient& client) {
    const std::string r = control(client, 8, "");
    std::vector<std::uint64_t> ids;
    for (std::uint32_t i = 0; i < valueAt<std::uint32_t>(r, 0); ++i)
      ids.push_back(valueAt<std::uint64_t>(r, 8 + 8 * i));
    return ids;
  }

  WorkerHarness worker_;
};

TEST_F(ModuleResourcesTest, ADmaRegistrationOfAnAllocationIsExportedAndEndsWithItsFree) {
  TestClient c = attached(1);
  const memmgr::DevicePtr p = c.malloc(4096);
  const memmgr::DevicePtr other = c.malloc(8192);
  const auto [code, registration] = registerDma(c, p, 4096);
  ASSERT_EQ(code, AGILEOS_MODULE_OK);
  const auto [other_code, other_registration] = registerDma(c, other, 8192);
  ASSERT_EQ(other_code, AGILEOS_MODULE_OK);

  std::uint64_t handle_bytes = 0, offset = 0;
  std::int64_t fd_bytes = -1;
  ASSERT_EQ(exportDma(c, registration, &handle_bytes, &offset, &fd_bytes), AGILEOS_MODULE_OK);
  EXPECT_LE(offset + 4096, handle_bytes);
  EXPECT_EQ(fd_bytes, static_cast<std::int64_t>(handle_bytes));

  c.free(p);
  EXPECT_EQ(revoked(c), std::vector<std::uint64_t>{registration});
  EXPECT_EQ(exportDma(c, registration), AGILEOS_MODULE_EPERM);
  EXPECT_EQ(exportDma(c, other_registration), AGILEOS_MODULE_OK);  // another allocation's: untouched
}

TEST_F(ModuleResourcesTest, RegisterDmaRefusesWhatIsNotExactlyOneAllocationOfTheClient) {
  TestClient mine = attached(1);
  TestClient theirs = attached(2);
  const memmgr::DevicePtr p = mine.malloc(4096);
  const memmgr::DevicePtr q = theirs.malloc(4096);
  EXPECT_EQ(registerDma(mine, q, 4096).first, AGILEOS_MODULE_EPERM);
  EXPECT_EQ(registerDma(mine, p + 256, 4096 - 256).first, AGILEOS_MODULE_EPERM);
  EXPECT_EQ(registerDma(mine, p, 4097).first, AGILEOS_MODULE_EPERM);
  const memmgr::DevicePtr freed = mine.malloc(512);
  mine.free(freed);
  EXPECT_EQ(registerDma(mine, freed, 512).first, AGILEOS_MODULE_EPERM);
  EXPECT_EQ(registerDma(mine, p, 4096).first, AGILEOS_MODULE_OK);
}

// A device reset frees every allocation of the client while its module instances live on, so it
// must end their DMA registrations as a free does (module_abi.h: a registration ends "when the
// client frees the allocation (the worker revokes it first and tells the plugin ...)").
TEST_F(ModuleResourcesTest, ADeviceResetRevokesTheDmaRegistrations) {
  TestClient c = attached(1);
  const memmgr::DevicePtr p = c.malloc(4096);
  const auto [code, registration] = registerDma(c, p, 4096);
  ASSERT_EQ(code, AGILEOS_MODULE_OK);
  ASSERT_EQ(c.call(requests::deviceReset()).error(), 0);
  EXPECT_EQ(revoked(c), std::vector<std::uint64_t>{registration});
  // Nor may the old registration cover a new allocation that happens to get the same range.
  const memmgr::DevicePtr again = c.malloc(4096);
  EXPECT_EQ(again, p);  // the premise of the line below
  EXPECT_EQ(exportDma(c, registration), AGILEOS_MODULE_EPERM);
}

TEST_F(ModuleResourcesTest, AnIoMappingIsInTheMmioWindowUntilTheClientIsReleased) {
  AGILEOS_SKIP_WITHOUT_MMIO_WINDOW();
  TestClient c = attached(1);
  const std::string r = control(c, 3, Bytes().u64(8192).u64(0).u64(8192).u32(0).u32(0).str());
  ASSERT_EQ(valueAt<std::int32_t>(r, 0), AGILEOS_MODULE_OK);
  const std::uint64_t address = valueAt<std::uint64_t>(r, 8);
  EXPECT_TRUE(memmgr::kMmioWindow.contains(address) && memmgr::kMmioWindow.contains(address + 8191))
      << std::hex << address;
  EXPECT_FALSE(addressRangeIsFree(address, 8192));
  EXPECT_EQ(worker_.gpu().registeredHostRanges(), 1u);
  ASSERT_TRUE(worker_.runtime().release(1));
  EXPECT_TRUE(addressRangeIsFree(address, 8192));
  EXPECT_EQ(worker_.gpu().registeredHostRanges(), 0u);
}

}  // namespace
}  // namespace agileos::worker::testing
