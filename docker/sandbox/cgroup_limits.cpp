#include "docker/sandbox/cgroup_limits.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <iostream>
#include <sstream>

namespace agileos::sandbox {
namespace {

// The limits the host does not offer: (controller, why).
using Gaps = std::vector<std::pair<std::string, std::string>>;

std::string errnoText(const std::string& what) { return what + ": " + std::strerror(errno); }

bool readFile(const std::string& path, std::string* content) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  content->clear();
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0) content->append(buffer, static_cast<std::size_t>(n));
  const int saved = errno;
  ::close(fd);
  errno = saved;
  return n == 0;
}

// One write(2) of the whole value, as cgroup files expect. false with errno set.
bool writeFile(const std::string& path, const std::string& value) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool written = ::write(fd, value.data(), value.size()) == static_cast<ssize_t>(value.size());
  const int saved = errno;
  ::close(fd);
  errno = saved;
  return written;
}

std::vector<std::string> words(const std::string& text) {
  std::istringstream stream(text);
  std::vector<std::string> result;
  for (std::string word; stream >> word;) result.push_back(word);
  return result;
}

bool contains(const std::vector<std::string>& list, const std::string& value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

bool isDirectory(const std::string& path) {
  struct stat status {};
  return ::lstat(path.c_str(), &status) == 0 && S_ISDIR(status.st_mode);
}

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

bool readOnly(const std::string& path) {
  struct statvfs status {};
  return ::statvfs(path.c_str(), &status) == 0 && (status.f_flag & ST_RDONLY) != 0;
}

// The host refuses us the hierarchy (a container's cgroup file system, a cgroup not delegated to
// us): for auto, the same as not having it.
bool notOurs(int error) { return error == EACCES || error == EPERM || error == EROFS; }

std::string optionOf(const std::string& controller) {
  if (controller == "memory") return "--max-memory";
  if (controller == "pids") return "--max-pids";
  return "--max-cpus/--cpu-weight";
}

// The limits of `controllers` only.
CgroupLimits limitsOf(const CgroupLimits& limits, const std::vector<std::string>& controllers) {
  CgroupLimits kept;
  if (contains(controllers, "memory")) kept.memoryBytes = limits.memoryBytes;
  if (contains(controllers, "pids")) kept.pids = limits.pids;
  if (contains(controllers, "cpu")) {
    kept.cpuQuotaMicros = limits.cpuQuotaMicros;
    kept.cpuWeight = limits.cpuWeight;
  }
  return kept;
}

// Whether /proc/<pid>/cgroup shows `procPath` on one of its lines.
bool inCgroup(pid_t pid, const std::string& procPath) {
  std::string text;
  if (!readFile("/proc/" + std::to_string(pid) + "/cgroup", &text)) return false;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const std::size_t first = line.find(':');
    const std::size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second != std::string::npos && line.compare(second + 1, std::string::npos, procPath) == 0)
      return true;
  }
  return false;
}

// SIGKILL to each process cgroup.procs lists. Through a pidfd opened before the membership check,
// so that a listed pid that exits and is reused by another process meanwhile is not signalled.
void killListed(const std::string& path, const std::string& procPath) {
  std::string procs;
  if (!readFile(path + "/cgroup.procs", &procs)) return;
  for (const std::string& word : words(procs)) {
    const pid_t pid = static_cast<pid_t>(std::strtol(word.c_str(), nullptr, 10));
    if (pid <= 0) continue;
    const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    if (pidfd < 0 && errno != ENOSYS) continue;  // gone already
    if (inCgroup(pid, procPath)) {
      if (pidfd >= 0) {
        ::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0);
      } else {
        ::kill(pid, SIGKILL);  // kernels before 5.3
      }
    }
    if (pidfd >= 0) ::close(pidfd);
  }
}

// Kills what is in the cgroup at `path` until it can be removed, then removes it.
bool removeCgroup(const std::string& path, const std::string& procPath, bool unified, std::string* error) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  useconds_t pause = 200;
  for (;;) {
    if (::rmdir(path.c_str()) == 0 || errno == ENOENT) return true;
    if (errno != EBUSY) {
      *error = errnoText("rmdir " + path);
      return false;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      *error = path + " still holds processes (or cgroups) after 10 s of SIGKILL; not removed";
      return false;
    }
    // cgroup.kill (v2, Linux 5.14): the kernel kills the whole cgroup, forks racing it included.
    if (!(unified && writeFile(path + "/cgroup.kill", "1"))) killListed(path, procPath);
    ::usleep(pause);
    pause = std::min<useconds_t>(pause * 2, 50000);
  }
}

// The directory and everything in it must be root's and closed to writes by group and others:
// the sandbox's uid must not be able to change its limits or move processes.
bool checkOwnership(const std::string& path, std::string* error) {
  std::vector<std::string> entries = {path};
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) {
    *error = errnoText("opendir " + path);
    return false;
  }
  while (const dirent* entry = ::readdir(dir)) {
    if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0)
      entries.push_back(path + "/" + entry->d_name);
  }
  ::closedir(dir);
  for (const std::string& entry : entries) {
    struct stat status {};
    if (::lstat(entry.c_str(), &status) != 0) {
      *error = errnoText("stat " + entry);
      return false;
    }
    if (status.st_uid != 0 || (status.st_mode & 022) != 0) {
      *error = entry + " must be owned by root and not writable by group or others";
      return false;
    }
  }
  return true;
}

}  // namespace

std::string sandboxCgroupName(uid_t id) { return "agileos-sandbox-" + std::to_string(id); }

std::optional<std::string> cgroupPathFor(const std::string& procSelfCgroup, const std::string& controller) {
  std::istringstream lines(procSelfCgroup);
  for (std::string line; std::getline(lines, line);) {
    const std::size_t first = line.find(':');
    if (first == std::string::npos) continue;
    const std::size_t second = line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string list = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (controller.empty()) {
      if (line.compare(0, first, "0") == 0 && list.empty()) return path;
      continue;
    }
    std::istringstream names(list);
    for (std::string name; std::getline(names, name, ',');) {
      if (name == controller) return path;
    }
  }
  return std::nullopt;
}

std::optional<std::string> mountRootOf(const std::string& mountInfo, const std::string& mountPoint) {
  // mountinfo writes space, tab, newline and backslash as \ooo.
  const auto decode = [](const std::string& field) {
    std::string out;
    for (std::size_t i = 0; i < field.size(); ++i) {
      if (field[i] == '\\' && i + 3 < field.size() &&
          std::all_of(field.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                      field.begin() + static_cast<std::ptrdiff_t>(i) + 4,
                      [](char c) { return c >= '0' && c <= '7'; })) {
        out += static_cast<char>(std::stoi(field.substr(i + 1, 3), nullptr, 8));
        i += 3;
      } else {
        out += field[i];
      }
    }
    return out;
  };
  std::optional<std::string> root;
  std::istringstream lines(mountInfo);
  for (std::string line; std::getline(lines, line);) {
    const std::vector<std::string> fields = words(line);
    if (fields.size() >= 5 && decode(fields[4]) == mountPoint) root = decode(fields[3]);
  }
  return root;
}

std::optional<std::string> relativeToMount(const std::string& path, const std::string& mountRoot) {
  if (mountRoot == "/") return path;
  if (path == mountRoot) return std::string("/");
  if (path.size() > mountRoot.size() && path.compare(0, mountRoot.size(), mountRoot) == 0 &&
      path[mountRoot.size()] == '/') {
    return path.substr(mountRoot.size());
  }
  return std::nullopt;
}

bool isCgroupPath(const std::string& path) {
  if (path.empty() || path[0] != '/') return false;
  if (path == "/") return true;
  if (path.back() == '/' || path.find('\n') != std::string::npos) return false;
  std::istringstream components(path.substr(1));
  for (std::string component; std::getline(components, component, '/');) {
    if (component.empty() || component == "." || component == "..") return false;
  }
  return true;
}

std::string joinCgroupPath(const std::string& dir, const std::string& relative) {
  if (relative == "/") return dir;
  if (!dir.empty() && dir.back() == '/') return dir + relative.substr(1);
  return dir + relative;
}

std::vector<std::pair<std::string, std::string>> cgroupLimitFiles(const CgroupLimits& limits, bool unified,
                                                                  const std::string& controller,
                                                                  bool withSwapFile) {
  std::vector<std::pair<std::string, std::string>> files;
  const auto wanted = [&](const char* name) { return unified || controller == name; };
  if (limits.memoryBytes != 0 && wanted("memory")) {
    const std::string bytes = std::to_string(limits.memoryBytes);
    if (unified) {
      files.emplace_back("memory.max", bytes);
      if (withSwapFile) files.emplace_back("memory.swap.max", "0");
    } else {
      // memsw (memory + swap) may not be set below limit_in_bytes: this order, from unlimited.
      files.emplace_back("memory.limit_in_bytes", bytes);
      if (withSwapFile) files.emplace_back("memory.memsw.limit_in_bytes", bytes);
    }
  }
  if (limits.pids != 0 && wanted("pids")) files.emplace_back("pids.max", std::to_string(limits.pids));
  if (wanted("cpu")) {
    const std::string period = std::to_string(kCpuPeriodMicros);
    if (limits.cpuQuotaMicros != 0) {
      if (unified) {
        files.emplace_back("cpu.max", std::to_string(limits.cpuQuotaMicros) + " " + period);
      } else {
        files.emplace_back("cpu.cfs_period_us", period);
        files.emplace_back("cpu.cfs_quota_us", std::to_string(limits.cpuQuotaMicros));
      }
    }
    if (limits.cpuWeight != 0) {
      if (unified) {
        files.emplace_back("cpu.weight", std::to_string(limits.cpuWeight));
      } else {  // v1's default share is 1024 where v2's default weight is 100
        files.emplace_back("cpu.shares", std::to_string(std::max(2ull, limits.cpuWeight * 1024ull / 100)));
      }
    }
  }
  return files;
}

// Builds the cgroups; what the host does not offer goes to *gaps, what fails to *failure.
class CgroupBuilder {
 public:
  using Directory = SandboxCgroup::Directory;

  CgroupBuilder(const CgroupRequest& request, uid_t id, const CgroupHost& host, Gaps* gaps,
                std::string* failure)
      : request_(request), name_(sandboxCgroupName(id)), host_(host), gaps_(gaps), failure_(failure) {}

  void unified(const std::vector<std::string>& controllers, std::vector<Directory>* made);
  void v1(const std::string& controller, std::vector<Directory>* made);

 private:
  void gap(const std::vector<std::string>& controllers, const std::string& why) {
    for (const std::string& controller : controllers) gaps_->emplace_back(controller, why);
  }
  // The parent's directory and its path as /proc/<pid>/cgroup shows it; false if there is none
  // (a gap, or a failure for a configured parent).
  bool parent(const std::string& mountPoint, const std::string& controller,
              const std::vector<std::string>& controllers, std::string* dir, std::string* procPath);
  void make(const std::string& parentDir, const std::string& procParent, bool unified,
            const std::vector<std::string>& controllers, const std::string& hierarchy,
            std::vector<Directory>* made);

  const CgroupRequest& request_;
  const std::string name_;
  const CgroupHost& host_;
  Gaps* gaps_;
  std::string* failure_;
};

bool CgroupBuilder::parent(const std::string& mountPoint, const std::string& controller,
                           const std::vector<std::string>& controllers, std::string* dir,
                           std::string* procPath) {
  std::string mountInfo;
  readFile(host_.mountInfo, &mountInfo);
  const std::string mountRoot = mountRootOf(mountInfo, mountPoint).value_or("/");
  const std::string hierarchy = controller.empty() ? "cgroup v2" : "the " + controller + " hierarchy";
  if (!request_.parent.empty()) {
    *dir = joinCgroupPath(mountPoint, request_.parent);
    *procPath = joinCgroupPath(mountRoot, request_.parent);
    if (!isDirectory(*dir)) {
      *failure_ = "--cgroup-parent " + request_.parent + ": " + *dir + " is not a cgroup directory";
      return false;
    }
    return true;
  }
  std::string self;
  if (!readFile(host_.selfCgroup, &self)) {
    *failure_ = errnoText("read " + host_.selfCgroup);
    return false;
  }
  const std::optional<std::string> own = cgroupPathFor(self, controller);
  if (!own) {
    gap(controllers, host_.selfCgroup + " names no cgroup of this process in " + hierarchy);
    return false;
  }
  const std::optional<std::string> relative = relativeToMount(*own, mountRoot);
  if (!relative || !isCgroupPath(*relative)) {
    gap(controllers,
        "this process's cgroup " + *own + " lies outside " + mountPoint + " as mounted (" + mountRoot + ")");
    return false;
  }
  *dir = joinCgroupPath(mountPoint, *relative);
  *procPath = *own;
  if (!isDirectory(*dir)) {
    gap(controllers, "this process's cgroup " + *dir + " is not there");
    return false;
  }
  return true;
}

void CgroupBuilder::make(const std::string& parentDir, const std::string& procParent, bool unified,
                         const std::vector<std::string>& controllers, const std::string& hierarchy,
                         std::vector<Directory>* made) {
  const std::string path = parentDir + "/" + name_;
  const std::string procPath = joinCgroupPath(procParent, "/" + name_);
  // Left by a launcher that died (its lease is ours now): its processes are killed with it.
  if (exists(path)) {
    std::string error;
    if (!removeCgroup(path, procPath, unified, &error)) {
      *failure_ = "a stale cgroup " + path + " cannot be removed: " + error;
      return;
    }
  }
  if (::mkdir(path.c_str(), 0755) != 0) {
    if (notOurs(errno)) {
      gap(controllers, errnoText("cannot create a cgroup in " + parentDir));
    } else {
      *failure_ = errnoText("mkdir " + path);
    }
    return;
  }
  made->push_back(Directory{path, procPath, hierarchy, unified, -1});
  if (!checkOwnership(path, failure_)) return;
  const bool swapFile = exists(path + (unified ? "/memory.swap.max" : "/memory.memsw.limit_in_bytes"));
  const CgroupLimits limits = limitsOf(request_.limits, controllers);
  for (const std::string& controller : unified ? std::vector<std::string>{""} : controllers) {
    for (const auto& [file, value] : cgroupLimitFiles(limits, unified, controller, swapFile)) {
      if (!writeFile(path + "/" + file, value)) {
        *failure_ = errnoText("write " + value + " to " + path + "/" + file);
        return;
      }
    }
  }
  made->back().procsFd = ::open((path + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
  if (made->back().procsFd < 0) *failure_ = errnoText("open " + path + "/cgroup.procs");
}

void CgroupBuilder::unified(const std::vector<std::string>& controllers, std::vector<Directory>* made) {
  std::string parentDir, procParent;
  if (!parent(host_.root, "", controllers, &parentDir, &procParent)) return;
  if (readOnly(parentDir)) {
    gap(controllers, host_.root + " is mounted read-only");
    return;
  }
  std::string text;
  if (!readFile(parentDir + "/cgroup.controllers", &text)) {
    *failure_ = errnoText("read " + parentDir + "/cgroup.controllers");
    return;
  }
  const std::vector<std::string> available = words(text);
  if (!readFile(parentDir + "/cgroup.subtree_control", &text)) {
    *failure_ = errnoText("read " + parentDir + "/cgroup.subtree_control");
    return;
  }
  const std::vector<std::string> enabled = words(text);
  std::vector<std::string> usable;
  for (const std::string& controller : controllers) {
    if (!contains(available, controller)) {
      gap({controller}, "the cgroup v2 controller " + controller + " is not available in " + parentDir);
      continue;
    }
    if (!contains(enabled, controller) &&
        !writeFile(parentDir + "/cgroup.subtree_control", "+" + controller)) {
      const std::string why = "cannot enable the " + controller + " controller in " + parentDir +
                              "/cgroup.subtree_control (" + std::strerror(errno) + ")";
      if (errno == EBUSY) {
        gap({controller}, why +
                              ": that cgroup holds processes, and cgroup v2 enables controllers only below "
                              "a cgroup without processes of its own; give --cgroup-parent such a cgroup");
      } else if (errno == EOPNOTSUPP || notOurs(errno)) {
        gap({controller}, why);
      } else {
        *failure_ = why;
        return;
      }
      continue;
    }
    usable.push_back(controller);
  }
  if (!usable.empty()) make(parentDir, procParent, true, usable, host_.root, made);
}

void CgroupBuilder::v1(const std::string& controller, std::vector<Directory>* made) {
  const std::string hierarchy = host_.root + "/" + controller;
  struct statfs fs {};
  if (::statfs(hierarchy.c_str(), &fs) != 0 || fs.f_type != CGROUP_SUPER_MAGIC) {
    gap({controller},
        "neither " + host_.root + " (cgroup v2) nor " + hierarchy + " (cgroup v1) is a cgroup hierarchy");
    return;
  }
  char real[PATH_MAX];
  if (::realpath(hierarchy.c_str(), real) == nullptr) {
    *failure_ = errnoText("realpath " + hierarchy);
    return;
  }
  // Controllers mounted together (cpu,cpuacct; rarely memory with another) share one directory.
  for (Directory& directory : *made) {
    if (directory.hierarchy != real) continue;
    const bool swapFile = exists(directory.path + "/memory.memsw.limit_in_bytes");
    for (const auto& [file, value] :
         cgroupLimitFiles(limitsOf(request_.limits, {controller}), false, controller, swapFile)) {
      if (!writeFile(directory.path + "/" + file, value)) {
        *failure_ = errnoText("write " + value + " to " + directory.path + "/" + file);
        return;
      }
    }
    return;
  }
  std::string parentDir, procParent;
  if (!parent(real, controller, {controller}, &parentDir, &procParent)) return;
  if (readOnly(parentDir)) {
    gap({controller}, hierarchy + " is mounted read-only");
    return;
  }
  make(parentDir, procParent, false, {controller}, real, made);
}

std::optional<SandboxCgroup> SandboxCgroup::create(const CgroupRequest& request, uid_t id,
                                                   const CgroupHost& host, std::string* notice,
                                                   std::string* error) {
  notice->clear();
  SandboxCgroup cgroup;
  std::vector<std::string> controllers;
  if (request.limits.memoryBytes != 0) controllers.push_back("memory");
  if (request.limits.pids != 0) controllers.push_back("pids");
  if (request.limits.cpuQuotaMicros != 0 || request.limits.cpuWeight != 0) controllers.push_back("cpu");
  if (request.mode == CgroupMode::kOff || controllers.empty()) return cgroup;
  if (!request.parent.empty() && !isCgroupPath(request.parent)) {
    *error = "--cgroup-parent " + request.parent + " is not an absolute cgroup path";
    return std::nullopt;
  }
  Gaps gaps;
  std::string failure;
  CgroupBuilder builder(request, id, host, &gaps, &failure);
  struct statfs fs {};
  if (::statfs(host.root.c_str(), &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC) {
    builder.unified(controllers, &cgroup.directories_);
  } else {
    for (const std::string& controller : controllers) {
      if (failure.empty()) builder.v1(controller, &cgroup.directories_);
    }
  }
  if (!failure.empty()) {
    *error = "cgroup: " + failure;
    return std::nullopt;  // ~SandboxCgroup removes what was made
  }
  if (gaps.empty()) return cgroup;
  std::string list;
  for (const auto& [controller, why] : gaps) {
    list += (list.empty() ? "" : "; ") + controller + " (" + optionOf(controller) + "): " + why;
  }
  if (request.mode == CgroupMode::kRequire || !request.parent.empty()) {
    *error = "cgroup limits cannot be set (" +
             std::string(request.mode == CgroupMode::kRequire ? "--cgroup require" : "--cgroup-parent") +
             "): " + list;
    return std::nullopt;
  }
  *notice =
      "cgroup limits left out, the host does not offer them (--cgroup auto; require would refuse): " + list;
  return cgroup;
}

SandboxCgroup::SandboxCgroup(SandboxCgroup&& other) noexcept
    : directories_(std::move(other.directories_)), removed_(other.removed_) {
  other.directories_.clear();
  other.removed_ = true;
}

SandboxCgroup::~SandboxCgroup() {
  if (removed_) return;
  std::string error;
  if (!remove(&error)) std::cerr << "agileos-sandbox: " << error << std::endl;
}

bool SandboxCgroup::join() const noexcept {
  for (const Directory& directory : directories_) {
    if (::write(directory.procsFd, "0", 1) != 1) return false;  // "0": the writing process
  }
  return true;
}

bool SandboxCgroup::remove(std::string* error) {
  removed_ = true;
  bool removed = true;
  for (Directory& directory : directories_) {
    if (directory.procsFd >= 0) ::close(directory.procsFd);
    directory.procsFd = -1;
    std::string failed;
    if (!removeCgroup(directory.path, directory.procPath, directory.unified, &failed)) {
      *error += (error->empty() ? "" : "; ") + failed;
      removed = false;
    }
  }
  return removed;
}

std::vector<std::string> SandboxCgroup::directories() const {
  std::vector<std::string> paths;
  for (const Directory& directory : directories_) paths.push_back(directory.path);
  return paths;
}

std::vector<std::string> SandboxCgroup::procPaths() const {
  std::vector<std::string> paths;
  for (const Directory& directory : directories_) paths.push_back(directory.procPath);
  return paths;
}

}  // namespace agileos::sandbox
