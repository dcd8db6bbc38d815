// The cgroup of one sandbox: memory, process-count and CPU limits over the whole tree the launcher
// starts (bubblewrap and everything under it), and the kill of whatever is left after the program
// (docs/security-model.md, "Client sandbox"; docs/operations.md, "Sandboxed clients").
//
// Lifetime: create() runs as root before the fork. It makes <parent>/agileos-sandbox-<id> in each
// hierarchy it needs (one on cgroup v2; on v1 one per controller hierarchy: memory, pids, cpu),
// first removing a stale directory of that name (left by a launcher that died: the name is free to
// take because the caller holds the uid lease for <id>), checks that every file in it is root's and
// closed to writes by group and others, writes the limits and opens cgroup.procs. The forked child
// calls join() while it is still root, before it drops to the leased uid and execs bubblewrap.
// remove(), after the program, kills what is left (cgroup.kill on v2 where the kernel has it,
// otherwise SIGKILL to each process listed, through a pidfd, until none is left) and removes the
// directories. The program cannot leave or change its cgroup: it runs as an unprivileged uid,
// sees no /sys, and the seccomp filter refuses mount, unshare and clone(CLONE_NEWCGROUP).
//
// Which hierarchy: statfs of /sys/fs/cgroup says cgroup2 (unified) or not; if not, each controller's
// v1 hierarchy /sys/fs/cgroup/<controller> is used where statfs says cgroup. The parent is the
// launcher's own cgroup in that hierarchy (/proc/self/cgroup, relative to where the hierarchy is
// mounted, /proc/self/mountinfo), or --cgroup-parent.
//
// Fail closed: a limit that cannot be set stops the launch. The exception is CgroupMode::kAuto
// without --cgroup-parent, where a limit the host does not offer (no hierarchy for it, the
// hierarchy read-only or not ours to write, a v2 controller missing from the parent or impossible
// to enable there) is left out with a notice; anything that fails once the host offers it is fatal.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace agileos::sandbox {

enum class CgroupMode { kAuto, kRequire, kOff };

inline constexpr unsigned long long kCpuPeriodMicros = 100000;

// What to bound. 0: not requested.
struct CgroupLimits {
  unsigned long long memoryBytes = 0;     // memory.max (and swap 0) / memory.limit_in_bytes (+memsw)
  unsigned long long pids = 0;            // pids.max: processes and threads of the whole tree
  unsigned long long cpuQuotaMicros = 0;  // per kCpuPeriodMicros: cpu.max / cpu.cfs_quota_us
  unsigned cpuWeight = 0;                 // 1..10000: cpu.weight / cpu.shares (weight * 1024 / 100)
};

struct CgroupRequest {
  CgroupMode mode = CgroupMode::kAuto;
  CgroupLimits limits;
  std::string parent;  // a cgroup path below the hierarchy's mount point ("" = the launcher's own)
};

// Where the kernel's interfaces are (tests point root at another hierarchy).
struct CgroupHost {
  std::string root = "/sys/fs/cgroup";
  std::string selfCgroup = "/proc/self/cgroup";
  std::string mountInfo = "/proc/self/mountinfo";
};

// "agileos-sandbox-<id>".
std::string sandboxCgroupName(uid_t id);

// The cgroup path on the line of /proc/self/cgroup text that names `controller` in its controller
// list (v1), or on the "0::" line when `controller` is empty (v2); nullopt if there is none.
std::optional<std::string> cgroupPathFor(const std::string& procSelfCgroup, const std::string& controller);

// The root (fourth field, the part of the file system mounted) of the last /proc/self/mountinfo
// entry mounted at `mountPoint`, with mountinfo's octal escapes decoded; nullopt if none.
std::optional<std::string> mountRootOf(const std::string& mountInfo, const std::string& mountPoint);

// `path` (as /proc/self/cgroup shows it) below the mount whose root is `mountRoot`: "/" for the
// mount point itself; nullopt if it lies outside that mount.
std::optional<std::string> relativeToMount(const std::string& path, const std::string& mountRoot);

// An absolute cgroup path with no empty, "." or ".." component and no trailing "/" ("/" itself
// is one).
bool isCgroupPath(const std::string& path);

// `dir` + `relative` (an isCgroupPath), without a doubled "/".
std::string joinCgroupPath(const std::string& dir, const std::string& relative);

// The files a hierarchy gets for `limits`, in the order they are written: (name, value). v2
// (unified) holds every controller; on v1, `controller` ("memory", "pids" or "cpu") selects the
// hierarchy's share. `withSwapFile`: memory.swap.max (v2) or memory.memsw.limit_in_bytes (v1)
// exists (swap accounting is on).
std::vector<std::pair<std::string, std::string>> cgroupLimitFiles(const CgroupLimits& limits, bool unified,
                                                                  const std::string& controller,
                                                                  bool withSwapFile);

class SandboxCgroup {
 public:
  // nullopt with *error: the launch must stop (exit 125). Otherwise the cgroups are made, the
  // limits written; directories() is empty when the mode is off, nothing is requested, or (auto)
  // the host offers none of what is requested; *notice then says which limits are left out and
  // why ("" if none).
  static std::optional<SandboxCgroup> create(const CgroupRequest& request, uid_t id, const CgroupHost& host,
                                             std::string* notice, std::string* error);

  SandboxCgroup(SandboxCgroup&& other) noexcept;
  SandboxCgroup& operator=(SandboxCgroup&&) = delete;
  SandboxCgroup(const SandboxCgroup&) = delete;
  ~SandboxCgroup();  // remove(), if it has not run; a failure is printed on stderr

  // In the forked child, before exec: moves the calling process into every cgroup. Only
  // write(2) on descriptors opened by create(); false with errno set if a move failed.
  bool join() const noexcept;

  // Kills what is left in the cgroups and removes them (waits at most about 10 s for them to
  // empty). false with *error if a directory is still there.
  bool remove(std::string* error);

  // The sandbox's cgroup directories, and the same as /proc/<pid>/cgroup shows them.
  std::vector<std::string> directories() const;
  std::vector<std::string> procPaths() const;

 private:
  friend class CgroupBuilder;
  struct Directory {
    std::string path;       // e.g. /sys/fs/cgroup/pids/agileos-sandbox-200001
    std::string procPath;   // e.g. /agileos-sandbox-200001
    std::string hierarchy;  // the mount point it lies under
    bool unified = false;
    int procsFd = -1;  // cgroup.procs, write only
  };
  SandboxCgroup() = default;
  std::vector<Directory> directories_;
  bool removed_ = false;
};

}  // namespace agileos::sandbox
