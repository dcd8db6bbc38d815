// Which socket file is at a path: how the plugin notices that the kubelet made a new kubelet.sock
// (it restarted) or removed the plugin's own socket (a restarting kubelet clears the directory).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace agileos::device_plugin {

struct SocketIdentity {
  dev_t device = 0;
  ino_t inode = 0;
  bool operator==(const SocketIdentity&) const = default;
};

// The identity of the unix socket at `path`; nullopt when nothing is there or it is not a socket.
// A socket re-created at the same path has a new inode while the old one's file is gone, so a
// change of identity means a new socket.
std::optional<SocketIdentity> socketIdentity(const std::string& path);

}  // namespace agileos::device_plugin
