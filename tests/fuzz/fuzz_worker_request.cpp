// libFuzzer target: untrusted CallRequests through the worker's runtime.
//
// Each input runs against a fresh FuzzScenario (tests/cpu/worker/support): the
// real MemoryManager and WorkerRuntime over FakeGpuBackend, with a fuzzed client
// that holds allocations, streams, events and a loaded module, and a victim
// client beside it. The input is
// - a serialized CallRequest, run as the fuzzed client; or, if it does not parse
//   as one (or carries no operation),
// - up to kMaxStructuredRequests requests decoded field by field
//   (tests/cpu/worker/support/structured_requests.h), which reach pointers and
//   sizes at the boundaries of the scenario's ranges far more often than
//   mutated protobuf does.
// Token fields holding a symbol (fuzz_scenario.h) are replaced by the handle it
// names, so the fuzzer reaches live, stale and the victim's handles.
//
// Besides the sanitizers, it aborts when an invariant breaks:
// - every copy/memset that reached the driver lies inside the fuzzed client's own
//   live allocations or module variables, and the driver accepted it;
// - a launch reaches the driver with exactly the parameter bytes requested;
// - the fake driver saw no misuse (dead handles, unmapping unmapped memory, ...);
// - the victim's memory and allocations are untouched;
// - a successful device-to-host copy returns exactly the bytes asked for;
// - after both clients are released and the memory manager is gone, nothing is
//   left: no memory in use, no stream, event, module, mapping or reservation.
#include <spdlog/spdlog.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "tests/cpu/worker/support/fuzz_scenario.h"
#include "tests/cpu/worker/support/structured_requests.h"
#include "tests/cpu/worker/support/test_fatbins.h"

namespace {

using agileos::memmgr::PointerCheck;
using agileos::worker::FakeTransfer;
using agileos::worker::WorkerRuntime;
using agileos::worker::testing::FuzzScenario;
using agileos::worker::testing::HandleKind;
using agileos::worker::testing::kVictimPattern;
namespace v1 = ::agileos::v1;

constexpr std::size_t kMaxStructuredRequests = 8;

const std::string* gFatbin = nullptr;

[[noreturn]] void violated(const std::string& what, const v1::CallRequest* request = nullptr) {
  std::fprintf(stderr, "\nINVARIANT VIOLATED: %s\n", what.c_str());
  if (request != nullptr)
    std::fprintf(stderr, "request: %s\n", request->ShortDebugString().substr(0, 4000).c_str());
  std::abort();
}

// Records the handles a successful call minted, so later symbols can name them.
void adoptMintedHandles(const v1::CallRequest& request, const v1::CallReply& reply, FuzzScenario& scenario) {
  if (reply.error() != 0) return;
  if (request.has_stream_create() && reply.has_token())
    scenario.adopt(HandleKind::kStream, reply.token().token());
  if (request.has_event_create() && reply.has_token())
    scenario.adopt(HandleKind::kEvent, reply.token().token());
  if (reply.has_module_loaded()) {
    scenario.adopt(HandleKind::kModule, reply.module_loaded().module());
    for (const v1::FunctionInfo& function : reply.module_loaded().functions()) {
      if (function.error() == 0) scenario.adopt(HandleKind::kFunction, function.token());
    }
  }
}

void checkTransfers(FuzzScenario& scenario, std::size_t from, const v1::CallRequest& request) {
  const std::vector<FakeTransfer> transfers = scenario.gpu().transfers();
  const auto client = FuzzScenario::kFuzzedClient;
  for (std::size_t i = from; i < transfers.size(); ++i) {
    const FakeTransfer& transfer = transfers[i];
    if (transfer.result != CUDA_SUCCESS) {
      violated("the driver refused a transfer the worker had validated (CUresult " +
                   std::to_string(transfer.result) + ")",
               &request);
    }
    const bool writesDevice = transfer.kind != FakeTransfer::Kind::kDeviceToHost;
    const bool readsDevice = transfer.kind == FakeTransfer::Kind::kDeviceToHost ||
                             transfer.kind == FakeTransfer::Kind::kDeviceToDevice;
    if (writesDevice && scenario.memory().check(client, transfer.dst, transfer.bytes) != PointerCheck::kOk) {
      violated("a transfer wrote device memory outside the client's allocations", &request);
    }
    if (readsDevice && scenario.memory().check(client, transfer.src, transfer.bytes) != PointerCheck::kOk) {
      violated("a transfer read device memory outside the client's allocations", &request);
    }
  }
}

void checkLaunches(FuzzScenario& scenario, std::size_t from, const v1::CallRequest& request) {
  const auto launches = scenario.gpu().launches();
  if (launches.size() == from) return;
  if (launches.size() != from + 1 || !request.has_launch_kernel()) violated("unexpected launches", &request);
  if (launches.back().params != request.launch_kernel().params()) {
    violated("the driver received other parameter bytes than the client sent", &request);
  }
}

void checkVictim(FuzzScenario& scenario, const v1::CallRequest& request) {
  const auto& victim = scenario.victim();
  const auto& secret = victim.allocations.front();
  std::string bytes(secret.size, '\0');
  if (!scenario.gpu().readDevice(secret.base, bytes.data(), bytes.size()) ||
      bytes != std::string(secret.size, kVictimPattern)) {
    violated("the victim client's memory changed", &request);
  }
  for (const auto* ranges : {&victim.allocations, &victim.variables}) {
    for (const auto& range : *ranges) {
      if (scenario.memory().check(victim.id, range.base, range.size) != PointerCheck::kOk) {
        violated("the victim client lost an allocation or module variable", &request);
      }
    }
  }
}

void runAsFuzzedClient(FuzzScenario& scenario, v1::CallRequest& request) {
  agileos::worker::testing::resolveSymbols(&request, scenario);
  const std::size_t transfersBefore = scenario.gpu().transfers().size();
  const std::size_t launchesBefore = scenario.gpu().launches().size();
  v1::CallReply reply;
  if (scenario.runtime().call(scenario.fuzzed().token, request, reply) != WorkerRuntime::CallStatus::kOk) {
    violated("the fuzzed client's call was unauthenticated", &request);
  }
  adoptMintedHandles(request, reply, scenario);
  checkTransfers(scenario, transfersBefore, request);
  checkLaunches(scenario, launchesBefore, request);
  if (const auto misuse = scenario.gpu().misuse(); !misuse.empty())
    violated("driver misuse: " + misuse.front(), &request);
  checkVictim(scenario, request);
  if (request.has_memcpy_dtoh() && reply.error() == 0 &&
      reply.host_data().data().size() != request.memcpy_dtoh().size()) {
    violated("a device-to-host copy returned another number of bytes than asked", &request);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spdlog::set_level(spdlog::level::off);  // the runtime logs every attach and release
  gFatbin = new std::string(
      agileos::worker::testing::readTestFatbin(agileos::worker::testing::TestFatbin::kDefaultArch));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string error;
  std::unique_ptr<FuzzScenario> scenario = FuzzScenario::create(*gFatbin, &error);
  if (!scenario) violated("the fuzz scenario could not be built: " + error);

  v1::CallRequest request;
  if (request.ParseFromArray(data, static_cast<int>(size)) &&
      request.op_case() != v1::CallRequest::OP_NOT_SET) {
    runAsFuzzedClient(*scenario, request);
  } else {
    for (v1::CallRequest& decoded : agileos::worker::testing::decodeStructuredRequests(
             std::span<const std::uint8_t>(data, size), *scenario, *gFatbin, kMaxStructuredRequests)) {
      runAsFuzzedClient(*scenario, decoded);
    }
  }
  if (const std::string problems = scenario->tearDownAndCheck(); !problems.empty()) violated(problems);
  return 0;
}
