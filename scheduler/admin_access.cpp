#include "scheduler/admin_access.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace agileos::scheduler {

std::vector<gid_t> supplementaryGroupsOf(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (!line.starts_with("Groups:")) continue;
    std::istringstream fields(line.substr(7));
    std::vector<gid_t> groups;
    unsigned long gid = 0;
    while (fields >> gid) groups.push_back(static_cast<gid_t>(gid));
    return groups;
  }
  return {};
}

bool isAdministrator(const PeerCredentials& peer, gid_t admin_gid, uid_t daemon_uid,
                     const std::function<std::vector<gid_t>(pid_t)>& groups_of) {
  if (peer.uid == 0 || peer.uid == daemon_uid || peer.gid == admin_gid) return true;
  if (peer.pid <= 0) return false;
  const std::vector<gid_t> groups = groups_of(peer.pid);
  return std::find(groups.begin(), groups.end(), admin_gid) != groups.end();
}

}  // namespace agileos::scheduler
