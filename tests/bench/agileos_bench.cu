// agileos_bench: the workloads of issue 3's benchmark, one JSON line each.
//
// Usage: agileos_bench [--quick] [WORKLOAD...]   runs the named workloads (all if none), in order
//        agileos_bench --list                    prints the workload names, one per line (no CUDA call)
//
// The same binary runs natively and, unmodified, through AgileOS (the shim replaces
// libcudart.so.13); tests/bench/run_bench.sh runs both and format_table.py compares
// them. The output contract and exit statuses are in bench_support.cuh; what each
// workload measures is in micro_workloads.cuh and app_workloads.cuh. --quick runs
// fewer samples (and smaller application sizes) so that a slow transport fits a short
// time budget; both sides of a comparison must use the same setting.
//
// Only the runtime calls of tests/gpu/supported_api.txt are used (checked by the
// ctest bench_uses_supported_api).
#include <cstring>
#include <string>
#include <vector>

#include "app_workloads.cuh"
#include "bench_support.cuh"
#include "micro_workloads.cuh"

namespace bench {
namespace {

struct Workload {
  const char* name;
  void (*run)(const Scale&);
};

// The order of a full run: cheap calls first, bulk copies, then the applications.
const Workload kWorkloads[] = {
    {"memcpy_d2h_4b", memcpyD2h4Bytes},
    {"stream_query_idle", streamQueryIdle},
    {"launch_empty_10k", launchEmpty10k},
    {"launch_sync", launchSync},
    {"driver_launch_empty_10k", driverLaunchEmpty10k},
    {"graph_memory_launch", graphMemoryLaunch},
    {"memcpy_h2d_pinned_256m",
     [](const Scale& s) { bulkCopy(s, "memcpy_h2d_pinned_256m", cudaMemcpyHostToDevice, true); }},
    {"memcpy_d2h_pinned_256m",
     [](const Scale& s) { bulkCopy(s, "memcpy_d2h_pinned_256m", cudaMemcpyDeviceToHost, true); }},
    {"memcpy_h2d_pageable_256m",
     [](const Scale& s) { bulkCopy(s, "memcpy_h2d_pageable_256m", cudaMemcpyHostToDevice, false); }},
    {"memcpy_d2h_pageable_256m",
     [](const Scale& s) { bulkCopy(s, "memcpy_d2h_pageable_256m", cudaMemcpyDeviceToHost, false); }},
    {"malloc_free_4k", [](const Scale& s) { mallocFree(s, "malloc_free_4k", 4096, 1000, 300); }},
    {"malloc_free_64m", [](const Scale& s) { mallocFree(s, "malloc_free_64m", 64ull << 20, 300, 100); }},
    {"app_triad", appTriad},
    {"app_stencil", appStencil},
    {"app_sgemm", appSgemm},
};

}  // namespace
}  // namespace bench

int main(int argc, char** argv) {
  using namespace bench;
  Scale scale;
  std::vector<const Workload*> selected;
  if (const int status = parseCommandLine(argc, argv, "agileos_bench", kWorkloads, &scale, &selected);
      status >= 0) {
    return status;
  }

  // Context creation is process start-up, not part of any workload.
  BENCH_CUDA(cudaFree(nullptr));
  cudaDeviceProp properties;
  BENCH_CUDA(cudaGetDeviceProperties(&properties, 0));
  int runtimeVersion = 0, driverVersion = 0;
  BENCH_CUDA(cudaRuntimeGetVersion(&runtimeVersion));
  BENCH_CUDA(cudaDriverGetVersion(&driverVersion));
  std::fprintf(stderr, "agileos_bench: %s (sm_%d%d), runtime %d, driver %d%s\n", properties.name,
               properties.major, properties.minor, runtimeVersion, driverVersion,
               scale.quick ? ", --quick" : "");

  for (const Workload* workload : selected) {
    const auto start = Clock::now();
    workload->run(scale);
    std::fprintf(stderr, "agileos_bench: %s took %.2f s\n", workload->name, secondsSince(start));
  }
  return 0;
}
