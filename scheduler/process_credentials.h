// The unprivileged identities the daemon gives its children (issue 14, privilege separation):
// what a worker or service runs as, which groups it needs for the GPU, and how the daemon makes
// sure nothing still runs as a uid before it hands that uid out again.
//
// Thread-safety: plain functions; UidRange is not thread-safe (the worker pool serializes it).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace agileos::scheduler {

// What a child process becomes between fork and exec: real, effective and saved uid and gid
// all set, the supplementary groups replaced (so nothing of root's groups survives). Taking a
// non-zero uid clears every capability.
struct ProcessCredentials {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary groups
};

// Makes the calling process `uid`/`gid` (real, effective and saved) with exactly `groups` as its
// supplementary groups, by raw system calls: async-signal-safe, for a child between fork and
// exec, where only the calling thread exists (glibc's set*id wrappers would synchronize threads).
// False at the first failure, errno set.
bool takeIdsAfterFork(uid_t uid, gid_t gid, const gid_t* groups, std::size_t group_count);

// The groups a process must be in to open the GPU device nodes (/dev/nvidia*, /dev/nvidia-caps/*,
// under `dev_dir`): the group of each character device that is not readable and writable by
// others but is by its group. Nodes open to everyone need nothing; sorted, without repeats.
std::vector<gid_t> deviceNodeGroups(const std::string& dev_dir = "/dev");

// Kills (SIGKILL) every process whose real or saved uid is `uid`, from a child that takes that
// uid and signals everything it may signal (kill(-1)); waits for the child. Used before a uid is
// handed out again, so that a process left behind by the previous holder (one that left its
// process group) cannot reach the next one. False with *error if the child could not be made.
bool killProcessesOf(uid_t uid, std::string* error);

// A range of uids [base, base + count) handed out one at a time, lowest free first. With a lock
// directory, a uid is also leased host-wide: acquire() takes an exclusive flock on
// <lock_dir>/<uid> and holds it until release(), so two daemons configured with overlapping
// ranges (tests, a second instance) never run workers as the same uid, and neither sweeps
// (killProcessesOf) a uid the other is using.
class UidRange {
 public:
  UidRange(uid_t base, std::uint32_t count, std::string lock_dir = "")
      : base_(base), count_(count), lock_dir_(std::move(lock_dir)) {}
  ~UidRange();
  UidRange(const UidRange&) = delete;
  UidRange& operator=(const UidRange&) = delete;

  // The lowest uid of the range that neither this range nor (with a lock directory) another
  // process holds, or nullopt if there is none.
  std::optional<uid_t> acquire();
  // Gives `uid` back (ignored if it is not held).
  void release(uid_t uid);
  std::size_t held() const { return held_.size(); }

 private:
  uid_t base_;
  std::uint32_t count_;
  std::string lock_dir_;
  std::map<uid_t, int> held_;  // uid -> its lock descriptor (-1 without a lock directory)
};

}  // namespace agileos::scheduler
