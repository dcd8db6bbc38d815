// The PASS/FAIL lines of the runtime-API e2e clients (e2e_client, e2e_graph_memory): each check
// prints one line and counts a failure; a client's main exits 1 when failures() is not 0.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdio>

namespace agileos::e2e {

inline int gFailures = 0;

inline int failures() { return gFailures; }

inline void check(bool ok, const char* what) {
  std::printf("%s %s\n", ok ? "PASS" : "FAIL", what);
  if (!ok) ++gFailures;
}

inline void checkError(cudaError_t got, cudaError_t want, const char* what) {
  const bool ok = got == want;
  std::printf("%s %s (got %s, want %s)\n", ok ? "PASS" : "FAIL", what, cudaGetErrorName(got),
              cudaGetErrorName(want));
  if (!ok) ++gFailures;
  cudaGetLastError();  // clear it for the next check
}

}  // namespace agileos::e2e
