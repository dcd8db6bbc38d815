// __managed__ variables in the worker (worker/host_memory/managed_variables.h), on the fake GPU:
// a module whose client names its managed variables loads from its rewritten PTX; each variable
// is bound once to a managed segment of its size, whose address goes into the module's slot; a
// bound segment cannot be freed by HostFree and goes with its module; a module with managed
// variables and no PTX is refused with the reason; tables are the client's own.
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <string>

#include "memmgr/address_layout.h"
#include "tests/cpu/worker/support/worker_harness.h"

namespace agileos::worker::testing {
namespace {

constexpr char kCounter[] = "agileos_managed_counter";
constexpr char kTable[] = "agileos_managed_table";
constexpr char kBump[] = "agileos_managed_bump";

v1::CallRequest loadManaged(TestFatbin which) {
  v1::CallRequest request = requests::moduleLoad(readTestFatbin(which), {kBump}, {});
  request.mutable_module_load()->add_managed_variable_names(kCounter);
  request.mutable_module_load()->add_managed_variable_names(kTable);
  // The slots are found by the worker; asking for the first one as a plain variable lets the
  // test read what the worker wrote there.
  request.mutable_module_load()->add_variable_names("__agileos_managed_slot0");
  return request;
}

v1::CallRequest bind(std::uint64_t module, const std::string& name, std::uint64_t size) {
  v1::CallRequest request;
  request.mutable_host_alloc()->set_size(size);
  request.mutable_host_alloc()->set_managed(true);
  request.mutable_host_alloc()->mutable_managed_variable()->set_module(module);
  request.mutable_host_alloc()->mutable_managed_variable()->set_name(name);
  return request;
}

// A client on a shared-memory connection (host segments exist only there).
struct SharedClient {
  WorkerHarness& worker;
  std::string token;
  SharedMemoryChannel shared;

  v1::CallReply call(const v1::CallRequest& request) {
    v1::CallReply reply;
    EXPECT_EQ(worker.runtime().call(token, request, reply, &shared), WorkerRuntime::CallStatus::kOk);
    for (int fd : shared.fdsToSend) ::close(fd);
    shared.fdsToSend.clear();
    return reply;
  }
};

TEST(ManagedVariables, EachVariableIsBoundOnceToManagedMemoryNamedByItsSlot) {
#if defined(__SANITIZE_THREAD__)
  // The managed window [0x300000000000, 0x400000000000) is no application memory for
  // ThreadSanitizer, whose mmap interceptor aborts on a mapping there (as for the MMIO window:
  // support/mmio_window.h).
  GTEST_SKIP() << "ThreadSanitizer keeps the managed window for itself";
#endif
  WorkerHarness worker;
  TestClient plain = worker.attach(1);
  SharedClient client{worker, plain.token(), {}};
  const v1::CallReply loaded = client.call(loadManaged(TestFatbin::kManagedSm90));
  ASSERT_EQ(loaded.error(), 0) << describe(loaded);
  const std::uint64_t module = loaded.module_loaded().module();
  ASSERT_EQ(loaded.module_loaded().managed_variables_size(), 2);
  EXPECT_EQ(loaded.module_loaded().managed_variables(0).size(), 4u);
  EXPECT_EQ(loaded.module_loaded().managed_variables(1).size(), 64u);
  ASSERT_EQ(loaded.module_loaded().functions(0).error(), 0) << "the rewritten module's kernel resolves";
  ASSERT_EQ(loaded.module_loaded().variables(0).error(), 0);
  const CUdeviceptr slot = loaded.module_loaded().variables(0).dptr();

  EXPECT_EQ(client.call(bind(module, kCounter, 8)).error(), cudaErrorInvalidValue)
      << "not the variable's size";
  EXPECT_EQ(client.call(bind(module, "agileos_nothing", 4)).error(), cudaErrorInvalidSymbol);
  EXPECT_EQ(client.call(bind(module + 1, kCounter, 4)).error(), cudaErrorInvalidValue) << "no such module";
  const v1::CallReply bound = client.call(bind(module, kCounter, 4));
  ASSERT_EQ(bound.error(), 0) << describe(bound);
  const std::uint64_t address = bound.host_segment().device_address();
  EXPECT_GE(address, memmgr::kManagedWindow.begin);
  EXPECT_LT(address, memmgr::kManagedWindow.end());
  std::uint64_t inSlot = 0;
  ASSERT_EQ(worker.gpu().copyDeviceToHost(&inSlot, slot, sizeof inSlot, nullptr, false), CUDA_SUCCESS);
  EXPECT_EQ(inSlot, address) << "the slot names the variable's memory";
  EXPECT_EQ(client.call(bind(module, kCounter, 4)).error(), cudaErrorInvalidSymbol) << "bound once";

  // Another client knows nothing of the module.
  TestClient other = worker.attach(2);
  SharedClient stranger{worker, other.token(), {}};
  EXPECT_NE(stranger.call(bind(module, kTable, 64)).error(), 0);

  ASSERT_EQ(client.call(bind(module, kTable, 64)).error(), 0);
  v1::CallRequest free;
  free.mutable_host_free()->set_segment(bound.host_segment().segment());
  EXPECT_EQ(client.call(free).error(), cudaErrorInvalidValue) << "a variable's memory goes with its module";

  EXPECT_EQ(client.call(requests::moduleUnload(module)).error(), 0);
  EXPECT_EQ(client.call(free).error(), cudaErrorInvalidValue) << "freed with the module";
}

// An image loaded at run time (cuModuleLoadData, cuLibraryLoadData) whose client binds its managed
// variables at the load: every managed variable is named in the reply (the client knows no names),
// and each is bound like a registered module's.
TEST(ManagedVariables, ARunTimeImageNamesEveryVariableWhenItsClientBindsThem) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "ThreadSanitizer keeps the managed window for itself";
#endif
  WorkerHarness worker;
  TestClient plain = worker.attach(1);
  SharedClient client{worker, plain.token(), {}};
  v1::CallRequest load;
  load.mutable_module_load_image()->set_image(readTestFatbin(TestFatbin::kManagedSm90));
  load.mutable_module_load_image()->set_bind_managed_variables(true);
  const v1::CallReply loaded = client.call(load);
  ASSERT_EQ(loaded.error(), 0) << describe(loaded);
  const std::uint64_t module = loaded.module_loaded().module();
  ASSERT_EQ(loaded.module_loaded().managed_variables_size(), 2);
  std::map<std::string, std::uint64_t> sizes;
  for (const v1::VariableInfo& info : loaded.module_loaded().managed_variables())
    sizes[info.name()] = info.size();
  EXPECT_EQ(sizes[kCounter], 4u);
  EXPECT_EQ(sizes[kTable], 64u);
  EXPECT_EQ(client.call(bind(module, kCounter, 4)).error(), 0);
  EXPECT_EQ(client.call(bind(module, kTable, 64)).error(), 0);
  EXPECT_EQ(client.call(bind(module, kTable, 64)).error(), cudaErrorInvalidSymbol) << "bound once";
  EXPECT_EQ(client.call(requests::moduleUnload(module)).error(), 0);
}

TEST(ManagedVariables, AModuleWithoutPtxIsRefusedWithTheReason) {
  WorkerHarness worker;
  TestClient plain = worker.attach(1);
  SharedClient client{worker, plain.token(), {}};
  const v1::CallReply reply = client.call(loadManaged(TestFatbin::kManagedSassOnly));
  EXPECT_EQ(reply.error(), cudaErrorNoKernelImageForDevice) << describe(reply);
  EXPECT_NE(reply.error_detail().find("__managed__"), std::string::npos) << describe(reply);
}

}  // namespace
}  // namespace agileos::worker::testing
