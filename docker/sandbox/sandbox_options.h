// The command line of agileos-sandbox (docs/operations.md, "Sandboxed clients").
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "docker/sandbox/cgroup_limits.h"

namespace agileos::sandbox {

struct SandboxOptions {
  std::string socketDir;              // the daemon's runtime directory (agileosd.sock, worker sockets)
  std::string shimDir;                // holds libagileos_cudart.so
  std::vector<std::string> libPaths;  // libraries the shim needs (bundled gRPC ...)
  std::vector<std::string> keep;      // visible read-only
  // Shared libraries the program opens at run time (dlopen: cuDNN's sublibraries, plugins), bound
  // read-only at their paths with their own library closures; never a driver library.
  std::vector<std::string> libraries;
  std::vector<std::string> keepWritable;
  std::vector<std::string> hide;  // covered by an empty tmpfs even under a kept path
  bool shareNetwork = false;
  std::string bwrap;                              // bubblewrap; "" = next to this program, then PATH
  std::string stateDir = "/run/agileos-sandbox";  // uid leases (root only)
  uid_t uidBase = 200000;                         // host ids handed to sandboxes: [base, base + count)
  unsigned uidCount = 65536;
  uid_t insideUid = 1000;  // what the program sees as its uid and gid
  gid_t insideGid = 1000;
  unsigned long long maxOpenFiles = 4096;
  unsigned long long maxProcesses = 1024;  // per sandbox: every sandbox has its own host uid
  unsigned long long maxFileBytes = 64ull << 30;
  // --cgroup, --max-memory (default none), --max-pids (default 4096), --max-cpus, --cpu-weight,
  // --cgroup-parent (cgroup_limits.h).
  CgroupRequest cgroup{CgroupMode::kAuto, CgroupLimits{0, 4096, 0, 0}, ""};
  std::vector<std::string> program;  // PROGRAM ARGS...
};

// Parses argv. On a usage error or --help: nullopt, with the message (or help text) in *message
// and *exitCode set (0 for --help, 125 otherwise).
std::optional<SandboxOptions> parseSandboxOptions(int argc, char** argv, std::string* message, int* exitCode);

}  // namespace agileos::sandbox
