// What a handler sees: the calling client's session, the GPU and the memory
// manager, plus the small helpers every handler family shares for resolving
// untrusted arguments. A helper that refuses an argument fills the reply's
// error and detail and returns false; the handler then returns without
// touching the GPU.
#pragma once

#include <cuda.h>
#include <driver_types.h>

#include <string>

#include "agileos/v1/client_api.pb.h"
#include "memmgr/memory_manager.h"
#include "worker/backend/gpu_backend.h"
#include "worker/client_session.h"

namespace agileos::worker {

namespace v1 = ::agileos::v1;

// Notified when the context is corrupted for good (a sticky fault), so the
// daemon can retire the worker after its clients are released.
class TaintListener {
 public:
  virtual ~TaintListener() = default;
  virtual void contextTainted(ClientId client, const std::string& reason) = 0;
};

struct CallContext {
  GpuBackend& gpu;
  memmgr::MemoryManager& memory;
  ClientSession& session;
  TaintListener* taint = nullptr;
};

// Sets the reply's error from a driver result (and reports a context-fatal one). Returns true on success.
bool succeeded(CallContext& ctx, CUresult result, v1::CallReply& reply, const char* what);

// Refuses the call with `error` and a detail for the client's log. Always returns false.
bool refuse(v1::CallReply& reply, cudaError_t error, std::string detail);

// Resolves a stream token: 0 and 1 (cudaStreamLegacy) are the legacy default stream,
// anything else must be a live stream of this client. (The per-thread default
// stream, 2, is translated by the client; see client_api.proto.)
bool resolveStream(CallContext& ctx, std::uint64_t token, CUstream* stream, v1::CallReply& reply);
bool resolveEvent(CallContext& ctx, std::uint64_t token, CUevent* event, v1::CallReply& reply);
bool resolveFunction(CallContext& ctx, std::uint64_t token, FunctionRecord* function, v1::CallReply& reply);

// Checks that [p, p+n) lies inside one live allocation of the client.
bool checkRange(CallContext& ctx, std::uint64_t p, std::uint64_t n, v1::CallReply& reply, const char* what);

}  // namespace agileos::worker
