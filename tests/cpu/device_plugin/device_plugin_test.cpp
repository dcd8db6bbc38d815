// agileos-device-plugin as the kubelet sees it: the real binary against a fake kubelet
// (fake_kubelet.h) in a scratch device-plugin directory, with a stand-in for agileosd's socket.
// Waits are generous (seconds against a 100 ms poll interval); nothing asserts how fast.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <thread>

#include "kubelet/deviceplugin/v1beta1/api.grpc.pb.h"
#include "tests/cpu/device_plugin/fake_kubelet.h"
#include "tests/cpu/device_plugin/test_processes.h"

namespace agileos::device_plugin::testing {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr auto kWait = 20s;
constexpr int kSlots = 3;

bool waitFor(const std::function<bool()>& condition) {
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

bool isSocket(const fs::path& path) {
  struct stat status {};
  return ::lstat(path.c_str(), &status) == 0 && S_ISSOCK(status.st_mode);
}

class DevicePluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/agileos-dp.XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    root_ = pattern;
    plugin_dir_ = root_ / "device-plugins";
    run_dir_ = root_ / "run";
    shim_dir_ = root_ / "shim";
    for (const fs::path& dir : {plugin_dir_, run_dir_, shim_dir_}) fs::create_directories(dir);
    // Stand-ins for the installed shims: Allocate checks only that they are there.
    for (const char* name : {"libagileos_cudart.so", "libagileos_cuda.so", "libagileos_cufft.so"})
      std::ofstream(shim_dir_ / name) << "shim";
  }

  void TearDown() override {
    if (plugin_ && HasFailure()) std::cerr << "--- plugin log\n" << plugin_->log() << "---\n";
    plugin_.reset();
    fs::remove_all(root_);
  }

  fs::path kubeletSocket() const { return plugin_dir_ / "kubelet.sock"; }
  fs::path pluginSocket() const { return plugin_dir_ / "agileos.sock"; }
  fs::path daemonSocket() const { return run_dir_ / "agileosd.sock"; }

  void startPlugin() {
    plugin_ = std::make_unique<PluginProcess>(
        std::vector<std::string>{"--plugin-dir", plugin_dir_.string(), "--daemon-socket",
                                 daemonSocket().string(), "--runtime-dir", run_dir_.string(), "--shim-dir",
                                 shim_dir_.string(), "--slots", std::to_string(kSlots), "--poll-interval-ms",
                                 "100", "--log-level", "debug"},
        (root_ / "plugin.log").string());
    ASSERT_TRUE(plugin_->started());
  }

  std::unique_ptr<v1beta1::DevicePlugin::Stub> pluginStub() const {
    return v1beta1::DevicePlugin::NewStub(
        grpc::CreateChannel("unix:" + pluginSocket().string(), grpc::InsecureChannelCredentials()));
  }

  // Allocate over the plugin's socket, as the kubelet calls it.
  grpc::Status allocate(const std::vector<std::vector<std::string>>& containers,
                        v1beta1::AllocateResponse* response) {
    v1beta1::AllocateRequest request;
    for (const auto& ids : containers) {
      auto* container = request.add_container_requests();
      for (const std::string& id : ids) container->add_devices_ids(id);
    }
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kWait);
    context.set_wait_for_ready(true);
    return pluginStub()->Allocate(&context, request, response);
  }

  fs::path root_, plugin_dir_, run_dir_, shim_dir_;
  std::unique_ptr<PluginProcess> plugin_;
};

std::vector<std::string> expectedIds() {
  return {"agileos-gpu0-slot0", "agileos-gpu0-slot1", "agileos-gpu0-slot2"};
}

// Every device of `response`, in order, has its expected ID and `health`.
void expectDevices(const v1beta1::ListAndWatchResponse& response, const std::string& health) {
  ASSERT_EQ(response.devices_size(), kSlots);
  for (int i = 0; i < kSlots; ++i) {
    EXPECT_EQ(response.devices(i).id(), expectedIds()[static_cast<std::size_t>(i)]);
    EXPECT_EQ(response.devices(i).health(), health) << response.devices(i).id();
  }
}

TEST_F(DevicePluginTest, RegistersItsResourceWithTheKubelet) {
  FakeKubelet kubelet(kubeletSocket());
  startPlugin();
  const auto requests = kubelet.waitForRegistrations(1, kWait);
  ASSERT_EQ(requests.size(), 1u) << "no Register within the wait";
  EXPECT_EQ(requests[0].version(), "v1beta1");
  EXPECT_EQ(requests[0].endpoint(), "agileos.sock");
  EXPECT_EQ(requests[0].resource_name(), "agileos.io/gpu");
  EXPECT_FALSE(requests[0].options().pre_start_required());
  EXPECT_FALSE(requests[0].options().get_preferred_allocation_available());
  // The endpoint it registered is a socket in the kubelet's directory that serves DevicePlugin.
  EXPECT_TRUE(isSocket(pluginSocket()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kWait);
  v1beta1::DevicePluginOptions options;
  ASSERT_TRUE(pluginStub()->GetDevicePluginOptions(&context, v1beta1::Empty(), &options).ok());
  EXPECT_FALSE(options.pre_start_required());
  // Registered once: the same kubelet is not asked again.
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(kubelet.registrations(), 1u);
}

TEST_F(DevicePluginTest, ListAndWatchFollowsTheDaemonSocket) {
  auto daemon = std::make_unique<ListeningSocket>(daemonSocket());
  ASSERT_TRUE(daemon->listening());
  FakeKubelet kubelet(kubeletSocket());
  startPlugin();
  ASSERT_EQ(kubelet.waitForRegistrations(1, kWait).size(), 1u);

  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + 4 * kWait);
  auto stream = pluginStub()->ListAndWatch(&context, v1beta1::Empty());
  v1beta1::ListAndWatchResponse response;
  ASSERT_TRUE(stream->Read(&response));
  expectDevices(response, "Healthy");

  // The daemon died and left its socket file: connects are refused.
  daemon->closeKeepingFile();
  ASSERT_TRUE(stream->Read(&response));
  expectDevices(response, "Unhealthy");

  // A daemon listens again.
  daemon = std::make_unique<ListeningSocket>(daemonSocket());
  ASSERT_TRUE(daemon->listening());
  ASSERT_TRUE(stream->Read(&response));
  expectDevices(response, "Healthy");

  // The socket file disappears.
  daemon.reset();
  ASSERT_FALSE(fs::exists(daemonSocket()));
  ASSERT_TRUE(stream->Read(&response));
  expectDevices(response, "Unhealthy");
  context.TryCancel();
}

TEST_F(DevicePluginTest, StartsUnhealthyWithoutADaemon) {
  FakeKubelet kubelet(kubeletSocket());
  startPlugin();
  ASSERT_EQ(kubelet.waitForRegistrations(1, kWait).size(), 1u);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kWait);
  auto stream = pluginStub()->ListAndWatch(&context, v1beta1::Empty());
  v1beta1::ListAndWatchResponse response;
  ASSERT_TRUE(stream->Read(&response));
  expectDevices(response, "Unhealthy");
  context.TryCancel();
}

TEST_F(DevicePluginTest, AllocateGivesTheCdiDeviceAndTheEditsButNoDeviceNode) {
  ListeningSocket daemon(daemonSocket());
  FakeKubelet kubelet(kubeletSocket());
  startPlugin();
  ASSERT_EQ(kubelet.waitForRegistrations(1, kWait).size(), 1u);

  v1beta1::AllocateResponse response;
  const grpc::Status status =
      allocate({{"agileos-gpu0-slot1"}, {"agileos-gpu0-slot0", "agileos-gpu0-slot2"}}, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.container_responses_size(), 2);
  for (const auto& container : response.container_responses()) {
    ASSERT_EQ(container.cdi_devices_size(), 1);
    EXPECT_EQ(container.cdi_devices(0).name(), "agileos.io/gpu=0");
    EXPECT_EQ(container.devices_size(), 0) << "a client container must get no device node";
    EXPECT_EQ(container.annotations_size(), 0);
    ASSERT_EQ(container.envs_size(), 2);
    // The shims that are there, the runtime's first; libagileos_nvrtc.so is not installed here.
    EXPECT_EQ(container.envs().at("LD_PRELOAD"), (shim_dir_ / "libagileos_cudart.so").string() + ":" +
                                                     (shim_dir_ / "libagileos_cuda.so").string() + ":" +
                                                     (shim_dir_ / "libagileos_cufft.so").string());
    EXPECT_EQ(container.envs().at("AGILEOS_SOCKET"), daemonSocket().string());
    // runtime_dir is the socket's directory here: one mount serves both.
    ASSERT_EQ(container.mounts_size(), 2);
    EXPECT_EQ(container.mounts(0).host_path(), shim_dir_.string());
    EXPECT_EQ(container.mounts(0).container_path(), shim_dir_.string());
    EXPECT_TRUE(container.mounts(0).read_only());
    EXPECT_EQ(container.mounts(1).host_path(), run_dir_.string());
    EXPECT_EQ(container.mounts(1).container_path(), run_dir_.string());
    EXPECT_TRUE(container.mounts(1).read_only());
  }
}

TEST_F(DevicePluginTest, AllocateRefusesWhatItDidNotAdvertise) {
  ListeningSocket daemon(daemonSocket());
  FakeKubelet kubelet(kubeletSocket());
  startPlugin();
  ASSERT_EQ(kubelet.waitForRegistrations(1, kWait).size(), 1u);
  const std::vector<std::vector<std::vector<std::string>>> refused = {
      {{"nvidia0"}},
      {{"agileos-gpu0-slot3"}},                        // beyond --slots
      {{"agileos-gpu1-slot0"}},                        // another GPU's
      {{"agileos-gpu0-slot0", "agileos-gpu0-slotX"}},  // one good, one not
      {{"agileos-gpu0-slot0"}, {"bogus"}},             // the second container's
      {{"agileos-gpu0-slot1", "agileos-gpu0-slot1"}},  // twice
      {{}},                                            // none
  };
  for (const auto& containers : refused) {
    v1beta1::AllocateResponse response;
    const grpc::Status status = allocate(containers, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << "request " << (&containers - refused.data()) << ": " << status.error_message();
  }
  // And the plugin still serves a good request after them.
  v1beta1::AllocateResponse response;
  EXPECT_TRUE(allocate({{"agileos-gpu0-slot0"}}, &response).ok());
}

TEST_F(DevicePluginTest, AllocateRefusesWhenTheRuntimeShimIsMissing) {
  fs::remove(shim_dir_ / "libagileos_cudart.so");
  FakeKubelet kubelet(kubeletSocket());
  startPlugin();
  ASSERT_EQ(kubelet.waitForRegistrations(1, kWait).size(), 1u);
  v1beta1::AllocateResponse response;
  EXPECT_EQ(allocate({{"agileos-gpu0-slot0"}}, &response).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
}

// A restarting kubelet clears the device-plugin directory (the plugin's socket with it) and
// makes a new kubelet.sock: the plugin serves on a new socket and registers again.
TEST_F(DevicePluginTest, RegistersAgainWhenTheKubeletRestarts) {
  ListeningSocket daemon(daemonSocket());
  auto kubelet = std::make_unique<FakeKubelet>(kubeletSocket());
  startPlugin();
  ASSERT_EQ(kubelet->waitForRegistrations(1, kWait).size(), 1u);

  kubelet.reset();
  ASSERT_TRUE(fs::remove(pluginSocket()));
  kubelet = std::make_unique<FakeKubelet>(kubeletSocket());
  const auto requests = kubelet->waitForRegistrations(1, kWait);
  ASSERT_EQ(requests.size(), 1u) << "no Register with the restarted kubelet";
  EXPECT_EQ(requests[0].endpoint(), "agileos.sock");
  EXPECT_EQ(requests[0].resource_name(), "agileos.io/gpu");
  ASSERT_TRUE(isSocket(pluginSocket()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + kWait);
  auto stream = pluginStub()->ListAndWatch(&context, v1beta1::Empty());
  v1beta1::ListAndWatchResponse response;
  ASSERT_TRUE(stream->Read(&response));
  expectDevices(response, "Healthy");
  context.TryCancel();
}

// A kubelet that comes back without touching the plugin's socket is registered with too.
TEST_F(DevicePluginTest, RegistersAgainWithANewKubeletSocketAlone) {
  auto kubelet = std::make_unique<FakeKubelet>(kubeletSocket());
  startPlugin();
  ASSERT_EQ(kubelet->waitForRegistrations(1, kWait).size(), 1u);
  kubelet.reset();
  kubelet = std::make_unique<FakeKubelet>(kubeletSocket());
  EXPECT_EQ(kubelet->waitForRegistrations(1, kWait).size(), 1u);
}

// Registration waits for a kubelet that is not there yet.
TEST_F(DevicePluginTest, RegistersWithAKubeletThatStartsLater) {
  startPlugin();
  ASSERT_TRUE(waitFor([&] { return isSocket(pluginSocket()); }));
  std::this_thread::sleep_for(300ms);
  FakeKubelet kubelet(kubeletSocket());
  EXPECT_EQ(kubelet.waitForRegistrations(1, kWait).size(), 1u);
}

TEST_F(DevicePluginTest, StopsOnSigtermAndRemovesItsSocket) {
  FakeKubelet kubelet(kubeletSocket());
  startPlugin();
  ASSERT_EQ(kubelet.waitForRegistrations(1, kWait).size(), 1u);
  EXPECT_EQ(plugin_->stop(), 0);
  EXPECT_FALSE(fs::exists(pluginSocket()));
}

TEST_F(DevicePluginTest, RefusesBadFlags) {
  const std::string log = (root_ / "flags.log").string();
  EXPECT_EQ(runPluginToExit({"--slots", "0"}, log), 1);
  EXPECT_EQ(runPluginToExit({"--plugin-dir", "relative/dir"}, log), 1);
  EXPECT_EQ(runPluginToExit({"--endpoint", "../elsewhere.sock"}, log), 1);
  EXPECT_EQ(runPluginToExit({"--allocate-mode", "none"}, log), 2);
  EXPECT_EQ(runPluginToExit({"--no-such-flag"}, log), 2);
  EXPECT_EQ(runPluginToExit({"--help"}, log), 0);
}

// --check-daemon: the probe the DaemonSet runs in agileosd's container.
TEST_F(DevicePluginTest, CheckDaemonAnswersWhetherTheDaemonAcceptsConnections) {
  const std::string log = (root_ / "probe.log").string();
  const std::vector<std::string> probe = {"--check-daemon", "--daemon-socket", daemonSocket().string()};
  EXPECT_EQ(runPluginToExit(probe, log), 1) << "no socket";
  {
    ListeningSocket daemon(daemonSocket());
    ASSERT_TRUE(daemon.listening());
    EXPECT_EQ(runPluginToExit(probe, log), 0) << "listening";
    daemon.closeKeepingFile();
    EXPECT_EQ(runPluginToExit(probe, log), 1) << "a socket file nobody listens on";
  }
  // The probe never registers or serves.
  EXPECT_FALSE(fs::exists(pluginSocket()));
}

}  // namespace
}  // namespace agileos::device_plugin::testing
