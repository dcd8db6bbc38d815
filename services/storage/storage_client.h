// Client side of the storage service's control socket (storage_protocol.h): one request, with
// optional descriptors, then one reply, on a connected SOCK_SEQPACKET socket. Used by the
// storage module's plugin inside the worker and by the service's tests. No CUDA, no logging:
// plain libc, so it links into a plugin (static library, position-independent code).
//
// Every function returns 0 or a negative errno for the transport. The service's own answer is
// in the reply's `status`: storageCall can return 0 with reply->status < 0 (a refusal).
//
// Replies carry no request id, so replies match requests only by order. After a call fails with
// -ETIMEDOUT (or anything else between sending and receiving), a late reply may still arrive
// and would be taken as the answer to the next request: close the connection instead of
// reusing it (closing it revokes its lease, which is the safe outcome anyway).
//
// Thread-safety: no shared state; one call at a time per socket (the caller serialises).
#pragma once

#include <cstddef>

#include "proto/services/storage_protocol.h"

namespace agileos::services::storage {

// The most descriptors one request carries (ATTACH's two).
inline constexpr std::size_t kMaxRequestFds = 2;

// A zeroed request for `op` with the protocol version filled in.
agileos_storage_request makeStorageRequest(agileos_storage_op op);

// Connects to the service's socket at `path` (SOCK_SEQPACKET, close-on-exec); *out_fd on success.
int storageConnect(const char* path, int* out_fd);

// Sends `request` and `nfds` descriptors (SCM_RIGHTS; the caller keeps its own copies and
// closes them). nfds <= kMaxRequestFds; fds may be null when nfds is 0. Waits up to timeout_ms
// (< 0: no limit) for room in the socket. -ETIMEDOUT, -EINVAL, or send's errno (-EPIPE when the
// service has gone away).
int storageSend(int fd, const agileos_storage_request& request, const int* fds, std::size_t nfds,
                int timeout_ms);

// Waits up to timeout_ms (< 0: no limit) for one reply. -ETIMEDOUT; -ECONNRESET when the
// service closed the connection; -EPROTO for a message that is not exactly one reply (any
// descriptors that came with it are closed).
int storageReceive(int fd, agileos_storage_reply* reply, int timeout_ms);

// storageSend then storageReceive, within one timeout_ms overall.
int storageCall(int fd, const agileos_storage_request& request, const int* fds, std::size_t nfds,
                agileos_storage_reply* reply, int timeout_ms);

}  // namespace agileos::services::storage
