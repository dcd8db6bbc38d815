#include "tests/cpu/worker/support/fuzz_scenario.h"

#include "tests/cpu/worker/support/requests.h"
#include "tests/cpu/worker/support/test_fatbins.h"

namespace agileos::worker::testing {
namespace {

// Small enough that an oversized allocation fails fast, large enough for every seed.
constexpr std::uint64_t kFakeMemoryBytes = 256ull << 20;

std::string failure(const char* step, const v1::CallReply& reply) {
  return std::string(step) + " failed: error " + std::to_string(reply.error()) + " " + reply.error_detail();
}

}  // namespace

std::unique_ptr<FuzzScenario> FuzzScenario::create(const std::string& fatbin, std::string* error) {
  std::unique_ptr<FuzzScenario> scenario(new FuzzScenario());
  FakeGpuConfig config;
  config.memoryBytes = kFakeMemoryBytes;
  scenario->gpu_ = std::make_unique<FakeGpuBackend>(config);
  if (scenario->gpu_->init(0, error) != CUDA_SUCCESS) return nullptr;
  scenario->memory_ = memmgr::MemoryManager::create(*scenario->gpu_, error);
  if (!scenario->memory_) return nullptr;
  scenario->runtime_ = std::make_unique<WorkerRuntime>(*scenario->gpu_, *scenario->memory_, nullptr, nullptr);
  scenario->fuzzed_.id = kFuzzedClient;
  scenario->victim_.id = kVictimClient;
  // The victim first: its state must not depend on anything the fuzzed client does.
  if (std::string why = scenario->populate(scenario->victim_, fatbin, true); !why.empty()) {
    *error = "victim: " + why;
    return nullptr;
  }
  if (std::string why = scenario->populate(scenario->fuzzed_, fatbin, false); !why.empty()) {
    *error = "fuzzed client: " + why;
    return nullptr;
  }
  return scenario;
}

FuzzScenario::~FuzzScenario() {
  if (runtime_) runtime_->releaseAll();
  runtime_.reset();
  memory_.reset();
}

std::string FuzzScenario::populate(ScenarioClient& client, const std::string& fatbin, bool isVictim) {
  client.token = "fuzz-scenario-token-" + std::to_string(client.id);
  if (!runtime_->attach(client.id, client.token)) return "attach refused";
  v1::CallReply reply;
  auto call = [&](const v1::CallRequest& request) {
    reply.Clear();
    if (runtime_->call(client.token, request, reply) != WorkerRuntime::CallStatus::kOk) reply.set_error(-1);
    return reply.error() == 0;
  };
  auto allocate = [&](std::uint64_t size) -> bool {
    if (!call(requests::memAlloc(size))) return false;
    client.allocations.push_back({reply.device_pointer().dptr(), size});
    return true;
  };

  const std::vector<std::uint64_t> sizes =
      isVictim ? std::vector<std::uint64_t>{4096} : std::vector<std::uint64_t>{4096, 100, 3u << 20};
  for (std::uint64_t size : sizes) {
    if (!allocate(size)) return failure("memAlloc", reply);
  }
  if (isVictim) {
    const ScenarioAllocation& secret = client.allocations.front();
    if (!call(requests::memcpyHtoD(secret.base, std::string(secret.size, kVictimPattern)))) {
      return failure("memcpyHtoD", reply);
    }
  } else {
    if (!call(requests::memAlloc(256))) return failure("memAlloc", reply);
    client.freed = reply.device_pointer().dptr();
    if (!call(requests::memFree(client.freed))) return failure("memFree", reply);
  }

  const int streams = isVictim ? 1 : 3;
  for (int i = 0; i < streams; ++i) {
    if (!call(requests::streamCreate(i == 1 ? CU_STREAM_NON_BLOCKING : 0)))
      return failure("streamCreate", reply);
    client.streams.push_back(reply.token().token());
  }
  const int events = isVictim ? 1 : 3;
  for (int i = 0; i < events; ++i) {
    if (!call(requests::eventCreate(i == 1 ? CU_EVENT_DISABLE_TIMING : 0)))
      return failure("eventCreate", reply);
    client.events.push_back(reply.token().token());
  }
  if (!call(requests::eventRecord(client.events.front(), client.streams.front()))) {
    return failure("eventRecord", reply);
  }
  if (!isVictim) {
    client.deadStreams.push_back(client.streams.back());
    client.streams.pop_back();
    if (!call(requests::streamDestroy(client.deadStreams.back()))) return failure("streamDestroy", reply);
    client.deadEvents.push_back(client.events.back());
    client.events.pop_back();
    if (!call(requests::eventDestroy(client.deadEvents.back()))) return failure("eventDestroy", reply);
  }

  if (!call(requests::moduleLoad(fatbin, kAllKernels, kAllVariables))) return failure("moduleLoad", reply);
  client.modules.push_back(reply.module_loaded().module());
  for (const v1::FunctionInfo& info : reply.module_loaded().functions()) {
    if (info.error() != 0) return "function " + info.name() + " did not resolve";
    client.functions.push_back(info.token());
  }
  for (const v1::VariableInfo& info : reply.module_loaded().variables()) {
    if (info.error() != 0) return "variable " + info.name() + " did not resolve";
    client.variables.push_back({info.dptr(), info.size()});
  }
  return "";
}

std::vector<std::uint64_t> FuzzScenario::handles(HandleKind kind) const {
  std::vector<std::uint64_t> out;
  auto append = [&](const std::vector<std::uint64_t>& more) {
    out.insert(out.end(), more.begin(), more.end());
  };
  switch (kind) {
    case HandleKind::kStream:
      append(fuzzed_.streams);
      append(fuzzed_.deadStreams);
      append(victim_.streams);
      break;
    case HandleKind::kEvent:
      append(fuzzed_.events);
      append(fuzzed_.deadEvents);
      append(victim_.events);
      break;
    case HandleKind::kModule:
      append(fuzzed_.modules);
      append(victim_.modules);
      break;
    case HandleKind::kFunction:
      append(fuzzed_.functions);
      append(victim_.functions);
      break;
  }
  append(adopted_[static_cast<int>(kind)]);
  return out;
}

void FuzzScenario::adopt(HandleKind kind, std::uint64_t token) {
  std::vector<std::uint64_t>& list = adopted_[static_cast<int>(kind)];
  if (list.size() < kSymbolCount) list.push_back(token);
}

std::string FuzzScenario::tearDownAndCheck() {
  std::string problems;
  auto expect = [&](bool condition, const std::string& what) {
    if (!condition) problems += what + "; ";
  };
  for (const ScenarioClient* client : {&fuzzed_, &victim_}) {
    runtime_->release(client->id);
    expect(memory_->bytesInUse(client->id) == 0,
           "memory still in use by client " + std::to_string(client->id));
    expect(memory_->table().bytesOwnedBy(client->id) == 0,
           "allocation table still holds entries of client " + std::to_string(client->id));
  }
  expect(gpu_->liveStreams() == 0, std::to_string(gpu_->liveStreams()) + " streams left");
  expect(gpu_->liveEvents() == 0, std::to_string(gpu_->liveEvents()) + " events left");
  expect(gpu_->liveModules() == 0, std::to_string(gpu_->liveModules()) + " modules left");
  runtime_.reset();
  memory_.reset();
  expect(gpu_->liveMappings() == 0, std::to_string(gpu_->liveMappings()) + " mappings left");
  expect(gpu_->livePhysicalHandles() == 0,
         std::to_string(gpu_->livePhysicalHandles()) + " physical handles left");
  expect(gpu_->liveReservations() == 0, std::to_string(gpu_->liveReservations()) + " reservations left");
  for (const std::string& misuse : gpu_->misuse()) problems += "driver misuse: " + misuse + "; ";
  return problems;
}

}  // namespace agileos::worker::testing
