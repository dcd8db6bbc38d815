// What a sandbox holds, as bubblewrap arguments: a pure function of the resolved inputs, so the
// layout is unit-tested without starting anything (tests/cpu/sandbox/sandbox_launcher_test.cpp).
//
// The root is bubblewrap's empty tmpfs. Into it, in this order (a later mount covers an earlier
// one): /proc (the PID namespace's own; /proc/driver covered), /dev (null, zero, full, random,
// urandom, tty, pts, fd links: no GPU node), private /tmp and /dev/shm, the program and its library
// closure read-only at their own paths, /etc/ld.so.cache, the shim and --lib-path directories,
// the daemon's socket directory, --keep (read-only) and --keep-rw paths, then an empty tmpfs over
// each --hide path, and an empty file over each driver library under a kept directory, then
// /etc/passwd and /etc/group of the inside user; then the root itself is made read-only.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace agileos::sandbox {

struct SandboxPlan {
  std::string bwrap;                      // absolute path of bubblewrap
  std::string programPath;                // absolute path the program is started by, inside
  std::string programSource;              // the file bound there (programPath with links resolved)
  std::vector<std::string> programArgs;   // argv[1..]
  std::vector<std::string> closureFiles;  // bound read-only at their own paths
  // (file, the path the program opens it by): --library names given through a link (a soname link
  // in /lib, which merged-/usr systems make a link to /usr/lib), bound after closureFiles.
  std::vector<std::pair<std::string, std::string>> namedFiles;
  std::vector<std::string> readOnlyDirs;                 // shim, lib paths, socket dir, --keep
  std::vector<std::string> writableDirs;                 // --keep-rw
  std::vector<std::string> hidden;                       // --hide, and the GPU stack under a kept path
  std::vector<std::pair<int, std::string>> maskedFiles;  // (empty memory file, path): driver libraries
  // (memory file, path): /etc/passwd and /etc/group, naming the inside ids (identityFile below).
  std::vector<std::pair<int, std::string>> identityFiles;
  std::vector<std::pair<std::string, std::string>> environment;  // set inside
  bool shareNetwork = false;
  bool coverProcDriver = false;  // the host has /proc/driver (the NVIDIA driver's files live there)
  uid_t insideUid = 1000;
  gid_t insideGid = 1000;
  std::string workingDirectory = "/";
  std::string execHelper;  // agileos-sandbox-exec (sandbox_exec.c), outside path
  int seccompFd = -1;
  int startedFd = -1;  // where the helper reports the program's start
};

// Where the helper is bound inside (at the root, so that no directory has to be made for it).
inline constexpr const char* kExecHelperInside = "/.agileos-sandbox-exec";

// The user name the program runs as inside, with /tmp (its private tmpfs) as home: programs that
// look themselves up (getpwuid, Python's getpass.getuser(), which PyTorch calls for its cache
// directory) find an entry, and nothing of the host's account database is shown.
inline constexpr const char* kInsideUserName = "agileos";

// The contents of the sandbox's /etc/passwd and /etc/group: the inside user and group, and
// nobody/nogroup (65534), which is what every unmapped host id, root included, appears as.
std::string passwdFile(uid_t uid, gid_t gid);
std::string groupFile(gid_t gid);

// The full argv of bubblewrap (argv[0] included).
std::vector<std::string> bubblewrapArguments(const SandboxPlan& plan);

}  // namespace agileos::sandbox
