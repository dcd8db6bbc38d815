#include "client/library_shim/library_call_client.h"

#include <utility>

#include "client/common/log.h"

namespace agileos::client::library_shim {
namespace {

// cudaError_t values agileos_library_call returns when it rejects an argument before sending
// anything (cuda_runtime_api.h is not needed for two constants).
constexpr int kCudaErrorInvalidValue = 1;
constexpr int kCudaErrorInvalidResourceHandle = 400;

}  // namespace

agileos_value noneValue() { return agileos_value{}; }

agileos_value integerValue(std::int64_t value) {
  agileos_value v{};
  v.kind = AGILEOS_VALUE_INTEGER;
  v.integer = value;
  return v;
}

agileos_value integersValue(std::span<const std::int64_t> values) {
  agileos_value v{};
  v.kind = AGILEOS_VALUE_INTEGERS;
  v.integers = values.data();
  v.count = values.size();
  return v;
}

agileos_value devicePointerValue(const void* pointer) {
  agileos_value v{};
  v.kind = AGILEOS_VALUE_DEVICE_POINTER;
  v.word = reinterpret_cast<std::uintptr_t>(pointer);
  return v;
}

agileos_value handleValue(std::uint64_t token) {
  agileos_value v{};
  v.kind = AGILEOS_VALUE_HANDLE;
  v.word = token;
  return v;
}

agileos_value streamValue(void* stream) {
  agileos_value v{};
  v.kind = AGILEOS_VALUE_STREAM;
  v.stream = stream;
  return v;
}

agileos_value textValue(std::string_view text) {
  agileos_value v{};
  v.kind = AGILEOS_VALUE_TEXT;
  v.bytes = text.data();
  v.count = text.size();
  return v;
}

agileos_value textsValue(std::span<const char* const> texts) {
  agileos_value v{};
  v.kind = AGILEOS_VALUE_TEXTS;
  v.texts = texts.data();
  v.count = texts.size();
  return v;
}

agileos_value blobValue(const void* bytes, std::size_t size) {
  agileos_value v{};
  v.kind = AGILEOS_VALUE_BLOB;
  v.bytes = bytes;
  v.count = size;
  return v;
}

LibraryReply LibraryReply::call(const char* library, const char* entryPoint, const char* operation,
                                std::span<const agileos_value> args) {
  LibraryReply reply(library, entryPoint);
  reply.callError_ = agileos_library_call(library, operation, args.data(), args.size(), &reply.reply_);
  if (reply.callError_ != 0) reply.reply_ = nullptr;  // untouched by a failed call
  return reply;
}

LibraryReply::LibraryReply(LibraryReply&& other) noexcept
    : library_(other.library_),
      entryPoint_(other.entryPoint_),
      callError_(other.callError_),
      reply_(std::exchange(other.reply_, nullptr)) {}

LibraryReply& LibraryReply::operator=(LibraryReply&& other) noexcept {
  if (this != &other) {
    if (reply_ != nullptr) agileos_library_reply_free(reply_);
    library_ = other.library_;
    entryPoint_ = other.entryPoint_;
    callError_ = other.callError_;
    reply_ = std::exchange(other.reply_, nullptr);
  }
  return *this;
}

LibraryReply::~LibraryReply() {
  if (reply_ != nullptr) agileos_library_reply_free(reply_);
}

int LibraryReply::status(const FailureCodes& codes) const {
  if (reply_ == nullptr) {
    if (callError_ == kCudaErrorInvalidValue || callError_ == kCudaErrorInvalidResourceHandle) {
      AGILEOS_LOG_DEBUG("%s: an argument was rejected before the call was sent (cudaError_t %d)", entryPoint_,
                        callError_);
      return codes.refused;
    }
    if (firstTime(std::string("transport:") + library_)) {
      AGILEOS_LOG_WARN(
          "%s: %s got no answer from the AgileOS worker (cudaError_t %d: no session, a lost "
          "connection or a sticky error); %s calls fail while that lasts",
          library_, entryPoint_, callError_, library_);
    }
    return codes.transport;
  }
  if (reply_->has_status) return reply_->status;
  if (reply_->error == 0) return 0;
  const char* detail = reply_->detail[0] != '\0' ? reply_->detail : "no detail";
  if (firstTime(std::string("refused:") + entryPoint_)) {
    AGILEOS_LOG_INFO("%s: the worker refused the call (cudaError_t %d): %s", entryPoint_, reply_->error,
                     detail);
  } else {
    AGILEOS_LOG_DEBUG("%s: the worker refused the call (cudaError_t %d): %s", entryPoint_, reply_->error,
                      detail);
  }
  return codes.refused;
}

const agileos_value* LibraryReply::result(std::size_t index, agileos_value_kind kind) const {
  if (reply_ == nullptr || reply_->results == nullptr || index >= reply_->result_count) return nullptr;
  const agileos_value& value = reply_->results[index];
  return value.kind == kind ? &value : nullptr;
}

bool LibraryReply::integer(std::size_t index, std::int64_t* out) const {
  const agileos_value* value = result(index, AGILEOS_VALUE_INTEGER);
  if (value == nullptr) return false;
  *out = value->integer;
  return true;
}

bool LibraryReply::handle(std::size_t index, std::uint64_t* out) const {
  const agileos_value* value = result(index, AGILEOS_VALUE_HANDLE);
  if (value == nullptr) return false;
  *out = value->word;
  return true;
}

bool LibraryReply::integers(std::size_t index, std::vector<std::int64_t>* out) const {
  const agileos_value* value = result(index, AGILEOS_VALUE_INTEGERS);
  if (value == nullptr || (value->count > 0 && value->integers == nullptr)) return false;
  out->assign(value->integers, value->integers + value->count);
  return true;
}

bool LibraryReply::text(std::size_t index, std::string* out) const {
  const agileos_value* value = result(index, AGILEOS_VALUE_TEXT);
  if (value == nullptr || (value->count > 0 && value->bytes == nullptr)) return false;
  out->assign(static_cast<const char*>(value->bytes), value->count);
  return true;
}

bool LibraryReply::blob(std::size_t index, std::string* out) const {
  const agileos_value* value = result(index, AGILEOS_VALUE_BLOB);
  if (value == nullptr || (value->count > 0 && value->bytes == nullptr)) return false;
  out->assign(static_cast<const char*>(value->bytes), value->count);
  return true;
}

bool LibraryReply::texts(std::size_t index, std::vector<std::string>* out) const {
  const agileos_value* value = result(index, AGILEOS_VALUE_TEXTS);
  if (value == nullptr || (value->count > 0 && value->texts == nullptr)) return false;
  out->clear();
  out->reserve(value->count);
  for (std::size_t i = 0; i < value->count; ++i) {
    if (value->texts[i] == nullptr) return false;
    out->emplace_back(value->texts[i]);
  }
  return true;
}

int LibraryReply::malformed(const FailureCodes& codes) const {
  if (firstTime(std::string("malformed:") + entryPoint_)) {
    AGILEOS_LOG_WARN("%s: the worker's reply lacks the results the operation declares", entryPoint_);
  }
  return codes.malformedReply;
}

}  // namespace agileos::client::library_shim
