// tenant_progress: a tenant that measures its own progress, or one that floods its worker with
// calls (two_tenant_matrix.sh, rows 2G-04, 2G-06 and 2G-07).
//
// --measure S: for S seconds, round trips one after the other: 64 KiB to the device, a kernel
//   (out = in * 3 + iteration), 64 KiB back, every word compared with the host's result. It
//   reports, per window of 250 ms, the window's start (wall clock, so that the script can line it
//   up with what another tenant did meanwhile), how many round trips completed in it and the
//   longest one. A canary MiB it never touches after filling is checked at the end.
// --hammer S: for S seconds, batches of 256 one-thread kernels that each add 1 to a counter,
//   spread over 4 streams, with a cudaStreamQuery and a 4 KiB cudaMemsetAsync per stream between
//   them, all sent without waiting; one cudaDeviceSynchronize per batch. At the end the counter
//   must equal the number of kernels launched.
//
// Usage: tenant_progress --measure SECONDS | --hammer SECONDS
// Output (measure): "progress: measuring", then "progress: window START SECONDS ROUND_TRIPS
// LONGEST_MS" per window, then "progress: done: N round trips in W windows, every result exact,
// canary intact; fewest in a window K, longest M ms". (hammer): "hammer: started EPOCH",
// "hammer: stopped EPOCH", "hammer: done: N kernels and M other calls, counter exact".
// Exit status 0 only if every result was exact.
#include <vector>

#include "tests/gpu/tenants/tenant_util.cuh"

namespace {

using tenant::say;

constexpr unsigned kWords = 16384;  // 64 KiB
constexpr double kWindowSeconds = 0.25;

__global__ void scale(const unsigned* in, unsigned* out, unsigned n, unsigned iteration) {
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = in[i] * 3u + iteration;
}

__global__ void bump(unsigned long long* counter) {
  if (threadIdx.x == 0) atomicAdd(counter, 1ull);
}

int measure(double seconds) {
  constexpr std::size_t kCanaryWords = (1u << 20) / sizeof(unsigned);
  std::vector<unsigned> in(kWords), out(kWords), canary(kCanaryWords);
  for (std::size_t i = 0; i < kCanaryWords; ++i) canary[i] = static_cast<unsigned>(i) * 2246822519u ^ 0x7E57u;
  unsigned *deviceIn = nullptr, *deviceOut = nullptr, *deviceCanary = nullptr;
  if (!tenant::ok(cudaMalloc(&deviceIn, kWords * sizeof(unsigned)), "cudaMalloc") ||
      !tenant::ok(cudaMalloc(&deviceOut, kWords * sizeof(unsigned)), "cudaMalloc") ||
      !tenant::ok(cudaMalloc(&deviceCanary, kCanaryWords * sizeof(unsigned)), "cudaMalloc") ||
      !tenant::ok(
          cudaMemcpy(deviceCanary, canary.data(), kCanaryWords * sizeof(unsigned), cudaMemcpyHostToDevice),
          "cudaMemcpy of the canary"))
    return 1;
  say("measuring");
  const double start = tenant::monotonicSeconds();
  double windowStart = start, windowEpoch = tenant::epochSeconds(), windowLongest = 0, longest = 0;
  unsigned long long iterations = 0, windowIterations = 0, fewest = ~0ull, windows = 0;
  auto closeWindow = [&](double now) {
    say("window %.3f %.3f %llu %.1f", windowEpoch, now - windowStart, windowIterations, windowLongest * 1e3);
    ++windows;
    if (windowIterations < fewest) fewest = windowIterations;
    windowStart = now;
    windowEpoch = tenant::epochSeconds();
    windowIterations = 0;
    windowLongest = 0;
  };
  for (unsigned iteration = 0;; ++iteration) {
    const double began = tenant::monotonicSeconds();
    if (began - start >= seconds) break;
    for (unsigned i = 0; i < kWords; ++i) in[i] = i * 2654435761u + iteration;
    if (!tenant::ok(cudaMemcpy(deviceIn, in.data(), kWords * sizeof(unsigned), cudaMemcpyHostToDevice),
                    "cudaMemcpy to the device"))
      return 1;
    scale<<<16, 256>>>(deviceIn, deviceOut, kWords, iteration);
    if (!tenant::ok(cudaGetLastError(), "launch") ||
        !tenant::ok(cudaMemcpy(out.data(), deviceOut, kWords * sizeof(unsigned), cudaMemcpyDeviceToHost),
                    "cudaMemcpy from the device"))
      return 1;
    for (unsigned i = 0; i < kWords; ++i) {
      if (out[i] != in[i] * 3u + iteration) {
        say("FAILED round trip %u: word %u is 0x%08x, expected 0x%08x", iteration, i, out[i],
            in[i] * 3u + iteration);
        return 1;
      }
    }
    const double now = tenant::monotonicSeconds();
    ++iterations;
    ++windowIterations;
    if (now - began > windowLongest) windowLongest = now - began;
    if (now - began > longest) longest = now - began;
    while (now - windowStart >= kWindowSeconds) closeWindow(now);
  }
  if (windowIterations != 0) closeWindow(tenant::monotonicSeconds());
  std::vector<unsigned> back(kCanaryWords);
  if (!tenant::ok(
          cudaMemcpy(back.data(), deviceCanary, kCanaryWords * sizeof(unsigned), cudaMemcpyDeviceToHost),
          "cudaMemcpy of the canary"))
    return 1;
  if (back != canary) {
    say("FAILED the canary MiB changed");
    return 1;
  }
  say("done: %llu round trips in %llu windows, every result exact, canary intact; fewest in a window %llu, "
      "longest "
      "%.1f ms",
      iterations, windows, windows == 0 ? 0 : fewest, longest * 1e3);
  return iterations != 0 ? 0 : 1;
}

int hammer(double seconds) {
  constexpr int kStreams = 4;
  constexpr unsigned kBatch = 256;
  unsigned long long* counter = nullptr;
  unsigned char* scratch = nullptr;
  cudaStream_t streams[kStreams] = {};
  if (!tenant::ok(cudaMalloc(&counter, sizeof *counter), "cudaMalloc") ||
      !tenant::ok(cudaMalloc(&scratch, 4096 * kStreams), "cudaMalloc") ||
      !tenant::ok(cudaMemset(counter, 0, sizeof *counter), "cudaMemset"))
    return 1;
  for (cudaStream_t& stream : streams)
    if (!tenant::ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags"))
      return 1;
  say("started %.3f", tenant::epochSeconds());
  const double start = tenant::monotonicSeconds();
  unsigned long long launched = 0, other = 0;
  while (tenant::monotonicSeconds() - start < seconds) {
    for (unsigned k = 0; k < kBatch; ++k) {
      bump<<<1, 32, 0, streams[k % kStreams]>>>(counter);
      ++launched;
      if (k % 64 == 63) {
        for (int s = 0; s < kStreams; ++s) {
          const cudaError_t query = cudaStreamQuery(streams[s]);
          if (query != cudaSuccess && query != cudaErrorNotReady) {
            tenant::ok(query, "cudaStreamQuery");
            return 1;
          }
          if (!tenant::ok(cudaMemsetAsync(scratch + 4096 * s, k & 0xFF, 4096, streams[s]), "cudaMemsetAsync"))
            return 1;
          other += 2;
        }
      }
    }
    if (!tenant::ok(cudaGetLastError(), "launch") ||
        !tenant::ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize"))
      return 1;
    ++other;
  }
  say("stopped %.3f", tenant::epochSeconds());
  unsigned long long count = 0;
  if (!tenant::ok(cudaMemcpy(&count, counter, sizeof count, cudaMemcpyDeviceToHost),
                  "cudaMemcpy of the counter"))
    return 1;
  if (count != launched) {
    say("FAILED the counter is %llu, expected %llu (one per kernel launched)", count, launched);
    return 1;
  }
  say("done: %llu kernels and %llu other calls, counter exact", launched, other);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  tenant::gPrefix = "progress";
  if (argc == 3 && std::strcmp(argv[1], "--measure") == 0) return measure(std::atof(argv[2]));
  if (argc == 3 && std::strcmp(argv[1], "--hammer") == 0) {
    tenant::gPrefix = "hammer";
    return hammer(std::atof(argv[2]));
  }
  std::fprintf(stderr, "usage: tenant_progress --measure SECONDS | --hammer SECONDS\n");
  return 2;
}
