// FuzzScenario: a worker with two attached clients in a known state, for the
// worker request fuzzer (tests/fuzz/fuzz_worker_request.cpp) and the program that
// writes its seed corpus. No test framework; failures are reported as strings.
//
// State after create():
// - the fuzzed client holds a 4 KiB and a 100-byte allocation, a 3 MiB one (its
//   own mapping), a pointer it freed, two live streams and a destroyed one, two
//   events (one recorded) and a destroyed one, and the default-arch test module
//   with all its kernels and variables;
// - the victim client holds a 4 KiB allocation filled with kVictimPattern, a
//   stream, an event and the same module (its own copy).
// Device addresses are the same in every run (placement is first-fit and the
// fake is deterministic). Tokens are random, so requests name handles
// symbolically: a token field holding kFirstSymbol + i means the i-th entry
// (modulo the list's length) of handles(kind), which lists the fuzzed client's
// live handles, its destroyed ones, the victim's, then those the fuzzed client
// obtained while the scenario ran (adopt). Values outside
// [kFirstSymbol, kFirstSymbol + kSymbolCount) are forged tokens and pass as they are.
//
// Thread-safety: none; one scenario per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "memmgr/memory_manager.h"
#include "worker/testing/fake_gpu/fake_gpu_backend.h"
#include "worker/worker_runtime.h"

namespace agileos::worker::testing {

enum class HandleKind { kStream, kEvent, kModule, kFunction };

inline constexpr std::uint64_t kFirstSymbol = 3;  // 0, 1 and 2 name CUDA's default streams
inline constexpr std::uint64_t kSymbolCount = 64;
inline constexpr char kVictimPattern = '\x5c';

struct ScenarioAllocation {
  memmgr::DevicePtr base = 0;
  std::uint64_t size = 0;
};

struct ScenarioClient {
  ClientId id = 0;
  std::string token;
  std::vector<ScenarioAllocation> allocations;  // live user allocations
  std::vector<ScenarioAllocation> variables;    // registered module variables
  memmgr::DevicePtr freed = 0;                  // a pointer this client allocated and freed
  std::vector<std::uint64_t> streams, events, modules, functions;  // live tokens
  std::vector<std::uint64_t> deadStreams, deadEvents;              // destroyed tokens
};

class FuzzScenario {
 public:
  static constexpr ClientId kFuzzedClient = 7;
  static constexpr ClientId kVictimClient = 8;

  // Builds the state described above with `fatbin` (the default-arch test fatbin)
  // as the module. Returns nullptr and sets *error when any step fails.
  static std::unique_ptr<FuzzScenario> create(const std::string& fatbin, std::string* error);
  ~FuzzScenario();

  FakeGpuBackend& gpu() { return *gpu_; }
  memmgr::MemoryManager& memory() { return *memory_; }
  WorkerRuntime& runtime() { return *runtime_; }
  const ScenarioClient& fuzzed() const { return fuzzed_; }
  const ScenarioClient& victim() const { return victim_; }

  // The handles a symbol of `kind` may name, in symbol order.
  std::vector<std::uint64_t> handles(HandleKind kind) const;
  // Appends a token the fuzzed client obtained while the scenario ran, so later
  // symbols can name it too.
  void adopt(HandleKind kind, std::uint64_t token);

  // Releases both clients and destroys the memory manager, then checks that the
  // fake holds nothing any more. Returns "" or what was left behind.
  std::string tearDownAndCheck();

 private:
  FuzzScenario() = default;
  std::string populate(ScenarioClient& client, const std::string& fatbin, bool isVictim);

  std::unique_ptr<FakeGpuBackend> gpu_;
  std::unique_ptr<memmgr::MemoryManager> memory_;
  std::unique_ptr<WorkerRuntime> runtime_;
  ScenarioClient fuzzed_, victim_;
  std::vector<std::uint64_t> adopted_[4];
};

}  // namespace agileos::worker::testing
