// Copying a program's registered device code (client/session/fatbin_copy.h): the prelinked objects
// a version-2 wrapper lists, copied whole and in order; any other wrapper lists none; a list or an
// object the program could have pointed anywhere fails cleanly (no fault, nothing half copied).
#include "client/session/fatbin_copy.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace agileos::client {
namespace {

// A fatbin container: the 16-byte header (magic, version, header size, payload size) and payload.
std::string container(const std::string& payload) {
  std::string bytes(16, '\0');
  const std::uint32_t magic = kFatbinContainerMagic;
  const std::uint16_t version = 1, headerSize = 16;
  const std::uint64_t payloadSize = payload.size();
  std::memcpy(bytes.data(), &magic, 4);
  std::memcpy(bytes.data() + 4, &version, 2);
  std::memcpy(bytes.data() + 6, &headerSize, 2);
  std::memcpy(bytes.data() + 8, &payloadSize, 8);
  return bytes + payload;
}

FatbinWrapper wrapperListing(std::uint32_t version, const void* list) {
  return FatbinWrapper{kFatbinWrapperMagic, version, nullptr, list};
}

TEST(FatbinCopy, AVersionTwoWrappersObjectsAreCopiedWholeAndInOrder) {
  const std::string first = container("first object"), second = container(std::string(5000, 'x'));
  const void* list[] = {first.data(), second.data(), nullptr};
  std::vector<std::string> objects;
  std::string problem;
  ASSERT_TRUE(copyPrelinkedObjects(wrapperListing(2, list), &objects, &problem)) << problem;
  ASSERT_EQ(objects.size(), 2u);
  EXPECT_EQ(objects[0], first);
  EXPECT_EQ(objects[1], second);
}

TEST(FatbinCopy, OtherWrappersListNothing) {
  const std::string object = container("x");
  const void* list[] = {object.data(), nullptr};
  std::vector<std::string> objects{"stale"};
  std::string problem;
  // Version 1's field is a file name (or null), never a list.
  EXPECT_TRUE(copyPrelinkedObjects(wrapperListing(1, list), &objects, &problem));
  EXPECT_TRUE(objects.empty());
  EXPECT_TRUE(copyPrelinkedObjects(wrapperListing(2, nullptr), &objects, &problem));
  EXPECT_TRUE(objects.empty());
}

TEST(FatbinCopy, UnreadableOrMalformedListsFailWithNothingCopied) {
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  void* unmapped = ::mmap(nullptr, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(unmapped, MAP_FAILED);
  const std::string good = container("good");
  const std::string badMagic(32, '\x11');
  std::string hugeHeader = container("");
  const std::uint64_t huge = 2ull << 30;
  std::memcpy(hugeHeader.data() + 8, &huge, 8);

  std::vector<std::string> objects;
  std::string problem;
  EXPECT_FALSE(copyPrelinkedObjects(wrapperListing(2, unmapped), &objects, &problem));
  EXPECT_NE(problem.find("unreadable"), std::string::npos) << problem;
  EXPECT_TRUE(objects.empty());

  for (const void* bad : {static_cast<const void*>(badMagic.data()),
                          static_cast<const void*>(hugeHeader.data()), static_cast<const void*>(unmapped)}) {
    const void* list[] = {good.data(), bad, nullptr};
    problem.clear();
    EXPECT_FALSE(copyPrelinkedObjects(wrapperListing(2, list), &objects, &problem));
    EXPECT_NE(problem.find("prelinked object 1"), std::string::npos) << problem;
    EXPECT_TRUE(objects.empty()) << "nothing half copied";
  }

  // A list with no end: refused at 4096 entries.
  std::vector<const void*> endless(5000, good.data());
  EXPECT_FALSE(copyPrelinkedObjects(wrapperListing(2, endless.data()), &objects, &problem));
  EXPECT_NE(problem.find("4096"), std::string::npos) << problem;
  EXPECT_TRUE(objects.empty());
  ::munmap(unmapped, page);
}

TEST(FatbinCopy, AContainerRunningPastReadableMemoryIsRefused) {
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  auto* pages = static_cast<char*>(
      ::mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(pages, MAP_FAILED);
  ASSERT_EQ(::mprotect(pages + page, page, PROT_NONE), 0);
  // The header says 64 payload bytes; the container starts 32 bytes before the unreadable page.
  const std::string header = container(std::string(64, 'p')).substr(0, 16);
  std::memcpy(pages + page - 32, header.data(), 16);
  std::string image, problem;
  EXPECT_FALSE(copyFatbinContainer(pages + page - 32, &image, &problem));
  EXPECT_NE(problem.find("past readable memory"), std::string::npos) << problem;
  EXPECT_TRUE(image.empty());
  ::munmap(pages, 2 * page);
}

}  // namespace
}  // namespace agileos::client
