// The admin API's view of a daemon (scheduler/daemon_admin_backend.h) over a real pool of mock
// workers: the status it builds, and the actions' refusals, which change nothing.
#include "scheduler/daemon_admin_backend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "scheduler/client_session.h"
#include "scheduler/daemon_metrics.h"
#include "scheduler/dedicated_placement.h"
#include "scheduler/service_supervisor.h"
#include "scheduler/session_registry.h"
#include "scheduler/worker_pool.h"
#include "tests/cpu/scheduler/test_support.h"

namespace agileos::scheduler {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;
using testing::waitUntil;

constexpr const char* kOneModule =
    R"({"modules": {"pool": [{"name": "kvstore", "version": "1.2.0", "ptx": "/m/kvstore.ptx"}], "allowed": ["*"]}})";

class DaemonAdminBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PoolOptions options = testing::mockPoolOptions(dir_);
    options.devices = {0, 2};
    pool_ = std::make_unique<WorkerPool>(options, std::make_unique<DedicatedPlacement>());
    pool_->start();
    SupervisorOptions supervisor;
    supervisor.runtime_dir = dir_.file("services");
    services_ = std::make_unique<ServiceSupervisor>(supervisor);
    std::string error;
    ASSERT_TRUE(services_->start(&error)) << error;
    runner_ = std::make_unique<SessionRunner>(*pool_, SessionOptions{});
    metrics_ = std::make_unique<DaemonMetrics>(*pool_, *services_, sessions_);
    config_ = dir_.file("agileosd.json");
    testing::writeFile(config_, kOneModule);
    backend_ = std::make_unique<DaemonAdminBackend>(DaemonAdminParts{
        *pool_, *services_, sessions_, *runner_, *metrics_, config_, 4, std::chrono::system_clock::now()});
  }
  void TearDown() override {
    pool_->stop();
    services_->stop();
  }

  TempDir dir_;
  std::unique_ptr<WorkerPool> pool_;
  std::unique_ptr<ServiceSupervisor> services_;
  SessionRegistry sessions_;
  std::unique_ptr<SessionRunner> runner_;
  std::unique_ptr<DaemonMetrics> metrics_;
  std::string config_;
  std::unique_ptr<DaemonAdminBackend> backend_;
};

TEST_F(DaemonAdminBackendTest, TheStatusNamesTheDevicesAndEachWorkersDevice) {
  ASSERT_TRUE(waitUntil([&] { return backend_->status().workers_size() == 2; }));
  const auto status = backend_->status();
  EXPECT_THAT(std::vector<int>(status.devices().begin(), status.devices().end()),
              ::testing::ElementsAre(0, 2));
  std::vector<int> devices;
  for (const auto& worker : status.workers()) devices.push_back(worker.device());
  EXPECT_THAT(devices, ::testing::UnorderedElementsAre(0, 2));
  EXPECT_EQ(status.max_workers(), 4u);
}

TEST_F(DaemonAdminBackendTest, AReloadSwapsTheModulePoolNewSessionsAreAdmittedAgainst) {
  EXPECT_TRUE(runner_->modules()->pool.modules.empty());
  std::string message;
  ASSERT_TRUE(backend_->reloadModules(&message)) << message;
  EXPECT_THAT(message, HasSubstr("1 module(s)"));
  ASSERT_EQ(runner_->modules()->pool.modules.size(), 1u);
  const auto status = backend_->status();
  ASSERT_EQ(status.modules_size(), 1);
  EXPECT_EQ(status.modules(0).name(), "kvstore");
  EXPECT_TRUE(status.modules(0).allowed());
}

TEST_F(DaemonAdminBackendTest, AnInvalidFileChangesNothing) {
  std::string message;
  ASSERT_TRUE(backend_->reloadModules(&message)) << message;
  testing::writeFile(config_, R"({"modules": {"pool": [{"name": "Bad Name", "version": "1.0.0"}]}})");
  EXPECT_FALSE(backend_->reloadModules(&message));
  EXPECT_THAT(message, HasSubstr("not valid, nothing changed"));
  EXPECT_EQ(runner_->modules()->pool.modules.at(0).name, "kvstore") << "the pool before the reload stays";
}

TEST_F(DaemonAdminBackendTest, AModuleWhoseServiceTheDaemonDoesNotRunIsRefused) {
  testing::writeFile(config_, R"({"services": [{"name": "storage", "executable": "/bin/true"}],
    "modules": {"pool": [{"name": "files", "version": "1.0.0", "ptx": "/m/f.ptx", "service": "storage"}],
                "allowed": ["files"]}})");
  std::string message;
  EXPECT_FALSE(backend_->reloadModules(&message));
  EXPECT_THAT(message, HasSubstr("needs service 'storage', which this daemon does not run"));
  EXPECT_TRUE(runner_->modules()->pool.modules.empty());
}

TEST_F(DaemonAdminBackendTest, EndingOrDrainingWhatDoesNotExistIsRefused) {
  std::string message;
  EXPECT_FALSE(backend_->endSession(42, "test", &message));
  EXPECT_THAT(message, HasSubstr("no live session of client 42"));
  EXPECT_FALSE(backend_->drainWorker(99, "test", &message));
  EXPECT_THAT(message, HasSubstr("no worker 99"));
}

TEST_F(DaemonAdminBackendTest, TheMetricsTextNamesEveryFamily) {
  const std::string text = backend_->metricsText();
  for (const char* family :
       {"agileos_sessions ", "agileos_sessions_refused_total", "agileos_placement_wait_seconds",
        "agileos_calls_total", "agileos_bytes_copied_total", "agileos_device_memory_held_bytes",
        "agileos_guard_hits_total", "agileos_workers", "agileos_worker_starts_total"}) {
    EXPECT_THAT(text, HasSubstr(family));
  }
  EXPECT_THAT(text, HasSubstr("agileos_device_memory_held_bytes{device=\"2\"} 0"));
}

}  // namespace
}  // namespace agileos::scheduler
