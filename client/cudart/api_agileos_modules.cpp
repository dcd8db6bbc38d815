// agileosModuleControl (client/include/agileos/modules.h): a control call to one of this
// process's protected modules (ModuleControl). Untrusted side: it only builds the request and
// unpacks the reply; the worker decides which modules exist and what they accept. Exported in
// the version node AGILEOS_1 (agileos_extensions.map).
#include <algorithm>
#include <cstring>

#include "agileos/modules.h"
#include "client/session/worker_calls.h"

extern "C" __attribute__((visibility("default"))) cudaError_t agileosModuleControl(
    const char* module, unsigned int command, const void* request, size_t requestBytes, void* response,
    size_t responseCapacity, size_t* responseBytes, int* status) {
  if (responseBytes != nullptr) *responseBytes = 0;
  if (status != nullptr) *status = 0;
  if (module == nullptr || (requestBytes > 0 && request == nullptr) ||
      (responseCapacity > 0 && response == nullptr)) {
    return cudaErrorInvalidValue;
  }
  agileos::v1::CallRequest wire;
  agileos::v1::ModuleControl* call = wire.mutable_module_control();
  call->set_module(module);
  call->set_command(command);
  if (requestBytes > 0) call->set_request(static_cast<const char*>(request), requestBytes);
  agileos::v1::CallReply reply;
  // Not recorded as the last error: a module's answer is not the program's CUDA state.
  const cudaError_t error = agileos::client::invoke(wire, &reply);
  if (status != nullptr && reply.has_module_control_result())
    *status = reply.module_control_result().status();
  if (error != cudaSuccess) return error;
  if (!reply.has_module_control_result()) return cudaErrorUnknown;
  const std::string& bytes = reply.module_control_result().response();
  if (responseBytes != nullptr) *responseBytes = bytes.size();
  const std::size_t copied = std::min(bytes.size(), responseCapacity);
  if (copied > 0) std::memcpy(response, bytes.data(), copied);
  return bytes.size() > responseCapacity ? cudaErrorInvalidValue : cudaSuccess;
}
