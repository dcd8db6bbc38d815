// cudaHostRegister's page checks and swaps (client/session/page_swap.h): which of the program's
// pages may be moved into shared memory, and that moving them (and back) keeps every byte.
#include "client/session/page_swap.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <thread>

namespace agileos::client {
namespace {

constexpr char kMaps[] =
    "555555554000-555555556000 r--p 00000000 08:01 1234 /usr/bin/program\n"
    "555555556000-555555558000 r-xp 00002000 08:01 1234 /usr/bin/program\n"
    "555555558000-55555555a000 rw-p 00004000 08:01 1234 /usr/bin/program\n"
    "55555555a000-55555557b000 rw-p 00000000 00:00 0                          [heap]\n"
    "55555557b000-55555557c000 rw-p 00000000 00:00 0 \n"
    "7ffff7d00000-7ffff7d10000 rw-p 00000000 00:00 0\n"
    "7ffff7d10000-7ffff7d20000 rw-s 00000000 00:05 99 /memfd:agileos-pinned (deleted)\n"
    "7ffff7d20000-7ffff7d21000 ---p 00000000 00:00 0\n"
    "7ffff7d21000-7ffff7d30000 rw-p 00000000 00:00 0\n"
    "7ffffffde000-7ffffffff000 rw-p 00000000 00:00 0                          [stack]\n"
    "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n";

bool allowed(std::uintptr_t begin, std::uintptr_t end, std::string* why = nullptr) {
  std::string ignored;
  return privateAnonymousReadWrite(kMaps, begin, end, why != nullptr ? why : &ignored);
}

TEST(PageSwap, PrivateAnonymousAndHeapPagesMayMove) {
  EXPECT_TRUE(allowed(0x55555555a000, 0x55555557b000)) << "the heap";
  EXPECT_TRUE(allowed(0x55555555b000, 0x55555555c000)) << "a page inside the heap";
  EXPECT_TRUE(allowed(0x55555557a000, 0x55555557c000)) << "across the heap into anonymous memory";
  EXPECT_TRUE(allowed(0x7ffff7d00000, 0x7ffff7d10000)) << "anonymous memory";
}

TEST(PageSwap, EverythingElseIsRefused) {
  std::string why;
  EXPECT_FALSE(allowed(0x555555556000, 0x555555557000, &why)) << "code";
  EXPECT_FALSE(allowed(0x555555558000, 0x555555559000, &why)) << "a file's writable private data";
  EXPECT_NE(why.find("anonymous"), std::string::npos) << why;
  EXPECT_FALSE(allowed(0x7ffff7d10000, 0x7ffff7d11000)) << "shared memory (a registration already)";
  EXPECT_FALSE(allowed(0x7ffff7d0f000, 0x7ffff7d11000)) << "running into shared memory";
  EXPECT_FALSE(allowed(0x7ffff7d20000, 0x7ffff7d21000)) << "a guard page";
  EXPECT_FALSE(allowed(0x7ffff7d1f000, 0x7ffff7d22000)) << "across a guard page";
  EXPECT_FALSE(allowed(0x7ffffffde000, 0x7ffffffdf000)) << "the stack";
  EXPECT_FALSE(allowed(0x55555557c000, 0x55555557d000, &why)) << "nothing mapped";
  EXPECT_NE(why.find("not mapped"), std::string::npos) << why;
  EXPECT_FALSE(allowed(0x55555557b000, 0x55555557d000)) << "running past the end of a mapping";
  EXPECT_FALSE(allowed(0x7ffff7d30000, 0x7ffff7d31000)) << "a gap between mappings";
  EXPECT_FALSE(allowed(0xffffffffff600000, 0xffffffffff601000)) << "vsyscall";
  EXPECT_FALSE(privateAnonymousReadWrite("garbage\n", 0x1000, 0x2000, &why));
  EXPECT_FALSE(privateAnonymousReadWrite("", 0x1000, 0x2000, &why));
}

TEST(PageSwap, ThisProcessIsReadAsIs) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  void* anonymous = ::mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(anonymous, MAP_FAILED);
  const auto begin = reinterpret_cast<std::uintptr_t>(anonymous);
  std::string why;
  EXPECT_TRUE(ownPagesArePrivateAnonymous(begin, begin + 2 * page, &why)) << why;
  ASSERT_EQ(::mprotect(static_cast<char*>(anonymous) + page, page, PROT_READ), 0);
  EXPECT_FALSE(ownPagesArePrivateAnonymous(begin, begin + 2 * page, &why)) << "a read-only page";
  ::munmap(anonymous, 2 * page);
  EXPECT_FALSE(ownPagesArePrivateAnonymous(begin, begin + page, &why)) << "unmapped";
  const auto code = reinterpret_cast<std::uintptr_t>(&ownPagesArePrivateAnonymous) / page * page;
  EXPECT_FALSE(ownPagesArePrivateAnonymous(code, code + page, &why)) << "code";
  int local = 0;
  const auto stack = reinterpret_cast<std::uintptr_t>(&local) / page * page;
  EXPECT_FALSE(ownPagesArePrivateAnonymous(stack, stack + page, &why)) << "the stack";
}

TEST(PageSwap, TheCallingThreadsStackIsKnown) {
  auto check = [] {
    int local = 0;
    const auto address = reinterpret_cast<std::uintptr_t>(&local);
    EXPECT_TRUE(meetsOwnStack(address, address + 4));
    void* heap = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    const auto elsewhere = reinterpret_cast<std::uintptr_t>(heap);
    EXPECT_FALSE(meetsOwnStack(elsewhere, elsewhere + 4096));
    ::munmap(heap, 4096);
  };
  check();                    // the main thread
  std::thread(check).join();  // a thread's stack is anonymous memory in /proc/self/maps
}

TEST(PageSwap, SwappingInAndOutKeepsEveryByteAndTheAddress) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t bytes = 3 * page;
  auto* original = static_cast<unsigned char*>(
      ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(original, MAP_FAILED);
  for (std::size_t i = 0; i < bytes; ++i) original[i] = static_cast<unsigned char>(i * 7 + 1);
  const int fd = ::memfd_create("page_swap_test", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(bytes)), 0);
  void* shared = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(shared, MAP_FAILED);
  // A second view of the memfd: what "the worker" sees.
  auto* other =
      static_cast<unsigned char*>(::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  ASSERT_NE(other, MAP_FAILED);

  ASSERT_TRUE(swapInShared(original, bytes, shared));
  for (std::size_t i = 0; i < bytes; ++i) ASSERT_EQ(original[i], static_cast<unsigned char>(i * 7 + 1)) << i;
  original[5] = 0xEE;
  EXPECT_EQ(other[5], 0xEE) << "the program's pointer now names the shared pages";
  other[page] = 0xDD;
  EXPECT_EQ(original[page], 0xDD) << "and sees the other side's writes";
  std::string why;
  const auto begin = reinterpret_cast<std::uintptr_t>(original);
  EXPECT_FALSE(ownPagesArePrivateAnonymous(begin, begin + bytes, &why))
      << "now shared: not registrable twice";

  ASSERT_TRUE(swapOutToPrivate(original, bytes));
  EXPECT_EQ(original[5], 0xEE);
  EXPECT_EQ(original[page], 0xDD);
  EXPECT_EQ(original[bytes - 1], static_cast<unsigned char>((bytes - 1) * 7 + 1));
  original[6] = 0x11;
  EXPECT_NE(other[6], 0x11) << "private again";
  EXPECT_TRUE(ownPagesArePrivateAnonymous(begin, begin + bytes, &why)) << why;
  ::munmap(original, bytes);
  ::munmap(other, bytes);
  ::close(fd);
}

TEST(PageSwap, EveryByteMovesWhateverTheNumberOfPages) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  for (std::size_t pages : {1u, 2u, 5u}) {
    SCOPED_TRACE(pages);
    const std::size_t bytes = pages * page;
    auto* original = static_cast<unsigned char*>(
        ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(original, MAP_FAILED);
    for (std::size_t i = 0; i < bytes; ++i) original[i] = static_cast<unsigned char>(i * 31 + pages);
    void* shared = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(shared, MAP_FAILED);
    ASSERT_TRUE(swapInShared(original, bytes, shared));
    for (std::size_t i = 0; i < bytes; ++i)
      ASSERT_EQ(original[i], static_cast<unsigned char>(i * 31 + pages)) << i;
    ::munmap(original, bytes);
  }
}

}  // namespace
}  // namespace agileos::client
