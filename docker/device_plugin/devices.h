// What agileos-device-plugin advertises: one resource, agileos.io/gpu, as `slots` devices that all
// stand for the same GPU behind agileosd. A device here is a place in the daemon's admission, not
// a device node: a container that holds one gets the shims and the daemon's socket, never
// /dev/nvidia* (docs/kubernetes.md, "Security").
#pragma once

#include <set>
#include <string>
#include <vector>

namespace agileos::device_plugin {

// The extended resource a pod asks for (resources.limits), and the CDI kind of the spec that
// `agileosd --cdi-spec` writes (/etc/cdi/agileos.json): one name for both, so the CDI device the
// plugin names is the one the spec defines. docker/kubernetes/ and its check use this spelling.
inline constexpr const char* kResourceName = "agileos.io/gpu";
// The kubelet Device Plugin API this plugin speaks (RegisterRequest.version).
inline constexpr const char* kApiVersion = "v1beta1";
inline constexpr const char* kHealthy = "Healthy";
inline constexpr const char* kUnhealthy = "Unhealthy";

// "agileos-gpu<device>-slot<i>" for i in [0, slots), in that order.
std::vector<std::string> deviceIds(int device, int slots);

// "agileos.io/gpu=<device>": the fully qualified CDI device name.
std::string cdiDeviceName(int device);

}  // namespace agileos::device_plugin
