#include "client/session/device_allocations.h"

#include <map>
#include <mutex>

#include "client/session/module_registry.h"

namespace agileos::client {
namespace {

struct Allocation {
  std::uint64_t size = 0;
  bool freeable = true;
};

std::mutex gMutex;
std::map<std::uint64_t, Allocation>& allocations() {
  static auto* map = new std::map<std::uint64_t, Allocation>();  // never destroyed: used at exit
  return *map;
}

}  // namespace

void rememberDeviceAllocation(std::uint64_t base, std::uint64_t size, bool freeable) {
  std::lock_guard lock(gMutex);
  allocations()[base] = Allocation{size, freeable};
}

void forgetDeviceAllocation(std::uint64_t base) {
  std::lock_guard lock(gMutex);
  allocations().erase(base);
}

bool forgetFreeableDeviceAllocation(std::uint64_t base) {
  std::lock_guard lock(gMutex);
  auto it = allocations().find(base);
  // A range the program mapped itself stays recorded: a free of it is refused (and waited for).
  if (it == allocations().end() || !it->second.freeable) return false;
  allocations().erase(it);
  return true;
}

void forgetAllDeviceAllocations() {
  std::lock_guard lock(gMutex);
  allocations().clear();
}

bool deviceAllocationContaining(std::uint64_t p, std::uint64_t* base, std::uint64_t* size) {
  std::lock_guard lock(gMutex);
  auto it = allocations().upper_bound(p);
  if (it == allocations().begin()) return false;
  --it;
  if (p - it->first >= it->second.size) return false;
  *base = it->first;
  *size = it->second.size;
  return true;
}

bool surelyDeviceRange(std::uint64_t p, std::uint64_t bytes) {
  {
    std::lock_guard lock(gMutex);
    auto it = allocations().upper_bound(p);
    if (it != allocations().begin()) {
      --it;
      const std::uint64_t offset = p - it->first;
      if (offset < it->second.size && bytes <= it->second.size - offset) return true;
    }
  }
  return ModuleRegistry::instance().isDeviceVariableRange(p, bytes);
}

}  // namespace agileos::client
