#include "docker/device_plugin/kubelet_watch.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <cstring>

namespace agileos::device_plugin {

KubeletWatch::KubeletWatch(std::string directory, std::string name)
    : directory_(std::move(directory)), name_(std::move(name)) {
  fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  ensureWatch();
}

KubeletWatch::~KubeletWatch() {
  if (fd_ >= 0) ::close(fd_);
}

void KubeletWatch::ensureWatch() {
  if (fd_ < 0 || watch_ >= 0) return;
  watch_ =
      ::inotify_add_watch(fd_, directory_.c_str(), IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF);
}

bool KubeletWatch::created() {
  ensureWatch();
  if (fd_ < 0 || watch_ < 0) return false;
  bool seen = false;
  alignas(inotify_event) char buffer[16 * 1024];
  for (;;) {
    const ssize_t length = ::read(fd_, buffer, sizeof(buffer));
    if (length <= 0) break;  // EAGAIN: drained
    for (ssize_t offset = 0; offset < length;) {
      const auto* event = reinterpret_cast<const inotify_event*>(buffer + offset);
      if ((event->mask & (IN_CREATE | IN_MOVED_TO)) != 0 && event->len > 0 && name_ == event->name)
        seen = true;
      // The directory itself went away: watch the one that takes its place, at the next call.
      if ((event->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) != 0) watch_ = -1;
      offset += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
    }
  }
  return seen;
}

}  // namespace agileos::device_plugin
