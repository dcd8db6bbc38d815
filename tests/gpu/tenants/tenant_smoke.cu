// tenant_smoke: one tenant's smoke test (two_tenant_matrix.sh, rows 2G-01 and 2G-08): the device
// as AgileOS shows it, then a 4 MiB payload to the device, through a kernel and back, compared
// word for word with the result computed on the host.
//
// Usage: tenant_smoke [--seed N] [--hold SECONDS]
//   --seed N     makes this tenant's payload its own (default 1)
//   --hold S     keep the session and the memory S seconds after the check ("smoke: holding")
// Output: "smoke: devices N, device 0 <name>, M SMs", "smoke: payload 4194304 bytes round trip
// exact (seed N)", "smoke: holding", "smoke: done". Exit status 0 only if everything was exact.
#include <vector>

#include "tests/gpu/tenants/tenant_util.cuh"

namespace {

__global__ void transform(const unsigned* in, unsigned* out, unsigned n, unsigned seed) {
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = (in[i] ^ seed) * 2654435761u + i;
}

}  // namespace

int main(int argc, char** argv) {
  tenant::gPrefix = "smoke";
  unsigned seed = 1, hold = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
      seed = static_cast<unsigned>(tenant::number(argv[++i]));
    } else if (std::strcmp(argv[i], "--hold") == 0 && i + 1 < argc) {
      hold = static_cast<unsigned>(tenant::number(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: tenant_smoke [--seed N] [--hold SECONDS]\n");
      return 2;
    }
  }
  int devices = 0;
  if (!tenant::ok(cudaGetDeviceCount(&devices), "cudaGetDeviceCount")) return 1;
  cudaDeviceProp properties{};
  if (devices < 1 || !tenant::ok(cudaGetDeviceProperties(&properties, 0), "cudaGetDeviceProperties")) {
    tenant::say("FAILED no device (%d)", devices);
    return 1;
  }
  tenant::say("devices %d, device 0 %s, %d SMs", devices, properties.name, properties.multiProcessorCount);

  constexpr unsigned kWords = 1u << 20;
  std::vector<unsigned> in(kWords), out(kWords, 0), expected(kWords);
  for (unsigned i = 0; i < kWords; ++i) {
    in[i] = i * 0x9E3779B9u + seed;
    expected[i] = (in[i] ^ seed) * 2654435761u + i;
  }
  unsigned *deviceIn = nullptr, *deviceOut = nullptr;
  if (!tenant::ok(cudaMalloc(&deviceIn, kWords * sizeof(unsigned)), "cudaMalloc") ||
      !tenant::ok(cudaMalloc(&deviceOut, kWords * sizeof(unsigned)), "cudaMalloc") ||
      !tenant::ok(cudaMemcpy(deviceIn, in.data(), kWords * sizeof(unsigned), cudaMemcpyHostToDevice),
                  "cudaMemcpy to the device"))
    return 1;
  transform<<<256, 256>>>(deviceIn, deviceOut, kWords, seed);
  if (!tenant::ok(cudaGetLastError(), "launch") ||
      !tenant::ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize") ||
      !tenant::ok(cudaMemcpy(out.data(), deviceOut, kWords * sizeof(unsigned), cudaMemcpyDeviceToHost),
                  "cudaMemcpy from the device"))
    return 1;
  for (unsigned i = 0; i < kWords; ++i) {
    if (out[i] != expected[i]) {
      tenant::say("FAILED payload word %u is 0x%08x, expected 0x%08x (seed %u)", i, out[i], expected[i],
                  seed);
      return 1;
    }
  }
  tenant::say("payload %zu bytes round trip exact (seed %u)", kWords * sizeof(unsigned), seed);
  if (hold != 0) {
    tenant::say("holding");
    sleep(hold);
  }
  if (!tenant::ok(cudaFree(deviceIn), "cudaFree") || !tenant::ok(cudaFree(deviceOut), "cudaFree")) return 1;
  tenant::say("done");
  return 0;
}
