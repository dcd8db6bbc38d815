#include "client/nvrtc/program.h"

#include <utility>

namespace agileos::client::nvrtc_shim {
namespace {

// Handles are multiples of 16 (aligned like the addresses the real library hands out), starting
// at 16: never null. They run out after 2^60 programs.
constexpr unsigned kHandleShift = 4;

std::uintptr_t keyOf(nvrtcProgram handle) { return reinterpret_cast<std::uintptr_t>(handle); }

}  // namespace

nvrtcProgram ProgramRegistry::add(std::shared_ptr<Program> program) {
  std::lock_guard lock(mutex_);
  const std::uintptr_t key = next_++ << kHandleShift;
  programs_.emplace(key, std::move(program));
  return reinterpret_cast<nvrtcProgram>(key);
}

std::shared_ptr<Program> ProgramRegistry::find(nvrtcProgram handle) const {
  std::lock_guard lock(mutex_);
  const auto found = programs_.find(keyOf(handle));
  return found != programs_.end() ? found->second : nullptr;
}

bool ProgramRegistry::remove(nvrtcProgram handle) {
  std::lock_guard lock(mutex_);
  return programs_.erase(keyOf(handle)) == 1;
}

std::size_t ProgramRegistry::size() const {
  std::lock_guard lock(mutex_);
  return programs_.size();
}

ProgramRegistry& programs() {
  static auto* registry = new ProgramRegistry();
  return *registry;
}

}  // namespace agileos::client::nvrtc_shim
