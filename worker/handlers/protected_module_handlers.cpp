// ModuleControl: a client's control call to one of ITS protected module instances.
//
// The module is looked up in the calling client's own ModuleSet only, so no client can reach
// another client's instance. The request is bounded (AGILEOS_MODULE_MAX_PAYLOAD_BYTES) before
// the instance copies it; the instance then checks the command id and the request size against
// the plugin's table before the plugin sees anything (modules/host/module_instance.h).
//
// Concurrent within a client: calls on one instance are serialized by the instance itself, and
// the set cannot change while calls run (it is torn down under the client's exclusive gate).
#include <cctype>
#include <string>
#include <string_view>

#include "agileos/module_abi.h"
#include "worker/dispatcher.h"

namespace agileos::worker {
namespace {

// Untrusted text for a refusal's detail: at most kMaxQuoted bytes, non-printable bytes as '?'.
constexpr std::size_t kMaxQuoted = 64;

std::string quoteUntrusted(std::string_view text) {
  std::string quoted = "'";
  for (char c : text.substr(0, kMaxQuoted))
    quoted += std::isprint(static_cast<unsigned char>(c)) != 0 ? c : '?';
  quoted += text.size() > kMaxQuoted ? "'..." : "'";
  return quoted;
}

// The CUDA error a client sees when its call did not succeed; the module's own code goes back
// beside it (ModuleControlResult.status).
cudaError_t toCudaError(int status) {
  switch (status) {
    case AGILEOS_MODULE_ENOMEM:
      return cudaErrorMemoryAllocation;
    case AGILEOS_MODULE_EIO:
      return cudaErrorUnknown;
    default:  // refused before the plugin (ENOTSUP, EINVAL, EPERM), or the plugin refused the content
      return cudaErrorInvalidValue;
  }
}

void moduleControl(CallContext& ctx, const v1::CallRequest& request, v1::CallReply& reply) {
  const v1::ModuleControl& call = request.module_control();
  const auto* set = ctx.session.protectedModules.get();
  agileos::modules::ModuleInstance* instance = set != nullptr ? set->find(call.module()) : nullptr;
  if (instance == nullptr) {
    refuse(reply, cudaErrorInvalidValue, "no module " + quoteUntrusted(call.module()) + " for this client");
    return;
  }
  if (call.request().size() > AGILEOS_MODULE_MAX_PAYLOAD_BYTES) {
    refuse(reply, cudaErrorInvalidValue,
           "module control request of " + std::to_string(call.request().size()) + " bytes exceeds " +
               std::to_string(AGILEOS_MODULE_MAX_PAYLOAD_BYTES) + " bytes");
    return;
  }
  std::string response;
  std::string error;
  const int status = instance->control(call.command(), call.request(), &response, &error);
  v1::ModuleControlResult* result = reply.mutable_module_control_result();
  result->set_status(status);
  if (status != AGILEOS_MODULE_OK) {
    refuse(reply, toCudaError(status), std::move(error));
    return;
  }
  result->set_response(std::move(response));
}

}  // namespace

void registerModuleControlHandlers(HandlerRegistry& registry) {
  registry.add(v1::CallRequest::kModuleControl, moduleControl, Exclusivity::kConcurrent);
}

}  // namespace agileos::worker
