#include "scheduler/process_credentials.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace agileos::scheduler {
namespace {

// The group of the character device `path` if only its group may read and write it, else nullopt.
std::optional<gid_t> restrictedGroupOf(const std::string& path) {
  struct stat status {};
  if (::stat(path.c_str(), &status) != 0 || !S_ISCHR(status.st_mode)) return std::nullopt;
  constexpr mode_t kOthersRw = S_IROTH | S_IWOTH;
  constexpr mode_t kGroupRw = S_IRGRP | S_IWGRP;
  if ((status.st_mode & kOthersRw) == kOthersRw) return std::nullopt;
  if ((status.st_mode & kGroupRw) != kGroupRw) return std::nullopt;
  return status.st_gid;
}

void addNodeGroups(const std::string& dir, bool nvidia_only, std::vector<gid_t>* groups) {
  DIR* listing = ::opendir(dir.c_str());
  if (listing == nullptr) return;
  while (const dirent* entry = ::readdir(listing)) {
    const std::string name = entry->d_name;
    if (nvidia_only && name.rfind("nvidia", 0) != 0) continue;
    if (std::optional<gid_t> group = restrictedGroupOf(dir + "/" + name)) groups->push_back(*group);
  }
  ::closedir(listing);
}

}  // namespace

bool takeIdsAfterFork(uid_t uid, gid_t gid, const gid_t* groups, std::size_t group_count) {
  return ::syscall(SYS_setgroups, group_count, groups) == 0 && ::syscall(SYS_setresgid, gid, gid, gid) == 0 &&
         ::syscall(SYS_setresuid, uid, uid, uid) == 0;
}

std::vector<gid_t> deviceNodeGroups(const std::string& dev_dir) {
  std::vector<gid_t> groups;
  addNodeGroups(dev_dir, /*nvidia_only=*/true, &groups);
  addNodeGroups(dev_dir + "/nvidia-caps", /*nvidia_only=*/false, &groups);
  std::sort(groups.begin(), groups.end());
  groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
  groups.erase(std::remove(groups.begin(), groups.end(), gid_t{0}), groups.end());  // never root's group
  return groups;
}

bool killProcessesOf(uid_t uid, std::string* error) {
  if (uid == 0) {
    *error = "refusing to kill every process of uid 0";
    return false;
  }
  const pid_t child = ::fork();
  if (child < 0) {
    *error = std::string("fork: ") + std::strerror(errno);
    return false;
  }
  if (child == 0) {
    // Nothing here may allocate. kill(-1) spares the caller itself; having taken `uid` as real
    // and effective id, it reaches exactly the processes whose real or saved uid is `uid`
    // (kill(2)'s permission rule).
    if (!takeIdsAfterFork(uid, static_cast<gid_t>(uid), nullptr, 0)) ::_exit(127);
    ::kill(-1, SIGKILL);
    ::_exit(0);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    *error = "cannot take uid " + std::to_string(uid) + " to clear its processes";
    return false;
  }
  return true;
}

UidRange::~UidRange() {
  for (const auto& [uid, fd] : held_) {
    if (fd >= 0) ::close(fd);
  }
}

std::optional<uid_t> UidRange::acquire() {
  for (std::uint32_t i = 0; i < count_; ++i) {
    const uid_t uid = base_ + i;
    if (held_.count(uid) != 0) continue;
    int fd = -1;
    if (!lock_dir_.empty()) {
      fd = ::open((lock_dir_ + "/" + std::to_string(uid)).c_str(), O_CREAT | O_RDWR | O_CLOEXEC | O_NOFOLLOW,
                  0600);
      if (fd < 0) continue;
      if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {  // another daemon's
        ::close(fd);
        continue;
      }
    }
    held_[uid] = fd;
    return uid;
  }
  return std::nullopt;
}

void UidRange::release(uid_t uid) {
  auto found = held_.find(uid);
  if (found == held_.end()) return;
  if (found->second >= 0) ::close(found->second);  // drops the lease
  held_.erase(found);
}

}  // namespace agileos::scheduler
