#include "client/session/page_swap.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

namespace agileos::client {
namespace {

bool parseHex(std::string_view text, std::uintptr_t* value) {
  if (text.empty() || text.size() > 16) return false;
  std::uintptr_t v = 0;
  for (char c : text) {
    int digit = 0;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else {
      return false;
    }
    v = v << 4 | static_cast<std::uintptr_t>(digit);
  }
  *value = v;
  return true;
}

// The next space-separated field of `line` from *at (skipping spaces).
std::string_view field(std::string_view line, std::size_t* at) {
  while (*at < line.size() && line[*at] == ' ') ++*at;
  const std::size_t start = *at;
  while (*at < line.size() && line[*at] != ' ') ++*at;
  return line.substr(start, *at - start);
}

}  // namespace

bool privateAnonymousReadWrite(std::string_view maps, std::uintptr_t begin, std::uintptr_t end,
                               std::string* why) {
  std::uintptr_t covered = begin;  // [begin, covered) is known good
  while (!maps.empty() && covered < end) {
    const std::size_t newline = maps.find('\n');
    const std::string_view line = maps.substr(0, newline);
    maps = newline == std::string_view::npos ? std::string_view{} : maps.substr(newline + 1);
    // start-end perms offset dev inode [path]
    std::size_t at = 0;
    const std::string_view range = field(line, &at);
    const std::string_view perms = field(line, &at);
    field(line, &at);  // offset
    field(line, &at);  // device
    const std::string_view inode = field(line, &at);
    while (at < line.size() && line[at] == ' ') ++at;
    const std::string_view path = line.substr(at);
    const std::size_t dash = range.find('-');
    std::uintptr_t lo = 0, hi = 0;
    if (dash == std::string_view::npos || !parseHex(range.substr(0, dash), &lo) ||
        !parseHex(range.substr(dash + 1), &hi) || perms.size() < 4) {
      *why = "an unreadable line of /proc/self/maps";
      return false;
    }
    if (hi <= covered) continue;  // wholly before what is still to cover
    if (lo > covered) {
      *why = "part of the range is not mapped";
      return false;
    }
    if (perms[0] != 'r' || perms[1] != 'w' || perms[3] != 'p') {
      *why = "part of the range is not private readable and writable memory";
      return false;
    }
    if (inode != "0" || (!path.empty() && path != "[heap]")) {
      *why =
          "part of the range is not anonymous memory (" + std::string(path.empty() ? "a file" : path) + ")";
      return false;
    }
    covered = hi;
  }
  if (covered < end) {
    *why = "part of the range is not mapped";
    return false;
  }
  return true;
}

bool ownPagesArePrivateAnonymous(std::uintptr_t begin, std::uintptr_t end, std::string* why) {
  const int fd = ::open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *why = "/proc/self/maps cannot be read";
    return false;
  }
  std::string text;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0) {
      ::close(fd);
      *why = "/proc/self/maps cannot be read";
      return false;
    }
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return privateAnonymousReadWrite(text, begin, end, why);
}

bool meetsOwnStack(std::uintptr_t begin, std::uintptr_t end) {
  pthread_attr_t attributes;
  if (::pthread_getattr_np(::pthread_self(), &attributes) != 0) return true;  // unknown: assume so
  void* low = nullptr;
  std::size_t size = 0;
  const bool known = ::pthread_attr_getstack(&attributes, &low, &size) == 0;
  ::pthread_attr_destroy(&attributes);
  if (!known) return true;
  const auto stackBegin = reinterpret_cast<std::uintptr_t>(low);
  return begin < stackBegin + size && end > stackBegin;
}

// Copies whole pages, which may hold bytes of the program's other objects. Under AddressSanitizer
// such bytes can be another allocation's redzone, which memcpy's interceptor would report as an
// overflow: there the pages are copied as raw words, unchecked (they are the program's own memory,
// page-aligned and mapped read-write, checked in /proc/self/maps before).
#if defined(__SANITIZE_ADDRESS__)
__attribute__((no_sanitize("address"))) static void copyWholePages(void* to, const void* from,
                                                                   std::size_t bytes) {
  auto* out = static_cast<std::uint64_t*>(to);
  const auto* in = static_cast<const std::uint64_t*>(from);
  for (std::size_t i = 0; i < bytes / sizeof *out; ++i) {
    out[i] = in[i];
    asm volatile("" ::: "memory");  // keeps the compiler from turning the loop back into memcpy
  }
}
#else
static void copyWholePages(void* to, const void* from, std::size_t bytes) { std::memcpy(to, from, bytes); }
#endif

bool swapInShared(void* pages, std::size_t bytes, void* shared) {
  // The interior first, the two edge pages (which may hold bytes of the program's other data,
  // such as a neighbouring heap chunk) last, right before the swap: that keeps the window in
  // which another thread's write to them is lost to the time of copying two pages.
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  auto* from = static_cast<char*>(pages);
  auto* to = static_cast<char*>(shared);
  if (bytes > 2 * page) copyWholePages(to + page, from + page, bytes - 2 * page);
  copyWholePages(to, from, page);
  if (bytes > page) copyWholePages(to + bytes - page, from + bytes - page, page);
  return ::mremap(shared, bytes, bytes, MREMAP_MAYMOVE | MREMAP_FIXED, pages) == pages;
}

bool swapOutToPrivate(void* pages, std::size_t bytes) {
  void* fresh = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (fresh == MAP_FAILED) return false;
  copyWholePages(fresh, pages, bytes);
  if (::mremap(fresh, bytes, bytes, MREMAP_MAYMOVE | MREMAP_FIXED, pages) != pages) {
    ::munmap(fresh, bytes);
    return false;
  }
  return true;
}

}  // namespace agileos::client
