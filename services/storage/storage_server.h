// The storage service's process loop: the listening socket, one thread per accepted
// connection (serveConnection), and the clean stop on SIGTERM or SIGINT: no more accepts,
// every connection shut down (which revokes its lease), every thread joined, the socket file
// removed.
//
// Thread-safety: runStorageService runs on the main thread, before any other thread exists
// (it blocks SIGTERM/SIGINT for the whole process, so that only its signalfd sees them).
#pragma once

#include <string>

#include "services/storage/service_options.h"
#include "services/storage/unique_fd.h"

namespace agileos::services::storage {

// Creates the SOCK_SEQPACKET socket at path, mode 0600, listening. A stale socket file there
// (nobody accepts on it) is replaced; a live socket or anything else there is refused. 0, or a negative errno
// with *reason.
int listenAt(const std::string& path, UniqueFd* out, std::string* reason);

// Runs the service until SIGTERM/SIGINT. The process exit status: 0 after a clean stop, 1 when
// it could not start.
int runStorageService(const ServiceOptions& options);

}  // namespace agileos::services::storage
