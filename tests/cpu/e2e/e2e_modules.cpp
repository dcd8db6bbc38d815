// CPU end-to-end of protected modules: the daemon admits the module a client asks for
// (AGILEOS_MODULES), its worker (fake GPU) creates the plugin's instance, and the client's host
// control calls reach it through agileosModuleControl; refused calls never reach it.
// Usage: e2e_modules admitted | refused    (run_e2e_modules.sh sets the environment)
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "agileos/modules.h"

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  std::printf("%s %s\n", ok ? "PASS" : "FAIL", what);
  if (!ok) ++failures;
}

int admitted() {
  check(cudaFree(nullptr) == cudaSuccess, "the session with the module is admitted");
  char response[4096];
  size_t bytes = 0;
  int status = -1;
  const std::string hello = "hello from the client";
  cudaError_t error = agileosModuleControl("counter", 1, hello.data(), hello.size(), response,
                                           sizeof response, &bytes, &status);
  check(error == cudaSuccess && status == 0 && std::string(response, bytes) == hello,
        "echo reaches the plugin");
  const unsigned long long operands[1] = {0x0000000500000007ull};
  error = agileosModuleControl("counter", 2, operands, sizeof operands, response, sizeof response, &bytes,
                               &status);
  check(error == cudaSuccess && status == 0 && bytes == 8, "add with exactly 8 bytes works");
  error = agileosModuleControl("counter", 2, operands, 7, response, sizeof response, &bytes, &status);
  check(error == cudaErrorInvalidValue && status != 0, "a short payload is refused");
  const std::string big(4097, 'x');
  error =
      agileosModuleControl("counter", 1, big.data(), big.size(), response, sizeof response, &bytes, &status);
  check(error == cudaErrorInvalidValue && status != 0, "an oversized payload is refused");
  error = agileosModuleControl("counter", 99, nullptr, 0, response, sizeof response, &bytes, &status);
  check(error == cudaErrorInvalidValue && status != 0, "an unknown command is refused");
  error = agileosModuleControl("kvstore", 1, nullptr, 0, response, sizeof response, &bytes, &status);
  check(error == cudaErrorInvalidValue, "a module the client was not given is refused");
  const char payload[] = "protected state";
  error =
      agileosModuleControl("counter", 3, payload, sizeof payload, response, sizeof response, &bytes, &status);
  check(error == cudaSuccess && status == 0, "the plugin keeps state in protected memory (store)");
  return failures == 0 ? 0 : 1;
}

int refused() {
  const cudaError_t error = cudaFree(nullptr);
  std::printf("session: %s\n", cudaGetErrorName(error));
  check(error != cudaSuccess, "the session asking for a module it may not have is refused");
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "admitted") == 0) return admitted();
  if (argc == 2 && std::strcmp(argv[1], "refused") == 0) return refused();
  std::fprintf(stderr, "usage: e2e_modules admitted|refused\n");
  return 2;
}
