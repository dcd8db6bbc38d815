#include "docker/device_plugin/allocation.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "docker/device_plugin/devices.h"

namespace agileos::device_plugin {
namespace {

bool readable(const std::string& path) { return ::access(path.c_str(), R_OK) == 0; }

// `inner` is `outer` or lies below it (both absolute and lexically normal).
bool within(const std::filesystem::path& inner, const std::filesystem::path& outer) {
  auto [end, unused] = std::mismatch(outer.begin(), outer.end(), inner.begin(), inner.end());
  return end == outer.end();
}

void addMount(v1beta1::ContainerAllocateResponse* container, const std::string& path) {
  v1beta1::Mount* mount = container->add_mounts();
  mount->set_container_path(path);
  mount->set_host_path(path);
  mount->set_read_only(true);
}

// The edits for runtimes without CDI: the same paths inside as outside, so the socket path the
// daemon reports for a worker (under runtime_dir) is valid in the container as it is.
void addDirectEdits(const PluginOptions& options, const std::string& preload,
                    v1beta1::ContainerAllocateResponse* container) {
  (*container->mutable_envs())["LD_PRELOAD"] = preload;
  (*container->mutable_envs())["AGILEOS_SOCKET"] = options.daemon_socket;
  const std::filesystem::path shims = std::filesystem::path(options.shim_dir).lexically_normal();
  const std::filesystem::path sockets =
      std::filesystem::path(options.daemon_socket).lexically_normal().parent_path();
  const std::filesystem::path runtime = std::filesystem::path(options.runtime_dir).lexically_normal();
  addMount(container, shims.string());
  addMount(container, sockets.string());
  // With the defaults runtime_dir is the socket's directory: one mount covers both.
  if (!within(runtime, sockets)) addMount(container, runtime.string());
}

}  // namespace

std::string preloadList(const PluginOptions& options) {
  const std::string runtime = options.shim_dir + "/" + kRuntimeShim;
  if (!readable(runtime)) return "";
  std::string list = runtime;
  for (const char* name : kOtherShims) {
    const std::string path = options.shim_dir + "/" + name;
    if (readable(path)) list += ":" + path;
  }
  return list;
}

grpc::Status allocate(const v1beta1::AllocateRequest& request, const std::set<std::string>& known,
                      const PluginOptions& options, v1beta1::AllocateResponse* response) {
  response->Clear();
  for (int i = 0; i < request.container_requests_size(); ++i) {
    const v1beta1::ContainerAllocateRequest& container = request.container_requests(i);
    const std::string which = "container_requests[" + std::to_string(i) + "]";
    if (container.devices_ids_size() == 0)
      return {grpc::StatusCode::INVALID_ARGUMENT, which + " names no device"};
    std::set<std::string> seen;
    for (const std::string& id : container.devices_ids()) {
      if (known.count(id) == 0) return {grpc::StatusCode::INVALID_ARGUMENT, which + ": unknown device " + id};
      if (!seen.insert(id).second)
        return {grpc::StatusCode::INVALID_ARGUMENT, which + ": device " + id + " twice"};
    }
  }
  std::string preload;
  if (options.allocate_mode != AllocateMode::kCdi) {
    preload = preloadList(options);
    if (preload.empty())
      return {grpc::StatusCode::FAILED_PRECONDITION,
              "the runtime shim " + options.shim_dir + "/" + kRuntimeShim + " is not installed"};
  }
  for (int i = 0; i < request.container_requests_size(); ++i) {
    v1beta1::ContainerAllocateResponse* container = response->add_container_responses();
    if (options.allocate_mode != AllocateMode::kDirect)
      container->add_cdi_devices()->set_name(cdiDeviceName(options.device));
    if (options.allocate_mode != AllocateMode::kCdi) addDirectEdits(options, preload, container);
  }
  return grpc::Status::OK;
}

}  // namespace agileos::device_plugin
