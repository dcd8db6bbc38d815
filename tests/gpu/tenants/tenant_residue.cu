// tenant_residue: the residue probe of two_tenant_matrix.sh (rows 2G-07, 2G-09): a new client
// must see none of a previous client's memory. It allocates a large share of the device (so that
// its physical memory must overlap what an earlier client held: two shares adding up to more than
// the device cannot be disjoint), scans all of it as it comes from cudaMalloc for the marker
// earlier probes planted, then plants its own marker over all of it and scans again (the probe's
// own check: exactly the planted words must be found).
//
// The marker: every even 64-bit word is kMarker, every odd one the planting probe's nonce, so a
// hit names the client it came from; a full 64-bit match cannot come from chance.
//
// Usage: tenant_residue --nonce N [--fraction F] [--wait-free S] [--hold S] [--free]
//   --fraction F   allocate F of the device's total memory as cudaMemGetInfo shows it (0.5)
//   --wait-free S  first wait up to S seconds for that much to be free (an earlier client's
//                  worker may still be giving its memory back); otherwise take what is free
//   --hold S       after planting, keep planting it again for S seconds ("residue: holding"),
//                  busy on the GPU, so that the script can kill the client mid-run
//   --free         cudaFree the memory before exiting; without it the teardown gives it back
// Output: "residue: total=T free=F, allocating B bytes", "residue: scanned B bytes: M marked
// words, Z non-zero words", "residue: planted nonce N over B bytes; the rescan found W marked
// words (expected W)", "residue: holding", "residue: freed" / "residue: left to the teardown",
// "residue: done". Exit status 0 only if the scan found no marker and the rescan all of them.
#include <algorithm>
#include <vector>

#include "tests/gpu/tenants/tenant_util.cuh"

namespace {

using tenant::say;

constexpr unsigned long long kMarker = 0xA6E05D00C0FFEE5Dull;
constexpr std::size_t kChunkBytes = 1ull << 30;
constexpr std::size_t kGranule = 2ull << 20;
constexpr std::size_t kMargin = 512ull << 20;  // left free for the driver and the worker

// counts[0]: words equal to kMarker; counts[1]: non-zero words; counts[2]: a nonce that followed a marker.
__global__ void scan(const unsigned long long* words, std::size_t count, unsigned long long* counts) {
  unsigned long long marked = 0, nonzero = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const unsigned long long word = words[i];
    if (word != 0) ++nonzero;
    if (word == kMarker) {
      ++marked;
      if (i + 1 < count) atomicCAS(&counts[2], 0ull, words[i + 1]);
    }
  }
  atomicAdd(&counts[0], marked);
  atomicAdd(&counts[1], nonzero);
}

__global__ void plant(unsigned long long* words, std::size_t count, unsigned long long nonce) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    words[i] = i % 2 == 0 ? kMarker : nonce;
}

struct Chunk {
  unsigned long long* words;
  std::size_t bytes;
};

// Scans every chunk; returns false on a CUDA error.
bool scanAll(const std::vector<Chunk>& chunks, unsigned long long* deviceCounts,
             unsigned long long counts[3]) {
  if (!tenant::ok(cudaMemset(deviceCounts, 0, 3 * sizeof(unsigned long long)), "cudaMemset of the counters"))
    return false;
  for (const Chunk& chunk : chunks) scan<<<1024, 256>>>(chunk.words, chunk.bytes / 8, deviceCounts);
  return tenant::ok(cudaGetLastError(), "launch of the scan") &&
         tenant::ok(cudaMemcpy(counts, deviceCounts, 3 * sizeof(unsigned long long), cudaMemcpyDeviceToHost),
                    "cudaMemcpy of the counters");
}

bool plantAll(const std::vector<Chunk>& chunks, unsigned long long nonce) {
  for (const Chunk& chunk : chunks) plant<<<1024, 256>>>(chunk.words, chunk.bytes / 8, nonce);
  return tenant::ok(cudaGetLastError(), "launch of the plant") &&
         tenant::ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

}  // namespace

int main(int argc, char** argv) {
  tenant::gPrefix = "residue";
  unsigned long long nonce = 0;
  double fraction = 0.5, waitFree = 0, hold = 0;
  bool freeAtEnd = false;
  for (int i = 1; i < argc; ++i) {
    const char* option = argv[i];
    if (std::strcmp(option, "--free") == 0) {
      freeAtEnd = true;
    } else if (i + 1 < argc && std::strcmp(option, "--nonce") == 0) {
      nonce = tenant::number(argv[++i]);
    } else if (i + 1 < argc && std::strcmp(option, "--fraction") == 0) {
      fraction = std::atof(argv[++i]);
    } else if (i + 1 < argc && std::strcmp(option, "--wait-free") == 0) {
      waitFree = std::atof(argv[++i]);
    } else if (i + 1 < argc && std::strcmp(option, "--hold") == 0) {
      hold = std::atof(argv[++i]);
    } else {
      nonce = 0;
      break;
    }
  }
  if (nonce == 0 || fraction <= 0 || fraction > 0.95) {
    std::fprintf(stderr,
                 "usage: tenant_residue --nonce N (not 0) [--fraction F (0..0.95)] [--wait-free S] [--hold "
                 "S] [--free]\n");
    return 2;
  }
  std::size_t free = 0, total = 0;
  if (!tenant::ok(cudaMemGetInfo(&free, &total), "cudaMemGetInfo")) return 1;
  const std::size_t want =
      static_cast<std::size_t>(fraction * static_cast<double>(total)) / kGranule * kGranule;
  const double deadline = tenant::monotonicSeconds() + waitFree;
  while (free < want + kMargin && tenant::monotonicSeconds() < deadline) {
    usleep(100 * 1000);
    if (!tenant::ok(cudaMemGetInfo(&free, &total), "cudaMemGetInfo")) return 1;
  }
  const std::size_t size = std::min(want, free > kMargin ? (free - kMargin) / kGranule * kGranule : 0);
  say("total=%zu free=%zu, allocating %zu bytes (%.2f of the total%s)", total, free, size,
      static_cast<double>(size) / static_cast<double>(total),
      size < want ? "; less was free than asked for" : "");
  if (size == 0) {
    say("FAILED nothing to allocate");
    return 1;
  }
  std::vector<Chunk> chunks;
  std::size_t allocated = 0;
  while (allocated < size) {
    const std::size_t bytes = std::min(kChunkBytes, size - allocated);
    void* p = nullptr;
    const cudaError_t error = cudaMalloc(&p, bytes);
    if (error == cudaErrorMemoryAllocation && !chunks.empty()) {
      cudaGetLastError();
      say("allocated %zu of the %zu bytes asked for (then %s)", allocated, size, cudaGetErrorName(error));
      break;
    }
    if (!tenant::ok(error, "cudaMalloc")) return 1;
    chunks.push_back({static_cast<unsigned long long*>(p), bytes});
    allocated += bytes;
  }
  unsigned long long* deviceCounts = nullptr;
  unsigned long long counts[3] = {};
  if (!tenant::ok(cudaMalloc(&deviceCounts, 3 * sizeof(unsigned long long)), "cudaMalloc of the counters") ||
      !scanAll(chunks, deviceCounts, counts))
    return 1;
  say("scanned %zu bytes: %llu marked words, %llu non-zero words", allocated, counts[0], counts[1]);
  if (counts[0] != 0) {
    say("FAILED residue: %llu words of an earlier client's marker (one followed by nonce 0x%llx) in fresh "
        "memory",
        counts[0], counts[2]);
    return 1;
  }
  if (!plantAll(chunks, nonce) || !scanAll(chunks, deviceCounts, counts)) return 1;
  const unsigned long long expected = allocated / 16;  // every even word of every chunk
  say("planted nonce 0x%llx over %zu bytes; the rescan found %llu marked words (expected %llu)", nonce,
      allocated, counts[0], expected);
  if (counts[0] != expected || counts[2] != nonce) {
    say("FAILED the probe does not find what it planted (nonce seen 0x%llx)", counts[2]);
    return 1;
  }
  if (hold > 0) {
    say("holding");
    const double end = tenant::monotonicSeconds() + hold;
    while (tenant::monotonicSeconds() < end)
      if (!plantAll(chunks, nonce)) return 1;
  }
  if (freeAtEnd) {
    for (const Chunk& chunk : chunks)
      if (!tenant::ok(cudaFree(chunk.words), "cudaFree")) return 1;
    say("freed");
  } else {
    say("left to the teardown");
  }
  say("done");
  return 0;
}
