// Writes the seed corpus of tests/fuzz/fuzz_worker_request.cpp into the
// directory named by argv[1]: serialized CallRequests, each valid (or
// deliberately invalid) against a FuzzScenario, and structured inputs
// (structured_requests.h). Handles are written as symbols (fuzz_scenario.h).
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "memmgr/address_layout.h"
#include "tests/cpu/worker/support/fuzz_scenario.h"
#include "tests/cpu/worker/support/requests.h"
#include "tests/cpu/worker/support/structured_requests.h"
#include "tests/cpu/worker/support/test_fatbins.h"

namespace {

using namespace agileos::worker::testing;
using agileos::memmgr::DevicePtr;
namespace v1 = ::agileos::v1;

std::uint64_t symbol(std::uint64_t index) { return kFirstSymbol + index; }

std::string addKernelParams(DevicePtr out, DevicePtr in) {
  std::string blob(kAddKernelParamBytes, '\0');
  const std::int32_t bias = 3;
  const std::uint32_t n = 64;
  std::memcpy(blob.data(), &out, 8);
  std::memcpy(blob.data() + 8, &in, 8);
  std::memcpy(blob.data() + 16, &bias, 4);
  std::memcpy(blob.data() + 20, &n, 4);
  return blob;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIRECTORY\n", argv[0]);
    return 2;
  }
  spdlog::set_level(spdlog::level::off);
  const std::string fatbin = readTestFatbin(TestFatbin::kDefaultArch);
  std::string error;
  const auto scenario = FuzzScenario::create(fatbin, &error);
  if (!scenario) {
    std::fprintf(stderr, "cannot build the fuzz scenario: %s\n", error.c_str());
    return 1;
  }
  const ScenarioClient& fuzzed = scenario->fuzzed();
  const DevicePtr small = fuzzed.allocations[0].base, tiny = fuzzed.allocations[1].base;
  const DevicePtr large = fuzzed.allocations[2].base, counter = fuzzed.variables[0].base;
  const DevicePtr foreign = scenario->victim().allocations[0].base;

  namespace r = requests;
  const std::vector<std::pair<const char*, v1::CallRequest>> seeds = {
      {"device_info", r::getDeviceInfo()},
      {"device_synchronize", r::deviceSynchronize()},
      {"device_reset", r::deviceReset()},
      {"get_limit", r::deviceGetLimit(CU_LIMIT_STACK_SIZE)},
      {"set_limit", r::deviceSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE, 1 << 20)},
      {"alloc_small", r::memAlloc(4096)},
      {"alloc_large", r::memAlloc(3u << 20)},
      {"free", r::memFree(tiny)},
      {"free_freed", r::memFree(fuzzed.freed)},
      {"mem_info", r::memGetInfo()},
      {"htod", r::memcpyHtoD(small, std::string(64, 'h'), symbol(0), true)},
      {"htod_chunk", r::memcpyHtoDChunk(large, 3u << 20, 4096, std::string(512, 'c'))},
      {"htod_variable", r::memcpyHtoD(counter, "1234")},
      {"htod_foreign", r::memcpyHtoD(foreign, "evil")},
      {"htod_freed", r::memcpyHtoD(fuzzed.freed, "late")},
      {"dtoh", r::memcpyDtoH(small + 16, 32)},
      {"dtoh_chunk", r::memcpyDtoHChunk(large, 3u << 20, 1u << 20, 4096, symbol(1))},
      {"dtod", r::memcpyDtoD(tiny, small, 64)},
      {"memset", r::memset(large + 4096, 7, 4096, symbol(1), true)},
      {"memset_protected", r::memset(agileos::memmgr::kIoAperture.begin, 0, 16)},
      {"stream_create", r::streamCreate(CU_STREAM_NON_BLOCKING, -1)},
      {"stream_destroy", r::streamDestroy(symbol(0))},
      {"stream_synchronize", r::streamSynchronize(symbol(1))},
      {"stream_query_stale", r::streamQuery(symbol(2))},
      {"stream_wait_event", r::streamWaitEvent(symbol(0), symbol(0))},
      {"event_create", r::eventCreate(CU_EVENT_DISABLE_TIMING)},
      {"event_destroy", r::eventDestroy(symbol(0))},
      {"event_record", r::eventRecord(symbol(0), symbol(0))},
      {"event_synchronize", r::eventSynchronize(symbol(0))},
      {"event_query", r::eventQuery(symbol(1))},
      {"event_elapsed", r::eventElapsedTime(symbol(0), symbol(0))},
      {"module_load", r::moduleLoad(fatbin, kAllKernels, kAllVariables)},
      {"module_unload", r::moduleUnload(symbol(0))},
      {"launch_add",
       r::launchKernel(symbol(0), addKernelParams(small, tiny), {2, 1, 1}, {32, 1, 1}, symbol(0))},
      {"launch_empty", r::launchKernel(symbol(2), "")},
      {"func_attributes", r::funcGetAttributes(symbol(1))},
      {"func_set_attribute",
       r::funcSetAttribute(symbol(0), CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 1024)},
      {"func_cache_config", r::funcSetCacheConfig(symbol(0), CU_FUNC_CACHE_PREFER_L1)},
      {"occupancy", r::occupancyMaxActiveBlocks(symbol(0), 256)},
  };

  const std::filesystem::path directory(argv[1]);
  std::filesystem::create_directories(directory);
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream out(directory / name, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return static_cast<bool>(out);
  };
  for (const auto& [name, request] : seeds) {
    if (!write(std::string("request_") + name, request.SerializeAsString())) return 1;
  }
  // Structured inputs: one well-formed request of every operation aimed at the
  // fuzzed client's first allocation, and the memory operations aimed at its
  // large allocation, a module variable, the victim's allocation and the freed pointer.
  for (int op = 0; op < structuredOperationCount(); ++op) {
    if (!write("structured_op" + std::to_string(op), structuredTemplate(op, 0))) return 1;
  }
  const std::vector<ScenarioAllocation> targets = structuredPointerTargets(*scenario);
  auto targetIndex = [&](DevicePtr base) {
    for (std::size_t i = 0; i < targets.size(); ++i) {
      if (targets[i].base == base) return static_cast<std::uint8_t>(i);
    }
    return std::uint8_t{0};
  };
  for (const char* op : {"mem_free", "memcpy_htod", "memcpy_dtoh", "memcpy_dtod", "memset"}) {
    for (DevicePtr base : {large, counter, foreign, fuzzed.freed}) {
      const std::uint8_t range = targetIndex(base);
      const std::string name = std::string("structured_") + op + "_range" + std::to_string(range);
      if (!write(name, structuredTemplate(structuredOperationIndex(op), range))) return 1;
    }
  }
  return 0;
}
