#include "scheduler/runtime_files.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace agileos::scheduler {
namespace {

std::string errnoText(const std::string& what) { return what + ": " + std::strerror(errno); }

}  // namespace

bool unixSocketAccepts(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path) return false;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  // Non-blocking, so a listener with a full backlog answers EAGAIN instead of stalling us. The
  // daemon and the workers listen on stream sockets; a service may use SOCK_SEQPACKET (the
  // storage service does), which a stream connect reports as EPROTOTYPE: try that type then.
  for (const int type : {SOCK_STREAM, SOCK_SEQPACKET}) {
    const int fd = ::socket(AF_UNIX, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return false;
    const bool live =
        ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0 || errno == EAGAIN;
    const int failure = errno;
    ::close(fd);
    if (live) return true;
    if (failure != EPROTOTYPE) return false;
  }
  return false;
}

std::string serviceSocketDir(const std::string& runtime_dir) {
  std::string dir = runtime_dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir + "-services";
}

std::string serviceSocketPath(const std::string& runtime_dir, const std::string& name) {
  return serviceSocketDir(runtime_dir) + "/service-" + name + ".sock";
}

bool restrictDirectory(const std::string& path, uid_t uid, gid_t gid, mode_t mode, std::string* error) {
  // By descriptor, opened without following a link: the checks and the changes are about one
  // and the same directory.
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    *error = errnoText("open " + path + " (a directory, not a link)");
    return false;
  }
  const bool ok = ::fchown(fd, uid, gid) == 0 && ::fchmod(fd, mode) == 0;
  if (!ok) *error = errnoText("give " + path + " to " + std::to_string(uid) + ":" + std::to_string(gid));
  ::close(fd);
  return ok;
}

std::string parentDirectory(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos || slash == 0 ? "/" : path.substr(0, slash);
}

bool holdsOnly(const std::string& path, const std::string& own_name) {
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(path, error)) {
    if (entry.path().filename() != own_name) return false;
  }
  return !error;
}

bool ensureDirectory(const std::string& path, std::string* error) {
  std::string prefix;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t slash = path.find('/', start);
    const std::size_t end = slash == std::string::npos ? path.size() : slash;
    prefix = path.substr(0, end);
    start = end + 1;
    if (prefix.empty()) continue;  // the leading "/"
    if (::mkdir(prefix.c_str(), 0755) == 0) {
      // mkdir applies the umask; the runtime directory must be searchable by sandboxed clients.
      if (::chmod(prefix.c_str(), 0755) != 0) {
        *error = errnoText("chmod " + prefix);
        return false;
      }
      continue;
    }
    if (errno != EEXIST) {
      *error = errnoText("mkdir " + prefix);
      return false;
    }
    struct stat info {};
    if (::stat(prefix.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
      *error = prefix + " exists and is not a directory";
      return false;
    }
  }
  return true;
}

bool prepareSocketPath(const std::string& socket_path, std::string* error) {
  const std::string parent = std::filesystem::path(socket_path).parent_path().string();
  if (!parent.empty() && !ensureDirectory(parent, error)) return false;
  struct stat info {};
  if (::lstat(socket_path.c_str(), &info) != 0) {
    if (errno == ENOENT) return true;
    *error = errnoText("stat " + socket_path);
    return false;
  }
  if (!S_ISSOCK(info.st_mode)) {
    *error = socket_path + " exists and is not a socket; not removing it";
    return false;
  }
  if (unixSocketAccepts(socket_path)) {
    *error = "another process is already serving " + socket_path;
    return false;
  }
  if (::unlink(socket_path.c_str()) != 0 && errno != ENOENT) {
    *error = errnoText("remove stale socket " + socket_path);
    return false;
  }
  return true;
}

std::string currentExecutableDir() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : self.parent_path().string();
}

std::string resolveExecutable(const std::string& configured, const std::string& daemon_dir) {
  if (configured.empty() || configured.front() == '/' || daemon_dir.empty()) return configured;
  return (std::filesystem::path(daemon_dir) / configured).lexically_normal().string();
}

}  // namespace agileos::scheduler
