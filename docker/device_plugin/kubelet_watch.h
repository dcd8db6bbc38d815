// Notices a new kubelet.sock: a restarted kubelet creates it anew, and the plugin must register
// again. The socket's identity (socket_identity.h) alone could miss it, since a file system may
// give the new socket the inode the old one had; an inotify watch on the directory cannot.
#pragma once

#include <string>

namespace agileos::device_plugin {

class KubeletWatch {
 public:
  // Watches `directory` for `name` being created or moved in. Without a watch (inotify failed,
  // the directory is not there yet) it tries again at every call of created().
  KubeletWatch(std::string directory, std::string name);
  ~KubeletWatch();
  KubeletWatch(const KubeletWatch&) = delete;
  KubeletWatch& operator=(const KubeletWatch&) = delete;

  // True when the file was created (or moved in) since the last call. Never blocks.
  bool created();

 private:
  void ensureWatch();

  std::string directory_;
  std::string name_;
  int fd_ = -1;
  int watch_ = -1;
};

}  // namespace agileos::device_plugin
