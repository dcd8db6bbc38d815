// What the worker's NVRTC says about itself (UNTRUSTED side): its version and the architectures
// it compiles for, asked once ("version", "supported_archs") and then answered from here. A
// failure is not remembered: the next call asks again.
#pragma once

#include <nvrtc.h>

#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace agileos::client::nvrtc_shim {

class LibraryFacts {
 public:
  nvrtcResult version(int* major, int* minor);
  nvrtcResult supportedArchs(std::vector<int>* archs);

 private:
  std::mutex mutex_;
  std::optional<std::pair<int, int>> version_;
  std::optional<std::vector<int>> archs_;
};

// The process-wide answers (never destroyed: NVRTC may be called from atexit handlers).
LibraryFacts& facts();

}  // namespace agileos::client::nvrtc_shim
