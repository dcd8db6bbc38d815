// A fake of the runtime shim's agileos_library_call (client/include/agileos/library_call.h) for
// unit tests of the library shims' objects (agileos_cufft_objects, agileos_nvrtc_objects).
//
// Every call is checked against the adapter's declaration (proto/adapters/<library>_operations.h):
// the operation must exist and each argument must have the declared kind, else the test fails.
// Calls are recorded (values deep-copied) and answered by a responder the test sets; with none,
// the call fails like a process with no AgileOS session (cudaErrorNoDevice, no reply).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "agileos/library_call.h"

namespace agileos::test {

struct Value {
  agileos_value_kind kind = AGILEOS_VALUE_NONE;
  std::int64_t integer = 0;
  std::uint64_t word = 0;  // device pointer or handle
  void* stream = nullptr;
  std::vector<std::int64_t> integers;
  std::string bytes;  // blob or text
  std::vector<std::string> texts;

  static Value Integer(std::int64_t v);
  static Value Integers(std::vector<std::int64_t> v);
  static Value Handle(std::uint64_t token);
  static Value Blob(std::string bytes);
  static Value Text(std::string text);
  static Value Texts(std::vector<std::string> texts);
};

struct Call {
  std::string library;
  std::string operation;
  std::vector<Value> args;
  bool async = false;  // sent with agileos_library_call_async (no reply awaited)
};

struct Answer {
  int callError = 0;  // non-zero: agileos_library_call returns it and no reply
  int error = 0;      // reply->error
  std::optional<int> status = 0;
  std::vector<Value> results;
  std::string detail;

  static Answer Ok(std::vector<Value> results = {});
  static Answer Status(int status, std::vector<Value> results = {});
  static Answer Refused(int cudaError, std::string detail);  // no library status
  static Answer NoSession();                                 // cudaErrorNoDevice, no reply
};

class FakeWorker {
 public:
  static FakeWorker& instance();

  // Forgets the calls and the responder.
  void reset();
  void respond(std::function<Answer(const Call&)> responder);
  std::vector<Call> calls() const;
  std::vector<std::string> operations() const;  // the operation of each call, in order
  // Replies handed out and not yet freed.
  int outstandingReplies() const;

  // The implementation behind agileos_library_call.
  int call(const char* library, const char* operation, const agileos_value* args, std::size_t count,
           agileos_library_reply** reply);
  void release(agileos_library_reply* reply);
  // The implementation behind agileos_library_call_async: recorded and answered like a call,
  // the reply dropped; returns the answer's callError, else its error.
  int callAsync(const char* library, const char* operation, const agileos_value* args, std::size_t count);
  // What agileos_resource_epoch returns; bumpEpoch() stands for a cudaFree.
  std::uint64_t epoch() const { return epoch_; }
  void bumpEpoch() { ++epoch_; }
  // What agileos_refuse_in_capture answers: the stream given here captures (null: none does).
  void setCapturingStream(void* stream) { capturingStream_ = stream; }
  int refuseInCapture(void* stream) const {
    return stream != nullptr && stream == capturingStream_.load()
               ? 900 /* cudaErrorStreamCaptureUnsupported */
               : 0;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<Call> calls_;
  std::function<Answer(const Call&)> responder_;
  int outstanding_ = 0;
  std::atomic<std::uint64_t> epoch_{1};
  std::atomic<void*> capturingStream_{nullptr};
  bool nextIsAsync_ = false;  // guarded by mutex_
};

}  // namespace agileos::test
