// ServiceSupervisor with real processes (test_service): start and readiness, restarts with new
// pids, a crash loop that ends failed, start failures that name the service, and a stop that
// leaves no process, zombie or socket behind.
#include "scheduler/service_supervisor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "scheduler/runtime_files.h"
#include "tests/cpu/scheduler/test_support.h"

namespace agileos::scheduler {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;
using testing::waitUntil;

// True once `pid`, a child of this process, has been reaped (by the supervisor): waitpid then
// fails with ECHILD. A zombie nobody reaped would be returned here instead.
bool reaped(pid_t pid) {
  errno = 0;
  return ::waitpid(pid, nullptr, WNOHANG) == -1 && errno == ECHILD;
}

class ServiceSupervisorTest : public ::testing::Test {
 protected:
  // test_service with `args`, logging its pid to <dir>/<name>.pids at every start.
  ServiceSpec spec(const std::string& name, std::vector<std::string> args = {}) {
    ServiceSpec out;
    out.name = name;
    out.executable = testing::kTestService;
    out.args = std::move(args);
    out.args.insert(out.args.end(), {"--pid-file", pidFile(name)});
    out.start_timeout = testing::kGenerousTimeout;
    return out;
  }

  // Short backoffs so restarts happen at once; everything else at its default.
  SupervisorOptions options(std::vector<ServiceSpec> specs) {
    SupervisorOptions out;
    out.runtime_dir = dir_.path();
    out.services = std::move(specs);
    out.initial_backoff = std::chrono::milliseconds(10);
    out.max_backoff = std::chrono::milliseconds(40);
    return out;
  }

  std::string pidFile(const std::string& name) const { return dir_.file(name + ".pids"); }

  // Every pid service `name` started with, in order.
  std::vector<pid_t> pids(const std::string& name) const {
    std::vector<pid_t> out;
    for (const std::string& line : testing::readLines(pidFile(name))) out.push_back(std::stoi(line));
    return out;
  }

  ServiceStatus statusOf(const ServiceSupervisor& supervisor, const std::string& name) const {
    const std::optional<ServiceStatus> status = supervisor.status(name);
    EXPECT_TRUE(status.has_value()) << name;
    return status.value_or(ServiceStatus{});
  }

  TempDir dir_;
};

TEST(ServiceCommandLine, AppendsTheSocketAfterTheConfiguredArgs) {
  ServiceSpec spec;
  spec.name = "storage";
  spec.executable = "/opt/agileos/bin/agileos-storage-service";
  spec.args = {"--root", "/srv/agileos/files"};
  const std::string socket = serviceSocketPath("/run/agileos", "storage");
  EXPECT_EQ(socket, "/run/agileos-services/service-storage.sock");
  EXPECT_EQ(
      serviceCommandLine(spec, socket),
      (std::vector<std::string>{"/opt/agileos/bin/agileos-storage-service", "--root", "/srv/agileos/files",
                                "--socket", "/run/agileos-services/service-storage.sock"}));
}

TEST_F(ServiceSupervisorTest, StartsEveryServiceAndReturnsOnceTheirSocketsAccept) {
  ServiceSupervisor supervisor(options({spec("alpha"), spec("beta", {"--some-own-flag"})}));
  std::string error;
  ASSERT_TRUE(supervisor.start(&error)) << error;
  for (const std::string name : {"alpha", "beta"}) {
    const ServiceStatus status = statusOf(supervisor, name);
    EXPECT_EQ(status.state, ServiceState::kRunning) << name;
    EXPECT_GT(status.pid, 0) << name;
    EXPECT_EQ(pids(name), std::vector<pid_t>{status.pid});
    EXPECT_EQ(status.restarts, 0u);
    EXPECT_EQ(supervisor.socketPath(name), dir_.path() + "-services/service-" + name + ".sock");
    EXPECT_EQ(status.socket_path, supervisor.socketPath(name));
    EXPECT_TRUE(unixSocketAccepts(supervisor.socketPath(name))) << name;
  }
  EXPECT_EQ(supervisor.socketPath("gamma"), "");
  EXPECT_FALSE(supervisor.status("gamma").has_value());
  EXPECT_EQ(supervisor.statuses().size(), 2u);
}

TEST_F(ServiceSupervisorTest, AKilledServiceIsRestartedWithANewPid) {
  ServiceSupervisor supervisor(options({spec("alpha")}));
  std::string error;
  ASSERT_TRUE(supervisor.start(&error)) << error;
  const pid_t first = statusOf(supervisor, "alpha").pid;
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  ASSERT_TRUE(waitUntil([&] {
    const ServiceStatus status = statusOf(supervisor, "alpha");
    return status.state == ServiceState::kRunning && status.restarts == 1;
  }));
  const ServiceStatus status = statusOf(supervisor, "alpha");
  EXPECT_NE(status.pid, first);
  EXPECT_EQ(pids("alpha"), (std::vector<pid_t>{first, status.pid}));
  EXPECT_THAT(status.last_exit, HasSubstr("killed by signal 9"));
  EXPECT_TRUE(unixSocketAccepts(supervisor.socketPath("alpha")));
  EXPECT_TRUE(reaped(first));
}

TEST_F(ServiceSupervisorTest, ACrashLoopBeyondMaxRestartsLeavesTheServiceFailed) {
  // Ready at once, then exits with 3 after half a second, every time.
  ServiceSpec crashing = spec("crashy", {"--exit-after-ms", "500"});
  crashing.max_restarts = 2;
  ServiceSupervisor supervisor(options({crashing}));
  std::string error;
  ASSERT_TRUE(supervisor.start(&error)) << error;
  EXPECT_EQ(supervisor.unavailableReason("crashy"), "") << "running (or restarting) counts as available";
  ASSERT_TRUE(waitUntil([&] { return statusOf(supervisor, "crashy").state == ServiceState::kFailed; }));
  EXPECT_EQ(supervisor.unavailableReason("crashy"),
            "service 'crashy' is down (failed; last: exited with status 3)");
  EXPECT_EQ(supervisor.unavailableReason("nosuch"), "") << "not a service here: nothing to say";
  const ServiceStatus status = statusOf(supervisor, "crashy");
  EXPECT_EQ(status.restarts, 2u);
  EXPECT_EQ(status.pid, 0);
  EXPECT_THAT(status.last_exit, HasSubstr("exited with status 3"));
  EXPECT_FALSE(std::filesystem::exists(supervisor.socketPath("crashy")));
  const std::vector<pid_t> started = pids("crashy");
  EXPECT_EQ(started.size(), 3u) << "the first start and two restarts";
  for (pid_t pid : started) EXPECT_TRUE(reaped(pid)) << pid;
}

TEST_F(ServiceSupervisorTest, AServiceThatNeverListensFailsTheStartNamingIt) {
  ServiceSpec lazy = spec("lazy", {"--never-listen"});
  lazy.start_timeout = std::chrono::milliseconds(300);
  ServiceSupervisor supervisor(options({lazy}));
  std::string error;
  EXPECT_FALSE(supervisor.start(&error));
  EXPECT_THAT(error, HasSubstr("service 'lazy': did not accept connections on " + dir_.path() +
                               "-services/service-lazy.sock" + " within 300 ms"));
  const std::vector<pid_t> started = pids("lazy");
  ASSERT_EQ(started.size(), 1u) << "no retries at start";
  EXPECT_TRUE(reaped(started[0]));
  EXPECT_EQ(statusOf(supervisor, "lazy").state, ServiceState::kFailed);
}

TEST_F(ServiceSupervisorTest, AServiceThatExitsAtStartFailsTheStartAndStopsTheOthers) {
  ServiceSupervisor supervisor(options(
      {spec("good"), spec("quitter", {"--never-listen", "--exit-after-ms", "0", "--exit-code", "7"})}));
  std::string error;
  EXPECT_FALSE(supervisor.start(&error));
  EXPECT_THAT(error, HasSubstr("service 'quitter': exited before it was ready: exited with status 7"));
  for (const std::string name : {"good", "quitter"}) {
    for (pid_t pid : pids(name)) EXPECT_TRUE(reaped(pid)) << name;
  }
  EXPECT_FALSE(std::filesystem::exists(supervisor.socketPath("good")));
  EXPECT_EQ(statusOf(supervisor, "good").pid, 0);
}

TEST_F(ServiceSupervisorTest, AMissingExecutableFailsTheStart) {
  ServiceSpec ghost = spec("ghost");
  ghost.executable = dir_.file("no-such-service");
  ServiceSupervisor supervisor(options({ghost}));
  std::string error;
  EXPECT_FALSE(supervisor.start(&error));
  EXPECT_THAT(error, HasSubstr("service 'ghost': cannot start: cannot execute " + ghost.executable));
}

TEST_F(ServiceSupervisorTest, StopTerminatesReapsAndRemovesTheSockets) {
  ServiceSupervisor supervisor(options({spec("alpha"), spec("beta")}));
  std::string error;
  ASSERT_TRUE(supervisor.start(&error)) << error;
  const pid_t alpha = statusOf(supervisor, "alpha").pid;
  const pid_t beta = statusOf(supervisor, "beta").pid;
  supervisor.stop();
  for (pid_t pid : {alpha, beta}) {
    EXPECT_TRUE(reaped(pid)) << pid;
    EXPECT_TRUE(testing::processGone(pid)) << pid;
  }
  for (const std::string name : {"alpha", "beta"}) {
    EXPECT_FALSE(std::filesystem::exists(supervisor.socketPath(name))) << name;
    EXPECT_EQ(statusOf(supervisor, name).state, ServiceState::kStopped);
    EXPECT_EQ(statusOf(supervisor, name).pid, 0);
    EXPECT_THAT(supervisor.unavailableReason(name), HasSubstr("service '" + name + "' is down (stopped"));
  }
  supervisor.stop();  // idempotent
}

TEST_F(ServiceSupervisorTest, StopEscalatesToSigkillForAServiceThatIgnoresSigterm) {
  SupervisorOptions opts = options({spec("stubborn", {"--ignore-sigterm"})});
  opts.terminate_grace = std::chrono::milliseconds(200);
  ServiceSupervisor supervisor(std::move(opts));
  std::string error;
  ASSERT_TRUE(supervisor.start(&error)) << error;
  const pid_t pid = statusOf(supervisor, "stubborn").pid;
  supervisor.stop();
  EXPECT_TRUE(reaped(pid));
  EXPECT_FALSE(std::filesystem::exists(supervisor.socketPath("stubborn")));
}

TEST_F(ServiceSupervisorTest, AStaleSocketIsReplacedButARegularFileIsLeftAlone) {
  // A socket file nobody listens on, as a crashed daemon's service leaves behind.
  const std::string stale = dir_.path() + "-services/service-alpha.sock";
  ASSERT_EQ(::mkdir((dir_.path() + "-services").c_str(), 0700), 0);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, stale.c_str(), sizeof address.sun_path - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ::close(fd);
  {
    ServiceSupervisor supervisor(options({spec("alpha")}));
    std::string error;
    EXPECT_TRUE(supervisor.start(&error)) << error;
  }

  const std::string precious = dir_.path() + "-services/service-beta.sock";
  ::mkdir((dir_.path() + "-services").c_str(), 0700);  // the first supervisor removed it at stop
  testing::writeFile(precious, "precious");
  ServiceSupervisor supervisor(options({spec("beta")}));
  std::string error;
  EXPECT_FALSE(supervisor.start(&error));
  EXPECT_THAT(error, HasSubstr("service 'beta': cannot start: "));
  EXPECT_THAT(error, HasSubstr("exists and is not a socket"));
  EXPECT_EQ(testing::readLines(precious), std::vector<std::string>{"precious"});
  ::unlink(precious.c_str());
  ::rmdir((dir_.path() + "-services").c_str());
}

}  // namespace
}  // namespace agileos::scheduler
