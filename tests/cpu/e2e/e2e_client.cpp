// An unmodified-style CUDA runtime program (host code only) run through the
// whole AgileOS stack on a CPU machine: shim -> agileosd -> agileos-worker-fake.
// Each check prints one line; the program exits 1 if any check fails.
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/cpu/e2e/e2e_runtime_checks.h"

namespace {

using agileos::e2e::check;
using agileos::e2e::checkError;

// cudaHostRegister and managed memory (client/session/host_allocations.h): over shared memory the
// program's pages move into a segment the worker shares and managed memory is such a segment at
// one address for host and device; over gRPC both are refused and the device says so.

// What cudaMemRangeGetAttribute(s) answer for managed memory: the program's own advice and
// prefetches, page by page (4 KiB), every page of the range agreeing. Before this, all of `managed`
// was advised read-mostly and preferred on device 0, and prefetched to the device and then to the
// host; `untouched` (managed too) got no hint.
void checkManagedRangeAttributes(char* managed, size_t size, char* untouched, void* notManaged) {
  int value = -7;
  checkError(cudaMemRangeGetAttribute(&value, sizeof value, cudaMemRangeAttributeReadMostly, managed, size),
             cudaSuccess, "cudaMemRangeGetAttribute(read mostly)");
  check(value == 1, "read mostly, as advised");
  checkError(
      cudaMemRangeGetAttribute(&value, sizeof value, cudaMemRangeAttributePreferredLocation, managed, size),
      cudaSuccess, "cudaMemRangeGetAttribute(preferred location)");
  check(value == 0, "preferred location device 0, as advised");
  checkError(cudaMemRangeGetAttribute(&value, sizeof value, cudaMemRangeAttributeReadMostly, untouched, size),
             cudaSuccess, "read mostly of memory never advised");
  check(value == 0, "memory never advised is not read mostly");
  checkError(
      cudaMemRangeGetAttribute(&value, sizeof value, cudaMemRangeAttributePreferredLocation, untouched, 64),
      cudaSuccess, "preferred location of memory never advised");
  check(value == cudaInvalidDeviceId, "no preferred location: cudaInvalidDeviceId");
  checkError(cudaMemRangeGetAttribute(&value, sizeof value, cudaMemRangeAttributeLastPrefetchLocation,
                                      untouched, 64),
             cudaSuccess, "last prefetch location of memory never prefetched");
  check(value == cudaInvalidDeviceId, "never prefetched: cudaInvalidDeviceId");
  // Unset read-mostly on the second page only: a range over both pages is no longer read-mostly,
  // the first page alone still is, a byte of the second page is not.
  const cudaMemLocation onDevice{cudaMemLocationTypeDevice, 0};
  checkError(cudaMemAdvise(managed + 4096, 1, cudaMemAdviseUnsetReadMostly, onDevice), cudaSuccess,
             "unset read mostly on the second page");
  checkError(cudaMemRangeGetAttribute(&value, sizeof value, cudaMemRangeAttributeReadMostly, managed, 8192),
             cudaSuccess, "read mostly over two pages");
  check(value == 0, "not read mostly where one page is not");
  checkError(
      cudaMemRangeGetAttribute(&value, sizeof value, cudaMemRangeAttributeReadMostly, managed + 100, 3000),
      cudaSuccess, "read mostly within the first page");
  check(value == 1, "the first page still is");
  checkError(
      cudaMemRangeGetAttribute(&value, sizeof value, cudaMemRangeAttributeReadMostly, managed + 8000, 1),
      cudaSuccess, "read mostly of a byte of the second page");
  check(value == 0, "the second page is not");
  // The last prefetch went to the host; then the first page goes to the device.
  int location = -7, type = -7;
  size_t sizes[] = {sizeof location, sizeof type};
  void* outputs[] = {&location, &type};
  cudaMemRangeAttribute wanted[] = {cudaMemRangeAttributeLastPrefetchLocation,
                                    cudaMemRangeAttributeLastPrefetchLocationType};
  checkError(cudaMemRangeGetAttributes(outputs, sizes, wanted, 2, managed, size), cudaSuccess,
             "cudaMemRangeGetAttributes(last prefetch location and type)");
  check(location == cudaCpuDeviceId && type == cudaMemLocationTypeHost, "last prefetched to the host");
  checkError(cudaMemPrefetchAsync(managed, 4096, onDevice, 0, nullptr), cudaSuccess,
             "prefetch the first page to the device");
  checkError(cudaMemRangeGetAttributes(outputs, sizes, wanted, 2, managed, 4096), cudaSuccess,
             "cudaMemRangeGetAttributes of the first page");
  check(location == 0 && type == cudaMemLocationTypeDevice, "the first page last went to device 0");
  checkError(cudaMemRangeGetAttributes(outputs, sizes, wanted, 2, managed, size), cudaSuccess,
             "cudaMemRangeGetAttributes over all pages");
  check(location == cudaInvalidDeviceId && type == cudaMemLocationTypeInvalid,
        "pages last prefetched to different places: none");
  // Accessed-by: device 0 set over the whole range, then the rest of the array is invalid ids.
  checkError(cudaMemAdvise(managed, size, cudaMemAdviseSetAccessedBy, onDevice), cudaSuccess,
             "accessed by device 0");
  int devices[3] = {-7, -7, -7};
  checkError(
      cudaMemRangeGetAttribute(devices, sizeof devices, cudaMemRangeAttributeAccessedBy, managed, size),
      cudaSuccess, "cudaMemRangeGetAttribute(accessed by)");
  check(devices[0] == 0 && devices[1] == cudaInvalidDeviceId && devices[2] == cudaInvalidDeviceId,
        "accessed by device 0, the rest cudaInvalidDeviceId");
  // Refusals: a size that does not fit the attribute, an attribute that is none, memory that is not
  // managed, a range past the allocation, an empty range.
  checkError(cudaMemRangeGetAttribute(&value, 8, cudaMemRangeAttributeReadMostly, managed, size),
             cudaErrorInvalidValue, "a read-mostly answer into 8 bytes refused");
  checkError(cudaMemRangeGetAttribute(devices, 6, cudaMemRangeAttributeAccessedBy, managed, size),
             cudaErrorInvalidValue, "an accessed-by answer into 6 bytes refused");
  checkError(
      cudaMemRangeGetAttribute(&value, sizeof value, static_cast<cudaMemRangeAttribute>(99), managed, size),
      cudaErrorInvalidValue, "an attribute that is none refused");
  checkError(cudaMemRangeGetAttribute(&value, sizeof value, cudaMemRangeAttributeReadMostly, notManaged, 64),
             cudaErrorInvalidValue, "a range of memory that is not managed refused");
  checkError(
      cudaMemRangeGetAttribute(&value, sizeof value, cudaMemRangeAttributeReadMostly, managed, size + 1),
      cudaErrorInvalidValue, "a range past the allocation refused");
  checkError(cudaMemRangeGetAttribute(&value, sizeof value, cudaMemRangeAttributeReadMostly, managed, 0),
             cudaErrorInvalidValue, "an empty range refused");
}

void checkRegisteredAndManaged(void* device, size_t deviceBytes) {
  const char* transport = std::getenv("AGILEOS_TRANSPORT");
  const bool shared = transport == nullptr || std::string(transport) != "grpc";
  int value = -1;
  checkError(cudaDeviceGetAttribute(&value, cudaDevAttrManagedMemory, 0), cudaSuccess, "managedMemory");
  check(value == (shared ? 1 : 0), "managedMemory is 1 over shared memory only");
  checkError(cudaDeviceGetAttribute(&value, cudaDevAttrCanMapHostMemory, 0), cudaSuccess, "canMapHostMemory");
  check(value == (shared ? 1 : 0), "canMapHostMemory is 1 over shared memory only");
  checkError(cudaDeviceGetAttribute(&value, cudaDevAttrConcurrentManagedAccess, 0), cudaSuccess,
             "concurrentManagedAccess");
  check(value == 0, "concurrentManagedAccess is 0 (nothing migrates)");
  checkError(cudaDeviceGetAttribute(&value, cudaDevAttrPageableMemoryAccess, 0), cudaSuccess,
             "pageableMemoryAccess");
  check(value == 0, "pageableMemoryAccess is 0");

  constexpr size_t kPage = 4096;
  auto* pages = static_cast<unsigned char*>(
      mmap(nullptr, 4 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  for (size_t i = 0; i < 4 * kPage; ++i) pages[i] = static_cast<unsigned char>(i * 13 + 1);
  unsigned char* registered = pages + kPage + 100;  // not page aligned: whole pages move
  constexpr size_t kRegistered = 2 * kPage;
  void* managed = nullptr;
  if (!shared) {
    checkError(cudaHostRegister(registered, kRegistered, 0), cudaErrorNotSupported,
               "cudaHostRegister over gRPC refused");
    checkError(cudaMallocManaged(&managed, 4096), cudaErrorNotSupported,
               "cudaMallocManaged over gRPC refused");
    munmap(pages, 4 * kPage);
    return;
  }

  // Registration refusals before anything moves.
  checkError(cudaHostRegister(nullptr, 64, 0), cudaErrorInvalidValue, "cudaHostRegister(null) refused");
  checkError(cudaHostRegister(registered, 0, 0), cudaErrorInvalidValue,
             "cudaHostRegister of 0 bytes refused");
  checkError(cudaHostRegister(registered, 64, 0x100), cudaErrorInvalidValue,
             "unknown register flags refused");
  checkError(cudaHostRegister(registered, 64, cudaHostRegisterIoMemory), cudaErrorNotSupported,
             "cudaHostRegisterIoMemory fails closed");
  checkError(cudaHostRegister(registered, 64, cudaHostRegisterReadOnly), cudaErrorNotSupported,
             "cudaHostRegisterReadOnly fails closed");
  int onStack = 0;
  checkError(cudaHostRegister(&onStack, sizeof onStack, 0), cudaErrorInvalidValue, "the stack is refused");
  cudaError_t onThreadStack = cudaSuccess;
  std::thread([&onThreadStack] {
    char buffer[256] = {};
    onThreadStack = cudaHostRegister(buffer, sizeof buffer, 0);
  }).join();
  checkError(onThreadStack, cudaErrorInvalidValue, "the calling thread's own stack is refused");
  checkError(cudaHostRegister(reinterpret_cast<void*>(&checkRegisteredAndManaged), 64, 0),
             cudaErrorInvalidValue, "code is refused");
  char path[] = "/tmp/agileos_e2e_register_XXXXXX";
  const int fd = mkstemp(path);
  void* file = MAP_FAILED;
  if (fd >= 0 && ftruncate(fd, kPage) == 0)
    file = mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  check(file != MAP_FAILED, "a file mapping to try");
  if (file != MAP_FAILED) {
    checkError(cudaHostRegister(file, 64, 0), cudaErrorInvalidValue, "a file mapping is refused");
    munmap(file, kPage);
  }
  if (fd >= 0) {
    close(fd);
    unlink(path);
  }
  checkError(cudaHostRegister(reinterpret_cast<void*>(0x100000), 64, 0), cudaErrorInvalidValue,
             "unmapped memory is refused");

  // Register: the contents stay, the device can reach them, copies take the shared path.
  checkError(cudaHostRegister(registered, kRegistered, cudaHostRegisterMapped), cudaSuccess,
             "cudaHostRegister");
  bool same = true;
  for (size_t i = 0; i < 4 * kPage; ++i) same = same && pages[i] == static_cast<unsigned char>(i * 13 + 1);
  check(same, "registration keeps every byte of the pages and around them");
  void* mapped = nullptr;
  checkError(cudaHostGetDevicePointer(&mapped, registered + 8, 0), cudaSuccess,
             "cudaHostGetDevicePointer of registered memory");
  check(mapped != nullptr, "registered memory has a device address");
  cudaPointerAttributes attributes{};
  checkError(cudaPointerGetAttributes(&attributes, registered), cudaSuccess,
             "attributes of registered memory");
  check(attributes.type == cudaMemoryTypeHost && attributes.devicePointer != nullptr,
        "registered memory is host memory with a device pointer");
  checkError(cudaHostRegister(registered + 64, 64, 0), cudaErrorHostMemoryAlreadyRegistered,
             "registering inside a registration refused");
  checkError(cudaHostRegister(pages, kPage + 200, 0), cudaErrorHostMemoryAlreadyRegistered,
             "an overlapping registration refused");
  checkError(cudaMemcpy(device, registered, kRegistered, cudaMemcpyHostToDevice), cudaSuccess,
             "H2D from registered memory");
  std::memset(registered, 0, kRegistered);
  checkError(cudaMemcpy(registered, device, kRegistered, cudaMemcpyDefault), cudaSuccess,
             "D2H into registered memory");
  same = true;
  for (size_t i = 0; i < kRegistered; ++i)
    same = same && registered[i] == static_cast<unsigned char>((kPage + 100 + i) * 13 + 1);
  check(same, "registered memory round trip");
  unsigned registeredFlags = 0;
  checkError(cudaHostGetFlags(&registeredFlags, registered), cudaSuccess,
             "cudaHostGetFlags of registered memory");
  check(registeredFlags == cudaHostRegisterMapped, "registered memory: flags say mapped, as natively");
  // A memset named by the device's address of registered memory (not the program's) fills the
  // program's bytes, as natively.
  checkError(cudaMemset(mapped, 0x77, 16), cudaSuccess,
             "cudaMemset through registered memory's device pointer");
  same = true;
  for (size_t i = 8; i < 24; ++i) same = same && registered[i] == 0x77;
  check(same && registered[7] == static_cast<unsigned char>((kPage + 107) * 13 + 1) &&
            registered[24] == static_cast<unsigned char>((kPage + 124) * 13 + 1),
        "the memset reached exactly those bytes of the registered memory");
  checkError(cudaHostUnregister(registered + 1), cudaErrorHostMemoryNotRegistered,
             "unregistering an interior pointer refused");
  checkError(cudaHostUnregister(registered), cudaSuccess, "cudaHostUnregister");
  registered[0] = 0x42;
  check(registered[0] == 0x42 && registered[1] == static_cast<unsigned char>((kPage + 101) * 13 + 1),
        "the memory stays valid with its contents after cudaHostUnregister");
  checkError(cudaHostUnregister(registered), cudaErrorHostMemoryNotRegistered, "unregistering twice refused");
  checkError(cudaHostGetDevicePointer(&mapped, registered, 0), cudaErrorInvalidValue,
             "no device pointer once unregistered");
  checkError(cudaHostRegister(registered, kRegistered, 0), cudaSuccess, "registering again");
  checkError(cudaHostUnregister(registered), cudaSuccess, "and unregistering again");
  munmap(pages, 4 * kPage);
  std::vector<float> heap(300000, 1.5f);  // from malloc: its own mapping or the heap
  checkError(cudaHostRegister(heap.data(), heap.size() * sizeof(float), 0), cudaSuccess,
             "cudaHostRegister of malloc'd memory");
  checkError(cudaHostUnregister(heap.data()), cudaSuccess, "cudaHostUnregister of malloc'd memory");
  check(heap.front() == 1.5f && heap.back() == 1.5f, "malloc'd memory intact");

  // Mapped page-locked memory is placed like managed memory: one address, as under unified
  // addressing natively.
  void* pinnedMapped = nullptr;
  checkError(cudaHostAlloc(&pinnedMapped, 5000, cudaHostAllocMapped), cudaSuccess, "cudaHostAlloc(Mapped)");
  checkError(cudaHostGetDevicePointer(&mapped, static_cast<char*>(pinnedMapped) + 10, 0), cudaSuccess,
             "cudaHostGetDevicePointer of mapped memory");
  check(mapped == static_cast<char*>(pinnedMapped) + 10, "mapped memory: the device's address is the host's");
  checkError(cudaFreeHost(pinnedMapped), cudaSuccess, "cudaFreeHost of mapped memory");
  // Page-locked memory is mapped for the device whatever its flags (above), and CUDA reports it so:
  // cudaHostGetFlags adds cudaHostAllocMapped, cudaGetDeviceFlags has cudaDeviceMapHost.
  void* pinnedPlain = nullptr;
  checkError(cudaHostAlloc(&pinnedPlain, 100, cudaHostAllocPortable), cudaSuccess, "cudaHostAlloc(Portable)");
  unsigned plainFlags = 0;
  checkError(cudaHostGetFlags(&plainFlags, pinnedPlain), cudaSuccess, "cudaHostGetFlags(Portable)");
  check(plainFlags == (cudaHostAllocPortable | cudaHostAllocMapped),
        "portable page-locked memory: mapped too");
  checkError(cudaFreeHost(pinnedPlain), cudaSuccess, "cudaFreeHost(Portable)");
  unsigned deviceFlags = 0;
  checkError(cudaGetDeviceFlags(&deviceFlags), cudaSuccess, "cudaGetDeviceFlags");
  check((deviceFlags & cudaDeviceMapHost) != 0, "cudaGetDeviceFlags has cudaDeviceMapHost, as natively");

  // Managed memory: one address, host memory shared with the worker.
  checkError(cudaMallocManaged(&managed, 64, 0), cudaErrorInvalidValue, "cudaMallocManaged flags 0 refused");
  managed = reinterpret_cast<void*>(1);
  checkError(cudaMallocManaged(&managed, 0), cudaSuccess, "cudaMallocManaged of 0 bytes (as natively)");
  check(managed == nullptr, "no memory for 0 bytes");
  constexpr size_t kManaged = 10000;
  checkError(cudaMallocManaged(&managed, kManaged), cudaSuccess, "cudaMallocManaged");
  const auto address = reinterpret_cast<uintptr_t>(managed);
  check(address >= 0x300000000000ull && address < 0x400000000000ull,
        "managed memory lies in the managed window");
  auto* bytes = static_cast<unsigned char*>(managed);
  for (size_t i = 0; i < kManaged; ++i) bytes[i] = static_cast<unsigned char>(i * 3);
  checkError(cudaPointerGetAttributes(&attributes, bytes + 10), cudaSuccess, "attributes of managed memory");
  check(attributes.type == cudaMemoryTypeManaged && attributes.devicePointer == bytes + 10 &&
            attributes.hostPointer == bytes + 10,
        "managed memory: one pointer for host and device");
  unsigned hostFlags = 0;
  checkError(cudaHostGetFlags(&hostFlags, managed), cudaErrorInvalidValue,
             "cudaHostGetFlags of managed refused");
  checkError(cudaMemcpy(device, managed, kManaged, cudaMemcpyDefault), cudaSuccess,
             "managed to device (default)");
  void* second = nullptr;
  checkError(cudaMallocManaged(&second, kManaged, cudaMemAttachHost), cudaSuccess,
             "a second managed allocation");
  checkError(cudaMemcpy(second, device, kManaged, cudaMemcpyDeviceToDevice), cudaSuccess,
             "device to managed named as device memory");
  check(std::memcmp(second, managed, kManaged) == 0, "managed round trip through the device");
  checkError(cudaMemset(second, 7, 100), cudaSuccess, "cudaMemset of managed memory");
  check(static_cast<unsigned char*>(second)[99] == 7 &&
            static_cast<unsigned char*>(second)[100] == 100 * 3 % 256,
        "the memset wrote exactly its range");
  checkError(cudaMemcpy(second, managed, 50, cudaMemcpyDefault), cudaSuccess, "managed to managed");
  check(std::memcmp(second, managed, 50) == 0, "managed to managed copied");
  checkError(cudaHostRegister(managed, 64, 0), cudaErrorHostMemoryAlreadyRegistered,
             "registering managed memory refused");

  // Hints: accepted on managed memory, refused elsewhere.
  cudaMemLocation onDevice{cudaMemLocationTypeDevice, 0};
  cudaMemLocation onHost{cudaMemLocationTypeHost, 0};
  checkError(cudaMemPrefetchAsync(managed, kManaged, onDevice, 0, nullptr), cudaSuccess,
             "prefetch to the device");
  checkError(cudaMemPrefetchAsync(managed, kManaged, onHost, 0, nullptr), cudaSuccess,
             "prefetch to the host");
  checkError(cudaMemPrefetchAsync(managed, kManaged + 1, onDevice, 0, nullptr), cudaErrorInvalidValue,
             "prefetch past the allocation refused");
  checkError(cudaMemPrefetchAsync(device, 64, onDevice, 0, nullptr), cudaErrorInvalidValue,
             "prefetch of device memory refused");
  checkError(cudaMemPrefetchAsync(managed, 64, cudaMemLocation{cudaMemLocationTypeDevice, 3}, 0, nullptr),
             cudaErrorInvalidValue, "prefetch to a device that is not there refused");
  checkError(cudaMemAdvise(managed, kManaged, cudaMemAdviseSetReadMostly, onDevice), cudaSuccess, "advise");
  checkError(cudaMemAdvise(managed, kManaged, cudaMemAdviseSetPreferredLocation, onDevice), cudaSuccess,
             "advise a preferred location");
  checkError(cudaMemAdvise(device, 64, cudaMemAdviseSetReadMostly, onDevice), cudaErrorInvalidValue,
             "advice on device memory refused");
  checkError(cudaMemAdvise(managed, 64, static_cast<cudaMemoryAdvise>(99), onDevice), cudaErrorInvalidValue,
             "unknown advice refused");
  checkManagedRangeAttributes(static_cast<char*>(managed), kManaged, static_cast<char*>(second), device);
  cudaMemLocation nowhere{};
  const int bogusType = 99;  // no cudaMemLocationType: a program may put any bits there
  std::memcpy(&nowhere.type, &bogusType, sizeof bogusType);
  checkError(cudaMemPrefetchAsync(managed, 64, nowhere, 0, nullptr), cudaErrorInvalidValue,
             "prefetch to a location type that is none refused");
  checkError(cudaMemAdvise(managed, 64, cudaMemAdviseSetPreferredLocation, nowhere), cudaErrorInvalidValue,
             "advice naming a location type that is none refused");
  checkError(cudaStreamAttachMemAsync(nullptr, managed, 0, cudaMemAttachGlobal), cudaSuccess,
             "cudaStreamAttachMemAsync");
  checkError(cudaStreamAttachMemAsync(nullptr, bytes + 16, 0, cudaMemAttachGlobal), cudaErrorInvalidValue,
             "attaching a whole allocation from inside it refused");

  // Frees.
  checkError(cudaFree(bytes + 16), cudaErrorInvalidValue, "cudaFree inside managed memory refused");
  checkError(cudaFreeHost(managed), cudaErrorInvalidValue, "cudaFreeHost of managed memory refused");
  checkError(cudaFree(managed), cudaSuccess, "cudaFree of managed memory");
  checkError(cudaFree(managed), cudaErrorInvalidValue, "double free of managed memory refused");
  checkError(cudaMemPrefetchAsync(managed, 64, onDevice, 0, nullptr), cudaErrorInvalidValue,
             "prefetch of freed managed memory refused");
  checkError(cudaFree(second), cudaSuccess, "cudaFree of the second managed allocation");

  // This process already uses the address the worker picks next (the worker steps 2 MiB per small
  // segment): managed memory fails cleanly and gives the segment back; mapped memory is mapped
  // elsewhere and reached through cudaHostGetDevicePointer.
  void* probe = nullptr;
  checkError(cudaMallocManaged(&probe, 100), cudaSuccess, "a managed allocation to learn the next address");
  auto* squatted = reinterpret_cast<char*>(probe) + (2u << 20);
  void* squat = mmap(squatted, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  check(squat == squatted, "the next address taken in this process");
  checkError(cudaMallocManaged(&managed, 100), cudaErrorMemoryAllocation,
             "managed memory where this process's address is taken fails cleanly");
  squatted += 2u << 20;  // the refused segment used up its address; the next one
  munmap(squat, 4096);
  squat = mmap(squatted, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  checkError(cudaHostAlloc(&pinnedMapped, 100, cudaHostAllocMapped), cudaSuccess,
             "mapped memory where this process's address is taken");
  checkError(cudaHostGetDevicePointer(&mapped, pinnedMapped, 0), cudaSuccess, "and its device pointer");
  check(mapped != nullptr && mapped != pinnedMapped && pinnedMapped != squatted,
        "mapped elsewhere, reached through the worker's address");
  std::memset(pinnedMapped, 0, 100);
  checkError(cudaMemsetAsync(static_cast<char*>(mapped) + 10, 0x5a, 50, nullptr), cudaSuccess,
             "cudaMemsetAsync through the device pointer of memory mapped elsewhere");
  checkError(cudaStreamSynchronize(nullptr), cudaSuccess, "and synchronize");
  const auto* filled = static_cast<const unsigned char*>(pinnedMapped);
  check(filled[9] == 0 && filled[10] == 0x5a && filled[59] == 0x5a && filled[60] == 0,
        "the memset filled the program's bytes of that memory");
  checkError(cudaMemset(static_cast<char*>(mapped) + 90, 1, 11), cudaErrorInvalidValue,
             "a memset past the end of that memory is refused");
  checkError(cudaFreeHost(pinnedMapped), cudaSuccess, "cudaFreeHost");
  munmap(squat, 4096);
  checkError(cudaMallocManaged(&managed, 100), cudaSuccess, "managed memory works again");
  checkError(cudaFree(managed), cudaSuccess, "and is freed");
  checkError(cudaFree(probe), cudaSuccess, "cudaFree of the probe");
  checkError(cudaMallocManaged(&managed, 1ull << 45), cudaErrorMemoryAllocation,
             "managed memory past the pinned quota refused");
  (void)deviceBytes;
}

// Peer queries and PCI identity on the one-device virtual GPU. The fake worker
// reports PCI domain 0, bus 0x1B, device 0.
void checkPeerAndPciIdentity(void* deviceBuffer, size_t bytes) {
  int can = 7;
  checkError(cudaDeviceCanAccessPeer(&can, 0, 0), cudaSuccess, "cudaDeviceCanAccessPeer(0, 0)");
  check(can == 0, "a device is not its own peer");
  checkError(cudaDeviceCanAccessPeer(&can, 0, 1), cudaErrorInvalidDevice, "cudaDeviceCanAccessPeer(0, 1)");
  checkError(cudaDeviceCanAccessPeer(&can, -1, 0), cudaErrorInvalidDevice, "cudaDeviceCanAccessPeer(-1, 0)");
  checkError(cudaDeviceCanAccessPeer(nullptr, 0, 0), cudaErrorInvalidValue, "cudaDeviceCanAccessPeer(null)");
  checkError(cudaDeviceEnablePeerAccess(1, 0), cudaErrorInvalidDevice, "cudaDeviceEnablePeerAccess(1)");
  checkError(cudaDeviceEnablePeerAccess(0, 0), cudaErrorInvalidDevice, "cudaDeviceEnablePeerAccess(self)");
  checkError(cudaDeviceDisablePeerAccess(1), cudaErrorInvalidDevice, "cudaDeviceDisablePeerAccess(1)");
  int value = 0;
  checkError(cudaDeviceGetP2PAttribute(&value, cudaDevP2PAttrAccessSupported, 0, 0), cudaErrorInvalidDevice,
             "cudaDeviceGetP2PAttribute(0, 0)");

  std::vector<unsigned char> in(bytes / 2), out(bytes / 2, 0);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<unsigned char>(i * 13 + 1);
  char* base = static_cast<char*>(deviceBuffer);
  checkError(cudaMemcpy(base, in.data(), in.size(), cudaMemcpyHostToDevice), cudaSuccess,
             "H2D for peer copy");
  checkError(cudaMemcpyPeer(base + bytes / 2, 0, base, 0, bytes / 2), cudaSuccess, "cudaMemcpyPeer(0 <- 0)");
  checkError(cudaMemcpy(out.data(), base + bytes / 2, out.size(), cudaMemcpyDeviceToHost), cudaSuccess,
             "D2H after peer copy");
  check(in == out, "cudaMemcpyPeer copied device to device");
  checkError(cudaMemcpyPeerAsync(base, 0, base + bytes / 2, 1, 16, nullptr), cudaErrorInvalidDevice,
             "cudaMemcpyPeerAsync from device 1");
  checkError(cudaMemcpyPeer(base, 0, reinterpret_cast<void*>(0xF0000000000ull), 0, 16), cudaErrorInvalidValue,
             "cudaMemcpyPeer from the I/O aperture refused");

  // A 3D peer copy on device 0: a box 4 bytes wide, 3 rows, 2 slices, from the first half (pitch
  // 16, 3 rows a slice) to position (2, 1, 0) of the second half (pitch 32, 4 rows a slice).
  checkError(cudaMemset(base + bytes / 2, 0, 256), cudaSuccess, "clear the 3D peer destination");
  cudaMemcpy3DPeerParms peer{};
  peer.srcPtr = cudaPitchedPtr{base, 16, 16, 3};
  peer.dstPtr = cudaPitchedPtr{base + bytes / 2, 32, 32, 4};
  peer.dstPos = cudaPos{2, 1, 0};
  peer.extent = cudaExtent{4, 3, 2};
  checkError(cudaMemcpy3DPeer(&peer), cudaSuccess, "cudaMemcpy3DPeer(0 <- 0)");
  std::vector<unsigned char> box(256, 0xEE);
  checkError(cudaMemcpy(box.data(), base + bytes / 2, box.size(), cudaMemcpyDeviceToHost), cudaSuccess,
             "D2H after the 3D peer copy");
  bool boxMatches = true;
  for (size_t at = 0; at < box.size(); ++at) {
    const size_t z = at / 128, y = at % 128 / 32, x = at % 32;
    const bool inside = y >= 1 && x >= 2 && x < 6;
    boxMatches = boxMatches && box[at] == (inside ? in[z * 48 + (y - 1) * 16 + (x - 2)] : 0);
  }
  check(boxMatches, "cudaMemcpy3DPeer copied exactly the box, nothing around it");
  peer.srcDevice = 1;
  checkError(cudaMemcpy3DPeerAsync(&peer, nullptr), cudaErrorInvalidDevice,
             "cudaMemcpy3DPeerAsync from device 1");
  peer.srcDevice = 0;
  peer.srcPtr = cudaPitchedPtr{reinterpret_cast<void*>(0xF0000000000ull), 16, 16, 3};
  checkError(cudaMemcpy3DPeer(&peer), cudaErrorInvalidValue,
             "cudaMemcpy3DPeer from the I/O aperture refused");
  checkError(cudaMemcpy3DPeer(nullptr), cudaErrorInvalidValue, "cudaMemcpy3DPeer(null)");

  char busId[32] = {};
  checkError(cudaDeviceGetPCIBusId(busId, sizeof busId, 0), cudaSuccess, "cudaDeviceGetPCIBusId");
  check(std::strcmp(busId, "0000:1B:00.0") == 0, "PCI bus id formatted as libcudart does");
  char shortId[5] = {};
  checkError(cudaDeviceGetPCIBusId(shortId, sizeof shortId, 0), cudaSuccess, "cudaDeviceGetPCIBusId(len 5)");
  check(std::strcmp(shortId, "0000") == 0, "PCI bus id cut to len - 1 characters");
  checkError(cudaDeviceGetPCIBusId(busId, sizeof busId, 1), cudaErrorInvalidDevice,
             "cudaDeviceGetPCIBusId(1)");
  int device = -1;
  for (const char* form : {"0000:1B:00.0", "0000:1b:00", "1b:00.0", "00000000:1B:00.0"}) {
    device = -1;
    const cudaError_t error = cudaDeviceGetByPCIBusId(&device, form);
    check(error == cudaSuccess && device == 0, form);
  }
  checkError(cudaDeviceGetByPCIBusId(&device, "0000:1C:00.0"), cudaErrorInvalidDevice,
             "cudaDeviceGetByPCIBusId(another bus)");
  checkError(cudaDeviceGetByPCIBusId(&device, "not a bus id"), cudaErrorInvalidValue,
             "cudaDeviceGetByPCIBusId(malformed)");
}

// Stream identity and capture status: no stream is ever capturing, and forged or
// destroyed streams are refused by the worker.
void checkStreamQueries(cudaStream_t stream) {
  unsigned long long id = 0, again = 0, legacy = 0;
  checkError(cudaStreamGetId(stream, &id), cudaSuccess, "cudaStreamGetId");
  checkError(cudaStreamGetId(stream, &again), cudaSuccess, "cudaStreamGetId again");
  checkError(cudaStreamGetId(nullptr, &legacy), cudaSuccess, "cudaStreamGetId(legacy)");
  check(id == again && id != legacy, "stream ids are stable and distinct from the legacy stream's");
  int device = -1;
  checkError(cudaStreamGetDevice(stream, &device), cudaSuccess, "cudaStreamGetDevice");
  check(device == 0, "stream is on device 0");
  const auto forged = reinterpret_cast<cudaStream_t>(0x1234567890ull);
  checkError(cudaStreamGetId(forged, &id), cudaErrorInvalidResourceHandle, "cudaStreamGetId(forged)");
  checkError(cudaStreamGetDevice(forged, &device), cudaErrorInvalidResourceHandle,
             "cudaStreamGetDevice(forged)");

  cudaStreamCaptureStatus status = cudaStreamCaptureStatusActive;
  checkError(cudaStreamIsCapturing(stream, &status), cudaSuccess, "cudaStreamIsCapturing");
  check(status == cudaStreamCaptureStatusNone, "stream is not capturing");
  status = cudaStreamCaptureStatusActive;
  checkError(cudaStreamIsCapturing(cudaStreamPerThread, &status), cudaSuccess,
             "cudaStreamIsCapturing(per-thread)");
  check(status == cudaStreamCaptureStatusNone, "per-thread stream is not capturing");
  checkError(cudaStreamIsCapturing(forged, &status), cudaErrorInvalidResourceHandle,
             "cudaStreamIsCapturing(forged)");
  checkError(cudaStreamIsCapturing(stream, nullptr), cudaErrorInvalidValue, "cudaStreamIsCapturing(null)");
  unsigned long long captureId = 99;
  cudaGraph_t graph = reinterpret_cast<cudaGraph_t>(1);
  const cudaGraphNode_t* dependencies = reinterpret_cast<const cudaGraphNode_t*>(1);
  size_t count = 5;
  status = cudaStreamCaptureStatusActive;
  checkError(cudaStreamGetCaptureInfo(stream, &status, &captureId, &graph, &dependencies, nullptr, &count),
             cudaSuccess, "cudaStreamGetCaptureInfo");
  check(status == cudaStreamCaptureStatusNone && graph == nullptr && dependencies == nullptr && count == 0,
        "capture info says not capturing");
  checkError(cudaStreamGetCaptureInfo(forged, &status), cudaErrorInvalidResourceHandle,
             "cudaStreamGetCaptureInfo(forged)");

  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  checkError(cudaThreadExchangeStreamCaptureMode(&mode), cudaSuccess, "cudaThreadExchangeStreamCaptureMode");
  check(mode == cudaStreamCaptureModeGlobal, "the thread's mode starts global");
  checkError(cudaThreadExchangeStreamCaptureMode(&mode), cudaSuccess,
             "cudaThreadExchangeStreamCaptureMode back");
  check(mode == cudaStreamCaptureModeRelaxed, "the mode set before is returned");
  mode = static_cast<cudaStreamCaptureMode>(7);
  checkError(cudaThreadExchangeStreamCaptureMode(&mode), cudaErrorInvalidValue,
             "cudaThreadExchangeStreamCaptureMode(bad mode)");
}

struct CallbackRecord {
  const unsigned char* watched = nullptr;  // pinned memory an earlier copy on the stream fills
  unsigned char seen = 0;
  int calls = 0;
  cudaError_t status = cudaErrorUnknown;
};

void hostFunction(void* userData) {
  auto* record = static_cast<CallbackRecord*>(userData);
  record->seen = record->watched[0];
  ++record->calls;
}

void streamCallback(cudaStream_t, cudaError_t status, void* userData) {
  auto* record = static_cast<CallbackRecord*>(userData);
  record->status = status;
  hostFunction(userData);
}

// Host callbacks run after the earlier work of their stream (the worker drains it first).
void checkHostCallbacks(cudaStream_t stream, void* deviceBuffer, void* pinned) {
  auto* host = static_cast<unsigned char*>(pinned);
  CallbackRecord record;
  record.watched = host;
  checkError(cudaMemset(deviceBuffer, 0x42, 64), cudaSuccess, "memset for callbacks");
  host[0] = 0;
  checkError(cudaMemcpyAsync(host, deviceBuffer, 64, cudaMemcpyDeviceToHost, stream), cudaSuccess,
             "async D2H before cudaLaunchHostFunc");
  checkError(cudaLaunchHostFunc(stream, hostFunction, &record), cudaSuccess, "cudaLaunchHostFunc");
  check(record.calls == 1 && record.seen == 0x42, "host function ran once, after the earlier copy");
  checkError(cudaMemset(deviceBuffer, 0x24, 64), cudaSuccess, "memset before cudaStreamAddCallback");
  checkError(cudaMemcpyAsync(host, deviceBuffer, 64, cudaMemcpyDeviceToHost, stream), cudaSuccess,
             "async D2H before cudaStreamAddCallback");
  checkError(cudaStreamAddCallback(stream, streamCallback, &record, 0), cudaSuccess, "cudaStreamAddCallback");
  check(record.calls == 2 && record.seen == 0x24 && record.status == cudaSuccess,
        "stream callback ran after the earlier copy with cudaSuccess");
  checkError(cudaStreamAddCallback(stream, streamCallback, &record, 1), cudaErrorInvalidValue,
             "cudaStreamAddCallback(flags 1)");
  const auto forged = reinterpret_cast<cudaStream_t>(0x1234567890ull);
  checkError(cudaLaunchHostFunc(forged, hostFunction, &record), cudaErrorInvalidResourceHandle,
             "cudaLaunchHostFunc(forged stream)");
  checkError(cudaStreamAddCallback(forged, streamCallback, &record, 0), cudaErrorInvalidResourceHandle,
             "cudaStreamAddCallback(forged stream)");
  checkError(cudaLaunchHostFunc(stream, nullptr, nullptr), cudaErrorInvalidValue, "cudaLaunchHostFunc(null)");
  check(record.calls == 2, "refused callbacks never ran");
}

// 3D copies and fills of pitched memory: a 40 x 6 x 5 box inside a 64 x 8 x 5 allocation.
void check3D() {
  constexpr size_t kWidth = 64, kHeight = 8, kDepth = 5;
  cudaPitchedPtr device{};
  checkError(cudaMalloc3D(&device, cudaExtent{kWidth, kHeight, kDepth}), cudaSuccess, "cudaMalloc3D");
  check(
      device.pitch >= kWidth && device.pitch % 256 == 0 && device.xsize == kWidth && device.ysize == kHeight,
      "cudaMalloc3D pitches like cudaMallocPitch");
  std::vector<unsigned char> host(kWidth * kHeight * kDepth), back(host.size(), 0xEE);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<unsigned char>(i * 31 + 7);
  cudaMemcpy3DParms up{};
  up.srcPtr = cudaPitchedPtr{host.data(), kWidth, kWidth, kHeight};
  up.dstPtr = device;
  up.extent = cudaExtent{kWidth, kHeight, kDepth};
  up.kind = cudaMemcpyHostToDevice;
  checkError(cudaMemcpy3D(&up), cudaSuccess, "cudaMemcpy3D H2D");
  // Clear the box x in [8, 48), y in [1, 7), z in [1, 4).
  cudaPitchedPtr box = device;
  box.ptr = static_cast<char*>(device.ptr) + 1 * device.pitch * kHeight + 1 * device.pitch + 8;
  checkError(cudaMemset3D(box, 0, cudaExtent{40, 6, 3}), cudaSuccess, "cudaMemset3D");
  cudaMemcpy3DParms down{};
  down.srcPtr = device;
  down.dstPtr = cudaPitchedPtr{back.data(), kWidth, kWidth, kHeight};
  down.extent = cudaExtent{kWidth, kHeight, kDepth};
  down.kind = cudaMemcpyDeviceToHost;
  checkError(cudaMemcpy3D(&down), cudaSuccess, "cudaMemcpy3D D2H");
  bool boxOk = true;
  for (size_t z = 0; z < kDepth; ++z) {
    for (size_t y = 0; y < kHeight; ++y) {
      for (size_t x = 0; x < kWidth; ++x) {
        const size_t i = (z * kHeight + y) * kWidth + x;
        const bool inBox = x >= 8 && x < 48 && y >= 1 && y < 7 && z >= 1 && z < 4;
        boxOk &= back[i] == (inBox ? 0 : host[i]);
      }
    }
  }
  check(boxOk, "3D round trip with a cleared box");
  // A sub-box copy with positions: (x=4, y=2, z=3) of the device into (0, 0, 0) of the host.
  std::vector<unsigned char> part(16 * 3 * 2, 0);
  cudaMemcpy3DParms sub{};
  sub.srcPtr = device;
  sub.srcPos = cudaPos{4, 2, 3};
  sub.dstPtr = cudaPitchedPtr{part.data(), 16, 16, 3};
  sub.extent = cudaExtent{16, 3, 2};
  sub.kind = cudaMemcpyDefault;
  checkError(cudaMemcpy3D(&sub), cudaSuccess, "cudaMemcpy3D sub-box with positions");
  bool subOk = true;
  for (size_t z = 0; z < 2; ++z)
    for (size_t y = 0; y < 3; ++y)
      for (size_t x = 0; x < 16; ++x)
        subOk &= part[(z * 3 + y) * 16 + x] == back[((z + 3) * kHeight + y + 2) * kWidth + x + 4];
  check(subOk, "3D sub-box copy honours the positions");

  cudaMemcpy3DParms withArray = up;
  withArray.dstArray = reinterpret_cast<cudaArray_t>(0x1000);
  withArray.dstPtr = cudaPitchedPtr{};
  checkError(cudaMemcpy3D(&withArray), cudaErrorInvalidResourceHandle,
             "cudaMemcpy3D with a forged cudaArray");
  checkError(cudaMemcpy3D(nullptr), cudaErrorInvalidValue, "cudaMemcpy3D(null)");
  cudaMemcpy3DParms badKind = up;
  const int noKind = 77;  // no cudaMemcpyKind: the program may put any bits there
  std::memcpy(&badKind.kind, &noKind, sizeof noKind);
  checkError(cudaMemcpy3D(&badKind), cudaErrorInvalidMemcpyDirection,
             "cudaMemcpy3D with a kind that is none");
  cudaMemcpy3DParms outside = down;
  outside.srcPtr.ptr = reinterpret_cast<void*>(0xF0000000000ull);
  checkError(cudaMemcpy3D(&outside), cudaErrorInvalidValue, "cudaMemcpy3D from the I/O aperture refused");
  checkError(cudaFree(device.ptr), cudaSuccess, "cudaFree 3D");
}

void countCall(void* data) { ++*static_cast<int*>(data); }

// Graphs and stream capture (client/session/graph.h): captured work does not run until the graph
// is launched, then runs in order, each launch again; a fork must be joined; what cannot be
// captured invalidates the capture; a graph that names memory freed since runs none of its nodes.
void checkGraphs(cudaStream_t stream) {
  constexpr size_t kBytes = 4096;
  void* a = nullptr;
  void* b = nullptr;
  checkError(cudaMalloc(&a, kBytes), cudaSuccess, "graphs: cudaMalloc a");
  checkError(cudaMalloc(&b, kBytes), cudaSuccess, "graphs: cudaMalloc b");
  checkError(cudaMemset(a, 0, kBytes), cudaSuccess, "graphs: clear a");
  checkError(cudaMemset(b, 0, kBytes), cudaSuccess, "graphs: clear b");
  std::vector<unsigned char> host(kBytes, 0xEE);
  int calls = 0;

  checkError(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess,
             "cudaStreamBeginCapture");
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  checkError(cudaStreamIsCapturing(stream, &status), cudaSuccess, "cudaStreamIsCapturing while capturing");
  check(status == cudaStreamCaptureStatusActive, "the stream captures");
  checkError(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaErrorIllegalState,
             "cudaStreamBeginCapture twice");
  checkError(cudaMemsetAsync(a, 0x11, kBytes, stream), cudaSuccess, "captured memset");
  checkError(cudaMemcpyAsync(b, a, kBytes, cudaMemcpyDeviceToDevice, stream), cudaSuccess,
             "captured D2D copy");
  checkError(cudaLaunchHostFunc(stream, countCall, &calls), cudaSuccess, "captured host function");
  checkError(cudaMemcpyAsync(host.data(), b, kBytes, cudaMemcpyDeviceToHost, stream), cudaSuccess,
             "captured D2H copy");
  size_t dependencies = 0;
  checkError(cudaStreamGetCaptureInfo(stream, &status, nullptr, nullptr, nullptr, nullptr, &dependencies),
             cudaSuccess, "cudaStreamGetCaptureInfo while capturing");
  check(status == cudaStreamCaptureStatusActive && dependencies == 1,
        "one dependency: the last captured call");
  cudaGraph_t graph = nullptr;
  checkError(cudaStreamEndCapture(stream, &graph), cudaSuccess, "cudaStreamEndCapture");
  check(graph != nullptr && calls == 0 && host[0] == 0xEE, "nothing captured ran during the capture");
  std::vector<unsigned char> probe(kBytes, 0xEE);
  checkError(cudaMemcpy(probe.data(), b, kBytes, cudaMemcpyDeviceToHost), cudaSuccess, "graphs: read b");
  check(probe[0] == 0 && probe[kBytes - 1] == 0, "the captured copy did not run before the launch");
  size_t nodes = 0;
  checkError(cudaGraphGetNodes(graph, nullptr, &nodes), cudaSuccess, "cudaGraphGetNodes");
  check(nodes == 4, "four nodes captured");

  cudaGraphExec_t exec = nullptr;
  checkError(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess, "cudaGraphInstantiate");
  for (int launch = 0; launch < 2; ++launch) {
    checkError(cudaGraphLaunch(exec, stream), cudaSuccess, "cudaGraphLaunch");
  }
  checkError(cudaStreamSynchronize(stream), cudaSuccess, "graphs: synchronize");
  check(host[0] == 0x11 && host[kBytes - 1] == 0x11 && calls == 2, "two launches ran every node in order");

  // A graph naming memory freed since: refused at launch, and none of its nodes runs.
  cudaGraph_t built = nullptr;
  checkError(cudaGraphCreate(&built, 0), cudaSuccess, "cudaGraphCreate");
  cudaGraphNode_t hostNode = nullptr, fillNode = nullptr;
  cudaHostNodeParams hostParams{countCall, &calls};
  checkError(cudaGraphAddHostNode(&hostNode, built, nullptr, 0, &hostParams), cudaSuccess,
             "cudaGraphAddHostNode");
  cudaMemsetParams fill{};
  fill.dst = a;
  fill.value = 0x22;
  fill.elementSize = 1;
  fill.width = kBytes;
  fill.height = 1;
  checkError(cudaGraphAddMemsetNode(&fillNode, built, &hostNode, 1, &fill), cudaSuccess,
             "cudaGraphAddMemsetNode");
  fill.value = 0x01020304;
  fill.elementSize = 4;
  fill.width = kBytes / 4;
  cudaGraphNode_t unsupported = nullptr;
  checkError(cudaGraphAddMemsetNode(&unsupported, built, nullptr, 0, &fill), cudaErrorNotSupported,
             "a 4-byte memset pattern of different bytes");
  cudaGraphExec_t builtExec = nullptr;
  checkError(cudaGraphInstantiate(&builtExec, built, 0), cudaSuccess, "cudaGraphInstantiate (built)");
  checkError(cudaFree(a), cudaSuccess, "graphs: free a");
  calls = 0;
  checkError(cudaGraphLaunch(builtExec, stream), cudaErrorInvalidValue,
             "a graph naming freed memory is refused");
  checkError(cudaStreamSynchronize(stream), cudaSuccess, "graphs: synchronize after the refusal");
  check(calls == 0, "none of its nodes ran");
  checkError(cudaGraphExecDestroy(builtExec), cudaSuccess, "cudaGraphExecDestroy (built)");
  checkError(cudaGraphExecDestroy(builtExec), cudaErrorInvalidValue, "cudaGraphExecDestroy twice");
  checkError(cudaGraphDestroy(built), cudaSuccess, "cudaGraphDestroy (built)");

  // A fork that is not joined; a call that cannot be captured.
  cudaStream_t side = nullptr;
  cudaEvent_t fork = nullptr;
  checkError(cudaStreamCreate(&side), cudaSuccess, "graphs: side stream");
  checkError(cudaEventCreate(&fork), cudaSuccess, "graphs: fork event");
  checkError(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed), cudaSuccess,
             "capture with a fork");
  checkError(cudaEventRecord(fork, stream), cudaSuccess, "captured event record");
  checkError(cudaStreamWaitEvent(side, fork, 0), cudaSuccess, "the side stream joins the capture");
  checkError(cudaMemsetAsync(b, 0x33, 64, side), cudaSuccess, "captured memset on the side stream");
  cudaGraph_t unjoined = nullptr;
  checkError(cudaStreamEndCapture(stream, &unjoined), cudaErrorStreamCaptureUnjoined, "an unjoined fork");
  check(unjoined == nullptr, "no graph from an unjoined capture");
  checkError(cudaStreamIsCapturing(side, &status), cudaSuccess, "side stream status");
  check(status == cudaStreamCaptureStatusNone, "the side stream left the capture");
  checkError(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed), cudaSuccess, "capture again");
  // (Stream-ordered allocation is captured: e2e_graph_memory.cpp.)
  checkError(cudaStreamAddCallback(stream, streamCallback, nullptr, 0), cudaErrorStreamCaptureUnsupported,
             "a stream callback in a capture");
  checkError(cudaStreamSynchronize(stream), cudaErrorStreamCaptureUnsupported, "synchronize in a capture");
  cudaGraph_t invalidated = nullptr;
  checkError(cudaStreamEndCapture(stream, &invalidated), cudaErrorStreamCaptureInvalidated,
             "the capture was invalidated");
  checkError(cudaStreamEndCapture(stream, &invalidated), cudaErrorIllegalState, "end without a capture");
  checkError(cudaStreamBeginCapture(nullptr, cudaStreamCaptureModeGlobal), cudaErrorStreamCaptureUnsupported,
             "the legacy stream cannot capture");

  // Events from outside a capture, as natively: a plain wait is refused and invalidates the
  // capture, an external wait is a wait node; an event of one capture waited for in another
  // would merge them.
  checkError(cudaEventRecord(fork, side), cudaSuccess, "an event recorded outside any capture");
  checkError(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed), cudaSuccess,
             "capture (isolation)");
  checkError(cudaStreamWaitEvent(stream, fork, 0), cudaErrorStreamCaptureIsolation,
             "a plain wait on an outside event refused");
  checkError(cudaStreamEndCapture(stream, &invalidated), cudaErrorStreamCaptureInvalidated,
             "and the capture was invalidated");
  checkError(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed), cudaSuccess, "capture (external)");
  checkError(cudaStreamWaitEvent(stream, fork, cudaEventWaitExternal), cudaSuccess,
             "an external wait on an outside event");
  cudaGraph_t waits = nullptr;
  checkError(cudaStreamEndCapture(stream, &waits), cudaSuccess, "the external wait's capture ends");
  size_t waitNodes = 0;
  checkError(cudaGraphGetNodes(waits, nullptr, &waitNodes), cudaSuccess, "its nodes");
  cudaGraphNode_t waitNode = nullptr;
  cudaGraphNodeType waitType = cudaGraphNodeTypeEmpty;
  if (waitNodes == 1) {
    checkError(cudaGraphGetNodes(waits, &waitNode, &waitNodes), cudaSuccess, "its node");
    checkError(cudaGraphNodeGetType(waitNode, &waitType), cudaSuccess, "its node's type");
  }
  check(waitNodes == 1 && waitType == cudaGraphNodeTypeWaitEvent, "one wait node");
  checkError(cudaGraphDestroy(waits), cudaSuccess, "cudaGraphDestroy (waits)");
  cudaEvent_t other = nullptr;
  checkError(cudaEventCreate(&other), cudaSuccess, "graphs: a second event");
  checkError(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed), cudaSuccess,
             "first capture (merge)");
  checkError(cudaStreamBeginCapture(side, cudaStreamCaptureModeRelaxed), cudaSuccess,
             "second capture (merge)");
  checkError(cudaEventRecord(other, stream), cudaSuccess, "an event recorded in the first capture");
  checkError(cudaStreamWaitEvent(side, other, 0), cudaErrorStreamCaptureMerge,
             "waiting for it in the second capture refused");
  checkError(cudaStreamEndCapture(side, &invalidated), cudaErrorStreamCaptureInvalidated,
             "second ends invalidated");
  checkError(cudaStreamEndCapture(stream, &invalidated), cudaErrorStreamCaptureInvalidated,
             "first ends invalidated");
  checkError(cudaEventDestroy(other), cudaSuccess, "graphs: destroy the second event");
  (void)cudaGetLastError();
  std::vector<unsigned char> after(64, 0);
  checkError(cudaMemcpy(after.data(), b, 64, cudaMemcpyDeviceToHost), cudaSuccess, "graphs: read b again");
  check(after[0] == 0x11, "nothing of the failed captures ran");

  checkError(cudaGraphExecDestroy(exec), cudaSuccess, "cudaGraphExecDestroy");
  checkError(cudaGraphDestroy(graph), cudaSuccess, "cudaGraphDestroy");
  checkError(cudaGraphDestroy(graph), cudaErrorInvalidValue, "cudaGraphDestroy twice");
  checkError(cudaEventDestroy(fork), cudaSuccess, "graphs: destroy the fork event");
  checkError(cudaStreamDestroy(side), cudaSuccess, "graphs: destroy the side stream");
  checkError(cudaFree(b), cudaSuccess, "graphs: free b");
}

// cudaGraphExecUpdate tells what it cannot update as natively: a graph of the same nodes with one
// more edge is a changed topology (the node that gained it named), a copy whose direction changed
// is a changed parameter; a changed memset value updates.
void checkGraphExecUpdateLimits(cudaStream_t stream) {
  constexpr size_t kBytes = 256;
  void* first = nullptr;
  void* second = nullptr;
  checkError(cudaMalloc(&first, kBytes), cudaSuccess, "exec update: cudaMalloc");
  checkError(cudaMalloc(&second, kBytes), cudaSuccess, "exec update: cudaMalloc");
  std::vector<unsigned char> host(kBytes, 0);
  struct Built {
    cudaGraph_t graph = nullptr;
    cudaGraphNode_t fill = nullptr;
    cudaGraphNode_t copy = nullptr;
  };
  // memset first, memset second, then a copy of first after the first memset (and after the
  // second too with `extraEdge`), to the host or (`deviceCopy`) to second.
  const auto build = [&](unsigned char value, bool extraEdge, bool deviceCopy) {
    Built built;
    checkError(cudaGraphCreate(&built.graph, 0), cudaSuccess, "exec update: cudaGraphCreate");
    cudaMemsetParams fill{};
    fill.dst = first;
    fill.value = value;
    fill.elementSize = 1;
    fill.width = kBytes;
    fill.height = 1;
    cudaGraphNode_t fillFirst = nullptr, fillSecond = nullptr;
    checkError(cudaGraphAddMemsetNode(&fillFirst, built.graph, nullptr, 0, &fill), cudaSuccess,
               "exec update: memset node");
    built.fill = fillFirst;
    fill.dst = second;
    checkError(cudaGraphAddMemsetNode(&fillSecond, built.graph, nullptr, 0, &fill), cudaSuccess,
               "exec update: second memset node");
    const cudaGraphNode_t after[] = {fillFirst, fillSecond};
    checkError(cudaGraphAddMemcpyNode1D(&built.copy, built.graph, after, extraEdge ? 2 : 1,
                                        deviceCopy ? second : static_cast<void*>(host.data()), first, kBytes,
                                        deviceCopy ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost),
               cudaSuccess, "exec update: copy node");
    return built;
  };
  // A cycle: cudaGraphInstantiateWithParams says the structure is invalid and names a node of it.
  Built looped = build(0x21, false, false);
  checkError(cudaGraphAddDependencies(looped.graph, &looped.copy, &looped.fill, nullptr, 1), cudaSuccess,
             "a cycle: copy -> memset -> copy");
  cudaGraphInstantiateParams params{};
  cudaGraphExec_t refused = nullptr;
  checkError(cudaGraphInstantiateWithParams(&refused, looped.graph, &params), cudaErrorInvalidValue,
             "a graph with a cycle is not instantiated");
  check(params.result_out == cudaGraphInstantiateInvalidStructure && params.errNode_out != nullptr,
        "the result says the structure is invalid, at a node");
  (void)cudaGetLastError();
  checkError(cudaGraphDestroy(looped.graph), cudaSuccess, "exec update: graph with a cycle destroyed");
  Built base = build(0x21, false, false);
  cudaGraphExec_t exec = nullptr;
  checkError(cudaGraphInstantiate(&exec, base.graph, 0), cudaSuccess, "exec update: instantiate");
  // The per-node setters keep a copy's direction and a memset's dimensions, as natively.
  checkError(
      cudaGraphExecMemcpyNodeSetParams1D(exec, base.copy, second, first, kBytes, cudaMemcpyDeviceToDevice),
      cudaErrorInvalidValue, "exec setter: a copy turned device-to-device refused");
  cudaMemsetParams square{};
  square.dst = first;
  square.value = 1;
  square.elementSize = 1;
  square.width = 16;
  square.height = 2;
  square.pitch = 64;
  checkError(cudaGraphExecMemsetNodeSetParams(exec, base.fill, &square), cudaErrorInvalidValue,
             "exec setter: a 1D memset turned 2D refused");
  (void)cudaGetLastError();
  cudaGraphExecUpdateResultInfo info{};
  Built edged = build(0x21, true, false);
  checkError(cudaGraphExecUpdate(exec, edged.graph, &info), cudaErrorGraphExecUpdateFailure,
             "exec update: one more edge refused");
  check(info.result == cudaGraphExecUpdateErrorTopologyChanged && info.errorNode == edged.copy,
        "exec update: a changed topology, at the node that gained the edge");
  (void)cudaGetLastError();
  Built turned = build(0x21, false, true);
  checkError(cudaGraphExecUpdate(exec, turned.graph, &info), cudaErrorGraphExecUpdateFailure,
             "exec update: a copy's direction changed refused");
  check(info.result == cudaGraphExecUpdateErrorParametersChanged && info.errorNode == turned.copy,
        "exec update: a changed parameter, at the copy");
  (void)cudaGetLastError();
  Built refilled = build(0x43, false, false);
  checkError(cudaGraphExecUpdate(exec, refilled.graph, &info), cudaSuccess,
             "exec update: a new memset value");
  checkError(cudaGraphLaunch(exec, stream), cudaSuccess, "exec update: launch");
  checkError(cudaStreamSynchronize(stream), cudaSuccess, "exec update: synchronize");
  check(host[0] == 0x43 && host[kBytes - 1] == 0x43, "exec update: the updated graph ran");
  checkError(cudaGraphExecDestroy(exec), cudaSuccess, "exec update: exec destroyed");
  for (const Built& built : {base, edged, turned, refilled}) {
    checkError(cudaGraphDestroy(built.graph), cudaSuccess, "exec update: graph destroyed");
  }
  checkError(cudaFree(first), cudaSuccess, "exec update: cudaFree");
  checkError(cudaFree(second), cudaSuccess, "exec update: cudaFree");
}

// The generic node-parameter form (cudaGraphAddNode, cudaGraphNodeSetParams,
// cudaGraphExecNodeSetParams): a memset, a host function and a copy back, made, changed and run
// through it, and what it refuses.
void checkGenericGraphNodes(cudaStream_t stream) {
  constexpr size_t kBytes = 1024;
  void* device = nullptr;
  checkError(cudaMalloc(&device, kBytes), cudaSuccess, "generic nodes: cudaMalloc");
  std::vector<unsigned char> host(kBytes, 0);
  int calls = 0;
  cudaGraph_t graph = nullptr;
  checkError(cudaGraphCreate(&graph, 0), cudaSuccess, "generic nodes: cudaGraphCreate");

  cudaGraphNodeParams fill{};
  fill.type = cudaGraphNodeTypeMemset;
  fill.memset.dst = device;
  fill.memset.value = 0x5A;
  fill.memset.elementSize = 1;
  fill.memset.width = kBytes;
  fill.memset.height = 1;
  cudaGraphNode_t fillNode = nullptr, hostNode = nullptr, copyNode = nullptr;
  checkError(cudaGraphAddNode(&fillNode, graph, nullptr, nullptr, 0, &fill), cudaSuccess,
             "cudaGraphAddNode (memset)");
  cudaGraphNodeParams callback{};
  callback.type = cudaGraphNodeTypeHost;
  callback.host.fn = countCall;
  callback.host.userData = &calls;
  const cudaGraphEdgeData plainEdge{};
  checkError(cudaGraphAddNode(&hostNode, graph, &fillNode, &plainEdge, 1, &callback), cudaSuccess,
             "cudaGraphAddNode (host) with plain edge data");
  cudaGraphNodeParams copy{};
  copy.type = cudaGraphNodeTypeMemcpy;
  copy.memcpy.copyParams.srcPtr = cudaPitchedPtr{device, kBytes, kBytes, 1};
  copy.memcpy.copyParams.dstPtr = cudaPitchedPtr{host.data(), kBytes, kBytes, 1};
  copy.memcpy.copyParams.extent = cudaExtent{kBytes, 1, 1};
  copy.memcpy.copyParams.kind = cudaMemcpyDeviceToHost;
  checkError(cudaGraphAddNode(&copyNode, graph, &hostNode, nullptr, 1, &copy), cudaSuccess,
             "cudaGraphAddNode (memcpy)");
  cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
  checkError(cudaGraphNodeGetType(copyNode, &type), cudaSuccess, "cudaGraphNodeGetType");
  check(type == cudaGraphNodeTypeMemcpy, "the generic form made a copy node");

  // cudaGraphNodeSetParams before instantiation: the fill value changes.
  fill.memset.value = 0x6B;
  checkError(cudaGraphNodeSetParams(fillNode, &fill), cudaSuccess, "cudaGraphNodeSetParams (memset)");
  cudaGraphExec_t exec = nullptr;
  checkError(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess, "generic nodes: cudaGraphInstantiate");
  checkError(cudaGraphLaunch(exec, stream), cudaSuccess, "generic nodes: cudaGraphLaunch");
  checkError(cudaStreamSynchronize(stream), cudaSuccess, "generic nodes: synchronize");
  check(host[0] == 0x6B && host[kBytes - 1] == 0x6B && calls == 1, "the graph ran with the changed fill");

  // cudaGraphExecNodeSetParams changes the instantiated graph only.
  fill.memset.value = 0x7C;
  checkError(cudaGraphExecNodeSetParams(exec, fillNode, &fill), cudaSuccess, "cudaGraphExecNodeSetParams");
  checkError(cudaGraphLaunch(exec, stream), cudaSuccess, "generic nodes: launch after the exec update");
  checkError(cudaStreamSynchronize(stream), cudaSuccess, "generic nodes: synchronize again");
  unsigned enabled = 0;
  checkError(cudaGraphNodeGetEnabled(exec, fillNode, &enabled), cudaSuccess,
             "cudaGraphNodeGetEnabled (memset)");
  check(enabled == 1, "a memset node is enabled");
  checkError(cudaGraphNodeGetEnabled(exec, hostNode, &enabled), cudaErrorInvalidValue,
             "cudaGraphNodeGetEnabled of a host node refused, as natively");
  check(host[0] == 0x7C && calls == 2, "the executable graph ran with its new fill");

  // Refusals, each changing nothing.
  checkError(cudaGraphNodeSetParams(fillNode, &callback), cudaErrorInvalidValue,
             "cudaGraphNodeSetParams with another node type's parameters");
  cudaGraphNodeParams reserved = fill;
  reserved.reserved0[1] = 1;
  cudaGraphNode_t refused = nullptr;
  checkError(cudaGraphAddNode(&refused, graph, nullptr, nullptr, 0, &reserved), cudaErrorInvalidValue,
             "cudaGraphAddNode with a reserved member set");
  cudaGraphNodeParams conditional{};
  conditional.type = cudaGraphNodeTypeConditional;  // on no handle of this graph
  checkError(cudaGraphAddNode(&refused, graph, nullptr, nullptr, 0, &conditional), cudaErrorInvalidValue,
             "cudaGraphAddNode (conditional) on a handle the graph does not have");
  cudaGraphNodeParams semaphore{};
  semaphore.type = cudaGraphNodeTypeExtSemaphoreSignal;
  checkError(cudaGraphAddNode(&refused, graph, nullptr, nullptr, 0, &semaphore), cudaErrorNotSupported,
             "cudaGraphAddNode (external semaphore)");
  cudaGraphEdgeData programmatic{};
  programmatic.type = cudaGraphDependencyTypeProgrammatic;
  checkError(cudaGraphAddNode(&refused, graph, &fillNode, &programmatic, 1, &fill), cudaErrorNotSupported,
             "cudaGraphAddNode with a programmatic edge");
  checkError(cudaGraphAddNode(&refused, graph, nullptr, nullptr, 0, nullptr), cudaErrorInvalidValue,
             "cudaGraphAddNode without parameters");
  size_t nodes = 0;
  checkError(cudaGraphGetNodes(graph, nullptr, &nodes), cudaSuccess, "generic nodes: cudaGraphGetNodes");
  check(nodes == 3, "the refused nodes were not added");

  // The graph as DOT, into a file of the program's own.
  char dotPath[] = "/tmp/agileos-e2e-graph-XXXXXX";
  const int dotFile = mkstemp(dotPath);
  check(dotFile >= 0, "generic nodes: a scratch file for the DOT output");
  close(dotFile);
  checkError(cudaGraphDebugDotPrint(graph, dotPath, cudaGraphDebugDotFlagsVerbose), cudaSuccess,
             "cudaGraphDebugDotPrint");
  std::string dot;
  if (FILE* in = std::fopen(dotPath, "r")) {
    char buffer[4096];
    for (size_t got; (got = std::fread(buffer, 1, sizeof buffer, in)) > 0;) dot.append(buffer, got);
    std::fclose(in);
  }
  unlink(dotPath);
  check(dot.starts_with("digraph") && dot.find("memset") != std::string::npos &&
            dot.find("host") != std::string::npos && dot.find("n0 -> n1") != std::string::npos &&
            dot.find("n1 -> n2") != std::string::npos,
        "the DOT file has the three nodes and their two edges");
  checkError(cudaGraphDebugDotPrint(graph, "/nonexistent-dir/graph.dot", 0), cudaErrorOperatingSystem,
             "cudaGraphDebugDotPrint to a path that cannot be written");

  // A user object the graph holds (moved in) lives as long as the graph and its executable graph.
  static std::atomic<int> destroyed{0};
  cudaUserObject_t object = nullptr;
  checkError(cudaUserObjectCreate(
                 &object, &destroyed, [](void* counter) { ++*static_cast<std::atomic<int>*>(counter); }, 1,
                 cudaUserObjectNoDestructorSync),
             cudaSuccess, "cudaUserObjectCreate");
  checkError(cudaUserObjectCreate(
                 nullptr, &destroyed, [](void* counter) { ++*static_cast<std::atomic<int>*>(counter); }, 1,
                 cudaUserObjectNoDestructorSync),
             cudaErrorInvalidValue, "cudaUserObjectCreate without an output");
  checkError(cudaGraphRetainUserObject(graph, object, 1, 2), cudaErrorInvalidValue,
             "cudaGraphRetainUserObject with an unknown flag");
  checkError(cudaGraphRetainUserObject(graph, object, 1, cudaGraphUserObjectMove), cudaSuccess,
             "cudaGraphRetainUserObject (move)");
  cudaGraphExec_t holder = nullptr;
  checkError(cudaGraphInstantiate(&holder, graph, 0), cudaSuccess, "generic nodes: instantiate the holder");
  checkError(cudaGraphExecDestroy(exec), cudaSuccess, "generic nodes: cudaGraphExecDestroy");
  checkError(cudaGraphDestroy(graph), cudaSuccess, "generic nodes: cudaGraphDestroy");
  checkError(cudaUserObjectRelease(object, 2), cudaErrorInvalidValue,
             "cudaUserObjectRelease of more than it has");
  check(destroyed.load() == 0, "the executable graph still holds the user object");
  checkError(cudaGraphExecDestroy(holder), cudaSuccess, "generic nodes: destroy the holder");
  for (int i = 0; i < 2000 && destroyed.load() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  check(destroyed.load() == 1, "its destructor ran once the last holder went");
  checkError(cudaFree(device), cudaSuccess, "generic nodes: cudaFree");
}

// cudaMemcpyBatchAsync: a host-to-device, a device-to-device and a device-to-host copy in one batch,
// two attribute groups (the last reading its source during the call), and the refusals.
void checkBatchCopies(cudaStream_t stream) {
  constexpr size_t kBytes = 4096;
  void* first = nullptr;
  void* second = nullptr;
  checkError(cudaMalloc(&first, kBytes), cudaSuccess, "batch: cudaMalloc");
  checkError(cudaMalloc(&second, kBytes), cudaSuccess, "batch: cudaMalloc");
  std::vector<unsigned char> in(kBytes), out(kBytes, 0);
  for (size_t i = 0; i < kBytes; ++i) in[i] = static_cast<unsigned char>(i * 7 + 3);
  void* dsts[] = {first, second, out.data()};
  const void* srcs[] = {in.data(), first, second};
  size_t sizes[] = {kBytes, kBytes, kBytes};
  cudaMemcpyAttributes attrs[2]{};
  attrs[0].srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  attrs[1].srcAccessOrder = cudaMemcpySrcAccessOrderDuringApiCall;
  attrs[1].flags = cudaMemcpyFlagPreferOverlapWithCompute;
  size_t indices[] = {0, 2};
  checkError(cudaMemcpyBatchAsync(dsts, srcs, sizes, 3, attrs, indices, 2, stream), cudaSuccess,
             "cudaMemcpyBatchAsync");
  checkError(cudaCtxResetPersistingL2Cache(), cudaSuccess,
             "cudaCtxResetPersistingL2Cache (reaches the worker)");
  check(out == in, "the batch moved the bytes host to device to device to host, done at return");
  checkError(cudaMemcpyBatchAsync(dsts, srcs, sizes, 3, attrs, indices, 2, nullptr), cudaErrorInvalidValue,
             "cudaMemcpyBatchAsync on the legacy stream");
  size_t badIndices[] = {1, 2};
  checkError(cudaMemcpyBatchAsync(dsts, srcs, sizes, 3, attrs, badIndices, 2, stream), cudaErrorInvalidValue,
             "cudaMemcpyBatchAsync whose first attribute does not start at copy 0");
  attrs[0].srcAccessOrder = cudaMemcpySrcAccessOrderInvalid;
  checkError(cudaMemcpyBatchAsync(dsts, srcs, sizes, 3, attrs, indices, 2, stream), cudaErrorInvalidValue,
             "cudaMemcpyBatchAsync with an invalid source access order");
  cudaGetLastError();
  checkError(cudaFree(first), cudaSuccess, "batch: cudaFree");
  checkError(cudaFree(second), cudaSuccess, "batch: cudaFree");
}

// CUDA arrays through the shim and the worker (fake GPU): a 2D array written from padded host rows
// and read back, a 3D array filled with cudaMemcpy3D and copied to pitched device memory, a
// mipmapped array's level, texture and surface objects, the queries, and refusals. The 2D array
// is large enough (2 MiB rows x 24) that its copies are split into several messages.
void checkArrays() {
  constexpr size_t kWidth = 1 << 16, kHeight = 24;  // floats: 256 KiB rows, 6 MiB
  const cudaChannelFormatDesc desc = cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindFloat);
  cudaArray_t array = nullptr;
  checkError(cudaMallocArray(&array, &desc, kWidth, kHeight, cudaArraySurfaceLoadStore), cudaSuccess,
             "cudaMallocArray");
  const size_t hostPitch = kWidth + 3;
  std::vector<float> host(hostPitch * kHeight, -1.f), back(host.size(), -2.f);
  for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i % 1009);
  checkError(cudaMemcpy2DToArray(array, 0, 0, host.data(), hostPitch * sizeof(float), kWidth * sizeof(float),
                                 kHeight, cudaMemcpyHostToDevice),
             cudaSuccess, "cudaMemcpy2DToArray");
  checkError(cudaMemcpy2DFromArray(back.data(), hostPitch * sizeof(float), array, 0, 0,
                                   kWidth * sizeof(float), kHeight, cudaMemcpyDeviceToHost),
             cudaSuccess, "cudaMemcpy2DFromArray");
  bool same = true;
  for (size_t y = 0; y < kHeight; ++y)
    for (size_t x = 0; x < kWidth; ++x) same &= back[y * hostPitch + x] == host[y * hostPitch + x];
  for (size_t y = 0; y < kHeight; ++y) same &= back[y * hostPitch + kWidth] == -2.f;
  check(same, "2D array round trip through padded host rows, padding untouched");
  cudaChannelFormatDesc got{};
  cudaExtent extent{};
  unsigned flags = 0;
  checkError(cudaArrayGetInfo(&got, &extent, &flags, array), cudaSuccess, "cudaArrayGetInfo");
  check(got.x == 32 && got.f == cudaChannelFormatKindFloat && extent.width == kWidth &&
            extent.height == kHeight && flags == cudaArraySurfaceLoadStore,
        "cudaArrayGetInfo answers what the array was made with");
  checkError(cudaMemcpy2DToArray(array, 4, kHeight - 1, host.data(), kWidth * sizeof(float),
                                 kWidth * sizeof(float), 1, cudaMemcpyHostToDevice),
             cudaErrorInvalidValue, "cudaMemcpy2DToArray one element past the row");
  checkError(cudaMemcpy2DToArray(array, 0, kHeight, host.data(), 4, 4, 1, cudaMemcpyHostToDevice),
             cudaErrorInvalidValue, "cudaMemcpy2DToArray one row past the array");

  // Objects over it.
  cudaResourceDesc resource{};
  resource.resType = cudaResourceTypeArray;
  resource.res.array.array = array;
  cudaTextureDesc texture{};
  texture.filterMode = cudaFilterModePoint;
  cudaTextureObject_t tex = 0;
  checkError(cudaCreateTextureObject(&tex, &resource, &texture, nullptr), cudaSuccess,
             "cudaCreateTextureObject");
  cudaSurfaceObject_t surface = 0;
  checkError(cudaCreateSurfaceObject(&surface, &resource), cudaSuccess, "cudaCreateSurfaceObject");
  cudaResourceDesc resourceBack{};
  checkError(cudaGetTextureObjectResourceDesc(&resourceBack, tex), cudaSuccess,
             "cudaGetTextureObjectResourceDesc");
  check(resourceBack.res.array.array == array, "the texture's resource is the array");
  checkError(cudaDestroyTextureObject(tex + 1000), cudaErrorInvalidValue, "cudaDestroyTextureObject(forged)");
  checkError(cudaDestroyTextureObject(tex), cudaSuccess, "cudaDestroyTextureObject");
  checkError(cudaDestroySurfaceObject(surface), cudaSuccess, "cudaDestroySurfaceObject");

  // A linear texture longer than its allocation is made (as natively), viewing only the
  // allocation; one that starts outside every allocation is refused by the worker.
  void* linear = nullptr;
  checkError(cudaMalloc(&linear, 4096), cudaSuccess, "cudaMalloc for a linear texture");
  cudaResourceDesc past{};
  past.resType = cudaResourceTypeLinear;
  past.res.linear.devPtr = linear;
  past.res.linear.desc = desc;
  past.res.linear.sizeInBytes = 8192;
  checkError(cudaCreateTextureObject(&tex, &past, &texture, nullptr), cudaSuccess,
             "cudaCreateTextureObject longer than its allocation (clamped to it)");
  checkError(cudaDestroyTextureObject(tex), cudaSuccess, "cudaDestroyTextureObject(clamped)");
  void* gone = nullptr;
  checkError(cudaMalloc(&gone, 4096), cudaSuccess, "cudaMalloc to free at once");
  checkError(cudaFree(gone), cudaSuccess, "cudaFree");
  past.res.linear.devPtr = gone;
  checkError(cudaCreateTextureObject(&tex, &past, &texture, nullptr), cudaErrorInvalidValue,
             "cudaCreateTextureObject over freed memory");
  // What the runtime refuses before the driver sees it, as natively: 32-bit integers read as
  // normalized floats, integers read as they are with linear filtering.
  cudaResourceDesc ints{};
  ints.resType = cudaResourceTypeLinear;
  ints.res.linear.devPtr = linear;
  ints.res.linear.desc = cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindSigned);
  ints.res.linear.sizeInBytes = 4096;
  cudaTextureDesc normalized{};
  normalized.readMode = cudaReadModeNormalizedFloat;
  checkError(cudaCreateTextureObject(&tex, &ints, &normalized, nullptr), cudaErrorInvalidNormSetting,
             "int32 read as normalized float refused");
  cudaTextureDesc filtered{};
  filtered.filterMode = cudaFilterModeLinear;
  checkError(cudaCreateTextureObject(&tex, &ints, &filtered, nullptr), cudaErrorInvalidFilterSetting,
             "int32 read as it is, filtered linearly, refused");
  ints.res.linear.desc = cudaCreateChannelDesc(8, 0, 0, 0, cudaChannelFormatKindUnsigned);
  filtered.readMode = cudaReadModeNormalizedFloat;
  checkError(cudaCreateTextureObject(&tex, &ints, &filtered, nullptr), cudaSuccess,
             "bytes read as normalized floats, filtered linearly");
  checkError(cudaDestroyTextureObject(tex), cudaSuccess, "cudaDestroyTextureObject(bytes)");

  // 3D: host -> array -> pitched device memory -> host.
  cudaArray_t volume = nullptr;
  checkError(cudaMalloc3DArray(&volume, &desc, cudaExtent{16, 8, 4}, 0), cudaSuccess, "cudaMalloc3DArray");
  std::vector<float> cube(16 * 8 * 4), cubeBack(cube.size(), 0.f);
  for (size_t i = 0; i < cube.size(); ++i) cube[i] = static_cast<float>(i);
  cudaMemcpy3DParms up{};
  up.srcPtr = cudaPitchedPtr{cube.data(), 16 * sizeof(float), 16, 8};
  up.dstArray = volume;
  up.extent = cudaExtent{16, 8, 4};
  up.kind = cudaMemcpyHostToDevice;
  checkError(cudaMemcpy3D(&up), cudaSuccess, "cudaMemcpy3D to a 3D array");
  cudaPitchedPtr device{};
  checkError(cudaMalloc3D(&device, cudaExtent{16 * sizeof(float), 8, 4}), cudaSuccess,
             "cudaMalloc3D for arrays");
  cudaMemcpy3DParms across{};
  across.srcArray = volume;
  across.dstPtr = device;
  across.extent = cudaExtent{16, 8, 4};
  across.kind = cudaMemcpyDeviceToDevice;
  checkError(cudaMemcpy3D(&across), cudaSuccess, "cudaMemcpy3D array to pitched device memory");
  cudaMemcpy3DParms down{};
  down.srcPtr = device;
  down.dstPtr = cudaPitchedPtr{cubeBack.data(), 16 * sizeof(float), 16, 8};
  down.extent = cudaExtent{16 * sizeof(float), 8, 4};
  down.kind = cudaMemcpyDeviceToHost;
  checkError(cudaMemcpy3D(&down), cudaSuccess, "cudaMemcpy3D pitched device memory to host");
  check(cube == cubeBack, "3D array round trip");
  cudaMemcpy3DParms tooDeep = up;
  tooDeep.extent = cudaExtent{16, 8, 5};
  checkError(cudaMemcpy3D(&tooDeep), cudaErrorInvalidValue, "cudaMemcpy3D one slice past the array");

  // A mipmapped array's level.
  cudaMipmappedArray_t mipmapped = nullptr;
  checkError(cudaMallocMipmappedArray(&mipmapped, &desc, cudaExtent{32, 32, 0}, 3, 0), cudaSuccess,
             "cudaMallocMipmappedArray");
  cudaArray_t level = nullptr;
  checkError(cudaGetMipmappedArrayLevel(&level, mipmapped, 2), cudaSuccess, "cudaGetMipmappedArrayLevel");
  checkError(cudaArrayGetInfo(nullptr, &extent, nullptr, level), cudaSuccess, "cudaArrayGetInfo of a level");
  check(extent.width == 8 && extent.height == 8, "level 2 of 32x32 is 8x8");
  checkError(cudaFreeArray(level), cudaErrorInvalidValue, "cudaFreeArray of a level");
  checkError(cudaFreeMipmappedArray(mipmapped), cudaSuccess, "cudaFreeMipmappedArray");

  checkError(cudaFreeArray(reinterpret_cast<cudaArray_t>(0x1234)), cudaErrorInvalidValue,
             "cudaFreeArray(forged)");
  checkError(cudaFreeArray(array), cudaSuccess, "cudaFreeArray");
  checkError(cudaFreeArray(volume), cudaSuccess, "cudaFreeArray 3D");
  checkError(cudaFree(device.ptr), cudaSuccess, "cudaFree for arrays");
  checkError(cudaFree(linear), cudaSuccess, "cudaFree linear");
}

// Stream attributes: the access policy window over the client's memory is set and read back
// (confined to its allocation), one over memory the client does not hold is refused, the
// synchronization policy round-trips, attributes copy between streams, forged streams are refused.
void checkStreamAttributes(cudaStream_t stream, void* device, size_t bytes) {
  cudaStreamAttrValue value{};
  value.accessPolicyWindow.base_ptr = device;
  value.accessPolicyWindow.num_bytes = bytes * 2;  // past the allocation: confined to it
  value.accessPolicyWindow.hitRatio = 0.75f;
  value.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
  value.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
  checkError(cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &value), cudaSuccess,
             "cudaStreamSetAttribute(access policy window)");
  cudaStreamAttrValue back{};
  checkError(cudaStreamGetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &back), cudaSuccess,
             "cudaStreamGetAttribute(access policy window)");
  check(back.accessPolicyWindow.base_ptr == device && back.accessPolicyWindow.num_bytes == bytes &&
            back.accessPolicyWindow.hitRatio == 0.75f &&
            back.accessPolicyWindow.hitProp == cudaAccessPropertyPersisting &&
            back.accessPolicyWindow.missProp == cudaAccessPropertyStreaming,
        "the window reads back, confined to its allocation");
  cudaStreamAttrValue foreign = value;
  foreign.accessPolicyWindow.base_ptr = reinterpret_cast<void*>(0x10000);
  checkError(cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &foreign),
             cudaErrorInvalidValue, "an access policy window over memory the client does not hold");
  cudaStreamAttrValue badRatio = value;
  badRatio.accessPolicyWindow.hitRatio = 2.f;
  checkError(cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &badRatio),
             cudaErrorInvalidValue, "a hit ratio above 1");
  cudaStreamAttrValue policy{};
  policy.syncPolicy = cudaSyncPolicyYield;
  checkError(cudaStreamSetAttribute(stream, cudaStreamAttributeSynchronizationPolicy, &policy), cudaSuccess,
             "cudaStreamSetAttribute(synchronization policy)");
  cudaStream_t other = nullptr;
  checkError(cudaStreamCreate(&other), cudaSuccess, "cudaStreamCreate for attributes");
  checkError(cudaStreamCopyAttributes(other, stream), cudaSuccess, "cudaStreamCopyAttributes");
  cudaStreamAttrValue copied{};
  checkError(cudaStreamGetAttribute(other, cudaStreamAttributeSynchronizationPolicy, &copied), cudaSuccess,
             "cudaStreamGetAttribute(copied policy)");
  check(copied.syncPolicy == cudaSyncPolicyYield, "the policy was copied");
  checkError(cudaStreamGetAttribute(other, cudaStreamAttributeAccessPolicyWindow, &copied), cudaSuccess,
             "cudaStreamGetAttribute(copied window)");
  check(copied.accessPolicyWindow.base_ptr == device, "the window was copied");
  checkError(cudaStreamDestroy(other), cudaSuccess, "cudaStreamDestroy");
  // A priority set as an attribute is the stream's priority from then on, as natively.
  cudaStream_t prioritized = nullptr;
  checkError(cudaStreamCreateWithPriority(&prioritized, cudaStreamNonBlocking, -2), cudaSuccess,
             "cudaStreamCreateWithPriority(-2)");
  cudaStreamAttrValue leastPriority{};
  leastPriority.priority = 0;
  checkError(cudaStreamSetAttribute(prioritized, cudaStreamAttributePriority, &leastPriority), cudaSuccess,
             "cudaStreamSetAttribute(priority 0)");
  int priorityNow = -100;
  checkError(cudaStreamGetPriority(prioritized, &priorityNow), cudaSuccess, "cudaStreamGetPriority");
  check(priorityNow == 0, "the stream's priority is the attribute's");
  checkError(cudaStreamDestroy(prioritized), cudaSuccess, "cudaStreamDestroy(prioritized)");
  checkError(cudaStreamSetAttribute(reinterpret_cast<cudaStream_t>(0xdeadbeefull),
                                    cudaStreamAttributeSynchronizationPolicy, &policy),
             cudaErrorInvalidResourceHandle, "a forged stream's attribute");
  checkError(cudaStreamSetAttribute(stream, cudaStreamAttributeSynchronizationPolicy, nullptr),
             cudaErrorInvalidValue, "no value");
}

void checkDeviceSettings() {
  cudaFuncCache config = cudaFuncCachePreferL1;
  checkError(cudaDeviceGetCacheConfig(&config), cudaSuccess, "cudaDeviceGetCacheConfig");
  check(config == cudaFuncCachePreferNone, "cache configuration starts as PreferNone");
  checkError(cudaDeviceSetCacheConfig(cudaFuncCachePreferShared), cudaSuccess, "cudaDeviceSetCacheConfig");
  checkError(cudaDeviceGetCacheConfig(&config), cudaSuccess, "cudaDeviceGetCacheConfig after set");
  check(config == cudaFuncCachePreferShared, "cache configuration read back");
  checkError(cudaDeviceSetCacheConfig(static_cast<cudaFuncCache>(9)), cudaErrorInvalidValue,
             "cudaDeviceSetCacheConfig(bad value)");
  checkError(cudaDeviceSetCacheConfig(cudaFuncCachePreferNone), cudaSuccess, "cudaDeviceSetCacheConfig back");
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // deprecated, still exported and called
  cudaSharedMemConfig banks = cudaSharedMemBankSizeEightByte;
  checkError(cudaDeviceSetSharedMemConfig(cudaSharedMemBankSizeEightByte), cudaSuccess,
             "cudaDeviceSetSharedMemConfig(eight bytes): nothing to do on fixed banks");
  checkError(cudaDeviceGetSharedMemConfig(&banks), cudaSuccess, "cudaDeviceGetSharedMemConfig");
  check(banks == cudaSharedMemBankSizeFourByte, "the fixed bank size, four bytes");
  checkError(cudaDeviceSetSharedMemConfig(static_cast<cudaSharedMemConfig>(3)), cudaErrorInvalidValue,
             "cudaDeviceSetSharedMemConfig(no such setting)");
  checkError(cudaDeviceGetSharedMemConfig(nullptr), cudaErrorInvalidValue,
             "cudaDeviceGetSharedMemConfig(null)");
  check(cudaFuncSetSharedMemConfig(reinterpret_cast<const void*>(&hostFunction),
                                   cudaSharedMemBankSizeDefault) != cudaSuccess,
        "cudaFuncSetSharedMemConfig of a host function refused");
  cudaGetLastError();
#pragma GCC diagnostic pop
  checkError(cudaProfilerStart(), cudaSuccess, "cudaProfilerStart");
  checkError(cudaProfilerStop(), cudaSuccess, "cudaProfilerStop");
  const char* name = nullptr;
  checkError(cudaFuncGetName(&name, reinterpret_cast<const void*>(&hostFunction)),
             cudaErrorInvalidResourceHandle, "cudaFuncGetName of a host function");
  checkError(cudaFuncGetName(nullptr, reinterpret_cast<const void*>(&hostFunction)), cudaErrorInvalidValue,
             "cudaFuncGetName(null)");
}

// Stream-ordered allocation through the runtime shim, the session and the worker.
void checkStreamOrderedAllocation(cudaStream_t stream) {
  int supported = 0;
  checkError(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, 0), cudaSuccess,
             "cudaDevAttrMemoryPoolsSupported");
  check(supported == 1, "the device reports memory pools");
  void* p = nullptr;
  checkError(cudaMallocAsync(&p, 4096, stream), cudaSuccess, "cudaMallocAsync");
  check(p != nullptr, "cudaMallocAsync gave an address");
  std::vector<unsigned char> bytes(4096, 0x3c), back(4096);
  checkError(cudaMemcpyAsync(p, bytes.data(), bytes.size(), cudaMemcpyHostToDevice, stream), cudaSuccess,
             "copy into a stream-ordered allocation");
  checkError(cudaMemcpyAsync(back.data(), p, back.size(), cudaMemcpyDeviceToHost, stream), cudaSuccess,
             "copy out of it");
  checkError(cudaStreamSynchronize(stream), cudaSuccess, "synchronize");
  check(bytes == back, "a stream-ordered allocation holds its bytes");
  cudaMemPool_t pool = nullptr;
  checkError(cudaDeviceGetDefaultMemPool(&pool, 0), cudaSuccess, "cudaDeviceGetDefaultMemPool");
  std::uint64_t used = 0;
  checkError(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used), cudaSuccess,
             "UsedMemCurrent");
  check(used == 4096, "the default pool uses what was allocated from it");
  checkError(cudaFreeAsync(p, stream), cudaSuccess, "cudaFreeAsync");
  checkError(cudaFreeAsync(p, stream), cudaErrorInvalidValue, "a second cudaFreeAsync is refused");
  checkError(cudaFree(p), cudaErrorInvalidValue, "cudaFree after cudaFreeAsync is refused");
  checkError(cudaStreamSynchronize(stream), cudaSuccess, "synchronize after the free");
  checkError(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used), cudaSuccess,
             "UsedMemCurrent after the free");
  check(used == 0, "the free ran");
  checkError(cudaFreeAsync(reinterpret_cast<void*>(0xF0000000000ull), stream), cudaErrorInvalidValue,
             "cudaFreeAsync of the I/O aperture is refused");
  checkError(
      cudaMemPoolGetAttribute(reinterpret_cast<cudaMemPool_t>(&used), cudaMemPoolAttrUsedMemCurrent, &used),
      cudaErrorInvalidValue, "a forged pool handle is refused");
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location = {cudaMemLocationTypeDevice, 0};
  props.handleTypes = cudaMemHandleTypePosixFileDescriptor;
  cudaMemPool_t exported = nullptr;
  checkError(cudaMemPoolCreate(&exported, &props), cudaErrorNotSupported, "an exportable pool is refused");
  props.handleTypes = cudaMemHandleTypeNone;
  cudaMemPool_t own = nullptr;
  checkError(cudaMemPoolCreate(&own, &props), cudaSuccess, "cudaMemPoolCreate");
  checkError(cudaMallocFromPoolAsync(&p, 1024, own, stream), cudaSuccess, "cudaMallocFromPoolAsync");
  checkError(cudaFreeAsync(p, stream), cudaSuccess, "free from the explicit pool");
  checkError(cudaMemPoolDestroy(own), cudaSuccess, "cudaMemPoolDestroy");
  checkError(cudaMemPoolDestroy(pool), cudaErrorInvalidValue, "the default pool cannot be destroyed");
}

}  // namespace

int main() {
  int count = 0;
  checkError(cudaGetDeviceCount(&count), cudaSuccess, "cudaGetDeviceCount");
  check(count == 1, "one device");
  cudaDeviceProp prop{};
  checkError(cudaGetDeviceProperties(&prop, 0), cudaSuccess, "cudaGetDeviceProperties");
  check(prop.major >= 7 && prop.name[0] != '\0', "device properties filled");
  checkError(cudaSetDevice(1), cudaErrorInvalidDevice, "cudaSetDevice(1) refused");

  // Round trips.
  constexpr size_t kBytes = 1 << 20;
  std::vector<unsigned char> in(kBytes), out(kBytes);
  for (size_t i = 0; i < kBytes; ++i) in[i] = static_cast<unsigned char>(i * 7 + 3);
  void* a = nullptr;
  void* b = nullptr;
  checkError(cudaMalloc(&a, kBytes), cudaSuccess, "cudaMalloc a");
  checkError(cudaMalloc(&b, kBytes), cudaSuccess, "cudaMalloc b");
  check(reinterpret_cast<uintptr_t>(a) % 256 == 0, "allocation is 256-byte aligned");
  checkError(cudaMemcpy(a, in.data(), kBytes, cudaMemcpyHostToDevice), cudaSuccess, "H2D");
  checkError(cudaMemcpy(b, a, kBytes, cudaMemcpyDeviceToDevice), cudaSuccess, "D2D");
  checkError(cudaMemcpy(out.data(), b, kBytes, cudaMemcpyDeviceToHost), cudaSuccess, "D2H");
  check(in == out, "bytes survive H2D, D2D, D2H");
  checkError(cudaMemset(static_cast<char*>(a) + 100, 0x5a, 1000), cudaSuccess, "memset interior");
  checkError(cudaMemcpy(out.data(), a, kBytes, cudaMemcpyDefault), cudaSuccess, "D2H via cudaMemcpyDefault");
  bool memsetOk = out[99] == in[99] && out[100] == 0x5a && out[1099] == 0x5a && out[1100] == in[1100];
  check(memsetOk, "memset wrote exactly its range");

  // Large copy: several transport chunks.
  constexpr size_t kLarge = 80u << 20;
  std::vector<unsigned char> big(kLarge), back(kLarge);
  for (size_t i = 0; i < kLarge; ++i) big[i] = static_cast<unsigned char>(i ^ (i >> 13));
  void* large = nullptr;
  checkError(cudaMalloc(&large, kLarge), cudaSuccess, "cudaMalloc 80 MiB");
  checkError(cudaMemcpy(large, big.data(), kLarge, cudaMemcpyHostToDevice), cudaSuccess, "H2D 80 MiB");
  checkError(cudaMemcpy(back.data(), large, kLarge, cudaMemcpyDeviceToHost), cudaSuccess, "D2H 80 MiB");
  check(big == back, "80 MiB round trip");

  // Pinned host memory and async copies on a stream with events.
  void* pinned = nullptr;
  checkError(cudaMallocHost(&pinned, kBytes), cudaSuccess, "cudaMallocHost");
  cudaStream_t stream = nullptr;
  checkError(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess, "cudaStreamCreate");
  cudaEvent_t start = nullptr, stop = nullptr;
  checkError(cudaEventCreate(&start), cudaSuccess, "cudaEventCreate start");
  checkError(cudaEventCreate(&stop), cudaSuccess, "cudaEventCreate stop");
  checkError(cudaEventRecord(start, stream), cudaSuccess, "cudaEventRecord start");
  std::memcpy(pinned, in.data(), kBytes);
  checkError(cudaMemcpyAsync(b, pinned, kBytes, cudaMemcpyHostToDevice, stream), cudaSuccess, "async H2D");
  // A copy from pinned memory may still be reading it when cudaMemcpyAsync returns.
  checkError(cudaStreamSynchronize(stream), cudaSuccess, "cudaStreamSynchronize after H2D");
  std::memset(pinned, 0, kBytes);
  checkError(cudaMemcpyAsync(pinned, b, kBytes, cudaMemcpyDeviceToHost, stream), cudaSuccess, "async D2H");
  checkError(cudaEventRecord(stop, stream), cudaSuccess, "cudaEventRecord stop");
  checkError(cudaStreamSynchronize(stream), cudaSuccess, "cudaStreamSynchronize");
  check(std::memcmp(pinned, in.data(), kBytes) == 0, "pinned async round trip");
  float ms = -1;
  checkError(cudaEventElapsedTime(&ms, start, stop), cudaSuccess, "cudaEventElapsedTime");
  unsigned flags = 99;
  checkError(cudaStreamGetFlags(stream, &flags), cudaSuccess, "cudaStreamGetFlags");
  check(flags == cudaStreamNonBlocking, "stream flags remembered");

  // 2D copies.
  void* pitched = nullptr;
  size_t pitch = 0;
  checkError(cudaMallocPitch(&pitched, &pitch, 100, 8), cudaSuccess, "cudaMallocPitch");
  check(pitch >= 100 && pitch % 256 == 0, "pitch is aligned");
  std::vector<unsigned char> rows(100 * 8), rowsBack(100 * 8, 0);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<unsigned char>(i);
  checkError(cudaMemcpy2D(pitched, pitch, rows.data(), 100, 100, 8, cudaMemcpyHostToDevice), cudaSuccess,
             "cudaMemcpy2D H2D");
  checkError(cudaMemcpy2D(rowsBack.data(), 100, pitched, pitch, 100, 8, cudaMemcpyDeviceToHost), cudaSuccess,
             "cudaMemcpy2D D2H");
  check(rows == rowsBack, "2D round trip");

  // Refusals: each is an error and changes nothing.
  char byte = 0;
  checkError(cudaMemcpy(reinterpret_cast<void*>(0xF0000000000ull), &byte, 1, cudaMemcpyHostToDevice),
             cudaErrorInvalidValue, "write into the I/O aperture refused");
  checkError(cudaMemcpy(&byte, reinterpret_cast<void*>(0xF1000000100ull), 1, cudaMemcpyDeviceToHost),
             cudaErrorInvalidValue, "read from the module range refused");
  checkError(cudaMemset(static_cast<char*>(a) + kBytes - 10, 0, 11), cudaErrorInvalidValue,
             "memset one byte past the end refused");
  char source[64] = {};
  checkError(cudaMemcpy(reinterpret_cast<void*>(~0ull - 4), source, sizeof source, cudaMemcpyHostToDevice),
             cudaErrorInvalidValue, "wrapping range refused");
  checkError(cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(0x1234567890ull)),
             cudaErrorInvalidResourceHandle, "forged stream refused");
  checkError(cudaEventSynchronize(reinterpret_cast<cudaEvent_t>(0xdeadbeefull)),
             cudaErrorInvalidResourceHandle, "forged event refused");
  checkError(cudaFree(static_cast<char*>(a) + 256), cudaErrorInvalidValue,
             "free of an interior pointer refused");
  checkError(cudaMemcpy(out.data(), a, 16, cudaMemcpyDeviceToHost), cudaSuccess, "allocation still usable");
  checkError(cudaFree(a), cudaSuccess, "cudaFree");
  checkError(cudaMemcpy(out.data(), a, 16, cudaMemcpyDeviceToHost), cudaErrorInvalidValue,
             "use after free refused");
  checkError(cudaFree(a), cudaErrorInvalidValue, "double free refused");

  // Last-error semantics.
  cudaMemcpy(&byte, reinterpret_cast<void*>(0xF0000000000ull), 1, cudaMemcpyDeviceToHost);
  check(cudaPeekAtLastError() == cudaErrorInvalidValue, "peek sees the last error");
  check(cudaGetLastError() == cudaErrorInvalidValue, "get returns the last error");
  check(cudaGetLastError() == cudaSuccess, "get cleared it");

  checkPeerAndPciIdentity(b, kBytes);
  checkStreamQueries(stream);
  checkGraphs(stream);
  checkGenericGraphNodes(stream);
  checkGraphExecUpdateLimits(stream);
  checkBatchCopies(stream);
  checkHostCallbacks(stream, b, pinned);
  check3D();
  checkArrays();
  checkStreamAttributes(stream, b, kBytes);
  checkDeviceSettings();
  checkStreamOrderedAllocation(stream);
  checkRegisteredAndManaged(b, kBytes);

  checkError(cudaStreamDestroy(stream), cudaSuccess, "cudaStreamDestroy");
  checkError(cudaStreamSynchronize(stream), cudaErrorInvalidResourceHandle, "destroyed stream is stale");
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  checkError(cudaStreamIsCapturing(stream, &status), cudaErrorInvalidResourceHandle,
             "cudaStreamIsCapturing(destroyed stream)");
  checkError(cudaFreeHost(pinned), cudaSuccess, "cudaFreeHost");
  checkError(cudaDeviceSynchronize(), cudaSuccess, "cudaDeviceSynchronize");
  size_t maxWidth = 0;
  const cudaChannelFormatDesc floats = cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindFloat);
  checkError(cudaDeviceGetTexture1DLinearMaxWidth(&maxWidth, &floats, 0), cudaErrorNotSupported,
             "unsupported call fails closed");

  std::printf("%d failed\n", agileos::e2e::failures());
  return agileos::e2e::failures() == 0 ? 0 : 1;
}
