// The storage example module: GPU-initiated reads of a file the client cannot open
// (tests/gpu/modules). Run under AgileOS with AGILEOS_MODULES=storage, inside the sandbox.
//
//   module_storage --make-file PATH BYTES   writes the test file (outside the sandbox, no GPU)
//   module_storage NAME BYTES               every check below on the file NAME (relative to the
//                                           storage service's root), of BYTES bytes
//   module_storage --hold NAME BYTES SECONDS  keeps reads in flight for about SECONDS (the suite
//                                           kills it mid-I/O), printing "reading" on stderr first
//   module_storage --after-kill NAME BYTES  waits until this client's lease is the only one,
//                                           then reads the file again
#include <dlfcn.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "agileos/storage.h"
#include "client/include/agileos/modules.h"
#include "tests/gpu/modules/storage_pattern.h"
#include "tests/gpu/programs/check.cuh"

namespace {

using ControlFn = decltype(&agileosModuleControl);
ControlFn control = nullptr;

// Block b reads chunks b, b + gridDim.x, ... of `chunk` bytes from `offset0` through slot b and
// copies them to out; results[chunk index] gets each read's result.
__global__ void readChunks(unsigned file, unsigned long long offset0, unsigned long long total,
                           unsigned chunk, unsigned char* out, long long* results) {
  __shared__ long long got;
  const unsigned slot = blockIdx.x;
  const unsigned long long chunks = (total + chunk - 1) / chunk;
  for (unsigned long long c = blockIdx.x; c < chunks; c += gridDim.x) {
    const unsigned long long at = c * chunk;
    const unsigned bytes = static_cast<unsigned>(total - at < chunk ? total - at : chunk);
    if (threadIdx.x == 0) {
      const int submitted = agileos_storage_read_async(slot, file, offset0 + at, bytes);
      got = submitted != 0 ? submitted : agileos_storage_wait(slot);
      results[c] = got;
    }
    __syncthreads();
    if (got > 0)
      agileos_storage_copy(slot, out + at, static_cast<unsigned long long>(got), threadIdx.x, blockDim.x);
    __syncthreads();
  }
}

// Calls the module must refuse or answer with an error.
__global__ void refusals(unsigned file, unsigned long long fileBytes, long long* results,
                         unsigned char* scratch) {
  if (threadIdx.x != 0) return;
  results[0] = agileos_storage_read_async(AGILEOS_STORAGE_SLOTS, file, 0, 4096);        // slot out of range
  results[1] = agileos_storage_read_async(0, file, 0, AGILEOS_STORAGE_SLOT_BYTES + 1);  // too large
  results[2] = agileos_storage_read_async(0, file + 1000, 0, 4096);  // not this client's file
  results[3] = results[2] == 0 ? agileos_storage_wait(0) : results[2];
  results[4] = agileos_storage_read_async(1, file, fileBytes + 4096, 4096);  // past the end: 0 bytes
  results[5] = results[4] == 0 ? agileos_storage_wait(1) : results[4];
  results[6] = agileos_storage_read_async(2, file, ~0ull - 100, 4096);  // offset + bytes overflows
  results[7] = results[6] == 0 ? agileos_storage_wait(2) : results[6];
  results[8] =
      agileos_storage_copy(0, reinterpret_cast<void*>(0xF1000000000ull), 4096, 0, 1);    // protected dst
  results[9] = agileos_storage_copy(0, scratch, AGILEOS_STORAGE_SLOT_BYTES + 16, 0, 1);  // beyond the slot
}

// Thread 0 reads `chunks` chunks of `chunk` bytes from `fileOffset` straight into `target` at
// `targetOffset`, one after the other on slot 0; results[i] gets each read's result.
__global__ void readInto(unsigned file, unsigned long long fileOffset, unsigned chunk, unsigned chunks,
                         unsigned target, unsigned long long targetOffset, long long* results) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  for (unsigned i = 0; i < chunks; ++i) {
    const int submitted =
        agileos_storage_read_into(0, file, fileOffset + i * static_cast<unsigned long long>(chunk), chunk,
                                  target, targetOffset + i * static_cast<unsigned long long>(chunk));
    results[i] = submitted != 0 ? submitted : agileos_storage_wait(0);
  }
}

unsigned openFile(const std::string& name, unsigned long long* size) {
  agileos_storage_opened opened{};
  std::size_t bytes = 0;
  int status = 0;
  CHECK_CUDA(control("storage", AGILEOS_STORAGE_CMD_OPEN, name.data(), name.size(), &opened, sizeof opened,
                     &bytes, &status));
  *size = opened.file_bytes;
  return opened.file;
}

agileos_storage_stats stats() {
  agileos_storage_stats s{};
  CHECK_CUDA(control("storage", AGILEOS_STORAGE_CMD_STATS, nullptr, 0, &s, sizeof s, nullptr, nullptr));
  return s;
}

// Reads [offset, offset + total) in chunks and compares with the pattern; returns mismatches.
unsigned long long readAndCompare(unsigned file, unsigned long long offset, unsigned long long total,
                                  unsigned chunk, unsigned blocks) {
  unsigned char* out = nullptr;
  long long* results = nullptr;
  const unsigned long long chunks = (total + chunk - 1) / chunk;
  CHECK_CUDA(cudaMalloc(&out, total));
  CHECK_CUDA(cudaMalloc(&results, chunks * sizeof(long long)));
  CHECK_CUDA(cudaMemset(out, 0, total));
  readChunks<<<blocks, 256>>>(file, offset, total, chunk, out, results);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<unsigned char> host(total);
  std::vector<long long> got(chunks);
  CHECK_CUDA(cudaMemcpy(host.data(), out, total, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(got.data(), results, chunks * sizeof(long long), cudaMemcpyDeviceToHost));
  unsigned long long wrong = 0;
  for (unsigned long long c = 0; c < chunks; ++c) {
    const unsigned long long expected = total - c * chunk < chunk ? total - c * chunk : chunk;
    if (got[c] != static_cast<long long>(expected)) ++wrong;
  }
  for (unsigned long long i = 0; i < total; ++i) wrong += host[i] != storagePatternByte(offset + i);
  CHECK_CUDA(cudaFree(out));
  CHECK_CUDA(cudaFree(results));
  return wrong;
}

cudaError_t registerTarget(void* address, unsigned long long bytes, unsigned* target) {
  const agileos_storage_register range{reinterpret_cast<std::uint64_t>(address), bytes};
  int status = 0;
  return control("storage", AGILEOS_STORAGE_CMD_REGISTER, &range, sizeof range, target, sizeof *target,
                 nullptr, &status);
}

// Reads straight into registered allocations (DMA): only an exact live allocation can be
// registered; the service writes only inside the asked range; a freed or unregistered target is
// refused afterwards.
int checkDirectReads(unsigned file) {
  constexpr unsigned long long kLarge = 4ull << 20, kSmall = 96 * 1024;
  unsigned char* large = nullptr;
  unsigned char* small = nullptr;
  long long* results = nullptr;
  CHECK_CUDA(cudaMalloc(&large, kLarge));
  CHECK_CUDA(cudaMalloc(&small, kSmall));
  CHECK_CUDA(cudaMalloc(&results, 64 * sizeof(long long)));
  CHECK_CUDA(cudaMemset(large, 0xEE, kLarge));
  CHECK_CUDA(cudaMemset(small, 0xEE, kSmall));

  unsigned target = 0;
  const cudaError_t inside = registerTarget(large + 256, kLarge - 256, &target);
  const cudaError_t shorter = registerTarget(large, kLarge - 1, &target);
  const cudaError_t longer = registerTarget(small, kSmall + 4096, &target);
  const cudaError_t wild = registerTarget(reinterpret_cast<void*>(0xF1000000000ull), 4096, &target);
  std::printf("register refusals: interior %s, shorter %s, longer %s, protected %s\n",
              cudaGetErrorName(inside), cudaGetErrorName(shorter), cudaGetErrorName(longer),
              cudaGetErrorName(wild));
  EXPECT_TRUE(inside != cudaSuccess && shorter != cudaSuccess && longer != cudaSuccess && wild != cudaSuccess,
              "only an exact live allocation may be registered\n");

  unsigned largeTarget = 0, smallTarget = 0;
  CHECK_CUDA(registerTarget(large, kLarge, &largeTarget));
  CHECK_CUDA(registerTarget(small, kSmall, &smallTarget));

  // 16 chunks of 64 KiB into the large buffer at 1 MiB + 4 KiB; 1 chunk of 64 KiB into the small one at 8
  // KiB.
  readInto<<<1, 32>>>(file, 12345, 65536, 16, largeTarget, (1u << 20) + 4096, results);
  readInto<<<1, 32>>>(file, 777, 65536, 1, smallTarget, 8192, results + 16);
  CHECK_CUDA(cudaDeviceSynchronize());
  long long r[17];
  CHECK_CUDA(cudaMemcpy(r, results, sizeof r, cudaMemcpyDeviceToHost));
  int completed = 0;
  for (long long v : r) completed += v == 65536;
  std::vector<unsigned char> hostLarge(kLarge), hostSmall(kSmall);
  CHECK_CUDA(cudaMemcpy(hostLarge.data(), large, kLarge, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(hostSmall.data(), small, kSmall, cudaMemcpyDeviceToHost));
  unsigned long long wrong = 0;
  for (unsigned long long i = 0; i < kLarge; ++i) {
    const bool written = i >= (1u << 20) + 4096 && i < (1u << 20) + 4096 + 16 * 65536ull;
    const unsigned char expected = written ? storagePatternByte(12345 + i - ((1u << 20) + 4096)) : 0xEE;
    wrong += hostLarge[i] != expected;
  }
  for (unsigned long long i = 0; i < kSmall; ++i) {
    const bool written = i >= 8192 && i < 8192 + 65536;
    wrong += hostSmall[i] != (written ? storagePatternByte(777 + i - 8192) : 0xEE);
  }
  std::printf("direct reads: %d/17 complete, %llu bytes wrong (inside and around the ranges)\n", completed,
              wrong);
  EXPECT_TRUE(completed == 17 && wrong == 0, "direct reads land exactly in their range\n");

  // Out of the registered range: refused by the service, nothing written.
  readInto<<<1, 32>>>(file, 0, 65536, 1, smallTarget, kSmall - 4096, results);
  CHECK_CUDA(cudaDeviceSynchronize());
  long long beyond = 0;
  CHECK_CUDA(cudaMemcpy(&beyond, results, sizeof beyond, cudaMemcpyDeviceToHost));

  // Freed: the registration ends before the memory does; unregistered: likewise.
  CHECK_CUDA(cudaFree(small));
  readInto<<<1, 32>>>(file, 0, 4096, 1, smallTarget, 0, results);
  CHECK_CUDA(control("storage", AGILEOS_STORAGE_CMD_UNREGISTER, &largeTarget, sizeof largeTarget, nullptr, 0,
                     nullptr, nullptr));
  readInto<<<1, 32>>>(file, 0, 4096, 1, largeTarget, 0, results + 1);
  CHECK_CUDA(cudaDeviceSynchronize());
  long long after[2];
  CHECK_CUDA(cudaMemcpy(after, results, sizeof after, cudaMemcpyDeviceToHost));
  std::printf("direct read refusals: beyond the range %lld, after cudaFree %lld, after unregister %lld\n",
              beyond, after[0], after[1]);
  EXPECT_TRUE(beyond < 0 && after[0] < 0 && after[1] < 0, "refused\n");
  CHECK_CUDA(cudaFree(large));
  CHECK_CUDA(cudaFree(results));
  return 0;
}

int runChecks(const std::string& name, unsigned long long expectedBytes) {
  unsigned long long size = 0;
  const unsigned file = openFile(name, &size);
  std::printf("open %s: %llu bytes\n", name.c_str(), size);
  EXPECT_TRUE(size == expectedBytes, "size %llu\n", size);

  struct Case {
    unsigned long long offset, total;
    unsigned chunk, blocks;
  } cases[] = {{0, 8ull << 20, 4096, 32}, {0, 16ull << 20, 65536, 32},  {0, size, 1u << 20, 32},
               {1234, 5000, 5000, 1},     {size - 3000, 3000, 4096, 1}, {4096 * 7 + 5, 300000, 65536, 4}};
  for (const Case& c : cases) {
    const unsigned long long wrong = readAndCompare(file, c.offset, c.total, c.chunk, c.blocks);
    std::printf("read offset %llu, %llu bytes in %u-byte chunks on %u slots: %llu mismatches\n", c.offset,
                c.total, c.chunk, c.blocks, wrong);
    EXPECT_TRUE(wrong == 0, "data read through the module must equal the file\n");
  }

  long long* results = nullptr;
  unsigned char* scratch = nullptr;
  CHECK_CUDA(cudaMalloc(&results, 10 * sizeof(long long)));
  CHECK_CUDA(cudaMalloc(&scratch, 4096));
  refusals<<<1, 32>>>(file, size, results, scratch);
  CHECK_CUDA(cudaDeviceSynchronize());
  long long r[10];
  CHECK_CUDA(cudaMemcpy(r, results, sizeof r, cudaMemcpyDeviceToHost));
  std::printf(
      "refusals: slot %lld, size %lld, foreign file %lld, past end %lld, overflow %lld, protected dst %lld, "
      "beyond slot %lld\n",
      r[0], r[1], r[3], r[5], r[7], r[8], r[9]);
  EXPECT_TRUE(r[0] == AGILEOS_STORAGE_EINVAL && r[1] == AGILEOS_STORAGE_EINVAL && r[3] < 0 && r[5] == 0 &&
                  r[7] < 0 && r[8] == AGILEOS_STORAGE_EFAULT && r[9] == AGILEOS_STORAGE_EINVAL,
              "refused\n");

  // Opening outside the service's root, or what is not a regular file, is refused.
  const char* outside[] = {"../etc/passwd", "/etc/passwd", "no-such-file", ".", "a/../../x"};
  for (const char* path : outside) {
    agileos_storage_opened opened{};
    int status = 0;
    const cudaError_t e = control("storage", AGILEOS_STORAGE_CMD_OPEN, path, std::strlen(path), &opened,
                                  sizeof opened, nullptr, &status);
    std::printf("open %s -> %s\n", path, cudaGetErrorName(e));
    EXPECT_TRUE(e != cudaSuccess, "must be refused\n");
  }
  if (checkDirectReads(file) != 0) return 1;
  CHECK_CUDA(control("storage", AGILEOS_STORAGE_CMD_CLOSE, &file, sizeof file, nullptr, 0, nullptr, nullptr));
  const agileos_storage_stats s = stats();
  std::printf("stats: this client's lease active (%s)\n", s.active_leases >= 1 ? "yes" : "no");
  std::fprintf(stderr, "service stats: active %llu served %llu reads %llu revoked %llu\n",
               (unsigned long long)s.active_leases, (unsigned long long)s.leases_served,
               (unsigned long long)s.reads_completed, (unsigned long long)s.leases_revoked);
  EXPECT_TRUE(s.active_leases >= 1 && s.reads_completed > 0, "counts\n");
  std::printf("module_storage: OK\n");
  return 0;
}

int runHold(const std::string& name, int seconds) {
  unsigned long long size = 0;
  const unsigned file = openFile(name, &size);
  unsigned char* out = nullptr;
  long long* results = nullptr;
  const unsigned long long total = size < (64ull << 20) ? size : (64ull << 20);
  CHECK_CUDA(cudaMalloc(&out, total));
  CHECK_CUDA(cudaMalloc(&results, (total / 4096 + 1) * sizeof(long long)));
  std::fprintf(stderr, "reading\n");
  const auto start = time(nullptr);
  while (time(nullptr) - start < seconds) {
    readChunks<<<32, 256>>>(file, 0, total, 4096, out, results);  // queued back to back
    CHECK_CUDA(cudaDeviceSynchronize());
  }
  std::printf("module_storage --hold: not killed\n");
  return 1;
}

int runAfterKill(const std::string& name, unsigned long long expectedBytes) {
  // The killed client's lease ends once its worker has torn its session down.
  agileos_storage_stats s{};
  for (int i = 0; i < 300; ++i) {
    s = stats();
    if (s.active_leases == 1) break;
    usleep(100 * 1000);
  }
  std::fprintf(stderr, "service stats: active %llu served %llu reads %llu revoked %llu\n",
               (unsigned long long)s.active_leases, (unsigned long long)s.leases_served,
               (unsigned long long)s.reads_completed, (unsigned long long)s.leases_revoked);
  std::printf("after the kill: only this client's lease is active (%s)\n",
              s.active_leases == 1 ? "yes" : "no");
  EXPECT_TRUE(s.active_leases == 1, "the killed client's lease must be revoked\n");
  unsigned long long size = 0;
  const unsigned file = openFile(name, &size);
  EXPECT_TRUE(size == expectedBytes, "size\n");
  const unsigned long long wrong = readAndCompare(file, 0, 8ull << 20, 65536, 32);
  std::printf("the service still serves: %llu mismatches\n", wrong);
  EXPECT_TRUE(wrong == 0, "reads after the kill\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "--make-file") == 0) {
    return writeStoragePattern(argv[2], std::strtoull(argv[3], nullptr, 10)) ? 0 : 1;
  }
  control = reinterpret_cast<ControlFn>(dlsym(RTLD_DEFAULT, "agileosModuleControl"));
  EXPECT_TRUE(control != nullptr, "run under AgileOS with AGILEOS_MODULES=storage\n");
  if (argc == 5 && std::strcmp(argv[1], "--hold") == 0) return runHold(argv[2], std::atoi(argv[4]));
  if (argc == 4 && std::strcmp(argv[1], "--after-kill") == 0) {
    return runAfterKill(argv[2], std::strtoull(argv[3], nullptr, 10));
  }
  if (argc == 3) return runChecks(argv[1], std::strtoull(argv[2], nullptr, 10));
  std::fprintf(stderr, "usage: see the comment at the top of module_storage.cu\n");
  return 2;
}
