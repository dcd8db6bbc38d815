// Leases of the real service: revocation by DETACH and by the connection closing, after which
// the service no longer touches the lease's memory, and a clean stop with leases attached.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <thread>

#include "tests/cpu/services/storage_service_fixture.h"

namespace agileos::services::storage::testing {
namespace {

using namespace std::chrono_literals;

class StorageLeaseTest : public StorageServiceTest {
 protected:
  // Submits to `slot` and checks that no completion comes within a while.
  void expectNoService(DeviceQueue& queue, std::uint32_t slot, std::uint32_t file) {
    const std::uint32_t before = queue.completedSequence(slot);
    const std::uint32_t sequence = queue.submit(slot, file, 0, 4096);
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(queue.completedSequence(slot), before) << "submission " << sequence << " was served";
  }
};

TEST_F(StorageLeaseTest, TheLeaseHoldsMappingsButNoDescriptors) {
  DeviceQueue queue(2, kSlotBytes);
  std::uint32_t file = 0;
  UniqueFd fd = attachedConnection(queue, &file);
  EXPECT_EQ(mappingsMentioning(service_->pid(), "memfd:agileos-test-queue"), 1);
  EXPECT_EQ(mappingsMentioning(service_->pid(), "memfd:agileos-test-buffer"), 1);
  EXPECT_EQ(descriptorsMentioning(service_->pid(), "memfd:agileos-test"), 0);
  EXPECT_EQ(descriptorsMentioning(service_->pid(), "data.bin"), 1);  // the open file
}

TEST_F(StorageLeaseTest, AttachSealsTheRegionAgainstShrinking) {
  DeviceQueue queue(2, kSlotBytes);
  UniqueFd fd = connect();
  ASSERT_EQ(queue.attach(fd.get()).status, 0);
  EXPECT_NE(::fcntl(queue.queueFd(), F_GET_SEALS) & F_SEAL_SHRINK, 0);
  EXPECT_NE(::ftruncate(queue.queueFd(), 0), 0);
}

TEST_F(StorageLeaseTest, DetachRevokesTheLease) {
  DeviceQueue queue(4, kSlotBytes);
  std::uint32_t file = 0;
  UniqueFd fd = attachedConnection(queue, &file);
  EXPECT_EQ(read(queue, 3, file, 0, 4096), 4096);
  EXPECT_EQ(detach(fd.get()).status, 0);
  // Once DETACH is answered: nothing mapped, no file open, no completion written.
  EXPECT_EQ(mappingsMentioning(service_->pid(), "memfd:agileos-test"), 0);
  EXPECT_EQ(descriptorsMentioning(service_->pid(), "data.bin"), 0);
  expectNoService(queue, 3, file);
  expectNoService(queue, 0, file);
  const agileos_storage_reply counters = stats(fd.get());
  EXPECT_EQ(counters.active_leases, 0u);
  EXPECT_EQ(counters.leases_served, 1u);
  EXPECT_EQ(counters.leases_revoked, 1u);
  EXPECT_EQ(detach(fd.get()).status, -ENOENT);
  EXPECT_EQ(closeFile(fd.get(), file).status, -EBADF);  // DETACH closed the files
}

TEST_F(StorageLeaseTest, AClosedConnectionRevokesItsLeaseAndOthersCarryOn) {
  DeviceQueue first_queue(2, kSlotBytes);
  DeviceQueue second_queue(2, kSlotBytes);
  std::uint32_t first_file = 0;
  std::uint32_t second_file = 0;
  UniqueFd first = attachedConnection(first_queue, &first_file);
  UniqueFd second = attachedConnection(second_queue, &second_file);
  EXPECT_EQ(read(first_queue, 0, first_file, 0, 4096), 4096);
  EXPECT_EQ(stats(second.get()).active_leases, 2u);

  first.reset();  // the worker died: no DETACH
  ASSERT_TRUE(eventually([&] { return stats(second.get()).active_leases == 1; }));
  const agileos_storage_reply counters = stats(second.get());
  EXPECT_EQ(counters.leases_served, 2u);
  EXPECT_EQ(counters.leases_revoked, 1u);
  EXPECT_EQ(mappingsMentioning(service_->pid(), "memfd:agileos-test-queue"), 1);  // the second's
  expectNoService(first_queue, 0, first_file);

  EXPECT_EQ(read(second_queue, 1, second_file, 100, 4096), 4096);
  EXPECT_TRUE(slotHolds(second_queue, 1, 100, 4096));

  UniqueFd third = connect();  // and new connections work
  DeviceQueue third_queue(1, kSlotBytes);
  ASSERT_EQ(third_queue.attach(third.get()).status, 0);
  const agileos_storage_reply opened = openFile(third.get(), "data.bin");
  ASSERT_EQ(opened.status, 0);
  EXPECT_EQ(read(third_queue, 0, opened.file, 7, 5000), 5000);
  EXPECT_TRUE(slotHolds(third_queue, 0, 7, 5000));
}

TEST_F(StorageLeaseTest, AConnectionClosedMidReadsIsRevoked) {
  DeviceQueue queue(8, kSlotBytes);
  std::uint32_t file = 0;
  UniqueFd fd = attachedConnection(queue, &file);
  for (std::uint32_t slot = 0; slot < queue.slots(); ++slot) queue.submit(slot, file, slot, kSlotBytes);
  fd.reset();
  UniqueFd observer = connect();
  ASSERT_TRUE(eventually([&] { return stats(observer.get()).active_leases == 0; }));
  EXPECT_EQ(stats(observer.get()).leases_revoked, 1u);
  EXPECT_EQ(mappingsMentioning(service_->pid(), "memfd:agileos-test"), 0);
}

TEST_F(StorageLeaseTest, SigtermWithLeasesAttachedStopsCleanly) {
  DeviceQueue queue(2, kSlotBytes);
  std::uint32_t file = 0;
  UniqueFd fd = attachedConnection(queue, &file);
  UniqueFd idle = connect();
  EXPECT_EQ(read(queue, 0, file, 0, 4096), 4096);
  const int status = service_->stop();
  service_.reset();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "wait status " << status;
  EXPECT_NE(::access(socket_.c_str(), F_OK), 0) << "the socket file was left behind";
  expectNoService(queue, 1, file);
}

TEST_F(StorageLeaseTest, ManyLeasesComeAndGo) {
  UniqueFd observer = connect();
  for (int i = 0; i < 20; ++i) {
    DeviceQueue queue(3, 4096);
    std::uint32_t file = 0;
    UniqueFd fd = attachedConnection(queue, &file);
    EXPECT_EQ(read(queue, static_cast<std::uint32_t>(i % 3), file, static_cast<std::uint64_t>(i), 4096),
              4096);
    if (i % 2 == 0) {
      EXPECT_EQ(detach(fd.get()).status, 0);
    }
  }
  ASSERT_TRUE(eventually([&] { return stats(observer.get()).active_leases == 0; }));
  const agileos_storage_reply counters = stats(observer.get());
  EXPECT_EQ(counters.leases_served, 20u);
  EXPECT_EQ(counters.leases_revoked, 20u);
  EXPECT_EQ(counters.reads_completed, 20u);
}

}  // namespace
}  // namespace agileos::services::storage::testing
