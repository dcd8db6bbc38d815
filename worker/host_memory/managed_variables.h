// The __managed__ variables of a client's loaded module, and their memory.
//
// The module's PTX was rewritten (ptx/managed_variables.h): each variable V keeps the module's
// own copy (which holds its initializer and nothing else uses any more) and has a pointer slot
// that the code loads V's address from. After the load (resolveManagedVariables) the worker
// knows both device addresses; the client then asks for V's memory with a HostAlloc naming the
// variable (worker/handlers/host_memory_handlers.cpp): a managed segment of the
// client, placed at one address for the program and the device like cudaMallocManaged's and
// charged to the same quota, receives V's initial bytes, and its address is written into the
// slot. From then on the program's host code (through the address the client sets in the
// runtime's pointer) and every kernel of the module reach one memory.
//
// Invariants: a variable is bound at most once, to a segment of the module's own client, of at
// least V's size; a bound segment cannot be freed by HostFree (isManagedVariableSegment) and goes
// when its module is unloaded (releaseManagedVariables) or the session ends, so a slot never
// names memory the client no longer holds. Until bound, a slot holds 0 (a kernel of the client
// that uses V then faults in its own context).
//
// Thread-safety: ManagedVariableTable may be used concurrently (a module's record is copied
// out of the session's table, and the copies share it).
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agileos/v1/client_api.pb.h"
#include "ptx/managed_variables.h"
#include "worker/handle_table.h"

namespace agileos::worker {

struct CallContext;
class ClientSession;
struct ModuleRecord;

struct ManagedVariableBinding {
  std::string name;
  CUdeviceptr slot = 0;     // the pointer slot in the module (8 bytes)
  CUdeviceptr initial = 0;  // the module's own copy of V, holding its initializer
  std::uint64_t bytes = 0;
  Token segment = 0;  // the client's host segment holding V; 0 until bound
};

class ManagedVariableTable {
 public:
  explicit ManagedVariableTable(std::vector<ManagedVariableBinding> variables)
      : variables_(std::move(variables)), claimed_(variables_.size(), false) {}

  std::optional<ManagedVariableBinding> find(const std::string& name) const;
  // Every variable, in the module's order.
  std::vector<ManagedVariableBinding> all() const;
  // Reserves `name` for one binding: false when unknown or already bound (or being bound).
  bool claim(const std::string& name, ManagedVariableBinding* out);
  // Ends a claim: `segment` holds the variable now, or 0 when the binding failed (claimable again).
  void finish(const std::string& name, Token segment);
  std::vector<Token> segments() const;
  bool holds(Token segment) const;

 private:
  mutable std::mutex mutex_;
  std::vector<ManagedVariableBinding> variables_;
  std::vector<bool> claimed_;
};

// After the module's load: finds each rewritten variable's slot and copy (cuModuleGetGlobal) and
// records them in module->managed. Refuses (false, reply set) when the driver does not know one.
bool resolveManagedVariables(CallContext& ctx, const std::vector<ptx::ManagedVariable>& variables,
                             ModuleRecord* module, v1::CallReply& reply);

// Whether `segment` holds a managed variable of one of the client's modules.
bool isManagedVariableSegment(const ClientSession& session, Token segment);

// Frees the segments bound to the module's variables (the context is synchronized: the module's
// kernels are done). Called as the module unloads.
void releaseManagedVariables(ClientSession& session, const ModuleRecord& module);

}  // namespace agileos::worker
