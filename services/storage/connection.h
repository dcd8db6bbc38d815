// One control connection (one client module instance in a worker): its requests, its open
// files and its lease (with the lease's registered buffers). serveConnection() runs on the
// connection's own thread until the peer closes the connection, an error ends it, or the server
// shuts it down (shutdown(2) on fd); a lease still attached then is revoked, as by DETACH,
// before it returns.
//
// Each message must be exactly one agileos_storage_request. Descriptors arrive with SCM_RIGHTS
// (MSG_CMSG_CLOEXEC); ATTACH takes exactly two, REGISTER_BUFFER one, every other op none. Every
// descriptor received is closed by the time its request is answered (what the lease keeps is a
// mapping or an import, not the descriptor), refused requests included. REGISTER_BUFFER and
// UNREGISTER_BUFFER need an attached lease (-ENOENT otherwise). Nothing a client sends ends the
// service or touches another connection.
//
// Thread-safety: the context is shared by all connections (see the members).
#pragma once

#include <atomic>
#include <cstdint>

#include "services/storage/buffer_backend.h"
#include "services/storage/service_counters.h"

namespace agileos::services::storage {

struct ServiceContext {
  int root_fd = -1;                  // O_PATH directory all OPENs resolve beneath
  BufferBackend* backend = nullptr;  // import() is thread-safe
  ServiceCounters* counters = nullptr;
  std::uint32_t threads = 4;                    // pollers per lease
  const std::atomic<bool>* stopping = nullptr;  // set before the server shuts connections down
};

// Serves the connection on fd (not closed here: the server owns it).
void serveConnection(int fd, std::uint64_t connection_id, const ServiceContext& context);

}  // namespace agileos::services::storage
