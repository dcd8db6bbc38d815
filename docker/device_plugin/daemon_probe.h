// Whether agileosd can take clients: its client socket exists and accepts a connection.
#pragma once

#include <string>

namespace agileos::device_plugin {

// True when `socket_path` is a unix socket that a connect() reaches a listener on (or one whose
// backlog is full: the daemon is there, only busy). False when the file is missing, is not a
// socket, or the connect is refused (a socket file left behind by a daemon that is gone). The
// connection is closed at once, before a byte is sent; the daemon sees a client that went away.
bool daemonAcceptsConnections(const std::string& socket_path);

}  // namespace agileos::device_plugin
