// The service's checks of client input on their own (services/storage/storage_validation.h).
#include "services/storage/storage_validation.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <string_view>

namespace agileos::services::storage {
namespace {

agileos_storage_queue_header validHeader(std::uint32_t slots = 4, std::uint32_t slot_bytes = 8192) {
  agileos_storage_queue_header header{};
  header.magic = AGILEOS_STORAGE_QUEUE_MAGIC;
  header.version = AGILEOS_STORAGE_PROTOCOL_VERSION;
  header.slots = slots;
  header.slot_bytes = slot_bytes;
  return header;
}

int check(const agileos_storage_queue_header& header, std::uint64_t queue_bytes, std::uint64_t buffer_bytes) {
  std::string reason;
  const int result = checkQueueHeader(header, queue_bytes, buffer_bytes, &reason);
  EXPECT_EQ(result == 0, reason.empty()) << reason;
  return result;
}

TEST(StorageQueueHeaderTest, TheLayoutIsTheDocumentedOne) {
  EXPECT_EQ(sizeof(agileos_storage_queue_header), 64u);
  EXPECT_EQ(sizeof(agileos_storage_sqe), 32u);
  EXPECT_EQ(sizeof(agileos_storage_cqe), 16u);
  EXPECT_EQ(AGILEOS_STORAGE_QUEUE_BYTES(1), 64u + 32u + 16u);
  EXPECT_EQ(AGILEOS_STORAGE_CQ_OFFSET(256), 64u + 256u * 32u);
  const std::uint32_t magic = AGILEOS_STORAGE_QUEUE_MAGIC;  // little-endian bytes: "ASGQ"
  EXPECT_EQ(std::memcmp("ASGQ", &magic, 4), 0);
}

TEST(StorageQueueHeaderTest, AcceptsTheLimits) {
  EXPECT_EQ(check(validHeader(1, 4096), AGILEOS_STORAGE_QUEUE_BYTES(1), 4096), 0);
  const std::uint64_t max_slots = AGILEOS_STORAGE_MAX_SLOTS;
  const std::uint64_t max_slot_bytes = AGILEOS_STORAGE_MAX_SLOT_BYTES;
  EXPECT_EQ(check(validHeader(AGILEOS_STORAGE_MAX_SLOTS, AGILEOS_STORAGE_MAX_SLOT_BYTES),
                  AGILEOS_STORAGE_QUEUE_BYTES(max_slots), max_slots * max_slot_bytes),
            0);
  EXPECT_EQ(check(validHeader(4, 8192), 1 << 20, 1 << 30), 0);  // larger than needed is fine
}

TEST(StorageQueueHeaderTest, RefusesBadHeaders) {
  auto header = validHeader();
  const std::uint64_t queue_bytes = AGILEOS_STORAGE_QUEUE_BYTES(4);
  header.magic ^= 1;
  EXPECT_EQ(check(header, queue_bytes, 4 * 8192), -EINVAL);
  header = validHeader();
  header.version = 0;
  EXPECT_EQ(check(header, queue_bytes, 4 * 8192), -EPROTONOSUPPORT);
  for (std::uint32_t slots : {0u, AGILEOS_STORAGE_MAX_SLOTS + 1, 0xFFFFFFFFu}) {
    EXPECT_EQ(check(validHeader(slots), 1ull << 40, 1ull << 50), -EINVAL) << slots << " slots";
  }
  for (std::uint32_t slot_bytes :
       {0u, 1u, 4095u, 4097u, 6144u, AGILEOS_STORAGE_MAX_SLOT_BYTES + 4096, 0xFFFFF000u}) {
    EXPECT_EQ(check(validHeader(4, slot_bytes), 1ull << 40, 1ull << 50), -EINVAL)
        << slot_bytes << " slot bytes";
  }
}

TEST(StorageQueueHeaderTest, RefusesSizesTooSmallForTheHeader) {
  EXPECT_EQ(check(validHeader(4, 8192), AGILEOS_STORAGE_QUEUE_BYTES(4) - 1, 4 * 8192), -EINVAL);
  EXPECT_EQ(check(validHeader(4, 8192), 0, 4 * 8192), -EINVAL);
  EXPECT_EQ(check(validHeader(4, 8192), AGILEOS_STORAGE_QUEUE_BYTES(4), 4 * 8192 - 1), -EINVAL);
  EXPECT_EQ(check(validHeader(4, 8192), AGILEOS_STORAGE_QUEUE_BYTES(4), 0), -EINVAL);
}

TEST(StorageSubmissionTest, BytesMustFitTheSlot) {
  Submission submission;
  submission.bytes = 1;
  EXPECT_EQ(checkSubmission(submission, 4096), 0);
  submission.bytes = 4096;
  EXPECT_EQ(checkSubmission(submission, 4096), 0);
  submission.bytes = 0;
  EXPECT_EQ(checkSubmission(submission, 4096), -EINVAL);
  submission.bytes = 4097;
  EXPECT_EQ(checkSubmission(submission, 4096), -EINVAL);
  submission.bytes = 0xFFFFFFFFu;
  EXPECT_EQ(checkSubmission(submission, AGILEOS_STORAGE_MAX_SLOT_BYTES), -EINVAL);
}

TEST(StorageSubmissionTest, TheEndMustBeAFileOffset) {
  constexpr std::uint64_t kMaxOffset = std::numeric_limits<std::int64_t>::max();
  Submission submission;
  submission.bytes = 4096;
  submission.offset = kMaxOffset - 4096;
  EXPECT_EQ(checkSubmission(submission, 4096), 0);
  submission.offset = kMaxOffset - 4095;
  EXPECT_EQ(checkSubmission(submission, 4096), -EOVERFLOW);
  submission.offset = std::numeric_limits<std::uint64_t>::max();
  EXPECT_EQ(checkSubmission(submission, 4096), -EOVERFLOW);
  submission.offset = std::numeric_limits<std::uint64_t>::max() - 100;  // wraps when added
  EXPECT_EQ(checkSubmission(submission, 4096), -EOVERFLOW);
}

TEST(StorageBufferRegistrationTest, TheRangeMustLieWithinTheHandle) {
  std::string reason;
  EXPECT_EQ(checkBufferRegistration(2 << 20, 4096, 64 << 10, &reason), 0);
  EXPECT_EQ(checkBufferRegistration(2 << 20, 0, 2 << 20, &reason), 0);  // the whole handle
  EXPECT_EQ(checkBufferRegistration(2 << 20, (2 << 20) - 1, 1, &reason), 0);
  EXPECT_TRUE(reason.empty()) << reason;
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  EXPECT_EQ(checkBufferRegistration(kMax, kMax - 1, 1, &reason), 0);
  EXPECT_EQ(checkBufferRegistration(kMax, 0, kMax, &reason), 0);
  struct Bad {
    std::uint64_t handle_bytes, buffer_offset, buffer_bytes;
  };
  for (const Bad& bad : {Bad{0, 0, 4096}, Bad{0, 0, 0}, Bad{4096, 0, 0}, Bad{4096, 0, 4097},
                         Bad{4096, 1, 4096}, Bad{4096, 4096, 1}, Bad{4096, kMax, 1}, Bad{4096, 4095, kMax},
                         Bad{kMax, kMax, 1}, Bad{kMax, 1, kMax}, Bad{kMax - 1, kMax - 4095, 4096}}) {
    reason.clear();
    EXPECT_EQ(checkBufferRegistration(bad.handle_bytes, bad.buffer_offset, bad.buffer_bytes, &reason),
              -EINVAL)
        << bad.handle_bytes << " " << bad.buffer_offset << " " << bad.buffer_bytes;
    EXPECT_FALSE(reason.empty());
  }
}

TEST(StorageBufferRegistrationTest, TargetedReadsMustLieWithinTheRange) {
  Submission submission;
  submission.bytes = 4096;
  submission.target = 1;
  submission.target_offset = 0;
  EXPECT_EQ(checkTargetRange(submission, 4096), 0);
  EXPECT_EQ(checkTargetRange(submission, 4095), -ERANGE);
  submission.target_offset = 60 << 10;
  EXPECT_EQ(checkTargetRange(submission, 64 << 10), 0);
  submission.target_offset = (60 << 10) + 1;
  EXPECT_EQ(checkTargetRange(submission, 64 << 10), -ERANGE);
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  submission.target_offset = kMax - 4095;  // offset + bytes wraps to 0
  EXPECT_EQ(checkTargetRange(submission, 64 << 10), -ERANGE);
  submission.target_offset = kMax;
  EXPECT_EQ(checkTargetRange(submission, kMax), -ERANGE);
  submission.target_offset = kMax - 4096;
  EXPECT_EQ(checkTargetRange(submission, kMax), 0);
}

// An OPEN request with `bytes` in path (NULs included) and path_bytes as given.
agileos_storage_request openRequest(std::string_view bytes, std::uint32_t path_bytes) {
  agileos_storage_request request{};
  request.op = AGILEOS_STORAGE_OPEN;
  std::memcpy(request.path, bytes.data(), std::min(bytes.size(), sizeof(request.path)));
  request.path_bytes = path_bytes;
  return request;
}

TEST(StorageOpenPathTest, TakesRelativePathsOfPathBytes) {
  std::string path;
  EXPECT_EQ(checkOpenPath(openRequest("a/b.bin", 7), &path), 0);
  EXPECT_EQ(path, "a/b.bin");
  EXPECT_EQ(checkOpenPath(openRequest("a/b.binXYZ", 7), &path), 0);
  EXPECT_EQ(path, "a/b.bin");
  EXPECT_EQ(checkOpenPath(openRequest("../x", 4), &path), 0);  // openat2 refuses the escape
  const std::string longest(AGILEOS_STORAGE_MAX_PATH, 'x');
  EXPECT_EQ(checkOpenPath(openRequest(longest, AGILEOS_STORAGE_MAX_PATH), &path), 0);
  EXPECT_EQ(path, longest);
}

TEST(StorageOpenPathTest, RefusesBadPaths) {
  std::string path = "unchanged";
  EXPECT_EQ(checkOpenPath(openRequest("", 0), &path), -EINVAL);
  EXPECT_EQ(checkOpenPath(openRequest("/etc/passwd", 11), &path), -EINVAL);
  EXPECT_EQ(checkOpenPath(openRequest(std::string_view("a\0b", 3), 3), &path), -EINVAL);
  EXPECT_EQ(checkOpenPath(openRequest(std::string_view("ab\0", 3), 3), &path), -EINVAL);
  const std::string too_long(AGILEOS_STORAGE_MAX_PATH + 1, 'x');
  EXPECT_EQ(checkOpenPath(openRequest(too_long, AGILEOS_STORAGE_MAX_PATH + 1), &path), -ENAMETOOLONG);
  EXPECT_EQ(checkOpenPath(openRequest("x", 0xFFFFFFFFu), &path), -ENAMETOOLONG);
  EXPECT_EQ(path, "unchanged");
}

}  // namespace
}  // namespace agileos::services::storage
