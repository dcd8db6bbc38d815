#include "scheduler/worker_usage.h"

#include <algorithm>

#include "proto/wire/call_latency_buckets.h"
#include "proto/wire/wire_operations.h"

namespace agileos::scheduler {
namespace {

bool isWireOperation(const std::string& name) {
  const auto operations = wire::wireOperations();
  return std::any_of(operations.begin(), operations.end(),
                     [&](const wire::WireOperation& operation) { return operation.name == name; });
}

}  // namespace

void CallTotals::add(const CallTotals& other) {
  for (const auto& [name, theirs] : other.operations) {
    OperationTotals& ours = operations[name];
    ours.calls += theirs.calls;
    ours.errors += theirs.errors;
    ours.latency_ns_sum += theirs.latency_ns_sum;
    if (ours.latency_buckets.size() < theirs.latency_buckets.size())
      ours.latency_buckets.resize(theirs.latency_buckets.size());
    for (std::size_t i = 0; i < theirs.latency_buckets.size(); ++i)
      ours.latency_buckets[i] += theirs.latency_buckets[i];
  }
  bytes_host_to_device += other.bytes_host_to_device;
  bytes_device_to_host += other.bytes_device_to_host;
  bytes_device_to_device += other.bytes_device_to_device;
}

std::optional<ParsedWorkerUsage> parseWorkerUsage(const v1::internal::WorkerUsage& report,
                                                  const std::set<ClientId>& held, std::string* error) {
  ParsedWorkerUsage out;
  for (const v1::internal::ClientUsage& client : report.clients()) {
    if (out.clients.contains(client.client_id())) {
      *error = "reported client " + std::to_string(client.client_id()) + " twice";
      return std::nullopt;
    }
    if (!held.contains(client.client_id())) {
      *error = "reported usage of client " + std::to_string(client.client_id()) + ", which it does not hold";
      return std::nullopt;
    }
    out.clients[client.client_id()] =
        ClientUsage{client.device_memory_bytes(), client.pinned_host_bytes(), client.calls(),
                    client.guard_hits(), client.guard_poisoned()};
  }
  constexpr std::size_t kBuckets = wire::kCallLatencyBoundsMicros.size() + 1;
  for (const v1::internal::OperationCalls& operation : report.operations()) {
    if (!isWireOperation(operation.operation())) {
      *error = "reported calls of an operation the wire table does not have";
      return std::nullopt;
    }
    if (static_cast<std::size_t>(operation.latency_buckets_size()) != kBuckets) {
      *error = "reported " + std::to_string(operation.latency_buckets_size()) + " latency buckets for " +
               operation.operation() + ", not " + std::to_string(kBuckets);
      return std::nullopt;
    }
    if (out.calls.operations.contains(operation.operation())) {
      *error = "reported " + operation.operation() + " twice";
      return std::nullopt;
    }
    OperationTotals& totals = out.calls.operations[operation.operation()];
    totals.calls = operation.calls();
    totals.errors = operation.errors();
    totals.latency_ns_sum = operation.latency_ns_sum();
    totals.latency_buckets.assign(operation.latency_buckets().begin(), operation.latency_buckets().end());
  }
  out.calls.bytes_host_to_device = report.bytes_host_to_device();
  out.calls.bytes_device_to_host = report.bytes_device_to_host();
  out.calls.bytes_device_to_device = report.bytes_device_to_device();
  return out;
}

bool neverDecreases(const CallTotals& before, const CallTotals& after) {
  if (after.bytes_host_to_device < before.bytes_host_to_device ||
      after.bytes_device_to_host < before.bytes_device_to_host ||
      after.bytes_device_to_device < before.bytes_device_to_device) {
    return false;
  }
  for (const auto& [name, was] : before.operations) {
    auto it = after.operations.find(name);
    if (it == after.operations.end()) return false;
    const OperationTotals& now = it->second;
    if (now.calls < was.calls || now.errors < was.errors || now.latency_ns_sum < was.latency_ns_sum)
      return false;
    for (std::size_t i = 0; i < was.latency_buckets.size() && i < now.latency_buckets.size(); ++i) {
      if (now.latency_buckets[i] < was.latency_buckets[i]) return false;
    }
  }
  return true;
}

}  // namespace agileos::scheduler
