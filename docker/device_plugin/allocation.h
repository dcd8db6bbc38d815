// Allocate's answer (kubelet Device Plugin API v1beta1): what the container runtime does to a
// container given agileos.io/gpu. Pure functions of the request and the options, so the tests can
// check them without a server.
//
// Invariant: no answer ever carries a device node (ContainerAllocateResponse.devices stays empty).
// A client container gets the shims (read-only), the daemon's socket directory and the workers'
// (read-only: connecting to a unix socket needs no write access to its file system), and the two
// environment variables that make a CUDA program use them; the GPU stays with agileosd.
#pragma once

#include <grpcpp/support/status.h>

#include <set>
#include <string>

#include "docker/device_plugin/plugin_options.h"
#include "kubelet/deviceplugin/v1beta1/api.pb.h"

namespace agileos::device_plugin {

// The shims LD_PRELOAD names, in this order, those of them the shim directory holds; the runtime
// shim must be there. Preloading the driver, cuFFT and NVRTC shims as well binds their sonames
// (libcuda.so.1, libcufft.so.12, libnvrtc.so.13) to the shims before the program's own lookups,
// so an image's real CUDA libraries are never loaded in their place, without setting
// LD_LIBRARY_PATH (which would replace the image's own).
inline constexpr const char* kRuntimeShim = "libagileos_cudart.so";
inline constexpr const char* kOtherShims[] = {"libagileos_cuda.so", "libagileos_cufft.so",
                                              "libagileos_nvrtc.so"};

// LD_PRELOAD's value: the shims under options.shim_dir, colon-separated. Empty when the runtime
// shim is missing (then nothing can be allocated).
std::string preloadList(const PluginOptions& options);

// The answer for every container of `request`. Fails closed: INVALID_ARGUMENT for a container that
// names no device, an ID not in `known` or the same ID twice; FAILED_PRECONDITION when the runtime
// shim is not in the shim directory. `*response` is complete only when the status is OK.
grpc::Status allocate(const v1beta1::AllocateRequest& request, const std::set<std::string>& known,
                      const PluginOptions& options, v1beta1::AllocateResponse* response);

}  // namespace agileos::device_plugin
