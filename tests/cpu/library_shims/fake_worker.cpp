#include "tests/cpu/library_shims/fake_worker.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <span>
#include <string_view>
#include <utility>

#include "proto/adapters/cufft_operations.h"
#include "proto/adapters/nvrtc_operations.h"

namespace agileos::test {
namespace {

using adapters::ArgKind;

constexpr int kCudaErrorInvalidValue = 1;
constexpr int kCudaErrorNoDevice = 100;

const adapters::LibraryDecl* declarationOf(std::string_view library) {
  if (library == adapters::cufft::kLibrary.name) return &adapters::cufft::kLibrary;
  if (library == adapters::nvrtc::kLibrary.name) return &adapters::nvrtc::kLibrary;
  return nullptr;
}

bool matches(const agileos_value& value, ArgKind kind) {
  switch (kind) {
    case ArgKind::kInteger:
      return value.kind == AGILEOS_VALUE_INTEGER;
    case ArgKind::kIntegers:
      return value.kind == AGILEOS_VALUE_INTEGERS;
    case ArgKind::kOptionalIntegers:
      return value.kind == AGILEOS_VALUE_INTEGERS || value.kind == AGILEOS_VALUE_NONE;
    case ArgKind::kDevicePointer:
      return value.kind == AGILEOS_VALUE_DEVICE_POINTER;
    case ArgKind::kHandle:
      return value.kind == AGILEOS_VALUE_HANDLE;
    case ArgKind::kStream:
      return value.kind == AGILEOS_VALUE_STREAM;
    case ArgKind::kBlob:
      return value.kind == AGILEOS_VALUE_BLOB;
    case ArgKind::kText:
      return value.kind == AGILEOS_VALUE_TEXT;
    case ArgKind::kTexts:
      return value.kind == AGILEOS_VALUE_TEXTS;
  }
  return false;
}

Value copyOf(const agileos_value& in) {
  Value out;
  out.kind = in.kind;
  out.integer = in.integer;
  out.word = in.word;
  out.stream = in.stream;
  if (in.kind == AGILEOS_VALUE_INTEGERS && in.count > 0)
    out.integers.assign(in.integers, in.integers + in.count);
  if ((in.kind == AGILEOS_VALUE_BLOB || in.kind == AGILEOS_VALUE_TEXT) && in.count > 0) {
    out.bytes.assign(static_cast<const char*>(in.bytes), in.count);
  }
  if (in.kind == AGILEOS_VALUE_TEXTS) {
    for (std::size_t i = 0; i < in.count; ++i) out.texts.emplace_back(in.texts[i]);
  }
  return out;
}

// A C result value owning malloc'd copies, as the runtime shim's are.
agileos_value toC(const Value& in) {
  agileos_value out{};
  out.kind = in.kind;
  out.integer = in.integer;
  out.word = in.word;
  switch (in.kind) {
    case AGILEOS_VALUE_INTEGERS: {
      auto* values = static_cast<std::int64_t*>(std::malloc(sizeof(std::int64_t) * (in.integers.size() + 1)));
      for (std::size_t i = 0; i < in.integers.size(); ++i) values[i] = in.integers[i];
      out.integers = values;
      out.count = in.integers.size();
      break;
    }
    case AGILEOS_VALUE_BLOB:
    case AGILEOS_VALUE_TEXT: {
      auto* bytes = static_cast<char*>(std::malloc(in.bytes.size() + 1));
      std::memcpy(bytes, in.bytes.data(), in.bytes.size());
      bytes[in.bytes.size()] = '\0';
      out.bytes = bytes;
      out.count = in.bytes.size();
      break;
    }
    case AGILEOS_VALUE_TEXTS: {
      auto** texts = static_cast<char**>(std::malloc(sizeof(char*) * (in.texts.size() + 1)));
      for (std::size_t i = 0; i < in.texts.size(); ++i) texts[i] = strdup(in.texts[i].c_str());
      out.texts = texts;
      out.count = in.texts.size();
      break;
    }
    default:
      break;
  }
  return out;
}

void freeC(agileos_value& value) {
  std::free(const_cast<std::int64_t*>(value.integers));
  std::free(const_cast<void*>(value.bytes));
  if (value.texts != nullptr) {
    for (std::size_t i = 0; i < value.count; ++i) std::free(const_cast<char*>(value.texts[i]));
    std::free(const_cast<char**>(value.texts));
  }
}

}  // namespace

Value Value::Integer(std::int64_t v) {
  Value value;
  value.kind = AGILEOS_VALUE_INTEGER;
  value.integer = v;
  return value;
}

Value Value::Integers(std::vector<std::int64_t> v) {
  Value value;
  value.kind = AGILEOS_VALUE_INTEGERS;
  value.integers = std::move(v);
  return value;
}

Value Value::Handle(std::uint64_t token) {
  Value value;
  value.kind = AGILEOS_VALUE_HANDLE;
  value.word = token;
  return value;
}

Value Value::Blob(std::string bytes) {
  Value value;
  value.kind = AGILEOS_VALUE_BLOB;
  value.bytes = std::move(bytes);
  return value;
}

Value Value::Text(std::string text) {
  Value value;
  value.kind = AGILEOS_VALUE_TEXT;
  value.bytes = std::move(text);
  return value;
}

Value Value::Texts(std::vector<std::string> texts) {
  Value value;
  value.kind = AGILEOS_VALUE_TEXTS;
  value.texts = std::move(texts);
  return value;
}

Answer Answer::Ok(std::vector<Value> results) { return Status(0, std::move(results)); }

Answer Answer::Status(int status, std::vector<Value> results) {
  Answer answer;
  answer.status = status;
  answer.error = status == 0 ? 0 : kCudaErrorInvalidValue;
  answer.results = std::move(results);
  return answer;
}

Answer Answer::Refused(int cudaError, std::string detail) {
  Answer answer;
  answer.error = cudaError;
  answer.status.reset();
  answer.detail = std::move(detail);
  return answer;
}

Answer Answer::NoSession() {
  Answer answer;
  answer.callError = kCudaErrorNoDevice;
  return answer;
}

FakeWorker& FakeWorker::instance() {
  static FakeWorker worker;
  return worker;
}

void FakeWorker::reset() {
  std::lock_guard lock(mutex_);
  calls_.clear();
  responder_ = nullptr;
}

void FakeWorker::respond(std::function<Answer(const Call&)> responder) {
  std::lock_guard lock(mutex_);
  responder_ = std::move(responder);
}

std::vector<Call> FakeWorker::calls() const {
  std::lock_guard lock(mutex_);
  return calls_;
}

std::vector<std::string> FakeWorker::operations() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> names;
  for (const Call& call : calls_) names.push_back(call.operation);
  return names;
}

int FakeWorker::outstandingReplies() const {
  std::lock_guard lock(mutex_);
  return outstanding_;
}

int FakeWorker::call(const char* library, const char* operation, const agileos_value* args, std::size_t count,
                     agileos_library_reply** reply) {
  EXPECT_NE(library, nullptr);
  EXPECT_NE(operation, nullptr);
  EXPECT_NE(reply, nullptr);
  if (library == nullptr || operation == nullptr || reply == nullptr || (count > 0 && args == nullptr)) {
    return kCudaErrorInvalidValue;
  }
  // The declaration check the worker makes (worker/adapters/adapter_host.cpp), as a test failure.
  const adapters::LibraryDecl* declaration = declarationOf(library);
  EXPECT_NE(declaration, nullptr) << "no adapter declares library " << library;
  if (declaration == nullptr) return kCudaErrorInvalidValue;
  const int index = [&] {
    for (std::size_t i = 0; i < declaration->operations.size(); ++i) {
      if (declaration->operations[i].name == operation) return static_cast<int>(i);
    }
    return -1;
  }();
  EXPECT_GE(index, 0) << library << " declares no operation " << operation;
  if (index < 0) return kCudaErrorInvalidValue;
  const auto& declared = declaration->operations[static_cast<std::size_t>(index)].args;
  EXPECT_EQ(count, declared.size()) << library << "." << operation << ": argument count";
  for (std::size_t i = 0; i < count && i < declared.size(); ++i) {
    EXPECT_TRUE(matches(args[i], declared[i]))
        << library << "." << operation << ": argument " << i << " has kind " << args[i].kind;
  }

  Call recorded{library, operation, {}};
  for (std::size_t i = 0; i < count; ++i) recorded.args.push_back(copyOf(args[i]));
  std::function<Answer(const Call&)> responder;
  {
    std::lock_guard lock(mutex_);
    recorded.async = std::exchange(nextIsAsync_, false);
    calls_.push_back(recorded);
    responder = responder_;
  }
  const Answer answer = responder ? responder(recorded) : Answer::NoSession();
  if (answer.callError != 0) return answer.callError;

  auto* out = static_cast<agileos_library_reply*>(std::calloc(1, sizeof(agileos_library_reply)));
  out->error = answer.error;
  out->has_status = answer.status.has_value() ? 1 : 0;
  out->status = answer.status.value_or(0);
  out->result_count = answer.results.size();
  out->results = static_cast<agileos_value*>(std::calloc(answer.results.size() + 1, sizeof(agileos_value)));
  for (std::size_t i = 0; i < answer.results.size(); ++i) out->results[i] = toC(answer.results[i]);
  std::strncpy(out->detail, answer.detail.c_str(), sizeof out->detail - 1);
  {
    std::lock_guard lock(mutex_);
    ++outstanding_;
  }
  *reply = out;
  return 0;
}

void FakeWorker::release(agileos_library_reply* reply) {
  if (reply == nullptr) return;
  for (std::size_t i = 0; i < reply->result_count; ++i) freeC(reply->results[i]);
  std::free(reply->results);
  std::free(reply);
  std::lock_guard lock(mutex_);
  --outstanding_;
}

int FakeWorker::callAsync(const char* library, const char* operation, const agileos_value* args,
                          std::size_t count) {
  {
    std::lock_guard lock(mutex_);
    nextIsAsync_ = true;
  }
  agileos_library_reply* reply = nullptr;
  const int callError = call(library, operation, args, count, &reply);
  if (callError != 0) return callError;
  const int error = reply->error;
  release(reply);
  return error;
}

}  // namespace agileos::test

extern "C" int agileos_library_call_async(const char* library, const char* operation,
                                          const agileos_value* args, size_t arg_count) {
  return agileos::test::FakeWorker::instance().callAsync(library, operation, args, arg_count);
}

extern "C" uint64_t agileos_resource_epoch(void) { return agileos::test::FakeWorker::instance().epoch(); }

extern "C" int agileos_refuse_in_capture(void* stream) {
  return agileos::test::FakeWorker::instance().refuseInCapture(stream);
}

extern "C" int agileos_library_call(const char* library, const char* operation, const agileos_value* args,
                                    size_t arg_count, agileos_library_reply** reply) {
  return agileos::test::FakeWorker::instance().call(library, operation, args, arg_count, reply);
}

extern "C" void agileos_library_reply_free(agileos_library_reply* reply) {
  agileos::test::FakeWorker::instance().release(reply);
}
