// Who may use the admin API: decided from the kernel's identity of the connection (SO_PEERCRED),
// never from anything the peer sends. The socket's mode (0660, root and the admin group) is the
// first fence; this check is the second, so a socket file with wrong permissions (or a
// directory bind-mounted somewhere it should not be) still admits no one else.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "scheduler/peer_listener.h"

namespace agileos::scheduler {

// The supplementary groups of process `pid` ("Groups:" of /proc/<pid>/status); empty if unknown.
std::vector<gid_t> supplementaryGroupsOf(pid_t pid);

// True for root, for the daemon's own uid, and for a peer whose primary or supplementary group is
// `admin_gid`. `groups_of` reads a pid's supplementary groups (supplementaryGroupsOf; replaced in
// tests). The groups are read after the connection was accepted; a peer that exits and whose pid
// is reused in between could lend the newcomer's groups, which the socket's mode already bounds.
bool isAdministrator(const PeerCredentials& peer, gid_t admin_gid, uid_t daemon_uid,
                     const std::function<std::vector<gid_t>(pid_t)>& groups_of = supplementaryGroupsOf);

}  // namespace agileos::scheduler
