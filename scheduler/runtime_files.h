// Filesystem chores of the daemon: its runtime directory, its listening socket's path, the
// service sockets' paths, and finding the worker and service binaries.
//
// Thread-safety: plain functions; call from one thread at a time for the same path.
#pragma once

#include <sys/types.h>

#include <string>

namespace agileos::scheduler {

// Creates `path` and any missing parents with mode 0755 (existing directories are left as they
// are). False with *error if a component exists and is not a directory, or mkdir fails.
bool ensureDirectory(const std::string& path, std::string* error);

// Gives the directory `path` (which must exist and be a directory, not a link) to uid:gid with
// `mode` (setgid included). False with *error otherwise.
bool restrictDirectory(const std::string& path, uid_t uid, gid_t gid, mode_t mode, std::string* error);

// The directory part of an absolute path: "/run/agileos-admin" for "/run/agileos-admin/admin.sock",
// "/" for "/admin.sock".
std::string parentDirectory(const std::string& path);

// Whether the directory `path` holds nothing but entries named `own_name` (or nothing): a directory
// of its own, which may be restricted for that one file without taking anything from anyone else.
// False when it cannot be read.
bool holdsOnly(const std::string& path, const std::string& own_name);

// Makes `socket_path` ready for bind(): creates its directory, removes a stale socket file left
// by an earlier daemon. Refuses (false, *error) if a daemon still accepts connections there, or
// if the path holds something other than a socket (never deletes a regular file).
bool prepareSocketPath(const std::string& socket_path, std::string* error);

// True if something accepts connections on the unix socket at `path` now. Connects without
// blocking (a listener with a full backlog counts as accepting) and closes at once, sending
// nothing.
bool unixSocketAccepts(const std::string& path);

// Where service `name` listens: <runtime_dir>-services/service-<name>.sock (serviceSocketDir). The
// daemon passes it to the service (--socket) and to the workers of clients whose modules use the
// service. NOT inside runtime_dir: that directory is what client sandboxes see (the daemon's and
// the workers' sockets), and a service must be reachable from trusted workers only; the
// directory is created mode 0700.
std::string serviceSocketDir(const std::string& runtime_dir);
std::string serviceSocketPath(const std::string& runtime_dir, const std::string& name);

// The directory holding the running executable (from /proc/self/exe), or "" if unknown.
std::string currentExecutableDir();

// `configured` if absolute; else `configured` resolved against `daemon_dir` (the directory of
// the agileosd binary), so an installed tree finds its worker and services next to the daemon.
std::string resolveExecutable(const std::string& configured, const std::string& daemon_dir);

}  // namespace agileos::scheduler
