// SessionStream: the daemon's view of one client's Session stream, independent of the
// transport. daemon_service.cpp adapts a gRPC ServerReaderWriter to it; tests may use fakes.
//
// Thread-safety: one thread may be in read() while another is in write(); cancel() may be
// called from any thread at any time. Two concurrent reads (or writes) are not allowed.
#pragma once

#include <optional>
#include <string>

#include "agileos/v1/client_api.pb.h"
#include "scheduler/peer_listener.h"

namespace agileos::scheduler {

class SessionStream {
 public:
  virtual ~SessionStream() = default;

  // Blocks for the client's next message. false: the stream ended (client half-close,
  // disconnect, cancellation) and no more messages will come.
  virtual bool read(agileos::v1::SessionUp* message) = 0;

  // Blocks until the message is handed to the transport. false: the stream is broken.
  virtual bool write(const agileos::v1::SessionDown& message) = 0;

  // Ends the stream from the daemon's side; pending and later read() calls return false.
  virtual void cancel() = 0;

  // Transport-level description of the peer, for logs.
  virtual std::string peer() const = 0;
  // The peer's kernel-attested credentials (SO_PEERCRED on the daemon's own accept,
  // scheduler/peer_listener.h); nullopt where the transport has none (in-process tests).
  virtual std::optional<PeerCredentials> credentials() const { return std::nullopt; }
  // Whether the client has gone (disconnected or cancelled): a queued client that has gone
  // gives up its place. May be called from any thread.
  virtual bool gone() const = 0;
};

}  // namespace agileos::scheduler
