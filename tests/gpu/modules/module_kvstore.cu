// The kvstore example module through its device functions and host control (tests/gpu/modules).
//
//   module_kvstore                  under AgileOS with AGILEOS_MODULES=kvstore: every check below
//   module_kvstore --expect-absent  anywhere the module is not linked (natively, or a client not
//                                   admitted with it): every device function returns
//                                   AGILEOS_MODULE_ENOSYS and there is no module to control
// Prints deterministic results on stdout; exit status 0 only if every check passed.
#include <dlfcn.h>

#include <cstring>
#include <vector>

#include "agileos/kvstore.h"
#include "client/include/agileos/modules.h"
#include "tests/gpu/programs/check.cuh"

namespace {

constexpr unsigned kKeys = 4096;
constexpr unsigned long long kProtectedProbe = 0xF1000000000ull;  // the protected module range

using ControlFn = decltype(&agileosModuleControl);

__global__ void putAll(int* results) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < kKeys) results[i] = agileos_kvstore_put(i * 7919ull, i * 3ull + 1);
}

__global__ void getAll(unsigned long long* values, int* results) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < kKeys) results[i] = agileos_kvstore_get(i * 7919ull, &values[i]);
}

// Every thread adds 1 to one counter key; the previous values must be a permutation of 0..n-1.
__global__ void addMany(unsigned long long* previous, int* results) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < kKeys) results[i] = agileos_kvstore_add(42ull, 1ull, &previous[i]);
}

__global__ void removeEven(int* results) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < kKeys && i % 2 == 0) results[i] = agileos_kvstore_remove(i * 7919ull);
}

// Results of calls the module must refuse: a destination in protected memory, a null one, a
// key out of range, a missing key.
__global__ void refusals(int* results) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  results[0] = agileos_kvstore_get(1ull, reinterpret_cast<unsigned long long*>(kProtectedProbe));
  results[1] = agileos_kvstore_get(1ull, nullptr);
  results[2] = agileos_kvstore_put(0xFFFFFFFFFFFFFFFFull, 1ull);
  results[3] = agileos_kvstore_get(123456789ull, reinterpret_cast<unsigned long long*>(results + 8));
  results[4] = agileos_kvstore_add(7ull, 1ull, reinterpret_cast<unsigned long long*>(kProtectedProbe + 64));
}

template <typename T>
std::vector<T> download(const T* device, std::size_t count) {
  std::vector<T> host(count);
  CHECK_CUDA(cudaMemcpy(host.data(), device, count * sizeof(T), cudaMemcpyDeviceToHost));
  return host;
}

int countEqual(const std::vector<int>& results, int value) {
  int n = 0;
  for (int r : results) n += r == value;
  return n;
}

int runAbsent() {
  int* results = nullptr;
  unsigned long long* values = nullptr;
  CHECK_CUDA(cudaMalloc(&results, kKeys * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&values, kKeys * sizeof(unsigned long long)));
  putAll<<<kKeys / 256, 256>>>(results);
  CHECK_CUDA(cudaDeviceSynchronize());
  const int puts = countEqual(download(results, kKeys), AGILEOS_MODULE_ENOSYS);
  getAll<<<kKeys / 256, 256>>>(values, results);
  CHECK_CUDA(cudaDeviceSynchronize());
  const int gets = countEqual(download(results, kKeys), AGILEOS_MODULE_ENOSYS);
  std::printf("absent: put ENOSYS %d/%u, get ENOSYS %d/%u\n", puts, kKeys, gets, kKeys);
  EXPECT_TRUE(puts == static_cast<int>(kKeys) && gets == static_cast<int>(kKeys), "placeholders must run\n");
  auto control = reinterpret_cast<ControlFn>(dlsym(RTLD_DEFAULT, "agileosModuleControl"));
  if (control != nullptr) {
    agileos_kvstore_stats stats{};
    int status = 0;
    const cudaError_t e =
        control("kvstore", AGILEOS_KVSTORE_CMD_STATS, nullptr, 0, &stats, sizeof stats, nullptr, &status);
    std::printf("absent: control -> %s\n", cudaGetErrorName(e));
    EXPECT_TRUE(e == cudaErrorInvalidValue, "no kvstore instance for this client\n");
  } else {
    std::printf("absent: control -> %s\n", cudaGetErrorName(cudaErrorInvalidValue));  // same line either way
  }
  std::printf("module_kvstore absent: OK\n");
  return 0;
}

int runWithModule() {
  auto control = reinterpret_cast<ControlFn>(dlsym(RTLD_DEFAULT, "agileosModuleControl"));
  EXPECT_TRUE(control != nullptr, "agileosModuleControl must be exported by the AgileOS runtime\n");
  int* results = nullptr;
  unsigned long long* values = nullptr;
  CHECK_CUDA(cudaMalloc(&results, kKeys * sizeof(int)));
  CHECK_CUDA(cudaMalloc(&values, kKeys * sizeof(unsigned long long)));

  putAll<<<kKeys / 256, 256>>>(results);
  CHECK_CUDA(cudaDeviceSynchronize());
  std::printf("put: %d/%u ok\n", countEqual(download(results, kKeys), 0), kKeys);
  EXPECT_TRUE(countEqual(download(results, kKeys), 0) == static_cast<int>(kKeys), "every put succeeds\n");

  getAll<<<kKeys / 256, 256>>>(values, results);
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<int> got = download(results, kKeys);
  std::vector<unsigned long long> value = download(values, kKeys);
  int correct = 0;
  for (unsigned i = 0; i < kKeys; ++i) correct += got[i] == 0 && value[i] == i * 3ull + 1;
  std::printf("get: %d/%u correct\n", correct, kKeys);
  EXPECT_TRUE(correct == static_cast<int>(kKeys), "every get returns its put\n");

  addMany<<<kKeys / 256, 256>>>(values, results);
  CHECK_CUDA(cudaDeviceSynchronize());
  value = download(values, kKeys);
  std::vector<char> seen(kKeys, 0);
  int permutation = countEqual(download(results, kKeys), 0) == static_cast<int>(kKeys);
  for (unsigned i = 0; i < kKeys; ++i) {
    if (value[i] >= kKeys || seen[value[i]])
      permutation = 0;
    else
      seen[value[i]] = 1;
  }
  std::printf("add: %u atomic increments %s\n", kKeys, permutation ? "consistent" : "INCONSISTENT");
  EXPECT_TRUE(permutation, "concurrent adds see every previous value once\n");

  CHECK_CUDA(cudaMemset(results, 0x7f, kKeys * sizeof(int)));
  removeEven<<<kKeys / 256, 256>>>(results);
  CHECK_CUDA(cudaDeviceSynchronize());
  getAll<<<kKeys / 256, 256>>>(values, results);
  CHECK_CUDA(cudaDeviceSynchronize());
  got = download(results, kKeys);
  int removedRight = 0;
  for (unsigned i = 0; i < kKeys; ++i) removedRight += got[i] == (i % 2 == 0 ? AGILEOS_KVSTORE_ENOENT : 0);
  std::printf("remove: %d/%u as expected\n", removedRight, kKeys);
  EXPECT_TRUE(removedRight == static_cast<int>(kKeys), "removed keys are gone, the others stay\n");

  refusals<<<1, 1>>>(results);
  CHECK_CUDA(cudaDeviceSynchronize());
  got = download(results, 5);
  std::printf("refusals: protected dst %d, null dst %d, bad key %d, missing key %d, protected previous %d\n",
              got[0], got[1], got[2], got[3], got[4]);
  EXPECT_TRUE(got[0] == AGILEOS_KVSTORE_EFAULT && got[1] == AGILEOS_KVSTORE_EFAULT &&
                  got[2] == AGILEOS_KVSTORE_EINVAL && got[3] == AGILEOS_KVSTORE_ENOENT &&
                  got[4] == AGILEOS_KVSTORE_EFAULT,
              "the module refuses what it may not do for the caller\n");

  // Host control: what the kernels left, seen from the plugin.
  agileos_kvstore_stats stats{};
  std::size_t bytes = 0;
  int status = 0;
  CHECK_CUDA(
      control("kvstore", AGILEOS_KVSTORE_CMD_STATS, nullptr, 0, &stats, sizeof stats, &bytes, &status));
  std::printf("stats: capacity %llu, live %llu, removed %llu\n", (unsigned long long)stats.capacity,
              (unsigned long long)stats.live_keys, (unsigned long long)stats.removed_keys);
  EXPECT_TRUE(bytes == sizeof stats && stats.live_keys == kKeys / 2 + 1 && stats.removed_keys == kKeys / 2,
              "live %llu removed %llu\n", (unsigned long long)stats.live_keys,
              (unsigned long long)stats.removed_keys);
  const unsigned long long callsBefore = stats.control_calls;

  std::uint64_t key = 1 * 7919ull;
  agileos_kvstore_lookup lookup{};
  CHECK_CUDA(
      control("kvstore", AGILEOS_KVSTORE_CMD_GET, &key, sizeof key, &lookup, sizeof lookup, &bytes, &status));
  std::printf("host get: found %llu value %llu\n", (unsigned long long)lookup.found,
              (unsigned long long)lookup.value);
  EXPECT_TRUE(lookup.found == 1 && lookup.value == 4, "host lookup sees the device's put\n");

  // Refusals before the plugin: unknown command, short and oversized requests.
  unsigned char big[64] = {};
  const cudaError_t unknown = control("kvstore", 99, nullptr, 0, nullptr, 0, nullptr, &status);
  const cudaError_t shortRequest =
      control("kvstore", AGILEOS_KVSTORE_CMD_GET, big, 4, &lookup, sizeof lookup, nullptr, &status);
  const cudaError_t longRequest =
      control("kvstore", AGILEOS_KVSTORE_CMD_GET, big, sizeof big, &lookup, sizeof lookup, nullptr, &status);
  const cudaError_t noModule = control("nosuchmodule", 1, nullptr, 0, nullptr, 0, nullptr, &status);
  std::printf("control refusals: unknown %s, short %s, oversized %s, other module %s\n",
              cudaGetErrorName(unknown), cudaGetErrorName(shortRequest), cudaGetErrorName(longRequest),
              cudaGetErrorName(noModule));
  EXPECT_TRUE(unknown == cudaErrorInvalidValue && shortRequest == cudaErrorInvalidValue &&
                  longRequest == cudaErrorInvalidValue && noModule == cudaErrorInvalidValue,
              "refused\n");
  CHECK_CUDA(
      control("kvstore", AGILEOS_KVSTORE_CMD_STATS, nullptr, 0, &stats, sizeof stats, &bytes, &status));
  // GET and this STATS reached the plugin; the four refused calls did not.
  std::printf("plugin saw %llu control calls after the refusals (expected %llu)\n",
              (unsigned long long)(stats.control_calls - callsBefore), 2ull);
  EXPECT_TRUE(stats.control_calls - callsBefore == 2, "refused calls never reach the plugin\n");

  CHECK_CUDA(control("kvstore", AGILEOS_KVSTORE_CMD_CLEAR, nullptr, 0, nullptr, 0, &bytes, &status));
  getAll<<<kKeys / 256, 256>>>(values, results);
  CHECK_CUDA(cudaDeviceSynchronize());
  std::printf("after clear: %d/%u missing\n", countEqual(download(results, kKeys), AGILEOS_KVSTORE_ENOENT),
              kKeys);
  EXPECT_TRUE(countEqual(download(results, kKeys), AGILEOS_KVSTORE_ENOENT) == static_cast<int>(kKeys),
              "clear empties the table\n");
  CHECK_CUDA(cudaFree(results));
  CHECK_CUDA(cudaFree(values));
  std::printf("module_kvstore: OK\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--expect-absent") == 0) return runAbsent();
  return runWithModule();
}
