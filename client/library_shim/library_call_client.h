// How the library shims call the worker (UNTRUSTED side; client/cufft, client/nvrtc).
//
// A shim never links the wire protocol: it calls agileos_library_call, exported by the
// runtime shim (libagileos_cudart.so, soname libcudart.so.13, version node AGILEOS_1), which
// is already loaded in every AgileOS client process. The values built here only point at the
// caller's memory; they must not outlive what they point to. A LibraryReply owns what the
// worker answered and frees it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "agileos/library_call.h"

// Marks a definition of an exported entry point. Default visibility keeps it exportable while
// the shim is compiled with -fvisibility=hidden; the generated version script then decides what
// is exported (only the table's functions, each with the real library's version).
#define AGILEOS_SHIM_EXPORT extern "C" __attribute__((visibility("default")))

namespace agileos::client::library_shim {

agileos_value noneValue();
agileos_value integerValue(std::int64_t value);
agileos_value integersValue(std::span<const std::int64_t> values);
agileos_value devicePointerValue(const void* pointer);
agileos_value handleValue(std::uint64_t token);
agileos_value streamValue(void* stream);
agileos_value textValue(std::string_view text);
agileos_value textsValue(std::span<const char* const> texts);
agileos_value blobValue(const void* bytes, std::size_t size);

// The library's codes for what the worker's answer alone cannot say.
struct FailureCodes {
  int transport;       // no reply: no session, connection lost, or the call could not be sent
  int refused;         // the worker refused the call without a library status
  int malformedReply;  // the library succeeded but its results are not what the operation declares
};

// The outcome of one agileos_library_call.
class LibraryReply {
 public:
  // Calls `operation` of `library` with `args`; `entryPoint` names the API function for logs.
  static LibraryReply call(const char* library, const char* entryPoint, const char* operation,
                           std::span<const agileos_value> args);

  LibraryReply(LibraryReply&& other) noexcept;
  LibraryReply& operator=(LibraryReply&& other) noexcept;
  LibraryReply(const LibraryReply&) = delete;
  LibraryReply& operator=(const LibraryReply&) = delete;
  ~LibraryReply();

  // The library result the application sees:
  // - the call never reached the worker: codes.transport (logged once per library), except when
  //   agileos_library_call rejected an argument before sending it (an unknown stream:
  //   cudaErrorInvalidValue or cudaErrorInvalidResourceHandle), which is codes.refused;
  // - the reply carries the library's status: that status;
  // - the worker refused the call without one: codes.refused (the worker's detail is logged at
  //   info level the first time each entry point is refused, and at debug level every time).
  int status(const FailureCodes& codes) const;
  // Whether the worker answered (whatever it answered).
  bool answered() const { return reply_ != nullptr; }

  std::size_t resultCount() const {
    return reply_ != nullptr && reply_->results != nullptr ? reply_->result_count : 0;
  }
  // Results, by position; false when there is no such result of that kind.
  bool integer(std::size_t index, std::int64_t* out) const;
  bool handle(std::size_t index, std::uint64_t* out) const;
  bool integers(std::size_t index, std::vector<std::int64_t>* out) const;
  bool text(std::size_t index, std::string* out) const;  // a TEXT result
  bool blob(std::size_t index, std::string* out) const;  // a BLOB result
  bool texts(std::size_t index, std::vector<std::string>* out) const;

  // Logs once per entry point that the library's results were not as declared; returns
  // codes.malformedReply.
  int malformed(const FailureCodes& codes) const;

 private:
  LibraryReply(const char* library, const char* entryPoint) : library_(library), entryPoint_(entryPoint) {}
  const agileos_value* result(std::size_t index, agileos_value_kind kind) const;

  const char* library_;
  const char* entryPoint_;
  int callError_ = 0;  // what agileos_library_call returned
  agileos_library_reply* reply_ = nullptr;
};

}  // namespace agileos::client::library_shim
