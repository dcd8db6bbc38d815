// tenant_intruder: the second tenant of rows 2G-03 and 2G-05 of two_tenant_matrix.sh, started
// while tenant_owner holds its memory, stream and event, with the values the owner published.
//
// --mode collide (2G-03, handle/VA collision): allocates exactly what the owner allocated, in the
//   same order, so that its pad and buffer lie at the owner's addresses (AgileOS's fixed layout,
//   first fit); fails with status 3 if they do not (no collision could be forced). It fills them
//   with its own tag's patterns and runs 20 work rounds there (checked against the host below); then
//   it passes the owner's stream and event values to the calls that take them, each of which must
//   be refused (cudaErrorInvalidResourceHandle, now or at the next synchronization; a value that is
//   also one of its own handles would resolve to its own, and is said so); finally its own pad,
//   canaries and work area must still be exactly its own.
// --mode foreign (2G-05, completion ownership): allocates one buffer of its own, which must not
//   cover the owner's buffer address; then every copy, memset and free naming the owner's buffer
//   must be refused with cudaErrorInvalidValue (a copy from it must leave the host bytes as they
//   were), every call naming the owner's event or stream with cudaErrorInvalidResourceHandle
//   (cudaEventDestroy and cudaStreamDestroy among them), cudaPointerGetAttributes must say of it
//   what it says of an address nobody allocated, and after each refusal a round trip through its
//   own buffer must still be exact. Last, a kernel stores to the owner's buffer address: in this context
//   nothing is mapped there, so the kernel must fault (cudaErrorIllegalAddress), and the store lands nowhere
//   (the owner checks its canaries after "go").
//
// Usage: tenant_intruder --mode collide|foreign --owner-pad P --owner-buf B --owner-stream S
//                        --owner-event E [--pad BYTES] [--tag N]
// Output: one line per call, "intruder: <call>: <error name>", and a closing "intruder: collide:
// ..." or "intruder: foreign: ..." line. Exit status 0 only if every check held; 3 if no address
// collision could be forced (collide) or the owner's address is ours too (foreign).
#include <functional>
#include <string>
#include <vector>

#include "tests/gpu/tenants/tenant_util.cuh"

namespace {

using tenant::kBufferBytes;
using tenant::kCanaryBytes;
using tenant::kWorkWords;
using tenant::say;

using tenant::kCanaryWords;

struct Owner {
  unsigned long long pad = 0, buf = 0, stream = 0, event = 0;
};

int failures = 0, refusals = 0;

// Runs a call that must be refused with `expected`, now or (for a call sent without waiting) at
// the next synchronization of `sync`; prints the outcome.
void mustRefuse(const char* what, cudaError_t expected, const std::function<cudaError_t()>& call,
                cudaStream_t sync = nullptr) {
  cudaError_t got = call();
  if (got == cudaSuccess) got = cudaStreamSynchronize(sync);
  cudaGetLastError();
  say("%s: %s", what, cudaGetErrorName(got));
  if (got == expected) ++refusals;
  if (got != expected) {
    say("FAILED %s returned %s, expected %s", what, cudaGetErrorName(got), cudaGetErrorName(expected));
    ++failures;
  }
}

__global__ void release(unsigned* target, unsigned value) { *target = value; }

int collide(const Owner& owner, std::size_t padBytes, unsigned tag) {
  unsigned *pad = nullptr, *buffer = nullptr;
  if (!tenant::ok(cudaMalloc(&pad, padBytes), "cudaMalloc of the pad") ||
      !tenant::ok(cudaMalloc(&buffer, kBufferBytes), "cudaMalloc of the buffer"))
    return 1;
  say("own pad=0x%llx buf=0x%llx, the owner's pad=0x%llx buf=0x%llx", tenant::valueOf(pad),
      tenant::valueOf(buffer), owner.pad, owner.buf);
  if (tenant::valueOf(pad) != owner.pad || tenant::valueOf(buffer) != owner.buf) {
    say("FAILED no address collision could be forced: our allocations are not at the owner's addresses");
    return 3;
  }
  const std::size_t padWords = padBytes / sizeof(unsigned);
  std::vector<unsigned> hostPad(padWords), hostBuffer(kBufferBytes / sizeof(unsigned));
  tenant::fillImages(tag, hostPad, hostBuffer);
  cudaStream_t stream = nullptr;
  cudaEvent_t event = nullptr;
  if (!tenant::ok(cudaMemcpy(pad, hostPad.data(), padBytes, cudaMemcpyHostToDevice),
                  "cudaMemcpy of the pad") ||
      !tenant::ok(cudaMemcpy(buffer, hostBuffer.data(), kBufferBytes, cudaMemcpyHostToDevice),
                  "cudaMemcpy of the buffer") ||
      !tenant::ok(cudaStreamCreate(&stream), "cudaStreamCreate") ||
      !tenant::ok(cudaEventCreate(&event), "cudaEventCreate"))
    return 1;
  const bool sameStream = tenant::valueOf(stream) == owner.stream,
             sameEvent = tenant::valueOf(event) == owner.event;
  say("own stream=0x%llx event=0x%llx, the owner's stream=0x%llx event=0x%llx (%s)", tenant::valueOf(stream),
      tenant::valueOf(event), owner.stream, owner.event,
      sameStream || sameEvent ? "a handle value collides" : "no handle value collides");

  constexpr unsigned kRounds = 20;
  unsigned* work = buffer + kCanaryWords;
  for (unsigned r = 0; r < kRounds; ++r) {
    tenant::workRound<<<64, 256, 0, stream>>>(work, kWorkWords);
    if (!tenant::ok(cudaGetLastError(), "launch of a work round") ||
        !tenant::ok(cudaEventRecord(event, stream), "cudaEventRecord") ||
        !tenant::ok(cudaEventSynchronize(event), "cudaEventSynchronize"))
      return 1;
  }

  // The owner's handle values, in every call that takes one. Where a value is also ours, the call
  // resolves to our own object; that is the point of a collision, and it is said rather than checked.
  const auto ownerStream = tenant::fromValue<cudaStream_t>(owner.stream);
  const auto ownerEvent = tenant::fromValue<cudaEvent_t>(owner.event);
  constexpr cudaError_t kBadHandle = cudaErrorInvalidResourceHandle;
  if (sameStream) {
    say("the owner's stream value is also ours: calls with it act on our own stream");
  } else {
    mustRefuse("cudaStreamSynchronize(the owner's stream)", kBadHandle,
               [&] { return cudaStreamSynchronize(ownerStream); });
    mustRefuse("cudaStreamQuery(the owner's stream)", kBadHandle,
               [&] { return cudaStreamQuery(ownerStream); });
    mustRefuse(
        "cudaMemsetAsync(own work area, the owner's stream)", kBadHandle,
        [&] { return cudaMemsetAsync(work, 0xEE, 4096, ownerStream); }, stream);
    mustRefuse(
        "work round launched on the owner's stream", kBadHandle,
        [&] {
          tenant::workRound<<<64, 256, 0, ownerStream>>>(work, kWorkWords);
          return cudaGetLastError();
        },
        stream);
    mustRefuse("cudaEventRecord(own event, the owner's stream)", kBadHandle,
               [&] { return cudaEventRecord(event, ownerStream); });
  }
  if (sameEvent) {
    say("the owner's event value is also ours: calls with it act on our own event");
  } else {
    mustRefuse("cudaEventRecord(the owner's event)", kBadHandle,
               [&] { return cudaEventRecord(ownerEvent, stream); });
    mustRefuse("cudaEventQuery(the owner's event)", kBadHandle, [&] { return cudaEventQuery(ownerEvent); });
    mustRefuse("cudaEventSynchronize(the owner's event)", kBadHandle,
               [&] { return cudaEventSynchronize(ownerEvent); });
    mustRefuse(
        "cudaStreamWaitEvent(own stream, the owner's event)", kBadHandle,
        [&] { return cudaStreamWaitEvent(stream, ownerEvent, 0); }, stream);
  }

  // Our own bytes, at the owner's addresses, are still exactly ours.
  std::vector<unsigned> back(padWords);
  if (!tenant::ok(cudaMemcpy(back.data(), pad, padBytes, cudaMemcpyDeviceToHost), "cudaMemcpy of the pad"))
    return 1;
  for (std::size_t i = 0; i < padWords; ++i) {
    if (back[i] != hostPad[i]) {
      say("FAILED own pad word %zu is 0x%08x, expected 0x%08x", i, back[i], hostPad[i]);
      return 1;
    }
  }
  back.assign(hostBuffer.size(), 0);
  if (!tenant::ok(cudaMemcpy(back.data(), buffer, kBufferBytes, cudaMemcpyDeviceToHost),
                  "cudaMemcpy of the buffer"))
    return 1;
  for (std::size_t i = 0; i < hostBuffer.size(); ++i) {
    unsigned expected = hostBuffer[i];
    if (i >= kCanaryWords && i < kCanaryWords + kWorkWords)
      for (unsigned r = 0; r < kRounds; ++r) expected = tenant::workStep(expected);
    if (back[i] != expected) {
      say("FAILED own buffer word %zu is 0x%08x, expected 0x%08x", i, back[i], expected);
      return 1;
    }
  }
  if (failures != 0) return 1;
  say("collide: the intruder's pad and buffer lie at the owner's addresses; its %u work rounds there exact, "
      "its "
      "canaries and pad exact; %d calls with the owner's handle values refused",
      kRounds, refusals);
  return 0;
}

// A round trip through our own buffer: the worker still serves us after a refusal.
bool roundTrip(unsigned* mine, unsigned round) {
  std::vector<unsigned> out(1024), back(1024, 0);
  for (unsigned i = 0; i < 1024; ++i) out[i] = i * 40503u + round;
  if (cudaMemcpy(mine, out.data(), 4096, cudaMemcpyHostToDevice) != cudaSuccess ||
      cudaMemcpy(back.data(), mine, 4096, cudaMemcpyDeviceToHost) != cudaSuccess || back != out) {
    say("FAILED the round trip through our own buffer after case %u", round);
    return false;
  }
  return true;
}

int foreign(const Owner& owner) {
  unsigned* mine = nullptr;
  if (!tenant::ok(cudaMalloc(&mine, kBufferBytes), "cudaMalloc")) return 1;
  say("own buffer 0x%llx, the owner's buffer 0x%llx", tenant::valueOf(mine), owner.buf);
  if (owner.buf >= tenant::valueOf(mine) && owner.buf < tenant::valueOf(mine) + kBufferBytes) {
    say("FAILED the owner's buffer address lies in our own buffer: not a foreign address");
    return 3;
  }
  auto* theirs = tenant::fromValue<unsigned*>(owner.buf);
  const auto ownerStream = tenant::fromValue<cudaStream_t>(owner.stream);
  const auto ownerEvent = tenant::fromValue<cudaEvent_t>(owner.event);
  std::vector<unsigned char> host(4096, 0x5A);
  unsigned round = 0;
  auto refused = [&](const char* what, cudaError_t expected, const std::function<cudaError_t()>& call) {
    mustRefuse(what, expected, call);
    if (!roundTrip(mine, ++round)) ++failures;
  };
  // round counts the cases so far; each is followed by a round trip through our own buffer.
  constexpr cudaError_t kBadValue = cudaErrorInvalidValue;
  constexpr cudaError_t kBadHandle = cudaErrorInvalidResourceHandle;
  refused("cudaMemcpy(the owner's buffer <- host)", kBadValue,
          [&] { return cudaMemcpy(theirs, host.data(), 4096, cudaMemcpyHostToDevice); });
  refused("cudaMemcpy(host <- the owner's buffer)", kBadValue,
          [&] { return cudaMemcpy(host.data(), theirs, 4096, cudaMemcpyDeviceToHost); });
  for (unsigned char byte : host) {
    if (byte != 0x5A) {
      say("FAILED a refused copy from the owner's buffer changed our host bytes");
      ++failures;
      break;
    }
  }
  refused("cudaMemcpy(the owner's buffer <- own buffer)", kBadValue,
          [&] { return cudaMemcpy(theirs, mine, 4096, cudaMemcpyDeviceToDevice); });
  refused("cudaMemcpy(own buffer <- the owner's buffer)", kBadValue,
          [&] { return cudaMemcpy(mine, theirs, 4096, cudaMemcpyDeviceToDevice); });
  refused("cudaMemset(the owner's buffer)", kBadValue, [&] { return cudaMemset(theirs, 0, 4096); });
  refused("cudaMemsetAsync(the owner's buffer)", kBadValue,
          [&] { return cudaMemsetAsync(theirs, 0, 4096, nullptr); });
  refused("cudaMemcpyAsync(the owner's buffer <- host)", kBadValue,
          [&] { return cudaMemcpyAsync(theirs, host.data(), 4096, cudaMemcpyHostToDevice, nullptr); });
  refused("cudaFree(the owner's buffer)", kBadValue, [&] { return cudaFree(theirs); });
  refused("cudaEventQuery(the owner's event)", kBadHandle, [&] { return cudaEventQuery(ownerEvent); });
  refused("cudaEventSynchronize(the owner's event)", kBadHandle,
          [&] { return cudaEventSynchronize(ownerEvent); });
  refused("cudaEventRecord(the owner's event)", kBadHandle,
          [&] { return cudaEventRecord(ownerEvent, nullptr); });
  refused("cudaStreamWaitEvent(0, the owner's event)", kBadHandle,
          [&] { return cudaStreamWaitEvent(nullptr, ownerEvent, 0); });
  refused("cudaEventDestroy(the owner's event)", kBadHandle, [&] { return cudaEventDestroy(ownerEvent); });
  refused("cudaStreamQuery(the owner's stream)", kBadHandle, [&] { return cudaStreamQuery(ownerStream); });
  refused("cudaStreamSynchronize(the owner's stream)", kBadHandle,
          [&] { return cudaStreamSynchronize(ownerStream); });
  refused("cudaStreamDestroy(the owner's stream)", kBadHandle,
          [&] { return cudaStreamDestroy(ownerStream); });
  // What cudaPointerGetAttributes says of the owner's buffer must be what it says of an address
  // nobody allocated: nothing of the owner's allocation may show.
  cudaPointerAttributes attributes{}, nobodys{};
  const cudaError_t attributesError = cudaPointerGetAttributes(&attributes, theirs);
  cudaGetLastError();
  const cudaError_t nobodysError =
      cudaPointerGetAttributes(&nobodys, tenant::fromValue<void*>(0xF8000000000ull + (900ull << 30)));
  cudaGetLastError();
  say("cudaPointerGetAttributes(the owner's buffer): %s, type %d; of an address nobody allocated: %s, type "
      "%d",
      cudaGetErrorName(attributesError), static_cast<int>(attributes.type), cudaGetErrorName(nobodysError),
      static_cast<int>(nobodys.type));
  if (attributesError != nobodysError || attributes.type != nobodys.type) {
    say("FAILED cudaPointerGetAttributes tells the owner's buffer from an address nobody allocated");
    ++failures;
  }
  if (!roundTrip(mine, round + 1)) ++failures;

  // The GPU-side write (the seed's "release"): nothing of ours is mapped at the owner's address.
  release<<<1, 1>>>(theirs + kCanaryWords, 0xBADC0DEu);
  const cudaError_t launched = cudaGetLastError();
  const cudaError_t synchronized = cudaDeviceSynchronize();
  say("kernel store to the owner's buffer address: launch %s, synchronize %s", cudaGetErrorName(launched),
      cudaGetErrorName(synchronized));
  if (launched == cudaSuccess && synchronized == cudaSuccess) {
    say("FAILED the kernel's store to the owner's address did not fault in our context");
    ++failures;
  }
  if (failures != 0) return 1;
  say("foreign: %d calls naming the owner's buffer, event or stream refused, a round trip through the "
      "intruder's own "
      "buffer exact after each; its kernel store to the owner's address faulted in its own context (%s)",
      refusals, cudaGetErrorName(synchronized != cudaSuccess ? synchronized : launched));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  tenant::gPrefix = "intruder";
  std::string mode;
  Owner owner;
  std::size_t padBytes = 64u << 20;
  unsigned tag = 2;
  bool usage = false;
  for (int i = 1; i < argc && !usage; ++i) {
    const std::string option = argv[i];
    const char* value = i + 1 < argc ? argv[++i] : nullptr;
    if (value == nullptr)
      usage = true;
    else if (option == "--mode")
      mode = value;
    else if (option == "--owner-pad")
      owner.pad = tenant::number(value);
    else if (option == "--owner-buf")
      owner.buf = tenant::number(value);
    else if (option == "--owner-stream")
      owner.stream = tenant::number(value);
    else if (option == "--owner-event")
      owner.event = tenant::number(value);
    else if (option == "--pad")
      padBytes = tenant::number(value) / 4 * 4;
    else if (option == "--tag")
      tag = static_cast<unsigned>(tenant::number(value));
    else
      usage = true;
  }
  if (usage || (mode != "collide" && mode != "foreign") || owner.buf == 0) {
    std::fprintf(stderr,
                 "usage: tenant_intruder --mode collide|foreign --owner-pad P --owner-buf B --owner-stream S "
                 "--owner-event E [--pad BYTES] [--tag N]\n");
    return 2;
  }
  return mode == "collide" ? collide(owner, padBytes, tag) : foreign(owner);
}
