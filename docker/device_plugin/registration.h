// Registration with the kubelet: Registration.Register on <plugin dir>/kubelet.sock.
#pragma once

#include <chrono>
#include <string>

#include "docker/device_plugin/plugin_options.h"

namespace agileos::device_plugin {

// Tells the kubelet at `kubelet_socket` that agileos.io/gpu is served on options.endpoint (in the
// same directory), API version v1beta1, neither PreStartContainer nor GetPreferredAllocation
// wanted. The plugin's server must be listening already: the kubelet dials it back at once.
// Returns false with *error set when the kubelet cannot be reached within `timeout` or refuses.
bool registerWithKubelet(const std::string& kubelet_socket, const PluginOptions& options,
                         std::chrono::milliseconds timeout, std::string* error);

}  // namespace agileos::device_plugin
