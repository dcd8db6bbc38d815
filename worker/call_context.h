// What a handler sees: the calling client's session, the GPU and the memory
// manager, plus the small helpers every handler family shares for resolving
// untrusted arguments. A helper that refuses an argument fills the reply's
// error and detail and returns false; the handler then returns without
// touching the GPU.
#pragma once

#include <cuda.h>
#include <driver_types.h>

#include <memory>
#include <string>
#include <vector>

#include "agileos/v1/client_api.pb.h"
#include "memmgr/memory_manager.h"
#include "worker/backend/gpu_backend.h"
#include "worker/client_session.h"
#include "worker/device_output.h"
#include "worker/session_guard.h"

namespace agileos::worker {

namespace v1 = ::agileos::v1;

// Notified when the context is corrupted for good (a sticky fault), so the
// daemon can retire the worker after its clients are released.
class TaintListener {
 public:
  virtual ~TaintListener() = default;
  virtual void contextTainted(ClientId client, const std::string& reason) = 0;
};

class LaunchBatch;  // worker/launch_batch.h

// What the shared-memory transport lends a call besides its message: the
// connection's staging area (HostBuffer segment 0, registered with the GPU) and a
// way to hand the client file descriptors (sent over the connection's socket right
// before the reply). Calls that arrive over gRPC have none (CallContext::shared is
// null), and a request that needs it is refused.
struct SharedMemoryChannel {
  std::uint8_t* staging = nullptr;
  std::uint64_t stagingBytes = 0;
  std::vector<int> fdsToSend;  // owned; the transport sends then closes them, in order
  bool replyAwaited = true;    // false for a kNoReply call: nothing needed only by a reply is done
  // The connection's held launches (worker/launch_batch.h), and whether the next request queued
  // behind this one is one the client does not wait for (held launches are submitted once it is
  // not, or the batch is full: a launch is never held back from a synchronize queued behind it).
  LaunchBatch* launches = nullptr;
  bool unawaitedQueued = false;
  // Experimental (--lone-launch-chains): a launch with nothing queued behind it goes through a
  // kept one-node chain as well (a graph launch takes less host time than cuLaunchKernel).
  bool loneLaunchChains = false;
  // The first failure of a flush of held launches, for the transport to report as it reports a
  // failed launch the client did not wait for (with the next reply); 0 when none.
  int heldLaunchError = 0;
  std::string heldLaunchDetail;
};

class AdapterHost;  // worker/adapters/library_adapter.h

struct CallContext {
  GpuBackend& gpu;
  memmgr::MemoryManager& memory;
  ClientSession& session;
  TaintListener* taint = nullptr;
  SharedMemoryChannel* shared = nullptr;
  DeviceOutputCapture* output = nullptr;      // the worker's device printf capture, if any
  const WorkerGuardContext* guard = nullptr;  // the worker's part of the kernel memory guard (may be null)
  const AdapterHost* adapters = nullptr;      // the trusted library adapters the worker hosts (may be null)
};

// Sets the reply's error from a driver result (and reports a context-fatal one). Returns true on success.
bool succeeded(CallContext& ctx, CUresult result, v1::CallReply& reply, const char* what);

// Submits the connection's held launches, if any (before anything else of the connection reaches
// the GPU); a failure goes to shared->heldLaunchError.
void flushHeldLaunches(CallContext& ctx);

// Refuses the call with `error` and a detail for the client's log. Always returns false.
bool refuse(v1::CallReply& reply, cudaError_t error, std::string detail);

// Resolves a stream token: 0 and 1 (cudaStreamLegacy) are the legacy default stream,
// anything else must be a live stream of this client. (The per-thread default
// stream, 2, is translated by the client; see client_api.proto.)
bool resolveStream(CallContext& ctx, std::uint64_t token, CUstream* stream, v1::CallReply& reply);
bool resolveEvent(CallContext& ctx, std::uint64_t token, CUevent* event, v1::CallReply& reply);
bool resolveFunction(CallContext& ctx, std::uint64_t token, FunctionRecord* function, v1::CallReply& reply);

// Resolves shared host memory named by a request to a worker pointer: [offset,
// offset+size) of the staging area (segment 0) or of one of the client's host
// segments, bounded by it. *segment keeps a host segment alive for the call.
bool resolveHostBuffer(CallContext& ctx, const v1::HostBuffer& buffer, std::uint8_t** host,
                       std::shared_ptr<SharedHostSegment>* segment, v1::CallReply& reply);

// Checks that [p, p+n) lies inside one live allocation of the client.
bool checkRange(CallContext& ctx, std::uint64_t p, std::uint64_t n, v1::CallReply& reply, const char* what);

// How much of [base, base + bytes) lies inside the live allocation of the client that base lies
// in, in whole units of `unit` bytes (unit > 0): bytes when all of it does; the units up to that
// allocation's end when it runs past it; bytes unchanged when base is in no allocation of the
// client or not even one unit fits (for checkRange to refuse). For views the driver accepts past
// their memory (a linear texture, an access policy window): clamped, they stay in the client's.
std::uint64_t bytesInsideAllocation(CallContext& ctx, std::uint64_t base, std::uint64_t bytes,
                                    std::uint64_t unit);

// An access policy window (a launch's or a stream's L2 hint) must start inside a live allocation
// of the client; one running past that allocation's end is shortened to it (the driver takes any
// range natively; the hint then never names memory not the client's).
bool confineAccessWindow(CallContext& ctx, std::uint64_t base, std::uint64_t* bytes);

}  // namespace agileos::worker
