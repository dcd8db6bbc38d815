// Allocate's answer and the option checks as functions (docker/device_plugin/allocation.h,
// plugin_options.h), for the cases the process tests do not reach.
#include "docker/device_plugin/allocation.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "docker/device_plugin/devices.h"
#include "docker/device_plugin/plugin_options.h"

namespace agileos::device_plugin {
namespace {

namespace fs = std::filesystem;

class AllocationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/agileos-alloc.XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    shims_ = pattern;
    std::ofstream(shims_ / "libagileos_cudart.so") << "shim";
    options_.shim_dir = shims_.string();
    const std::vector<std::string> ids = deviceIds(options_.device, options_.slots);
    known_ = {ids.begin(), ids.end()};
  }
  void TearDown() override { fs::remove_all(shims_); }

  v1beta1::AllocateResponse allocateOne(const std::string& id) {
    v1beta1::AllocateRequest request;
    request.add_container_requests()->add_devices_ids(id);
    v1beta1::AllocateResponse response;
    const grpc::Status status = allocate(request, known_, options_, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response;
  }

  fs::path shims_;
  PluginOptions options_;
  std::set<std::string> known_;
};

TEST_F(AllocationTest, DeviceIdsAndTheCdiName) {
  EXPECT_EQ(deviceIds(2, 2), (std::vector<std::string>{"agileos-gpu2-slot0", "agileos-gpu2-slot1"}));
  EXPECT_EQ(cdiDeviceName(0), "agileos.io/gpu=0");
  EXPECT_EQ(cdiDeviceName(3), "agileos.io/gpu=3");
}

TEST_F(AllocationTest, TheDefaultsAreTheDaemonsAndTheInstallations) {
  const PluginOptions defaults;
  EXPECT_EQ(defaults.daemon_socket, "/run/agileos/agileosd.sock");  // scheduler/daemon_config.h
  EXPECT_EQ(defaults.runtime_dir, "/run/agileos");
  EXPECT_EQ(defaults.shim_dir, "/usr/local/lib/agileos/shim");  // cmake/AgileosInstall.cmake
  EXPECT_EQ(defaults.plugin_dir, "/var/lib/kubelet/device-plugins");
  EXPECT_TRUE(checkOptions(defaults).empty());
}

TEST_F(AllocationTest, OnlyTheRuntimeShimPresentIsPreloadedAlone) {
  const auto response = allocateOne("agileos-gpu0-slot0");
  ASSERT_EQ(response.container_responses_size(), 1);
  EXPECT_EQ(response.container_responses(0).envs().at("LD_PRELOAD"),
            (shims_ / "libagileos_cudart.so").string());
}

TEST_F(AllocationTest, ARuntimeDirOutsideTheSocketsDirectoryIsMountedToo) {
  options_.daemon_socket = "/run/agileosd/agileosd.sock";
  options_.runtime_dir = "/var/run/agileos-workers";
  const auto container = allocateOne("agileos-gpu0-slot0").container_responses(0);
  ASSERT_EQ(container.mounts_size(), 3);
  EXPECT_EQ(container.mounts(1).host_path(), "/run/agileosd");
  EXPECT_EQ(container.mounts(2).host_path(), "/var/run/agileos-workers");
  EXPECT_EQ(container.mounts(2).container_path(), "/var/run/agileos-workers");
  EXPECT_TRUE(container.mounts(2).read_only());
}

TEST_F(AllocationTest, ARuntimeDirBelowTheSocketsDirectoryNeedsNoMountOfItsOwn) {
  options_.daemon_socket = "/run/agileos/agileosd.sock";
  options_.runtime_dir = "/run/agileos/workers/";
  EXPECT_EQ(allocateOne("agileos-gpu0-slot0").container_responses(0).mounts_size(), 2);
  // A sibling whose name only starts like it is not below it.
  options_.runtime_dir = "/run/agileos-workers";
  EXPECT_EQ(allocateOne("agileos-gpu0-slot0").container_responses(0).mounts_size(), 3);
}

TEST_F(AllocationTest, CdiModeNamesTheDeviceAlone) {
  options_.allocate_mode = AllocateMode::kCdi;
  options_.device = 1;
  known_ = {"agileos-gpu1-slot0"};
  fs::remove(shims_ / "libagileos_cudart.so");  // the CDI spec's edits are the runtime's business
  const auto container = allocateOne("agileos-gpu1-slot0").container_responses(0);
  ASSERT_EQ(container.cdi_devices_size(), 1);
  EXPECT_EQ(container.cdi_devices(0).name(), "agileos.io/gpu=1");
  EXPECT_EQ(container.envs_size(), 0);
  EXPECT_EQ(container.mounts_size(), 0);
  EXPECT_EQ(container.devices_size(), 0);
}

TEST_F(AllocationTest, DirectModeGivesTheEditsAlone) {
  options_.allocate_mode = AllocateMode::kDirect;
  const auto container = allocateOne("agileos-gpu0-slot3").container_responses(0);
  EXPECT_EQ(container.cdi_devices_size(), 0);
  EXPECT_EQ(container.envs().at("AGILEOS_SOCKET"), "/run/agileos/agileosd.sock");
  EXPECT_EQ(container.mounts_size(), 2);
  EXPECT_EQ(container.devices_size(), 0);
}

TEST_F(AllocationTest, ARefusedRequestLeavesNoPartialAnswer) {
  v1beta1::AllocateRequest request;
  request.add_container_requests()->add_devices_ids("agileos-gpu0-slot0");
  request.add_container_requests()->add_devices_ids("agileos-gpu0-slot9");
  v1beta1::AllocateResponse response;
  EXPECT_EQ(allocate(request, known_, options_, &response).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(response.container_responses_size(), 0);
}

TEST(PluginOptionsTest, ChecksNameEveryProblem) {
  PluginOptions options;
  options.plugin_dir = "device-plugins";
  options.daemon_socket = "/" + std::string(200, 'd') + "/agileosd.sock";
  options.endpoint = "kubelet.sock";
  options.slots = 2000;
  options.device = -1;
  options.poll_interval_ms = 0;
  const std::vector<std::string> errors = checkOptions(options);
  const auto mentions = [&](const std::string& text) {
    return std::any_of(errors.begin(), errors.end(),
                       [&](const std::string& e) { return e.find(text) != e.npos; });
  };
  EXPECT_TRUE(mentions("--plugin-dir: device-plugins is not an absolute path"));
  EXPECT_TRUE(mentions("--daemon-socket: /ddd"));
  EXPECT_TRUE(mentions("--endpoint: kubelet.sock"));
  EXPECT_TRUE(mentions("--slots: 2000"));
  EXPECT_TRUE(mentions("--device: -1"));
  EXPECT_TRUE(mentions("--poll-interval-ms: 0"));
}

}  // namespace
}  // namespace agileos::device_plugin
