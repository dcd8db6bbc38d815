// WireOperations: one table of the client-to-worker operations (CallRequest's `op` oneof) and the
// facts both sides of the wire rely on, so that the client and the worker cannot disagree about
// them (issue 15). Which handler serves an operation, and whether it runs alone within its client,
// are the worker's (worker/dispatcher.h); everything here is shared.
//
// Per operation:
// - checksGuard: after it succeeds the worker has waited for the device, so it reads the kernel
//   memory guard's hit counter (worker/handlers/guard_handlers.h) and reports a fault there, as
//   CUDA reports a kernel's fault at a synchronizing call.
// - deliversAsyncErrors: CUDA reports the errors of earlier asynchronous work at this call, so
//   the client returns the deferred error of calls it sent without waiting (client runtime.h).
// - sentWithoutWaiting: the client may send it without waiting for its reply (invokeAsync); its
//   error then comes back on a later reply.
// kUnlessAsync: yes, unless the request's own `async` field is set (cudaMemcpyAsync and friends).
// kFreeStepOnly: yes for a StreamOrderedMemory request whose step is FREE (cudaFreeAsync and a
// graph's free node: stream-ordered work, which the client sends unwaited only where its own
// record says the worker will accept it), no for its other steps (an allocation returns an
// address; the rest answer or change what later calls see).
//
// The table is checked against the proto's descriptor (tests/cpu/proto/wire_operations_test.cpp):
// every operation has exactly one row, and kUnlessAsync only where the message has `async`.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "agileos/v1/client_api.pb.h"

namespace agileos::wire {

enum class When { kNever, kAlways, kUnlessAsync, kFreeStepOnly };

struct WireOperation {
  v1::CallRequest::OpCase op;
  std::string_view name;  // the oneof field's name
  When checksGuard;
  When deliversAsyncErrors;
  When sentWithoutWaiting;
};

// Every row, by field number.
std::span<const WireOperation> wireOperations();

// The row of `op`, or null for OP_NOT_SET and anything the table does not know.
const WireOperation* findWireOperation(v1::CallRequest::OpCase op);

// The table as the Markdown docs/wire-operations.md holds (a test keeps the two the same).
std::string wireOperationsMarkdown();

bool checksGuard(const v1::CallRequest& request);
bool deliversAsyncErrors(const v1::CallRequest& request);
bool mayBeSentWithoutWaiting(const v1::CallRequest& request);

}  // namespace agileos::wire
