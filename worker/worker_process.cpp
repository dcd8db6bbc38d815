#include "worker/worker_process.h"

#include <signal.h>
#include <spdlog/fmt/ranges.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "proto/shm/handshake.h"
#include "worker/control_channel.h"
#include "worker/module_cache/compiled_module_cache.h"
#include "worker/transport/grpc_call_server.h"
#include "worker/transport/shm_call_server.h"

namespace agileos::worker {
namespace {

// The daemon writes the key right after it starts the worker; it is waiting by the time we look.
constexpr std::chrono::milliseconds kModuleCacheKeyTimeout{10000};

struct WorkerOptions {
  int controlFd = -1;
  std::string endpoint;
  int device = 0;
  std::string workerId = "0";
  std::string logLevel = "info";
  std::string cacheDir;  // compiled guarded modules; empty: no cache
  std::uint64_t cacheBytes = 1ull << 30;
  bool testGuardCanary = false;   // the escape suite's hook (session_guard.h)
  bool launchChains = true;       // --no-launch-chains: every launch goes alone (worker/launch_batch.h)
  bool loneLaunchChains = false;  // --lone-launch-chains (experimental): lone launches chained too
};

std::optional<int> parseInt(std::string_view text) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

bool parseOptions(int argc, char** argv, WorkerOptions* options, std::string* error) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    auto value = [&](std::string_view key) -> std::optional<std::string_view> {
      if (!arg.starts_with(key) || arg.size() <= key.size() || arg[key.size()] != '=') return std::nullopt;
      return arg.substr(key.size() + 1);
    };
    if (auto v = value("--control-fd")) {
      auto fd = parseInt(*v);
      if (!fd || *fd < 0) return (*error = "bad --control-fd", false);
      options->controlFd = *fd;
    } else if (auto v = value("--endpoint")) {
      options->endpoint = *v;
    } else if (auto v = value("--device")) {
      auto device = parseInt(*v);
      if (!device || *device < 0) return (*error = "bad --device", false);
      options->device = *device;
    } else if (auto v = value("--worker-id")) {
      options->workerId = *v;
    } else if (auto v = value("--log-level")) {
      options->logLevel = *v;
    } else if (auto v = value("--module-cache-dir")) {
      options->cacheDir = *v;
    } else if (auto v = value("--module-cache-bytes")) {
      std::uint64_t bytes = 0;
      auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), bytes);
      if (ec != std::errc() || end != v->data() + v->size() || bytes == 0)
        return (*error = "bad --module-cache-bytes", false);
      options->cacheBytes = bytes;
    } else if (arg == "--test-guard-canary") {
      options->testGuardCanary = true;
    } else if (arg == "--no-launch-chains") {
      options->launchChains = false;
    } else if (arg == "--lone-launch-chains") {
      options->loneLaunchChains = true;
    } else {
      *error = "unknown argument: " + std::string(arg);
      return false;
    }
  }
  if (options->controlFd < 0) return (*error = "--control-fd is required", false);
  if (options->endpoint.empty()) return (*error = "--endpoint is required", false);
  return true;
}

void configureLogging(const WorkerOptions& options) {
  // Logs go to stderr: stdout carries device printf output (DeviceOutputCapture).
  auto logger = spdlog::stderr_color_mt("worker-" + options.workerId);
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%n] [%l] %v");
  spdlog::set_level(spdlog::level::from_str(options.logLevel));
}

}  // namespace

int runWorkerProcess(int argc, char** argv, std::unique_ptr<GpuBackend> backend,
                     const AdapterFactory& adapters) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the daemon
  // Not dumpable: no core file of a context's memory, and no process of the same uid (the
  // NVRTC compiler this worker starts, say) may trace it or read /proc/<pid>/mem.
  ::prctl(PR_SET_DUMPABLE, 0);
  // Files this worker makes (compiled-module cache entries) are readable by the other workers
  // (the shared group; privileges in scheduler/daemon_config.h) and by no one else.
  ::umask(027);
  ::signal(SIGPIPE, SIG_IGN);
  WorkerOptions options;
  std::string error;
  if (!parseOptions(argc, argv, &options, &error)) {
    std::fprintf(stderr, "agileos-worker: %s\n", error.c_str());
    return 2;
  }
  configureLogging(options);
  ControlChannel control(options.controlFd);
  auto fail = [&](const std::string& reason) {
    spdlog::error("start-up failed: {}", reason);
    control.sendFailed(reason);
    return 1;
  };
  // The key that authenticates the compiled-module cache's entries comes first on the control
  // channel (never on the command line or in the environment); without it, no cache.
  std::string cacheKey;
  if (!options.cacheDir.empty()) {
    if (auto key = control.receiveModuleCacheKey(kModuleCacheKeyTimeout, &error)) {
      cacheKey = std::move(*key);
    } else {
      spdlog::warn("{}; running without the module cache", error);
    }
  }

  DeviceOutputCapture output;
  if (!output.start()) spdlog::warn("cannot capture device printf output; it will go to the worker's stdout");

  if (backend->init(options.device, &error) != CUDA_SUCCESS) return fail(error);
  auto memory = memmgr::MemoryManager::create(*backend, &error);
  if (!memory) return fail("memory manager: " + error);

  WorkerRuntime runtime(*backend, *memory, &output, &control);
  std::unique_ptr<CompiledModuleCache> cache;
  if (!options.cacheDir.empty()) {
    std::error_code ignored;  // the parent may exist already; open() reports what matters
    std::filesystem::create_directories(std::filesystem::path(options.cacheDir).parent_path(), ignored);
    cache = CompiledModuleCache::open(options.cacheDir, options.cacheBytes, cacheKey, &error);
    if (!cache) spdlog::warn("{}; guarded modules are compiled at every load", error);
    std::fill(cacheKey.begin(), cacheKey.end(), '\0');  // the cache keeps its own copy
  }
  WorkerGuardContext guardContext{cache.get(), options.testGuardCanary};
  runtime.setGuardContext(guardContext);
  runtime.setLaunchChains(options.launchChains);
  runtime.setLoneLaunchChains(options.loneLaunchChains);
  if (!options.launchChains) spdlog::info("launch chains off (--no-launch-chains): every launch goes alone");
  if (adapters) {
    auto host = std::make_unique<AdapterHost>();
    for (auto& adapter : adapters(AdapterEnvironment{*backend, cache.get()})) host->add(std::move(adapter));
    spdlog::info("library adapters: {}", fmt::join(host->libraries(), ", "));
    runtime.setAdapters(std::move(host));
  }
  if (options.testGuardCanary) {
    spdlog::warn("TEST MODE (--test-guard-canary): clients get a protected canary for the escape suite");
  }
  GrpcCallServer server(runtime);
  if (!server.start(options.endpoint, &error)) return fail(error);
  // The shared-memory transport listens next to the gRPC socket (local clients use it
  // unless AGILEOS_TRANSPORT=grpc). Without it the worker still serves gRPC, so failing
  // here is not fatal.
  shm::WaitPolicy shmPolicy;
  shmPolicy.spin = shm::WaitPolicy::kWorkerSpin;
  ShmCallServer shmServer(runtime, shm::RegionSizes{}, shmPolicy);
  std::string shmEndpoint = shm::shmSocketPathFor(options.endpoint).value_or("");
  if (!shmEndpoint.empty() && !shmServer.start(shmEndpoint, &error)) {
    spdlog::warn("shared-memory transport unavailable: {}", error);
    shmEndpoint.clear();
  }
  // The daemon gives both socket files to the attached client's uid (scheduler/endpoint_owner.h);
  // both servers created them 0600, this worker's.
  spdlog::info("ready on {} (device {}: {})", options.endpoint, options.device, backend->device().name);
  std::size_t deviceFree = 0, deviceTotal = 0;
  if (backend->memGetInfo(&deviceFree, &deviceTotal) != CUDA_SUCCESS) deviceTotal = 0;  // unknown
  if (!control.sendReady(options.endpoint, options.device, backend->device().name, shmEndpoint,
                         deviceTotal)) {
    return 1;
  }

  control.serve(runtime);

  shmServer.shutdown();
  server.shutdown();
  runtime.releaseAll();
  spdlog::info("exiting");
  return 0;
}

}  // namespace agileos::worker
