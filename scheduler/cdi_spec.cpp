#include "scheduler/cdi_spec.h"

#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#ifndef AGILEOS_SHIM_DIR_FROM_BINDIR
#error "AGILEOS_SHIM_DIR_FROM_BINDIR (scheduler/CMakeLists.txt) must name the shim directory from bindir"
#endif

namespace agileos::scheduler {
namespace {

using Json = nlohmann::ordered_json;

// In LD_PRELOAD order. The runtime shim first, as agileos-sandbox preloads it.
constexpr const char* kRequiredShims[] = {"libagileos_cudart.so", "libagileos_cuda.so"};
constexpr const char* kOptionalShims[] = {"libagileos_cufft.so", "libagileos_nvrtc.so"};
constexpr const char* kSessionLibrary = "libagileos_client.so";

bool readable(const std::string& dir, const char* name) {
  return ::access((dir + "/" + name).c_str(), R_OK) == 0;
}

std::string normal(const std::string& path) {
  std::string text = std::filesystem::path(path).lexically_normal().string();
  while (text.size() > 1 && text.back() == '/') text.pop_back();
  return text;
}

// True if `inner` is `outer` or lies under it (both normal, absolute).
bool within(const std::string& inner, const std::string& outer) {
  if (outer == "/") return true;
  return inner == outer || (inner.size() > outer.size() && inner.compare(0, outer.size(), outer) == 0 &&
                            inner[outer.size()] == '/');
}

// A read-only bind mount at the same path inside. nosuid and nodev: nothing there is a device or
// needs privileges; the shim directory keeps exec (the loader maps the shims executable).
Json bindMount(const std::string& host, const std::string& container, bool executable) {
  Json options = Json::array({"ro", "nosuid", "nodev"});
  if (!executable) options.push_back("noexec");
  options.push_back("rbind");
  return Json{{"hostPath", host}, {"containerPath", container}, {"type", "bind"}, {"options", options}};
}

}  // namespace

bool findPreloadedShims(const std::string& shim_dir, std::vector<std::string>* names, std::string* error) {
  names->clear();
  for (const char* name : kRequiredShims) {
    if (!readable(shim_dir, name)) {
      *error = shim_dir + "/" + name + " is missing (not a shim directory?)";
      return false;
    }
    names->push_back(name);
  }
  if (!readable(shim_dir, kSessionLibrary)) {
    *error = shim_dir + "/" + kSessionLibrary + " is missing (the shims load it from their directory)";
    return false;
  }
  for (const char* name : kOptionalShims) {
    if (readable(shim_dir, name)) names->push_back(name);
  }
  return true;
}

std::vector<std::string> cdiSocketDirectories(const std::string& socket_path,
                                              const std::string& runtime_dir) {
  const std::string socket_dir = normal(std::filesystem::path(normal(socket_path)).parent_path().string());
  const std::string runtime = normal(runtime_dir);
  if (within(runtime, socket_dir)) return {socket_dir};
  if (within(socket_dir, runtime)) return {runtime};
  return {socket_dir, runtime};
}

std::string cdiSpecText(const CdiSpecInputs& inputs) {
  Json mounts = Json::array();
  mounts.push_back(bindMount(normal(inputs.shim_dir), kCdiContainerShimDir, true));
  for (const std::string& dir : cdiSocketDirectories(inputs.socket_path, inputs.runtime_dir)) {
    mounts.push_back(bindMount(dir, dir, false));
  }
  std::string preload;
  for (const std::string& name : inputs.preloaded_shims) {
    if (!preload.empty()) preload += ':';
    preload += std::string(kCdiContainerShimDir) + "/" + name;
  }
  const Json env = Json::array({"LD_PRELOAD=" + preload, "AGILEOS_SOCKET=" + normal(inputs.socket_path)});
  Json devices = Json::array();
  for (const char* name : {"0", "all"})
    devices.push_back(Json{{"name", name}, {"containerEdits", {{"env", env}}}});
  const Json spec = {{"cdiVersion", kCdiVersion},
                     {"kind", kCdiKind},
                     {"devices", devices},
                     {"containerEdits", {{"mounts", mounts}}}};
  return spec.dump(2) + "\n";
}

std::string installedShimDir(const std::string& executable_dir) {
  return normal(executable_dir + "/" + AGILEOS_SHIM_DIR_FROM_BINDIR);
}

}  // namespace agileos::scheduler
