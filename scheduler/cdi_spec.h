// The Container Device Interface spec (CDI, github.com/cncf-tags/container-device-interface) that
// runs a container's CUDA programs through AgileOS: `podman run --device agileos.io/gpu=0 IMAGE
// PROGRAM` (docs/containers.md). Printed by `agileosd --cdi-spec`; `cmake --install` writes it to
// etc/cdi/agileos.json.
//
// What the spec adds to a container, and nothing else (no device node, no CUDA library, no hook):
//   - the shim directory, read-only, at kCdiContainerShimDir (a fixed path: the container's
//     LD_PRELOAD does not depend on where the host installed AgileOS);
//   - the directory of the daemon's client socket and the runtime directory (the workers'
//     sockets), read-only, at their host paths: the daemon hands clients worker endpoints as
//     host paths, so they must resolve inside the container to the same sockets;
//   - LD_PRELOAD (the shims, by their container paths) and AGILEOS_SOCKET.
//
// Thread-safety: plain functions; no shared state.
#pragma once

#include <string>
#include <vector>

namespace agileos::scheduler {

inline constexpr const char* kCdiKind = "agileos.io/gpu";
// The newest spec version podman 4.3 (Debian 12) accepts; it has every field the spec uses.
inline constexpr const char* kCdiVersion = "0.5.0";
inline constexpr const char* kCdiContainerShimDir = "/opt/agileos/shim";

struct CdiSpecInputs {
  std::string shim_dir;                      // host path of the shim directory, absolute
  std::vector<std::string> preloaded_shims;  // file names in shim_dir, in LD_PRELOAD order
  std::string socket_path;                   // DaemonConfig::socket_path
  std::string runtime_dir;                   // DaemonConfig::runtime_dir
};

// The shims a container preloads, in order, of those in `shim_dir`: the runtime shim
// (libagileos_cudart.so) and the driver shim (libagileos_cuda.so), both required, then the
// library shims that are there (libagileos_cufft.so, libagileos_nvrtc.so). Preloading each by
// its NVIDIA soname makes it win over the image's own CUDA libraries, and makes a dlopen of
// libcuda.so.1 (the statically linked runtime's way to the driver) find the driver shim without
// LD_LIBRARY_PATH. False with *error if a required shim, or libagileos_client.so (which the shims
// need next to them), is missing.
bool findPreloadedShims(const std::string& shim_dir, std::vector<std::string>* names, std::string* error);

// The directories to bind into the container for `socket_path` and `runtime_dir`: the socket's
// directory and the runtime directory, one of them only where it holds the other.
std::vector<std::string> cdiSocketDirectories(const std::string& socket_path, const std::string& runtime_dir);

// The spec, as JSON text ending in a newline. Devices "0" and "all" (the same edits: the device
// name does not choose a GPU, the daemon's placement does); the mounts are spec-wide, applied
// once whichever devices a container asks for.
std::string cdiSpecText(const CdiSpecInputs& inputs);

// The shim directory of the installation an agileosd in `executable_dir` belongs to
// (<bindir>/<path from bindir to libdir>/agileos/shim, cmake/AgileosInstall.cmake).
std::string installedShimDir(const std::string& executable_dir);

}  // namespace agileos::scheduler
