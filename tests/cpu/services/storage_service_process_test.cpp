// The service process itself: its socket, its start-up refusals, and the cuda backend where
// there is no GPU (refused ATTACHes, a service that carries on).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "tests/cpu/services/storage_service_fixture.h"

namespace agileos::services::storage::testing {
namespace {

using namespace std::chrono_literals;

int exitStatusOf(ServiceProcess& process) {
  EXPECT_TRUE(eventually([&] { return !process.running(); })) << "still running";
  const int status = process.stop();
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class StorageProcessTest : public StorageServiceTest {};

TEST_F(StorageProcessTest, TheSocketIsTheOwnersOnly) {
  struct stat status;
  ASSERT_EQ(::stat(socket_.c_str(), &status), 0);
  EXPECT_TRUE(S_ISSOCK(status.st_mode));
  EXPECT_EQ(status.st_mode & 0777, 0600u);
}

TEST_F(StorageProcessTest, ASecondServiceDoesNotTakeALiveSocketOver) {
  ServiceProcess second(socket_, root_);
  EXPECT_EQ(exitStatusOf(second), 1);
  UniqueFd fd = connect();
  EXPECT_EQ(hello(fd.get()).status, 0);
}

TEST(StorageProcessStartTest, AStaleSocketIsReplaced) {
  TempDir dir;
  const std::string socket = dir.path() + "/s.sock";
  {
    UniqueFd stale(::socket(AF_UNIX, SOCK_SEQPACKET, 0));
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strcpy(address.sun_path, socket.c_str());
    ASSERT_EQ(::bind(stale.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  }  // closed without unlinking: what a crash leaves
  ServiceProcess service(socket, dir.path());
  ASSERT_TRUE(service.waitUntilListening(10s));
  UniqueFd fd = connectTo(socket);
  EXPECT_EQ(hello(fd.get()).status, 0);
  const int status = service.stop();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(StorageProcessStartTest, RefusesToStartWithoutItsRootOrOnAFile) {
  TempDir dir;
  ServiceProcess no_root(dir.path() + "/s.sock", dir.path() + "/missing");
  EXPECT_EQ(exitStatusOf(no_root), 1);
  writeFile(dir.path() + "/file", {});
  ServiceProcess on_a_file(dir.path() + "/file", dir.path());
  EXPECT_EQ(exitStatusOf(on_a_file), 1);
  ServiceProcess bad_arguments(dir.path() + "/s.sock", dir.path(), {"--threads", "0"});
  EXPECT_EQ(exitStatusOf(bad_arguments), 2);
}

// The default backend. Without a driver (CI) the ATTACH is refused with -ENODEV; with one, the
// memfd is no CUDA handle and is refused too. Either way the service carries on.
class StorageCudaBackendTest : public StorageServiceTest {
 protected:
  std::vector<std::string> serviceArguments() const override { return {"--buffer-backend", "cuda"}; }
};

TEST_F(StorageCudaBackendTest, AnUnimportableBufferIsRefused) {
  UniqueFd fd = connect();
  DeviceQueue queue(2, 1 << 20);
  for (int attempt = 0; attempt < 2; ++attempt) {
    const agileos_storage_reply reply = queue.attach(fd.get());
    EXPECT_LT(reply.status, 0);
    EXPECT_NE(reply.status, INT32_MIN) << "no reply";
  }
  EXPECT_EQ(stats(fd.get()).active_leases, 0u);
  EXPECT_EQ(mappingsMentioning(service_->pid(), "memfd:agileos-test"), 0);
  EXPECT_EQ(hello(fd.get()).status, 0);
}

}  // namespace
}  // namespace agileos::services::storage::testing
