// Who may connect to a worker's endpoints: the socket files' owner, set by the daemon.
//
// A worker creates its gRPC and shared-memory sockets mode 0600 in a directory of its own
// (<runtime_dir>/worker-<id>/, made by the daemon), so until a client is attached only the
// worker's uid and root may connect. When the daemon attaches a client it gives both files to
// the uid the kernel reported for that client's connection to the daemon (SO_PEERCRED): connect()
// then fails with EACCES for every other uid but root, so another tenant cannot open a stream,
// buffer a message or take a connection slot of this worker before any token is checked. At
// release the files go back to the worker's uid.
//
// The daemon does this, not the worker: the worker runs unprivileged and cannot chown. Because
// the worker can write its directory, the daemon never trusts a path there: it records the
// socket's inode when the worker reports ready (it must be a socket owned by the worker's uid)
// and later changes the owner of that inode only, through a descriptor opened without following
// links, so a worker that swapped the file for a link or for another file changes nothing.
//
// One owner per file: this fits the dedicated placement (one client per worker). A worker that
// serves several clients at once needs the per-connection check instead, which the
// shared-memory transport already makes (WorkerRuntime::admitsPeerUid).
#pragma once

#include <sys/types.h>

#include <string>

namespace agileos::scheduler {

struct EndpointFile {
  std::string path;
  dev_t device = 0;
  ino_t inode = 0;
};

// Records the socket at `path`: it must be a socket (not a link) owned by `owner` and open to
// no one else (no group or other permission bits). False with *error otherwise.
bool recordEndpoint(const std::string& path, uid_t owner, EndpointFile* out, std::string* error);

// Makes `uid` the owner of the recorded socket, if `file.path` still names that inode and it is
// still closed to group and others (the mode its owner may have changed). False with *error
// otherwise (nothing is changed then).
bool giveEndpoint(const EndpointFile& file, uid_t uid, std::string* error);

}  // namespace agileos::scheduler
