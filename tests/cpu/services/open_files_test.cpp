// A connection's file table and openBeneath (services/storage/open_files.h), without the service.
#include "services/storage/open_files.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "tests/cpu/services/storage_test_support.h"

namespace agileos::services::storage {
namespace {

UniqueFd devNull() { return UniqueFd(::open("/dev/null", O_RDONLY | O_CLOEXEC)); }

TEST(StorageOpenFilesTest, HandlesStartAtOneAndAreReused) {
  OpenFiles files;
  EXPECT_EQ(files.add(devNull(), "a"), 1);
  EXPECT_EQ(files.add(devNull(), "b"), 2);
  EXPECT_EQ(files.add(devNull(), "c"), 3);
  EXPECT_EQ(files.find(0), nullptr);
  ASSERT_NE(files.find(2), nullptr);
  EXPECT_EQ(files.find(2)->path, "b");
  EXPECT_EQ(files.close(2), 0);
  EXPECT_EQ(files.close(2), -EBADF);
  EXPECT_EQ(files.find(2), nullptr);
  EXPECT_EQ(files.add(devNull(), "d"), 2);
  EXPECT_EQ(files.close(0), -EBADF);
  EXPECT_EQ(files.close(4), -EBADF);
}

TEST(StorageOpenFilesTest, TheTableIsBounded) {
  OpenFiles files;
  for (std::uint32_t i = 1; i <= kMaxOpenFiles; ++i) ASSERT_EQ(files.add(devNull(), "f"), i);
  EXPECT_EQ(files.add(devNull(), "one too many"), -EMFILE);
  EXPECT_EQ(files.close(kMaxOpenFiles), 0);
  EXPECT_EQ(files.add(devNull(), "again"), kMaxOpenFiles);
  files.clear();
  EXPECT_EQ(files.find(1), nullptr);
}

TEST(StorageOpenFilesTest, AFileInUseOutlivesItsHandle) {
  OpenFiles files;
  const std::int64_t handle = files.add(devNull(), "a");
  std::shared_ptr<const OpenFile> in_use = files.find(static_cast<std::uint32_t>(handle));
  EXPECT_EQ(files.close(static_cast<std::uint32_t>(handle)), 0);
  EXPECT_GE(::fcntl(in_use->fd.get(), F_GETFD), 0) << "closed under a reader";
}

TEST(StorageOpenBeneathTest, OpensRegularFilesBeneathTheRoot) {
  testing::TempDir dir;
  const std::string root = dir.path() + "/root";
  ASSERT_EQ(::mkdir(root.c_str(), 0700), 0);
  testing::writeFile(root + "/f", testing::patternBytes(1234, 3));
  testing::writeFile(dir.path() + "/outside", testing::patternBytes(10, 3));
  ASSERT_EQ(::symlink("f", (root + "/link").c_str()), 0);
  UniqueFd root_fd(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(root_fd.valid());
  std::uint64_t bytes = 0;
  const int fd = openBeneath(root_fd.get(), "f", &bytes);
  ASSERT_GE(fd, 0);
  UniqueFd opened(fd);
  EXPECT_EQ(bytes, 1234u);
  EXPECT_NE(::fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
  EXPECT_EQ(::fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY);
  EXPECT_EQ(openBeneath(root_fd.get(), "../outside", &bytes), -EXDEV);
  EXPECT_EQ(openBeneath(root_fd.get(), "link", &bytes), -ELOOP);
  EXPECT_EQ(openBeneath(root_fd.get(), ".", &bytes), -EISDIR);
  EXPECT_EQ(openBeneath(root_fd.get(), "none", &bytes), -ENOENT);
}

}  // namespace
}  // namespace agileos::services::storage
