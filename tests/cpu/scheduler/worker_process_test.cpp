#include "scheduler/worker_process.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>

#include "tests/cpu/scheduler/test_support.h"

namespace agileos::scheduler {
namespace {

using agileos::v1::internal::DaemonToWorker;
using agileos::v1::internal::WorkerToDaemon;
using ::testing::HasSubstr;

WorkerLaunchSpec mockSpec(const testing::TempDir& dir, std::vector<std::string> extra = {}) {
  WorkerLaunchSpec spec;
  spec.executable = testing::kMockWorker;
  spec.worker_id = 5;
  spec.endpoint = "unix:" + dir.file("worker-5.sock");
  spec.device = 2;
  spec.log_level = "warn";
  spec.extra_args = {"--event-log=" + dir.file("events.log")};
  spec.extra_args.insert(spec.extra_args.end(), extra.begin(), extra.end());
  return spec;
}

bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, static_cast<int>(testing::kGenerousTimeout.count())) == 1;
}

TEST(WorkerProcess, CommandLineFollowsTheLaunchContract) {
  WorkerLaunchSpec spec;
  spec.executable = "/opt/w";
  spec.worker_id = 12;
  spec.endpoint = "unix:/run/agileos/worker-12.sock";
  spec.device = 1;
  spec.log_level = "debug";
  spec.extra_args = {"--x", "y"};
  EXPECT_EQ(
      workerCommandLine(spec),
      (std::vector<std::string>{"/opt/w", "--control-fd=3", "--endpoint=unix:/run/agileos/worker-12.sock",
                                "--device=1", "--worker-id=12", "--log-level=debug", "--x", "y"}));
}

TEST(WorkerProcess, MissingBinaryFailsAtSpawnWithTheReason) {
  testing::TempDir dir;
  WorkerLaunchSpec spec = mockSpec(dir);
  spec.executable = dir.file("no-such-worker");
  std::string error;
  EXPECT_EQ(WorkerProcess::spawn(spec, &error), nullptr);
  EXPECT_THAT(error, HasSubstr("cannot execute " + spec.executable + ": No such file or directory"));
}

TEST(WorkerProcess, SpeaksTheControlProtocolOnFdThreeAndLeaksNoDescriptors) {
  testing::TempDir dir;
  std::string error;
  auto worker = WorkerProcess::spawn(mockSpec(dir), &error);
  ASSERT_NE(worker, nullptr) << error;

  ASSERT_TRUE(readable(worker->controlFd()));
  WorkerToDaemon ready;
  ASSERT_EQ(worker->receive(&ready), wire::FrameStatus::kOk);
  ASSERT_TRUE(ready.has_ready());
  EXPECT_EQ(ready.ready().endpoint(), "unix:" + dir.file("worker-5.sock"));
  EXPECT_EQ(ready.ready().device(), 2);

  testing::MockEvents events(dir.file("events.log"));
  // Only stdin/stdout/stderr and the control channel survive exec; the test process has more open.
  EXPECT_EQ(events.count({"worker=5", "start", "device=2", "log-level=warn", "fds=0,1,2,3"}), 1u)
      << events.path();

  DaemonToWorker shutdown;
  shutdown.mutable_shutdown();
  ASSERT_EQ(worker->send(shutdown), wire::FrameStatus::kOk);
  std::optional<int> status;
  ASSERT_TRUE(testing::waitUntil([&] { return (status = worker->tryReap()).has_value(); }));
  EXPECT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 0);
  EXPECT_TRUE(worker->reaped());
  EXPECT_FALSE(worker->tryReap().has_value());  // reaped once only
}

// The real worker (on the fake GPU) opens its module cache only with the daemon's key, which it
// reads as the first control message; its command line carries only the directory.
TEST(WorkerProcess, TheWorkerOpensItsModuleCacheOnlyWithAKeyFromTheControlChannel) {
  for (const bool withKey : {true, false}) {
    SCOPED_TRACE(withKey ? "a 32-byte key" : "a malformed key");
    testing::TempDir dir;
    const std::string cacheDir = dir.file("module-cache");
    WorkerLaunchSpec spec;
    spec.executable = testing::kWorkerFake;
    spec.worker_id = 6;
    spec.endpoint = "unix:" + dir.file("worker-6.sock");
    spec.log_level = "info";
    spec.extra_args = {"--module-cache-dir=" + cacheDir};
    std::string error;
    auto worker = WorkerProcess::spawn(spec, &error);
    ASSERT_NE(worker, nullptr) << error;
    const std::string key(withKey ? 32 : 31, '\x42');
    DaemonToWorker message;
    message.mutable_module_cache_key()->set_key(key);
    ASSERT_EQ(worker->send(message), wire::FrameStatus::kOk);
    ASSERT_TRUE(readable(worker->controlFd()));
    WorkerToDaemon ready;
    ASSERT_EQ(worker->receive(&ready), wire::FrameStatus::kOk);
    ASSERT_TRUE(ready.has_ready()) << ready.DebugString();
    // open() creates the directory only once it has a key.
    EXPECT_EQ(std::filesystem::is_directory(cacheDir), withKey);
    std::ifstream cmdline("/proc/" + std::to_string(worker->pid()) + "/cmdline", std::ios::binary);
    const std::string commandLine((std::istreambuf_iterator<char>(cmdline)),
                                  std::istreambuf_iterator<char>());
    EXPECT_THAT(commandLine, HasSubstr("--module-cache-dir="));
    EXPECT_THAT(commandLine, ::testing::Not(HasSubstr(key)));
    DaemonToWorker shutdown;
    shutdown.mutable_shutdown();
    ASSERT_EQ(worker->send(shutdown), wire::FrameStatus::kOk);
    std::optional<int> status;
    ASSERT_TRUE(testing::waitUntil([&] { return (status = worker->tryReap()).has_value(); }));
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
  }
}

TEST(WorkerProcess, RunsInItsOwnProcessGroup) {
  testing::TempDir dir;
  std::string error;
  auto worker = WorkerProcess::spawn(mockSpec(dir), &error);
  ASSERT_NE(worker, nullptr) << error;
  EXPECT_EQ(::getpgid(worker->pid()), worker->pid());
}

TEST(WorkerProcess, SignalGroupKillsAndTheStatusSaysHow) {
  testing::TempDir dir;
  std::string error;
  auto worker = WorkerProcess::spawn(mockSpec(dir), &error);
  ASSERT_NE(worker, nullptr) << error;
  worker->signalGroup(SIGKILL);
  std::optional<int> status;
  ASSERT_TRUE(testing::waitUntil([&] { return (status = worker->tryReap()).has_value(); }));
  EXPECT_EQ(describeWaitStatus(*status), "killed by signal 9 (Killed)");
}

TEST(WorkerProcess, DestroyingAnUnreapedWorkerKillsIt) {
  testing::TempDir dir;
  std::string error;
  auto worker = WorkerProcess::spawn(mockSpec(dir, {"--mode=ignore-shutdown"}), &error);
  ASSERT_NE(worker, nullptr) << error;
  const pid_t pid = worker->pid();
  worker.reset();
  EXPECT_TRUE(testing::processGone(pid));
}

TEST(WorkerProcess, ClosingTheControlChannelMakesTheWorkerExit) {
  testing::TempDir dir;
  std::string error;
  auto worker = WorkerProcess::spawn(mockSpec(dir), &error);
  ASSERT_NE(worker, nullptr) << error;
  ASSERT_TRUE(readable(worker->controlFd()));
  WorkerToDaemon ready;
  ASSERT_EQ(worker->receive(&ready), wire::FrameStatus::kOk);
  worker->closeControl();
  std::optional<int> status;
  ASSERT_TRUE(testing::waitUntil([&] { return (status = worker->tryReap()).has_value(); }));
  EXPECT_EQ(describeWaitStatus(*status), "exited with status 0");
}

}  // namespace
}  // namespace agileos::scheduler
