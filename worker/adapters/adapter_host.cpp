#include <spdlog/spdlog.h>

#include <algorithm>

#include "worker/adapters/library_adapter.h"

namespace agileos::worker {

using adapters::ArgKind;
using adapters::isOptional;
using adapters::valueCaseOf;

std::vector<long long> AdapterInvocation::integers(int index) const {
  const auto& values = args[index].integers().values();
  return {values.begin(), values.end()};
}

std::vector<std::string> AdapterInvocation::texts(int index) const {
  const auto& values = args[index].texts().values();
  return {values.begin(), values.end()};
}

bool AdapterInvocation::refuse(int status, cudaError_t error, std::string detail) {
  result.set_status(status);
  return worker::refuse(reply, error, std::move(detail));
}

bool matchesKind(const v1::AdapterValue& value, ArgKind kind) {
  // An ArgKind is its value's field number in AdapterValue (proto/adapters/adapter_declaration.h).
  const int valueCase = static_cast<int>(value.value_case());
  if (valueCase == v1::AdapterValue::VALUE_NOT_SET) return isOptional(kind);
  return valueCase == valueCaseOf(kind);
}

bool isAdmitted(const std::vector<std::string>& admitted, std::string_view library,
                std::string_view operation) {
  return std::any_of(admitted.begin(), admitted.end(), [&](const std::string& entry) {
    const std::string_view name(entry);
    const auto dot = name.find('.');
    if (dot == std::string_view::npos || name.substr(0, dot) != library) return false;
    const std::string_view op = name.substr(dot + 1);
    return op == "*" || op == operation;
  });
}

void AdapterHost::add(std::unique_ptr<LibraryAdapter> adapter) { adapters_.push_back(std::move(adapter)); }

LibraryAdapter* AdapterHost::find(std::string_view library) const {
  for (const auto& adapter : adapters_) {
    if (adapter->declaration().name == library) return adapter.get();
  }
  return nullptr;
}

std::vector<std::string> AdapterHost::libraries() const {
  std::vector<std::string> names;
  for (const auto& adapter : adapters_) names.emplace_back(adapter->declaration().name);
  return names;
}

bool AdapterHost::invalidates(const v1::AdapterCall& call) const {
  const LibraryAdapter* adapter = find(call.library());
  if (adapter == nullptr) return false;
  const int index = adapters::findOperation(adapter->declaration(), call.operation());
  return index >= 0 && adapter->declaration().operations[index].invalidates;
}

void AdapterHost::handle(CallContext& ctx, const v1::AdapterCall& call, v1::CallReply& reply) const {
  LibraryAdapter* adapter = find(call.library());
  if (adapter == nullptr) {
    refuse(reply, cudaErrorNotSupported, "library '" + call.library() + "' is not hosted by this worker");
    return;
  }
  const adapters::LibraryDecl& library = adapter->declaration();
  const int index = adapters::findOperation(library, call.operation());
  if (index < 0) {
    refuse(reply, cudaErrorNotSupported,
           std::string(library.name) + " has no operation '" + call.operation() + "'");
    return;
  }
  if (!isAdmitted(ctx.session.adapterOperations, library.name, call.operation())) {
    refuse(reply, cudaErrorNotPermitted,
           std::string(library.name) + "." + call.operation() +
               " is not admitted for this client (daemon config: adapters)");
    return;
  }
  const adapters::OperationDecl& operation = library.operations[static_cast<std::size_t>(index)];
  if (static_cast<std::size_t>(call.args_size()) != operation.args.size()) {
    refuse(reply, cudaErrorInvalidValue,
           std::string(library.name) + "." + call.operation() + " takes " +
               std::to_string(operation.args.size()) + " arguments, got " + std::to_string(call.args_size()));
    return;
  }
  for (int i = 0; i < call.args_size(); ++i) {
    if (!matchesKind(call.args(i), operation.args[static_cast<std::size_t>(i)])) {
      refuse(reply, cudaErrorInvalidValue,
             std::string(library.name) + "." + call.operation() + ": argument " + std::to_string(i) +
                 " has the wrong kind");
      return;
    }
  }
  AdapterInvocation invocation{ctx, call.args(), reply, *reply.mutable_adapter_reply()};
  adapter->run(static_cast<std::size_t>(index), invocation);
}

}  // namespace agileos::worker
