// Protected module instances in the worker (worker/protected_modules/): made at attach from the daemon's
// admitted list with the real counter plugin (tests/cpu/modules/host/counter_plugin.c), reached
// only by their own client's ModuleControl calls, allocating protected memory through the
// worker's memory manager, and torn down in reverse order when the client is released.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <future>
#include <sstream>

#include "agileos/module_abi.h"
#include "proto/framing.h"
#include "tests/cpu/worker/support/worker_harness.h"
#include "worker/control_channel.h"

namespace agileos::worker::testing {
namespace {

using protected_modules::AdmittedModule;

AdmittedModule counterModule(const std::string& name) {
  return {name, "1.0.0", "", AGILEOS_TEST_COUNTER_PLUGIN, ""};
}

v1::CallRequest moduleControl(const std::string& module, std::uint32_t command, std::string request) {
  v1::CallRequest call;
  call.mutable_module_control()->set_module(module);
  call.mutable_module_control()->set_command(command);
  call.mutable_module_control()->set_request(std::move(request));
  return call;
}

// Everything the worker logs while it lives (the plugin's cleanup lines among it).
class LogCapture {
 public:
  LogCapture() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(stream_);
    sink->set_pattern("%v");
    auto logger = std::make_shared<spdlog::logger>("module_set_test", std::move(sink));
    logger->set_level(spdlog::level::debug);
    spdlog::set_default_logger(std::move(logger));
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

  std::string text() {
    spdlog::default_logger()->flush();
    return stream_.str();
  }

 private:
  std::shared_ptr<spdlog::logger> previous_;
  std::ostringstream stream_;
};

class ModuleSetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // A second reference to the plugin the worker loads, for its own call counter.
    handle_ = dlopen(AGILEOS_TEST_COUNTER_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    calls_ = reinterpret_cast<std::uint64_t (*)()>(dlsym(handle_, "counter_plugin_calls"));
    ASSERT_NE(calls_, nullptr);
  }
  void TearDown() override {
    worker_.shutDown();  // before the log capture goes and before the plugin's last reference
    if (handle_ != nullptr) dlclose(handle_);
  }

  bool attach(ClientId id, const std::vector<AdmittedModule>& modules) {
    return worker_.runtime().attach(id, WorkerHarness::tokenFor(id), {}, {}, modules);
  }
  TestClient client(ClientId id) { return TestClient(worker_.runtime(), id, WorkerHarness::tokenFor(id)); }

  LogCapture log_;  // declared first: outlives the worker
  WorkerHarness worker_;
  void* handle_ = nullptr;
  std::uint64_t (*calls_)() = nullptr;
};

TEST_F(ModuleSetTest, EchoReachesTheClientsInstance) {
  ASSERT_TRUE(attach(1, {counterModule("counter")}));
  const std::uint64_t before = calls_();
  const v1::CallReply reply = client(1).call(moduleControl("counter", 1, "hello"));
  ASSERT_EQ(reply.error(), 0) << describe(reply);
  ASSERT_TRUE(reply.has_module_control_result());
  EXPECT_EQ(reply.module_control_result().status(), AGILEOS_MODULE_OK);
  EXPECT_EQ(reply.module_control_result().response(), "hello");
  EXPECT_EQ(calls_(), before + 1);
}

TEST_F(ModuleSetTest, RefusedCallsNeverReachThePlugin) {
  ASSERT_TRUE(attach(1, {counterModule("counter")}));
  TestClient c = client(1);
  const std::uint64_t before = calls_();

  v1::CallReply reply = c.call(moduleControl("nope", 1, "x"));
  EXPECT_EQ(reply.error(), cudaErrorInvalidValue);
  EXPECT_EQ(reply.error_detail(), "no module 'nope' for this client");
  EXPECT_FALSE(reply.has_module_control_result());

  // An untrusted name is cut to 64 bytes, its unprintable bytes replaced.
  reply = c.call(moduleControl(std::string(100, 'x') + "\n", 1, "x"));
  EXPECT_EQ(reply.error(), cudaErrorInvalidValue);
  EXPECT_EQ(reply.error_detail(), "no module '" + std::string(64, 'x') + "'... for this client");
  reply = c.call(moduleControl("a\nb", 1, "x"));
  EXPECT_EQ(reply.error_detail(), "no module 'a?b' for this client");

  reply = c.call(moduleControl("counter", 42, "x"));  // unknown command
  EXPECT_EQ(reply.error(), cudaErrorInvalidValue);
  EXPECT_EQ(reply.module_control_result().status(), AGILEOS_MODULE_ENOTSUP);
  EXPECT_NE(reply.error_detail().find("no command 42"), std::string::npos) << reply.error_detail();

  reply = c.call(moduleControl("counter", 2, std::string(7, 'a')));  // add takes 8 bytes
  EXPECT_EQ(reply.error(), cudaErrorInvalidValue);
  EXPECT_EQ(reply.module_control_result().status(), AGILEOS_MODULE_EINVAL);
  EXPECT_NE(reply.error_detail().find("not 7 bytes"), std::string::npos) << reply.error_detail();

  reply = c.call(moduleControl("counter", 1, std::string(4097, 'a')));  // echo takes at most 4096
  EXPECT_EQ(reply.error(), cudaErrorInvalidValue);
  EXPECT_EQ(reply.module_control_result().status(), AGILEOS_MODULE_EINVAL);
  EXPECT_TRUE(reply.module_control_result().response().empty());

  // Past the ABI's payload limit the worker refuses before the instance copies anything.
  reply = c.call(moduleControl("counter", 1, std::string(AGILEOS_MODULE_MAX_PAYLOAD_BYTES + 1, 'a')));
  EXPECT_EQ(reply.error(), cudaErrorInvalidValue);
  EXPECT_NE(reply.error_detail().find("exceeds"), std::string::npos) << reply.error_detail();
  EXPECT_FALSE(reply.has_module_control_result());

  EXPECT_EQ(calls_(), before);
}

TEST_F(ModuleSetTest, ProtectedMemoryComesFromTheMemoryManagerAndIsRevokedAtRelease) {
  ASSERT_TRUE(attach(1, {counterModule("counter")}));
  ASSERT_TRUE(attach(2, {}));
  memmgr::MemoryManager& memory = worker_.memory();
  EXPECT_EQ(memory.protectedBytes(1), 0u);

  // store: allocate, write and read back through the fake GPU; the plugin keeps the allocation.
  const v1::CallReply reply = client(1).call(moduleControl("counter", 3, "protected payload"));
  ASSERT_EQ(reply.error(), 0) << describe(reply);
  EXPECT_EQ(reply.module_control_result().response(), "protected payload");
  EXPECT_EQ(memory.protectedBytes(1), memory.granularity());
  EXPECT_EQ(memory.protectedBytes(2), 0u);

  ASSERT_TRUE(worker_.runtime().release(1));
  EXPECT_EQ(memory.protectedBytes(1), 0u);
  const std::string text = log_.text();
  EXPECT_NE(text.find("module 'counter' (client 1): "), std::string::npos) << text;
  EXPECT_NE(text.find("revoked 1 protected allocation(s)"), std::string::npos) << text;
}

TEST_F(ModuleSetTest, DeviceResetKeepsTheInstancesAndTheirMemory) {
  ASSERT_TRUE(attach(1, {counterModule("counter")}));
  TestClient c = client(1);
  ASSERT_EQ(c.call(moduleControl("counter", 3, "kept")).error(), 0);
  const std::uint64_t held = worker_.memory().protectedBytes(1);
  ASSERT_EQ(c.call(requests::deviceReset()).error(), 0);
  EXPECT_EQ(worker_.memory().protectedBytes(1), held);
  const v1::CallReply reply = c.call(moduleControl("counter", 1, "still here"));
  ASSERT_EQ(reply.error(), 0) << describe(reply);
  EXPECT_EQ(reply.module_control_result().response(), "still here");
}

TEST_F(ModuleSetTest, InstancesAreTornDownInReverseOrder) {
  ASSERT_TRUE(attach(1, {counterModule("first"), counterModule("second")}));
  ASSERT_TRUE(worker_.runtime().release(1));
  const std::string text = log_.text();
  const auto second = text.find("module 'second' (client 1): cleanup");
  const auto first = text.find("module 'first' (client 1): cleanup");
  ASSERT_NE(second, std::string::npos) << text;
  ASSERT_NE(first, std::string::npos) << text;
  EXPECT_LT(second, first) << text;
}

TEST_F(ModuleSetTest, AMissingLibraryRefusesTheAttachAndLeavesNothing) {
  const AdmittedModule missing{"missing", "1.0.0", "", "/nonexistent/libmissing.so", ""};
  EXPECT_FALSE(attach(1, {counterModule("first"), missing}));
  EXPECT_EQ(worker_.runtime().clientCount(), 0u);
  EXPECT_FALSE(worker_.runtime().isAttachedToken(WorkerHarness::tokenFor(1)));
  const std::string text = log_.text();
  EXPECT_NE(text.find("module 'first' (client 1): cleanup"), std::string::npos) << text;  // undone
  EXPECT_NE(text.find("/nonexistent/libmissing.so"), std::string::npos) << text;
  // Nothing of the refused attach stands in the way of the next one.
  EXPECT_TRUE(attach(1, {counterModule("first")}));
}

TEST_F(ModuleSetTest, AMalformedListRefusesTheAttach) {
  EXPECT_FALSE(attach(1, {counterModule("twice"), counterModule("twice")}));
  EXPECT_FALSE(attach(1, {counterModule("")}));
  EXPECT_EQ(worker_.runtime().clientCount(), 0u);
}

TEST_F(ModuleSetTest, AnotherClientCannotReachTheInstance) {
  ASSERT_TRUE(attach(1, {counterModule("counter")}));
  ASSERT_TRUE(attach(2, {}));
  const std::uint64_t before = calls_();
  const v1::CallReply reply = client(2).call(moduleControl("counter", 3, "not yours"));
  EXPECT_EQ(reply.error(), cudaErrorInvalidValue);
  EXPECT_EQ(reply.error_detail(), "no module 'counter' for this client");
  EXPECT_EQ(calls_(), before);
  EXPECT_EQ(worker_.memory().protectedBytes(1), 0u);
  EXPECT_EQ(worker_.memory().protectedBytes(2), 0u);
}

// A module's device code as nvcc -rdc -ptx writes it: one exported function.
constexpr const char* kKernelsPtx = R"(.version 8.0
.target sm_75
.address_size 64

.visible .func  (.param .b32 func_retval0) agileos_kernels_answer()
{
	.reg .b32 %r<2>;
	mov.u32 %r1, 42;
	st.param.b32 [func_retval0+0], %r1;
	ret;
}
)";

TEST_F(ModuleSetTest, AModuleWithOnlyDeviceCodeHasNoInstance) {
  char path[] = "/tmp/agileos-kernels-XXXXXX.ptx";
  const int fd = ::mkstemps(path, 4);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, kKernelsPtx, std::strlen(kKernelsPtx)),
            static_cast<ssize_t>(std::strlen(kKernelsPtx)));
  ::close(fd);
  const AdmittedModule deviceCode{"kernels", "2.0.0", path, "", ""};
  const bool attached = attach(1, {deviceCode});
  ::unlink(path);
  ASSERT_TRUE(attached);
  const v1::CallReply reply = client(1).call(moduleControl("kernels", 1, ""));
  EXPECT_EQ(reply.error(), cudaErrorInvalidValue);
  EXPECT_EQ(reply.error_detail(), "no module 'kernels' for this client");
}

// Device code that cannot be read, or that breaks the module rules, refuses the attach.
TEST_F(ModuleSetTest, UnreadableOrInvalidDeviceCodeRefusesTheAttach) {
  EXPECT_FALSE(attach(1, {AdmittedModule{"kernels", "2.0.0", "/nonexistent/kernels.ptx", "", ""}}));
  char path[] = "/tmp/agileos-badkernels-XXXXXX.ptx";
  const int fd = ::mkstemps(path, 4);
  ASSERT_GE(fd, 0);
  const std::string global = std::string(kKernelsPtx) + ".global .u64 agileos_kernels_state;\n";
  ASSERT_EQ(::write(fd, global.data(), global.size()), static_cast<ssize_t>(global.size()));
  ::close(fd);
  const bool attached = attach(2, {AdmittedModule{"kernels", "2.0.0", path, "", ""}});
  ::unlink(path);
  EXPECT_FALSE(attached);  // a module global would live in user-writable memory
}

// The control channel passes AttachClient.modules on: an admitted plugin is reachable, a
// module that cannot be created gets no `attached` (the daemon's existing refusal path).
TEST_F(ModuleSetTest, TheControlChannelAttachesWithModules) {
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
  ControlChannel channel(fds[0]);
  auto serving = std::async(std::launch::async, [&] { channel.serve(worker_.runtime()); });
  auto attachWith = [&](ClientId id, const std::string& library) {
    v1::internal::DaemonToWorker message;
    auto* attach = message.mutable_attach();
    attach->set_client_id(id);
    attach->set_session_token(WorkerHarness::tokenFor(id));
    attach->set_guard_policy("off");
    auto* module = attach->add_modules();
    module->set_name("counter");
    module->set_version("1.0.0");
    module->set_host_library_path(library);
    EXPECT_EQ(wire::writeFrame(fds[1], message), wire::FrameStatus::kOk);
  };
  auto attached = [&](int timeoutMs) -> std::optional<ClientId> {
    pollfd readable{fds[1], POLLIN, 0};
    if (::poll(&readable, 1, timeoutMs) != 1) return std::nullopt;
    v1::internal::WorkerToDaemon reply;
    if (wire::readFrame(fds[1], &reply) != wire::FrameStatus::kOk || !reply.has_attached())
      return std::nullopt;
    return reply.attached().client_id();
  };

  attachWith(1, AGILEOS_TEST_COUNTER_PLUGIN);
  EXPECT_EQ(attached(5000), std::optional<ClientId>(1));
  const v1::CallReply reply = client(1).call(moduleControl("counter", 1, "via the channel"));
  EXPECT_EQ(reply.module_control_result().response(), "via the channel") << describe(reply);

  attachWith(2, "/nonexistent/libcounter.so");
  EXPECT_EQ(attached(300), std::nullopt);
  EXPECT_EQ(worker_.runtime().clientCount(), 1u);

  ::close(fds[1]);  // serve() returns
  serving.wait();
  ::close(fds[0]);
}

}  // namespace
}  // namespace agileos::worker::testing
