// tenant_owner: the tenant that is attacked in rows 2G-03 and 2G-05 of two_tenant_matrix.sh. It
// allocates a pad and then a buffer (a canary MiB, a 2 MiB work area, a canary MiB), fills them
// with its own tag's patterns, makes a stream and an event, publishes their values, and then keeps
// working on the buffer (a kernel round on its stream, recorded on its event, every 100 ms; the
// canaries read back every 5th round) until "go" arrives on stdin, which the script sends once the
// intruder (tenant_intruder) is done. Then it checks everything against the host's expectation:
// the whole pad, both canaries, the work area after exactly the rounds it ran, and that its stream
// and event still work (the intruder tried to use and destroy them by value).
//
// Usage: tenant_owner [--tag N] [--pad BYTES] [--hold SECONDS]
//   --tag N      this tenant's patterns (default 1)
//   --pad BYTES  the first allocation (default 64 MiB), so that the buffer is the second one
//   --hold S     wait at most S seconds for "go" (default 60)
// Output: "owner: ready pad=0x.. buf=0x.. stream=0x.. event=0x..", "owner: go after R rounds"
// (or "owner: no go within S s after R rounds"), "owner: intact after R rounds: ...". Exit status
// 0 only if everything it owns was intact and its handles still worked.
#include <vector>

#include "tests/gpu/tenants/tenant_util.cuh"

namespace {

using tenant::kBufferBytes;
using tenant::kCanaryBytes;
using tenant::kWorkWords;
using tenant::say;

using tenant::kCanaryWords;

// Reads the two canaries back; says which word differs first.
bool canariesIntact(const unsigned* buffer, unsigned tag) {
  std::vector<unsigned> back(kCanaryWords);
  const unsigned* canaries[2] = {buffer, buffer + (kBufferBytes - kCanaryBytes) / sizeof(unsigned)};
  for (int which = 0; which < 2; ++which) {
    if (!tenant::ok(cudaMemcpy(back.data(), canaries[which], kCanaryBytes, cudaMemcpyDeviceToHost),
                    "cudaMemcpy of a canary"))
      return false;
    for (std::size_t i = 0; i < kCanaryWords; ++i) {
      if (back[i] != tenant::canaryWord(tag, i + which * kCanaryWords)) {
        say("FAILED canary %d word %zu is 0x%08x, expected 0x%08x", which, i, back[i],
            tenant::canaryWord(tag, i + which * kCanaryWords));
        return false;
      }
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  tenant::gPrefix = "owner";
  unsigned tag = 1;
  std::size_t padBytes = 64u << 20;
  double hold = 60;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--tag") == 0 && i + 1 < argc) {
      tag = static_cast<unsigned>(tenant::number(argv[++i]));
    } else if (std::strcmp(argv[i], "--pad") == 0 && i + 1 < argc) {
      padBytes = tenant::number(argv[++i]) / 4 * 4;
    } else if (std::strcmp(argv[i], "--hold") == 0 && i + 1 < argc) {
      hold = static_cast<double>(tenant::number(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: tenant_owner [--tag N] [--pad BYTES] [--hold SECONDS]\n");
      return 2;
    }
  }
  const std::size_t padWords = padBytes / sizeof(unsigned);
  std::vector<unsigned> pad(padWords), buffer(kBufferBytes / sizeof(unsigned));
  tenant::fillImages(tag, pad, buffer);

  unsigned *devicePad = nullptr, *deviceBuffer = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t event = nullptr;
  if (!tenant::ok(cudaMalloc(&devicePad, padBytes), "cudaMalloc of the pad") ||
      !tenant::ok(cudaMalloc(&deviceBuffer, kBufferBytes), "cudaMalloc of the buffer") ||
      !tenant::ok(cudaMemcpy(devicePad, pad.data(), padBytes, cudaMemcpyHostToDevice),
                  "cudaMemcpy of the pad") ||
      !tenant::ok(cudaMemcpy(deviceBuffer, buffer.data(), kBufferBytes, cudaMemcpyHostToDevice),
                  "cudaMemcpy of the buffer") ||
      !tenant::ok(cudaStreamCreate(&stream), "cudaStreamCreate") ||
      !tenant::ok(cudaEventCreate(&event), "cudaEventCreate") ||
      !tenant::ok(cudaEventRecord(event, stream), "cudaEventRecord") ||
      !tenant::ok(cudaEventSynchronize(event), "cudaEventSynchronize"))
    return 1;
  say("ready pad=0x%llx buf=0x%llx stream=0x%llx event=0x%llx", tenant::valueOf(devicePad),
      tenant::valueOf(deviceBuffer), tenant::valueOf(stream), tenant::valueOf(event));

  unsigned* work = deviceBuffer + kCanaryWords;
  unsigned rounds = 0;
  bool healthy = true;
  const bool go = tenant::waitForGo(hold, [&] {
    tenant::workRound<<<64, 256, 0, stream>>>(work, kWorkWords);
    healthy = tenant::ok(cudaGetLastError(), "launch of a work round") &&
              tenant::ok(cudaEventRecord(event, stream), "cudaEventRecord") &&
              tenant::ok(cudaEventSynchronize(event), "cudaEventSynchronize");
    if (healthy) ++rounds;
    if (healthy && rounds % 5 == 0) healthy = canariesIntact(deviceBuffer, tag);
    return healthy;
  });
  if (!healthy) return 1;
  if (go) {
    say("go after %u rounds", rounds);
  } else {
    say("no go within %.0f s after %u rounds", hold, rounds);
  }

  std::vector<unsigned> back(padWords);
  if (!tenant::ok(cudaMemcpy(back.data(), devicePad, padBytes, cudaMemcpyDeviceToHost),
                  "cudaMemcpy of the pad"))
    return 1;
  for (std::size_t i = 0; i < padWords; ++i) {
    if (back[i] != pad[i]) {
      say("FAILED pad word %zu is 0x%08x, expected 0x%08x", i, back[i], pad[i]);
      return 1;
    }
  }
  if (!canariesIntact(deviceBuffer, tag)) return 1;
  back.assign(kWorkWords, 0);
  if (!tenant::ok(cudaMemcpy(back.data(), work, kWorkWords * sizeof(unsigned), cudaMemcpyDeviceToHost),
                  "cudaMemcpy of the work area"))
    return 1;
  for (std::size_t i = 0; i < kWorkWords; ++i) {
    unsigned expected = tenant::workStart(tag, i);
    for (unsigned r = 0; r < rounds; ++r) expected = tenant::workStep(expected);
    if (back[i] != expected) {
      say("FAILED work word %zu is 0x%08x after %u rounds, expected 0x%08x", i, back[i], rounds, expected);
      return 1;
    }
  }
  // The intruder tried cudaEventDestroy and cudaStreamDestroy with these values: they must still work.
  if (!tenant::ok(cudaEventRecord(event, stream), "cudaEventRecord at the end") ||
      !tenant::ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize at the end") ||
      !tenant::ok(cudaEventQuery(event), "cudaEventQuery at the end") ||
      !tenant::ok(cudaEventDestroy(event), "cudaEventDestroy") ||
      !tenant::ok(cudaStreamDestroy(stream), "cudaStreamDestroy") ||
      !tenant::ok(cudaFree(deviceBuffer), "cudaFree") || !tenant::ok(cudaFree(devicePad), "cudaFree"))
    return 1;
  say("intact after %u rounds: pad (%zu bytes), both canaries and the work area exact; its stream and event "
      "still work",
      rounds, padBytes);
  return 0;
}
