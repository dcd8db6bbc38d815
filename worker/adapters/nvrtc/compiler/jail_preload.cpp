#include <dlfcn.h>
#include <nvrtc.h>

#include <string>

#include "worker/adapters/nvrtc/compiler/jail.h"

namespace agileos::adapters::nvrtc::jail {

std::string preloadNvrtc() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "nvrtcVersion failed";
  // NVRTC dlopens "libnvrtc-builtins.so.MAJOR.MINOR" by that name at its first compilation
  // (strace: after nvrtcCompileProgram starts). Once an object with that soname is loaded, the
  // dynamic loader matches the name against it and opens no file. Never unloaded.
  const std::string name = "libnvrtc-builtins.so." + std::to_string(major) + "." + std::to_string(minor);
  constexpr int kFlags = RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE;
  if (dlopen(name.c_str(), kFlags) != nullptr) return {};
  const char* first = dlerror();
  std::string why = first != nullptr ? first : "unknown error";
  // Where NVRTC finds it beside itself (its own search path), so must this process.
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&nvrtcVersion), &info) != 0 && info.dli_fname != nullptr) {
    std::string path = info.dli_fname;
    const auto slash = path.rfind('/');
    if (slash != std::string::npos) {
      path = path.substr(0, slash + 1) + name;
      if (dlopen(path.c_str(), kFlags) != nullptr) return {};
      const char* error = dlerror();
      why += std::string("; ") + (error != nullptr ? error : path);
    }
  }
  return "cannot load " + name + ": " + why;
}

}  // namespace agileos::adapters::nvrtc::jail
