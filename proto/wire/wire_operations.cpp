#include "proto/wire/wire_operations.h"

#include <array>
#include <cstddef>
#include <cstdint>

namespace agileos::wire {
namespace {

using Op = v1::CallRequest::OpCase;
constexpr When kNo = When::kNever;
constexpr When kYes = When::kAlways;
constexpr When kUnlessAsync = When::kUnlessAsync;
constexpr When kFreeStepOnly = When::kFreeStepOnly;

// clang-format off
constexpr std::array kOperations = {
  //           operation                     name                           checksGuard   deliversAsyncErrors sentWithoutWaiting
  WireOperation{Op::kGetDeviceInfo,           "get_device_info",             kNo,          kNo,                kNo},
  WireOperation{Op::kDeviceSynchronize,       "device_synchronize",          kYes,         kYes,               kNo},
  WireOperation{Op::kDeviceReset,             "device_reset",                kNo,          kNo,                kNo},
  WireOperation{Op::kDeviceGetLimit,          "device_get_limit",            kNo,          kNo,                kNo},
  WireOperation{Op::kDeviceSetLimit,          "device_set_limit",            kNo,          kNo,                kNo},
  WireOperation{Op::kDeviceGetCacheConfig,    "device_get_cache_config",     kNo,          kNo,                kNo},
  WireOperation{Op::kDeviceSetCacheConfig,    "device_set_cache_config",     kNo,          kNo,                kNo},
  WireOperation{Op::kMemAlloc,                "mem_alloc",                   kNo,          kNo,                kNo},
  WireOperation{Op::kMemFree,                 "mem_free",                    kNo,          kNo,                kNo},
  WireOperation{Op::kMemGetInfo,              "mem_get_info",                kNo,          kNo,                kNo},
  WireOperation{Op::kMemcpyHtod,              "memcpy_htod",                 kUnlessAsync, kUnlessAsync,       kYes},
  WireOperation{Op::kMemcpyDtoh,              "memcpy_dtoh",                 kUnlessAsync, kUnlessAsync,       kYes},
  WireOperation{Op::kMemcpyDtod,              "memcpy_dtod",                 kUnlessAsync, kUnlessAsync,       kYes},
  // cudaMemset returns before the device is done (CUDA documents it as asynchronous to the host),
  // so it reports no earlier errors; the worker's handler does wait, and checks the guard.
  WireOperation{Op::kMemset,                  "memset",                      kUnlessAsync, kNo,                kYes},
  WireOperation{Op::kHostAlloc,               "host_alloc",                  kNo,          kNo,                kNo},
  WireOperation{Op::kHostFree,                "host_free",                   kNo,          kNo,                kNo},
  WireOperation{Op::kStreamCreate,            "stream_create",               kNo,          kNo,                kNo},
  WireOperation{Op::kStreamDestroy,           "stream_destroy",              kNo,          kNo,                kNo},
  WireOperation{Op::kStreamSynchronize,       "stream_synchronize",          kYes,         kYes,               kNo},
  WireOperation{Op::kStreamQuery,             "stream_query",                kNo,          kYes,               kNo},
  WireOperation{Op::kStreamWaitEvent,         "stream_wait_event",           kNo,          kNo,                kYes},
  WireOperation{Op::kStreamGetId,             "stream_get_id",               kNo,          kNo,                kNo},
  WireOperation{Op::kEventCreate,             "event_create",                kNo,          kNo,                kNo},
  WireOperation{Op::kEventDestroy,            "event_destroy",               kNo,          kNo,                kNo},
  WireOperation{Op::kEventRecord,             "event_record",                kNo,          kNo,                kYes},
  WireOperation{Op::kEventSynchronize,        "event_synchronize",           kYes,         kYes,               kNo},
  WireOperation{Op::kEventQuery,              "event_query",                 kNo,          kYes,               kNo},
  WireOperation{Op::kEventElapsedTime,        "event_elapsed_time",          kNo,          kNo,                kNo},
  WireOperation{Op::kModuleLoad,              "module_load",                 kNo,          kNo,                kNo},
  // cuModuleUnload waits for the context first (module_handlers.cpp).
  WireOperation{Op::kModuleUnload,            "module_unload",               kYes,         kNo,                kNo},
  WireOperation{Op::kLaunchKernel,            "launch_kernel",               kNo,          kNo,                kYes},
  WireOperation{Op::kFuncGetAttributes,       "func_get_attributes",         kNo,          kNo,                kNo},
  WireOperation{Op::kFuncSetAttribute,        "func_set_attribute",          kNo,          kNo,                kNo},
  WireOperation{Op::kFuncSetCacheConfig,      "func_set_cache_config",       kNo,          kNo,                kNo},
  WireOperation{Op::kOccupancyMaxActiveBlocks,"occupancy_max_active_blocks", kNo,          kNo,                kNo},
  WireOperation{Op::kOccupancyClusters,       "occupancy_clusters",          kNo,          kNo,                kNo},
  WireOperation{Op::kVirtualMemory,           "virtual_memory",              kNo,          kNo,                kNo},
  WireOperation{Op::kStreamOrderedMemory,     "stream_ordered_memory",       kNo,          kNo,                kFreeStepOnly},
  WireOperation{Op::kArrayTexture,            "array_texture",               kNo,          kNo,                kNo},
  WireOperation{Op::kStreamAttribute,         "stream_attribute",            kNo,          kNo,                kNo},
  WireOperation{Op::kResetPersistingL2Cache,  "reset_persisting_l2_cache",   kNo,          kNo,                kNo},
  WireOperation{Op::kJitLog,                  "jit_log",                     kNo,          kNo,                kNo},
  WireOperation{Op::kTensorMapEncode,         "tensor_map_encode",           kNo,          kNo,                kNo},
  WireOperation{Op::kModuleLoadImage,         "module_load_image",           kNo,          kNo,                kNo},
  WireOperation{Op::kModuleGetFunction,       "module_get_function",         kNo,          kNo,                kNo},
  WireOperation{Op::kModuleGetGlobal,         "module_get_global",           kNo,          kNo,                kNo},
  WireOperation{Op::kGuardStatusQuery,        "guard_status_query",          kNo,          kNo,                kNo},
  WireOperation{Op::kModuleControl,           "module_control",              kNo,          kNo,                kNo},
  // Library calls (cufftExec*, ...) are stream-ordered: the adapter's shim may send them unwaited.
  WireOperation{Op::kAdapterCall,             "adapter_call",                kNo,          kNo,                kYes},
};
// clang-format on

// Row index by field number (-1: none), so the lookups on every call (each launch the client
// sends, each call the worker dispatches) are one load, not a scan of the table.
constexpr std::size_t kFieldSlots = 128;  // > the largest field number in CallRequest.op
constexpr auto kRowOfField = [] {
  std::array<std::int8_t, kFieldSlots> rows{};
  rows.fill(-1);
  for (std::size_t i = 0; i < kOperations.size(); ++i)
    rows[static_cast<std::size_t>(kOperations[i].op)] = static_cast<std::int8_t>(i);
  return rows;
}();
static_assert(kOperations.size() < 128, "row indices are int8_t");

// The request's `async` field, for the operations whose rows say kUnlessAsync.
bool requestIsAsync(const v1::CallRequest& request) {
  switch (request.op_case()) {
    case Op::kMemcpyHtod:
      return request.memcpy_htod().async();
    case Op::kMemcpyDtoh:
      return request.memcpy_dtoh().async();
    case Op::kMemcpyDtod:
      return request.memcpy_dtod().async();
    case Op::kMemset:
      return request.memset().async();
    default:
      return false;
  }
}

bool holds(When when, const v1::CallRequest& request) {
  switch (when) {
    case When::kNever:
      return false;
    case When::kAlways:
      return true;
    case When::kUnlessAsync:
      return !requestIsAsync(request);
    case When::kFreeStepOnly:
      return request.op_case() == Op::kStreamOrderedMemory &&
             request.stream_ordered_memory().step() == v1::StreamOrderedMemory::FREE;
  }
  return false;
}

}  // namespace

std::span<const WireOperation> wireOperations() { return kOperations; }

const WireOperation* findWireOperation(v1::CallRequest::OpCase op) {
  const auto field = static_cast<std::size_t>(op);
  if (field >= kFieldSlots || kRowOfField[field] < 0) return nullptr;
  return &kOperations[static_cast<std::size_t>(kRowOfField[field])];
}

std::string wireOperationsMarkdown() {
  const auto word = [](When when) -> std::string {
    switch (when) {
      case When::kNever:
        return "";
      case When::kAlways:
        return "yes";
      case When::kUnlessAsync:
        return "unless `async`";
      case When::kFreeStepOnly:
        return "its `FREE` step";
    }
    return "?";
  };
  std::string text =
      "# Wire operations\n\n"
      "Generated from `proto/wire/wire_operations.cpp` (the test `wire.WireOperations.TheDocsListTheTable` "
      "fails when this file is stale; run it with `AGILEOS_WRITE_WIRE_DOC=1` to rewrite it). Each "
      "operation is a field of `CallRequest`'s `op` oneof (`proto/agileos/v1/client_api.proto`). "
      "*Checks the guard*: after it succeeds the worker has waited for the device and reads the kernel "
      "memory guard's hit counter. *Delivers async errors*: the client returns there the deferred error of "
      "calls it sent without waiting, as CUDA reports asynchronous errors at such calls. *Sent without "
      "waiting*: the client may send it without waiting for its reply. Which handler serves each operation, "
      "and whether it runs alone within its client, is registered in `worker/handlers/*_handlers.cpp`.\n\n"
      "| operation | field | checks the guard | delivers async errors | sent without waiting |\n"
      "|---|---|---|---|---|\n";
  for (const WireOperation& row : kOperations) {
    text += "| `" + std::string(row.name) + "` | " + std::to_string(static_cast<int>(row.op)) + " | " +
            word(row.checksGuard) + " | " + word(row.deliversAsyncErrors) + " | " +
            word(row.sentWithoutWaiting) + " |\n";
  }
  return text;
}

bool checksGuard(const v1::CallRequest& request) {
  const WireOperation* row = findWireOperation(request.op_case());
  return row != nullptr && holds(row->checksGuard, request);
}

bool deliversAsyncErrors(const v1::CallRequest& request) {
  const WireOperation* row = findWireOperation(request.op_case());
  return row != nullptr && holds(row->deliversAsyncErrors, request);
}

bool mayBeSentWithoutWaiting(const v1::CallRequest& request) {
  const WireOperation* row = findWireOperation(request.op_case());
  return row != nullptr && holds(row->sentWithoutWaiting, request);
}

}  // namespace agileos::wire
