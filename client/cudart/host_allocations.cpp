#include "client/cudart/host_allocations.h"

#include <sys/mman.h>
#include <unistd.h>

namespace agileos::client {

HostAllocations& HostAllocations::instance() {
  static HostAllocations* allocations = new HostAllocations();
  return *allocations;
}

void* HostAllocations::allocate(std::size_t size, unsigned flags) {
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  if (size > SIZE_MAX - page) return nullptr;
  const std::size_t mappedSize = (size + page - 1) / page * page;
  void* p = ::mmap(nullptr, mappedSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  ::mlock(p, mappedSize);  // best effort: RLIMIT_MEMLOCK may refuse, which only costs speed
  std::lock_guard lock(mutex_);
  entries_[reinterpret_cast<std::uintptr_t>(p)] = {size, mappedSize, flags};
  return p;
}

bool HostAllocations::free(void* p) {
  Entry entry{};
  {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(reinterpret_cast<std::uintptr_t>(p));
    if (it == entries_.end()) return false;
    entry = it->second;
    entries_.erase(it);
  }
  ::munmap(p, entry.mappedSize);
  return true;
}

std::optional<unsigned> HostAllocations::flagsOf(const void* p) const {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  std::lock_guard lock(mutex_);
  auto it = entries_.upper_bound(address);
  if (it == entries_.begin()) return std::nullopt;
  --it;
  if (address - it->first >= it->second.size) return std::nullopt;
  return it->second.flags;
}

}  // namespace agileos::client
