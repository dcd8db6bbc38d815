// Who may connect to a worker's endpoints: the socket files' owner.
//
// A worker's gRPC and shared-memory sockets are created mode 0600, root's. When the daemon
// attaches a client it sends the uid the kernel reported for that client's connection to the
// daemon (SO_PEERCRED); the worker gives the files to that uid. connect() then fails with EACCES
// for every other uid but root, so another tenant cannot open a stream, buffer a message or take
// a connection slot of this worker before any token is checked. When the client is released the
// files go back to root.
//
// One owner per file: this fits the dedicated placement (one client per worker). A worker that
// serves several clients at once needs the per-connection check instead, which the
// shared-memory transport already makes (WorkerRuntime::admitsPeerUid); the gRPC endpoint would
// need the daemon's own accept loop (scheduler/peer_listener.h).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace agileos::worker {

// chown(path, uid, -1) and chmod 0600 for each path; false with *error at the first failure.
bool giveEndpointsTo(const std::vector<std::string>& socketPaths, uid_t uid, std::string* error);

}  // namespace agileos::worker
