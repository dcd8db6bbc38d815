// The control socket of the real service: OPEN's confinement to the root, and requests that
// are malformed or refused, none of which may end the service or leak a descriptor.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "services/storage/storage_client.h"
#include "tests/cpu/services/storage_service_fixture.h"

namespace agileos::services::storage::testing {
namespace {

class StorageControlTest : public StorageServiceTest {};

TEST_F(StorageControlTest, HelloAnswers) {
  UniqueFd fd = connect();
  EXPECT_EQ(hello(fd.get()).status, 0);
}

TEST_F(StorageControlTest, OpenGivesAHandleAndTheSize) {
  UniqueFd fd = connect();
  const agileos_storage_reply first = openFile(fd.get(), "data.bin");
  ASSERT_EQ(first.status, 0);
  EXPECT_GE(first.file, 1u);
  EXPECT_EQ(first.file_bytes, kDataBytes);
  const agileos_storage_reply second = openFile(fd.get(), "./dir/../data.bin");  // stays beneath the root
  ASSERT_EQ(second.status, 0);
  EXPECT_NE(second.file, first.file);
  EXPECT_EQ(closeFile(fd.get(), first.file).status, 0);
  EXPECT_EQ(closeFile(fd.get(), first.file).status, -EBADF);
  EXPECT_EQ(closeFile(fd.get(), 0).status, -EBADF);
  EXPECT_EQ(closeFile(fd.get(), 5000).status, -EBADF);
}

TEST_F(StorageControlTest, HandlesBelongToTheirConnection) {
  DeviceQueue queue(1, kSlotBytes);
  UniqueFd other = connect();
  const agileos_storage_reply opened_elsewhere = openFile(other.get(), "data.bin");
  ASSERT_EQ(opened_elsewhere.status, 0);
  UniqueFd fd = connect();
  ASSERT_EQ(queue.attach(fd.get()).status, 0);
  EXPECT_EQ(read(queue, 0, opened_elsewhere.file, 0, 4096), -EBADF);
}

TEST_F(StorageControlTest, OpenStaysBeneathTheRoot) {
  UniqueFd fd = connect();
  EXPECT_EQ(openFile(fd.get(), "../outside.txt").status, -EXDEV);
  EXPECT_EQ(openFile(fd.get(), "dir/../../outside.txt").status, -EXDEV);
  EXPECT_EQ(openFile(fd.get(), "/etc/passwd").status, -EINVAL);
  EXPECT_EQ(openFile(fd.get(), "escape").status, -ELOOP);       // symlink to /etc/passwd
  EXPECT_EQ(openFile(fd.get(), "inside_link").status, -ELOOP);  // no symlinks at all
  EXPECT_EQ(openFile(fd.get(), "/proc/self/root/etc/passwd").status, -EINVAL);
  EXPECT_EQ(openFile(fd.get(), "missing").status, -ENOENT);
}

TEST_F(StorageControlTest, OpenTakesRegularFilesOnly) {
  UniqueFd fd = connect();
  EXPECT_EQ(openFile(fd.get(), "dir").status, -EISDIR);
  EXPECT_EQ(openFile(fd.get(), ".").status, -EISDIR);
  EXPECT_EQ(openFile(fd.get(), "fifo").status, -EINVAL);  // and the open did not block
}

TEST_F(StorageControlTest, OpenRefusesBadPaths) {
  UniqueFd fd = connect();
  EXPECT_EQ(openFile(fd.get(), "").status, -EINVAL);
  EXPECT_EQ(openFile(fd.get(), std::string(255, 'a')).status, -ENOENT);  // the longest allowed
  agileos_storage_request request = makeStorageRequest(AGILEOS_STORAGE_OPEN);
  std::memset(request.path, 'a', sizeof(request.path));
  request.path_bytes = 256;
  EXPECT_EQ(call(fd.get(), request).status, -ENAMETOOLONG);
  request.path_bytes = 0xFFFFFFFFu;
  EXPECT_EQ(call(fd.get(), request).status, -ENAMETOOLONG);
  std::memcpy(request.path, "data.bin\0x", 10);
  request.path_bytes = 10;
  EXPECT_EQ(call(fd.get(), request).status, -EINVAL);  // a NUL inside
  request.path_bytes = 8;
  EXPECT_EQ(call(fd.get(), request).status, 0);  // bytes past path_bytes are ignored
}

TEST_F(StorageControlTest, MessagesOfTheWrongSizeAreRefused) {
  UniqueFd fd = connect();
  const agileos_storage_request request = makeStorageRequest(AGILEOS_STORAGE_HELLO);
  ASSERT_TRUE(sendRaw(fd.get(), &request, sizeof(request) - 1, {}));
  EXPECT_EQ(receiveReply(fd.get()).status, -EINVAL);
  char longer[sizeof(request) + 64] = {};
  std::memcpy(longer, &request, sizeof(request));
  ASSERT_TRUE(sendRaw(fd.get(), longer, sizeof(longer), {}));
  EXPECT_EQ(receiveReply(fd.get()).status, -EINVAL);
  ASSERT_TRUE(sendRaw(fd.get(), &request, 4, {}));
  EXPECT_EQ(receiveReply(fd.get()).status, -EINVAL);
  EXPECT_EQ(hello(fd.get()).status, 0);
}

TEST_F(StorageControlTest, WrongVersionsAndOpsAreRefused) {
  UniqueFd fd = connect();
  agileos_storage_request request = makeStorageRequest(AGILEOS_STORAGE_HELLO);
  request.version = AGILEOS_STORAGE_PROTOCOL_VERSION + 1;
  EXPECT_EQ(call(fd.get(), request).status, -EPROTONOSUPPORT);
  request = makeStorageRequest(AGILEOS_STORAGE_STATS);
  request.version = 0;
  EXPECT_EQ(call(fd.get(), request).status, -EPROTONOSUPPORT);
  request = makeStorageRequest(AGILEOS_STORAGE_HELLO);
  request.op = 99;
  EXPECT_EQ(call(fd.get(), request).status, -EOPNOTSUPP);
  request.op = 0;
  EXPECT_EQ(call(fd.get(), request).status, -EOPNOTSUPP);
  EXPECT_EQ(detach(fd.get()).status, -ENOENT);  // no lease
  EXPECT_EQ(hello(fd.get()).status, 0);
}

TEST_F(StorageControlTest, DescriptorsOnOtherOpsAreRefusedAndClosed) {
  UniqueFd fd = connect();
  Pipe pipe;
  const agileos_storage_request request = makeStorageRequest(AGILEOS_STORAGE_HELLO);
  ASSERT_TRUE(sendRaw(fd.get(), &request, sizeof(request), {pipe.write_end.get()}));
  EXPECT_EQ(receiveReply(fd.get()).status, -EINVAL);
  pipe.write_end.reset();
  EXPECT_TRUE(seesEndOfFile(pipe.read_end.get())) << "the service kept the descriptor";

  Pipe second;
  agileos_storage_request opening = makeStorageRequest(AGILEOS_STORAGE_OPEN);
  opening.path_bytes = 8;
  std::memcpy(opening.path, "data.bin", 8);
  ASSERT_TRUE(sendRaw(fd.get(), &opening, sizeof(opening), {second.write_end.get(), second.write_end.get()}));
  EXPECT_EQ(receiveReply(fd.get()).status, -EINVAL);
  second.write_end.reset();
  EXPECT_TRUE(seesEndOfFile(second.read_end.get()));
}

TEST_F(StorageControlTest, AttachWithTheWrongDescriptorCountIsRefusedAndClosesThem) {
  DeviceQueue queue(2, kSlotBytes);
  UniqueFd fd = connect();
  agileos_storage_request request = makeStorageRequest(AGILEOS_STORAGE_ATTACH);
  request.queue_bytes = queue.queueBytes();
  request.buffer_bytes = queue.bufferBytes();
  for (std::size_t count : {0, 1, 3, 7, 12}) {
    Pipe pipe;
    std::vector<int> fds(count, pipe.write_end.get());
    if (count >= 2) fds[0] = queue.queueFd(), fds[1] = queue.bufferFd();
    ASSERT_TRUE(sendRaw(fd.get(), &request, sizeof(request), fds));
    EXPECT_EQ(receiveReply(fd.get()).status, -EINVAL) << count << " descriptors";
    pipe.write_end.reset();
    if (count != 0 && count != 2) {
      EXPECT_TRUE(seesEndOfFile(pipe.read_end.get())) << count << " descriptors";
    }
  }
  EXPECT_EQ(stats(fd.get()).active_leases, 0u);
  EXPECT_EQ(queue.attach(fd.get()).status, 0);  // the connection is still good
}

TEST_F(StorageControlTest, BadQueuesAreRefusedAndTheConnectionCanStillAttach) {
  UniqueFd fd = connect();
  {
    DeviceQueue queue(2, kSlotBytes);
    queue.header().magic = 0;
    EXPECT_EQ(queue.attach(fd.get()).status, -EINVAL);
  }
  {
    DeviceQueue queue(2, kSlotBytes);
    queue.header().version = 2;
    EXPECT_EQ(queue.attach(fd.get()).status, -EPROTONOSUPPORT);
  }
  {
    DeviceQueue queue(2, kSlotBytes);
    queue.header().slots = 0;
    EXPECT_EQ(queue.attach(fd.get()).status, -EINVAL);
    queue.header().slots = 3;  // more than queue_bytes covers
    EXPECT_EQ(queue.attach(fd.get()).status, -EINVAL);
  }
  {
    DeviceQueue queue(2, 4096);
    queue.header().slot_bytes = 8192;  // the buffer holds 2 * 4096
    EXPECT_EQ(queue.attach(fd.get()).status, -EINVAL);
    queue.header().slot_bytes = 1000;
    EXPECT_EQ(queue.attach(fd.get()).status, -EINVAL);
  }
  {
    DeviceQueue queue(2, kSlotBytes);
    agileos_storage_request request = makeStorageRequest(AGILEOS_STORAGE_ATTACH);
    request.queue_bytes = queue.queueBytes() + 4096;  // longer than the memfd: would be SIGBUS
    request.buffer_bytes = queue.bufferBytes();
    EXPECT_EQ(call(fd.get(), request, {queue.queueFd(), queue.bufferFd()}).status, -EINVAL);
    request.queue_bytes = queue.queueBytes();
    request.buffer_bytes = queue.bufferBytes() + 4096;
    EXPECT_EQ(call(fd.get(), request, {queue.queueFd(), queue.bufferFd()}).status, -EINVAL);
    Pipe pipe;  // not a mappable file
    EXPECT_EQ(call(fd.get(), request, {pipe.read_end.get(), queue.bufferFd()}).status, -EINVAL);
  }
  EXPECT_EQ(stats(fd.get()).active_leases, 0u);
  DeviceQueue good(2, kSlotBytes);
  EXPECT_EQ(good.attach(fd.get()).status, 0);
  DeviceQueue another(2, kSlotBytes);
  EXPECT_EQ(another.attach(fd.get()).status, -EBUSY);  // one lease per connection
  EXPECT_EQ(detach(fd.get()).status, 0);
  EXPECT_EQ(another.attach(fd.get()).status, -EBUSY);  // ...ever
}

}  // namespace
}  // namespace agileos::services::storage::testing
