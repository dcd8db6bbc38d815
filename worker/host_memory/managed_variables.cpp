#include "worker/host_memory/managed_variables.h"

#include "worker/call_context.h"
#include "worker/client_session.h"

namespace agileos::worker {

std::optional<ManagedVariableBinding> ManagedVariableTable::find(const std::string& name) const {
  std::lock_guard lock(mutex_);
  for (const ManagedVariableBinding& variable : variables_) {
    if (variable.name == name) return variable;
  }
  return std::nullopt;
}

std::vector<ManagedVariableBinding> ManagedVariableTable::all() const {
  std::lock_guard lock(mutex_);
  return variables_;
}

bool ManagedVariableTable::claim(const std::string& name, ManagedVariableBinding* out) {
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < variables_.size(); ++i) {
    if (variables_[i].name != name) continue;
    if (claimed_[i]) return false;
    claimed_[i] = true;
    *out = variables_[i];
    return true;
  }
  return false;
}

void ManagedVariableTable::finish(const std::string& name, Token segment) {
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < variables_.size(); ++i) {
    if (variables_[i].name != name) continue;
    variables_[i].segment = segment;
    claimed_[i] = segment != 0;
    return;
  }
}

std::vector<Token> ManagedVariableTable::segments() const {
  std::lock_guard lock(mutex_);
  std::vector<Token> out;
  for (const ManagedVariableBinding& variable : variables_) {
    if (variable.segment != 0) out.push_back(variable.segment);
  }
  return out;
}

bool ManagedVariableTable::holds(Token segment) const {
  std::lock_guard lock(mutex_);
  for (const ManagedVariableBinding& variable : variables_) {
    if (variable.segment == segment) return true;
  }
  return false;
}

bool resolveManagedVariables(CallContext& ctx, const std::vector<ptx::ManagedVariable>& variables,
                             ModuleRecord* module, v1::CallReply& reply) {
  std::vector<ManagedVariableBinding> bindings;
  for (const ptx::ManagedVariable& variable : variables) {
    ManagedVariableBinding binding;
    binding.name = variable.name;
    std::size_t slotBytes = 0, copyBytes = 0;
    if (ctx.gpu.moduleGetGlobal(module->module, variable.slot.c_str(), &binding.slot, &slotBytes) !=
            CUDA_SUCCESS ||
        ctx.gpu.moduleGetGlobal(module->module, variable.name.c_str(), &binding.initial, &copyBytes) !=
            CUDA_SUCCESS ||
        slotBytes != sizeof(std::uint64_t) || copyBytes != variable.bytes) {
      return refuse(
          reply, cudaErrorInvalidPtx,
          "__managed__ variable " + variable.name +
              ": the loaded module does not hold its rewritten slot and copy as the rewrite declared");
    }
    binding.bytes = variable.bytes;
    bindings.push_back(std::move(binding));
  }
  if (!bindings.empty()) module->managed = std::make_shared<ManagedVariableTable>(std::move(bindings));
  return true;
}

bool isManagedVariableSegment(const ClientSession& session, Token segment) {
  for (const auto& [token, module] : session.modules.snapshot()) {
    if (module.managed && module.managed->holds(segment)) return true;
  }
  return false;
}

void releaseManagedVariables(ClientSession& session, const ModuleRecord& module) {
  if (!module.managed) return;
  for (Token token : module.managed->segments()) {
    if (auto segment = session.hostSegments.erase(token)) session.hostSegmentBytes -= (*segment)->size();
  }
}

}  // namespace agileos::worker
