// The worker's side of trusted library adapters (issue 6; the paper's section IV-F): a
// library's real state and handles stay in the worker, and a client reaches them only through
// the operations its adapter declares (proto/adapters/adapter_declaration.h).
//
// A call travels as AdapterCall (client_api.proto). AdapterHost checks, before any adapter
// code runs, that the library is hosted, that the daemon admitted the operation for this
// client, and that the count and kinds of the arguments match the declaration. The adapter
// then resolves each handle, stream and device pointer itself, because only it knows the
// extent a pointer must have (a cuFFT plan's, say).
//
// Library objects (plans, ...) live in the client's session (ClientSession::libraryObjects),
// so a token is only ever resolved within the client that created it, and every object is
// destroyed when the client's session ends.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proto/adapters/adapter_declaration.h"
#include "worker/call_context.h"

namespace agileos::worker {

class CompiledModuleCache;  // worker/module_cache/compiled_module_cache.h

// One library object a client created (a cuFFT plan, ...). Its destructor releases what it
// holds; it runs when the client destroys it or its session ends, on a thread where the
// worker's context is current.
class LibraryObject {
 public:
  explicit LibraryObject(std::string_view library) : library_(library) {}
  virtual ~LibraryObject() = default;
  LibraryObject(const LibraryObject&) = delete;
  LibraryObject& operator=(const LibraryObject&) = delete;
  std::string_view library() const { return library_; }

 private:
  std::string_view library_;  // a LibraryDecl name: static storage
};

// What an adapter operation sees: the call's context, its arguments (already checked against
// the declaration) and the reply to fill.
struct AdapterInvocation {
  CallContext& ctx;
  const google::protobuf::RepeatedPtrField<v1::AdapterValue>& args;
  v1::CallReply& reply;
  v1::AdapterReply& result;

  std::int64_t integer(int index) const { return args[index].integer(); }
  std::vector<long long> integers(int index) const;
  bool present(int index) const { return args[index].value_case() != v1::AdapterValue::VALUE_NOT_SET; }
  std::uint64_t pointer(int index) const { return args[index].device_pointer(); }
  const std::string& text(int index) const { return args[index].text(); }
  std::vector<std::string> texts(int index) const;

  // Refuses the call: the library's own `status`, a cudaError_t for the reply and a detail for
  // the client's log. Returns false.
  bool refuse(int status, cudaError_t error, std::string detail);
  // The library object of this client named by the handle argument at `index`, if it is one of
  // type T created by this library; else refuses with `invalidStatus`.
  template <typename T>
  std::shared_ptr<T> object(int index, int invalidStatus);
  // Adds a result value.
  void addInteger(std::int64_t value) { result.add_results()->set_integer(value); }
  void addHandle(std::uint64_t token) { result.add_results()->set_handle(token); }
  void addText(std::string value) { result.add_results()->set_text(std::move(value)); }
  void addBlob(std::string value) { result.add_results()->set_blob(std::move(value)); }
};

// What the worker lends adapters when it starts them.
struct AdapterEnvironment {
  GpuBackend& gpu;
  CompiledModuleCache* cache = nullptr;  // the compiled-module cache; may be null
};

class LibraryAdapter {
 public:
  virtual ~LibraryAdapter() = default;
  virtual const adapters::LibraryDecl& declaration() const = 0;
  // Runs declaration().operations[operation]; the arguments match its declaration.
  virtual void run(std::size_t operation, AdapterInvocation& call) = 0;
};

// The adapters a worker hosts, by library name.
class AdapterHost {
 public:
  void add(std::unique_ptr<LibraryAdapter> adapter);
  // Whether the request is an adapter operation declared to invalidate objects.
  bool invalidates(const v1::AdapterCall& call) const;
  // The handler of AdapterCall: admission, declaration check, then the adapter.
  void handle(CallContext& ctx, const v1::AdapterCall& call, v1::CallReply& reply) const;
  std::vector<std::string> libraries() const;

 private:
  LibraryAdapter* find(std::string_view library) const;
  std::vector<std::unique_ptr<LibraryAdapter>> adapters_;
};

// Whether `admitted` (the attach's "library.operation" / "library.*" entries) lets a client
// call `operation` of `library`.
bool isAdmitted(const std::vector<std::string>& admitted, std::string_view library,
                std::string_view operation);

// Whether `value` is of `kind` (an unset value is only an optional list).
bool matchesKind(const v1::AdapterValue& value, adapters::ArgKind kind);

template <typename T>
std::shared_ptr<T> AdapterInvocation::object(int index, int invalidStatus) {
  auto found = ctx.session.libraryObjects.find(args[index].handle());
  std::shared_ptr<T> typed;
  if (found) typed = std::dynamic_pointer_cast<T>(*found);
  if (!typed) refuse(invalidStatus, cudaErrorInvalidResourceHandle, "unknown library handle");
  return typed;
}

}  // namespace agileos::worker
