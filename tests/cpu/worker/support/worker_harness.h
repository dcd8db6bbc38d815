// WorkerHarness: one worker without a transport (FakeGpuBackend, the real
// MemoryManager and WorkerRuntime), and TestClient, a client that calls it the
// way the gRPC server would. For GoogleTest tests of the worker.
//
// Helpers whose name states an outcome (malloc, createStream, ...) record a test
// failure when the worker does not deliver it; call() returns the reply as is.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "memmgr/memory_manager.h"
#include "tests/cpu/worker/support/requests.h"
#include "tests/cpu/worker/support/test_fatbins.h"
#include "worker/testing/fake_gpu/fake_gpu_backend.h"
#include "worker/worker_runtime.h"

namespace agileos::worker::testing {

// "error 1 (destination pointer refused: ...)" for assertion messages.
std::string describe(const v1::CallReply& reply);

class TestClient {
 public:
  TestClient(WorkerRuntime& runtime, ClientId id, std::string token)
      : runtime_(&runtime), id_(id), token_(std::move(token)) {}

  ClientId id() const { return id_; }
  const std::string& token() const { return token_; }

  // Runs one request. An unauthenticated call is a test failure; its reply then has error -1.
  v1::CallReply call(const v1::CallRequest& request);
  WorkerRuntime::CallStatus callStatus(const v1::CallRequest& request, v1::CallReply* reply = nullptr);

  memmgr::DevicePtr malloc(std::uint64_t size);
  void free(memmgr::DevicePtr p);
  void write(memmgr::DevicePtr dst, const std::string& bytes);
  std::string read(memmgr::DevicePtr src, std::uint64_t size);
  std::uint64_t createStream(std::uint32_t flags = 0);
  std::uint64_t createEvent(std::uint32_t flags = 0);

  struct LoadedModule {
    std::uint64_t module = 0;
    std::map<std::string, v1::FunctionInfo> functions;
    std::map<std::string, v1::VariableInfo> variables;
    std::uint64_t function(const std::string& name) const;
    std::uint64_t variable(const std::string& name) const;
  };
  LoadedModule loadModule(const std::string& fatbin, const std::vector<std::string>& functions = kAllKernels,
                          const std::vector<std::string>& variables = kAllVariables);

 private:
  WorkerRuntime* runtime_;
  ClientId id_;
  std::string token_;
};

class WorkerHarness {
 public:
  explicit WorkerHarness(FakeGpuConfig config = {});
  ~WorkerHarness();  // releases every client, then the memory manager, then the fake
  WorkerHarness(const WorkerHarness&) = delete;
  WorkerHarness& operator=(const WorkerHarness&) = delete;

  FakeGpuBackend& gpu() { return *gpu_; }
  memmgr::MemoryManager& memory() { return *memory_; }
  WorkerRuntime& runtime() { return *runtime_; }

  // Attaches client `id` with tokenFor(id); a refusal is a test failure.
  TestClient attach(ClientId id, const GuardConfig& guard = {});
  // The worker's part of the guard (cache, test canary) for the clients attached after.
  void setGuardContext(const WorkerGuardContext& context) { runtime_->setGuardContext(context); }
  static std::string tokenFor(ClientId id) { return "session-token-of-client-" + std::to_string(id); }

  // Destroys the runtime and the memory manager now (as the worker does at exit),
  // so a test can inspect what the fake still holds afterwards. Idempotent.
  void shutDown();

 private:
  std::unique_ptr<FakeGpuBackend> gpu_;  // outlives memory_ and runtime_
  std::unique_ptr<memmgr::MemoryManager> memory_;
  std::unique_ptr<WorkerRuntime> runtime_;
};

}  // namespace agileos::worker::testing
