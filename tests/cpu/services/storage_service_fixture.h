// The fixture of the storage service's end-to-end tests: a temporary directory with the
// service's root and socket, the service started on them (host buffer backend), and at the end
// a SIGTERM that must stop it cleanly (exit 0), whatever the test left attached.
//
//   <dir>/outside.txt            a file outside the root
//   <dir>/root/data.bin          kDataBytes of patternBytes(.., 1): several slots and a tail
//   <dir>/root/dir/              a directory
//   <dir>/root/escape            symlink to /etc/passwd
//   <dir>/root/inside_link       symlink to data.bin (refused too: no symlinks at all)
//   <dir>/root/fifo              a FIFO (refused, and must not block the open)
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/cpu/services/storage_test_support.h"

namespace agileos::services::storage::testing {

class StorageServiceTest : public ::testing::Test {
 protected:
  static constexpr std::uint32_t kSlotBytes = 8192;
  static constexpr std::size_t kDataBytes = 5 * kSlotBytes + 1000;

  void SetUp() override {
    root_ = dir_.path() + "/root";
    socket_ = dir_.path() + "/storage.sock";
    ASSERT_EQ(::mkdir(root_.c_str(), 0700), 0);
    ASSERT_EQ(::mkdir((root_ + "/dir").c_str(), 0700), 0);
    data_ = patternBytes(kDataBytes, 1);
    writeFile(root_ + "/data.bin", data_);
    writeFile(dir_.path() + "/outside.txt", patternBytes(100, 2));
    ASSERT_EQ(::symlink("/etc/passwd", (root_ + "/escape").c_str()), 0);
    ASSERT_EQ(::symlink("data.bin", (root_ + "/inside_link").c_str()), 0);
    ASSERT_EQ(::mkfifo((root_ + "/fifo").c_str(), 0600), 0);
    service_ = std::make_unique<ServiceProcess>(socket_, root_, serviceArguments());
    ASSERT_TRUE(service_->waitUntilListening(std::chrono::seconds(10))) << "the service did not start";
  }

  void TearDown() override {
    if (service_ == nullptr) return;
    const int status = service_->stop();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "service wait status " << status;
  }

  virtual std::vector<std::string> serviceArguments() const { return {}; }

  UniqueFd connect() const {
    UniqueFd fd = connectTo(socket_);
    EXPECT_TRUE(fd.valid()) << "cannot connect to " << socket_;
    return fd;
  }

  // A connection with an attached lease on `queue` and data.bin open; *file its handle.
  UniqueFd attachedConnection(DeviceQueue& queue, std::uint32_t* file) const {
    UniqueFd fd = connect();
    EXPECT_EQ(queue.attach(fd.get()).status, 0);
    const agileos_storage_reply opened = openFile(fd.get(), "data.bin");
    EXPECT_EQ(opened.status, 0);
    *file = opened.file;
    return fd;
  }

  // Submits a read of data.bin into `slot` and waits for its result.
  std::int64_t read(DeviceQueue& queue, std::uint32_t slot, std::uint32_t file, std::uint64_t offset,
                    std::uint32_t bytes) const {
    const std::uint32_t sequence = queue.submit(slot, file, offset, bytes);
    std::int64_t result = 0;
    EXPECT_TRUE(queue.waitCompletion(slot, sequence, &result)) << "slot " << slot << " never completed";
    return result;
  }

  // Submits a read of data.bin through `slot` into registered buffer `target` at
  // target_offset, and waits for its result.
  std::int64_t readInto(DeviceQueue& queue, std::uint32_t slot, std::uint32_t file, std::uint64_t offset,
                        std::uint32_t bytes, std::uint32_t target, std::uint64_t target_offset) const {
    const std::uint32_t sequence = queue.submit(slot, file, offset, bytes, target, target_offset);
    std::int64_t result = 0;
    EXPECT_TRUE(queue.waitCompletion(slot, sequence, &result)) << "slot " << slot << " never completed";
    return result;
  }

  bool slotHolds(const DeviceQueue& queue, std::uint32_t slot, std::uint64_t offset,
                 std::size_t bytes) const {
    const std::span<const std::byte> slot_data = queue.slotData(slot);
    return std::equal(slot_data.begin(), slot_data.begin() + static_cast<std::ptrdiff_t>(bytes),
                      data_.begin() + static_cast<std::ptrdiff_t>(offset));
  }

  TempDir dir_;
  std::string root_;
  std::string socket_;
  std::vector<std::byte> data_;
  std::unique_ptr<ServiceProcess> service_;
};

}  // namespace agileos::services::storage::testing
