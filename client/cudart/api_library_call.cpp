// agileos_library_call (client/include/agileos/library_call.h): the library shims' way to the
// worker's adapters. Converts the C values to an AdapterCall, translating streams as every
// runtime call does, and the AdapterReply back. Exported in version node AGILEOS_1.
#include <cstdlib>
#include <cstring>
#include <new>

#include "agileos/library_call.h"
#include "client/session/resource_epoch.h"
#include "client/session/stream_capture.h"
#include "client/session/streams.h"
#include "client/session/worker_calls.h"

namespace {

namespace v1 = agileos::v1;

// agileos_value_kind is the C ABI's spelling of AdapterValue's `value` oneof (client_api.proto, the
// one list of value kinds; proto/adapters/adapter_declaration.h's ArgKind uses the same numbers).
constexpr bool sameKind(agileos_value_kind kind, v1::AdapterValue::ValueCase wire) {
  return static_cast<int>(kind) == static_cast<int>(wire);
}
static_assert(sameKind(AGILEOS_VALUE_NONE, v1::AdapterValue::VALUE_NOT_SET));
static_assert(sameKind(AGILEOS_VALUE_INTEGER, v1::AdapterValue::kInteger));
static_assert(sameKind(AGILEOS_VALUE_INTEGERS, v1::AdapterValue::kIntegers));
static_assert(sameKind(AGILEOS_VALUE_DEVICE_POINTER, v1::AdapterValue::kDevicePointer));
static_assert(sameKind(AGILEOS_VALUE_HANDLE, v1::AdapterValue::kHandle));
static_assert(sameKind(AGILEOS_VALUE_STREAM, v1::AdapterValue::kStream));
static_assert(sameKind(AGILEOS_VALUE_BLOB, v1::AdapterValue::kBlob));
static_assert(sameKind(AGILEOS_VALUE_TEXT, v1::AdapterValue::kText));
static_assert(sameKind(AGILEOS_VALUE_TEXTS, v1::AdapterValue::kTexts));

// Fills `out` from `in`; false (with *error) for a malformed value.
bool toWire(const agileos_value& in, v1::AdapterValue* out, cudaError_t* error) {
  switch (in.kind) {
    case AGILEOS_VALUE_NONE:
      return true;
    case AGILEOS_VALUE_INTEGER:
      out->set_integer(in.integer);
      return true;
    case AGILEOS_VALUE_INTEGERS: {
      auto* list = out->mutable_integers();
      for (std::size_t i = 0; i < in.count; ++i) list->add_values(in.integers[i]);
      return true;
    }
    case AGILEOS_VALUE_DEVICE_POINTER:
      out->set_device_pointer(in.word);
      return true;
    case AGILEOS_VALUE_HANDLE:
      out->set_handle(in.word);
      return true;
    case AGILEOS_VALUE_STREAM: {
      std::uint64_t token = 0;
      *error = agileos::client::resolveStream(static_cast<cudaStream_t>(in.stream),
                                              agileos::client::DefaultStream::kLegacy, &token);
      if (*error != cudaSuccess) return false;
      out->set_stream(token);
      return true;
    }
    case AGILEOS_VALUE_BLOB:
      out->set_blob(static_cast<const char*>(in.bytes), in.count);
      return true;
    case AGILEOS_VALUE_TEXT:
      out->set_text(static_cast<const char*>(in.bytes), in.count);
      return true;
    case AGILEOS_VALUE_TEXTS: {
      auto* list = out->mutable_texts();
      for (std::size_t i = 0; i < in.count; ++i) list->add_values(in.texts[i] != nullptr ? in.texts[i] : "");
      return true;
    }
  }
  *error = cudaErrorInvalidValue;
  return false;
}

// Copies one result into C form; the bytes it points to are allocated with malloc and freed by
// agileos_library_reply_free.
void fromWire(const v1::AdapterValue& in, agileos_value* out) {
  *out = agileos_value{};
  switch (in.value_case()) {
    case v1::AdapterValue::kInteger:
      out->kind = AGILEOS_VALUE_INTEGER;
      out->integer = in.integer();
      break;
    case v1::AdapterValue::kIntegers: {
      out->kind = AGILEOS_VALUE_INTEGERS;
      out->count = static_cast<std::size_t>(in.integers().values_size());
      auto* values = static_cast<std::int64_t*>(std::malloc(sizeof(std::int64_t) * (out->count + 1)));
      for (std::size_t i = 0; i < out->count; ++i) values[i] = in.integers().values(static_cast<int>(i));
      out->integers = values;
      break;
    }
    case v1::AdapterValue::kHandle:
      out->kind = AGILEOS_VALUE_HANDLE;
      out->word = in.handle();
      break;
    case v1::AdapterValue::kBlob:
    case v1::AdapterValue::kText: {
      const std::string& bytes = in.value_case() == v1::AdapterValue::kBlob ? in.blob() : in.text();
      out->kind = in.value_case() == v1::AdapterValue::kBlob ? AGILEOS_VALUE_BLOB : AGILEOS_VALUE_TEXT;
      auto* copy = static_cast<char*>(std::malloc(bytes.size() + 1));
      std::memcpy(copy, bytes.data(), bytes.size());
      copy[bytes.size()] = '\0';
      out->bytes = copy;
      out->count = bytes.size();
      break;
    }
    case v1::AdapterValue::kTexts: {
      out->kind = AGILEOS_VALUE_TEXTS;
      out->count = static_cast<std::size_t>(in.texts().values_size());
      auto** texts = static_cast<char**>(std::malloc(sizeof(char*) * (out->count + 1)));
      for (std::size_t i = 0; i < out->count; ++i)
        texts[i] = strdup(in.texts().values(static_cast<int>(i)).c_str());
      out->texts = texts;
      break;
    }
    default:  // device pointers and streams are never results
      break;
  }
}

void freeValue(agileos_value& value) {
  std::free(const_cast<std::int64_t*>(value.integers));
  std::free(const_cast<void*>(value.bytes));
  if (value.texts != nullptr) {
    for (std::size_t i = 0; i < value.count; ++i) std::free(const_cast<char*>(value.texts[i]));
    std::free(const_cast<char**>(value.texts));
  }
}

// The request for a call, or a cudaError_t for an argument that cannot be sent.
cudaError_t buildRequest(const char* library, const char* operation, const agileos_value* args,
                         size_t arg_count, v1::CallRequest* request) {
  if (library == nullptr || operation == nullptr || (arg_count > 0 && args == nullptr))
    return cudaErrorInvalidValue;
  v1::AdapterCall* call = request->mutable_adapter_call();
  call->set_library(library);
  call->set_operation(operation);
  for (std::size_t i = 0; i < arg_count; ++i) {
    cudaError_t error = cudaSuccess;
    if (!toWire(args[i], call->add_args(), &error)) return error;
  }
  return cudaSuccess;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int agileos_library_call_async(const char* library,
                                                                                 const char* operation,
                                                                                 const agileos_value* args,
                                                                                 size_t arg_count) {
  v1::CallRequest request;
  if (cudaError_t error = buildRequest(library, operation, args, arg_count, &request); error != cudaSuccess) {
    return error;
  }
  return agileos::client::invokeAsync(request);
}

extern "C" __attribute__((visibility("default"))) int agileos_refuse_in_capture(void* stream) {
  std::uint64_t token = 0;
  if (cudaError_t error = agileos::client::resolveStream(static_cast<cudaStream_t>(stream),
                                                         agileos::client::DefaultStream::kLegacy, &token);
      error != cudaSuccess) {
    return error;
  }
  return agileos::client::refusedInCapture(token).value_or(cudaSuccess);
}

extern "C" __attribute__((visibility("default"))) uint64_t agileos_resource_epoch(void) {
  return agileos::client::resourceEpoch();
}

extern "C" __attribute__((visibility("default"))) int agileos_library_call(const char* library,
                                                                           const char* operation,
                                                                           const agileos_value* args,
                                                                           size_t arg_count,
                                                                           agileos_library_reply** reply) {
  if (reply == nullptr) return cudaErrorInvalidValue;
  v1::CallRequest request;
  if (cudaError_t error = buildRequest(library, operation, args, arg_count, &request); error != cudaSuccess) {
    return error;
  }
  v1::CallReply wire;
  const cudaError_t error = agileos::client::invoke(request, &wire);
  // A refusal still carries the library's status; no reply at all (no session, lost
  // connection, sticky error) is the transport's failure.
  if (error != cudaSuccess && !wire.has_adapter_reply()) return error;
  auto* out = static_cast<agileos_library_reply*>(std::calloc(1, sizeof(agileos_library_reply)));
  if (out == nullptr) return cudaErrorMemoryAllocation;
  out->error = error;
  const v1::AdapterReply& result = wire.adapter_reply();
  out->has_status = wire.has_adapter_reply() && (result.status() != 0 || error == cudaSuccess) ? 1 : 0;
  out->status = result.status();
  out->result_count = static_cast<std::size_t>(result.results_size());
  out->results = static_cast<agileos_value*>(std::calloc(out->result_count + 1, sizeof(agileos_value)));
  for (int i = 0; i < result.results_size(); ++i) fromWire(result.results(i), &out->results[i]);
  std::strncpy(out->detail, wire.error_detail().c_str(), sizeof out->detail - 1);
  *reply = out;
  return 0;
}

extern "C" __attribute__((visibility("default"))) void agileos_library_reply_free(
    agileos_library_reply* reply) {
  if (reply == nullptr) return;
  for (std::size_t i = 0; i < reply->result_count; ++i) freeValue(reply->results[i]);
  std::free(reply->results);
  std::free(reply);
}
