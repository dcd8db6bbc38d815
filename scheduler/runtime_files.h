// Filesystem chores of the daemon: its runtime directory, its listening socket's path, and
// finding the worker binary.
//
// Thread-safety: plain functions; call from one thread at a time for the same path.
#pragma once

#include <string>

namespace agileos::scheduler {

// Creates `path` and any missing parents with mode 0755 (existing directories are left as they
// are). False with *error if a component exists and is not a directory, or mkdir fails.
bool ensureDirectory(const std::string& path, std::string* error);

// Makes `socket_path` ready for bind(): creates its directory, removes a stale socket file left
// by an earlier daemon. Refuses (false, *error) if a daemon still accepts connections there, or
// if the path holds something other than a socket (never deletes a regular file).
bool prepareSocketPath(const std::string& socket_path, std::string* error);

// The directory holding the running executable (from /proc/self/exe), or "" if unknown.
std::string currentExecutableDir();

// `configured` if absolute; else `configured` resolved against `daemon_dir` (the directory of
// the agileosd binary), so an installed tree finds its worker next to the daemon.
std::string resolveWorkerExecutable(const std::string& configured, const std::string& daemon_dir);

}  // namespace agileos::scheduler
