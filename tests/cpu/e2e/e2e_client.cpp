// An unmodified-style CUDA runtime program (host code only) run through the
// whole AgileOS stack on a CPU machine: shim -> agileosd -> agileos-worker-fake.
// Each check prints one line; the program exits 1 if any check fails.
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

int gFailures = 0;

void check(bool ok, const char* what) {
  std::printf("%s %s\n", ok ? "PASS" : "FAIL", what);
  if (!ok) ++gFailures;
}

void checkError(cudaError_t got, cudaError_t want, const char* what) {
  const bool ok = got == want;
  std::printf("%s %s (got %s, want %s)\n", ok ? "PASS" : "FAIL", what, cudaGetErrorName(got),
              cudaGetErrorName(want));
  if (!ok) ++gFailures;
  cudaGetLastError();  // clear it for the next check
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

  // A linear texture past its allocation is refused by the worker.
  void* linear = nullptr;
  checkError(cudaMalloc(&linear, 4096), cudaSuccess, "cudaMalloc for a linear texture");
  cudaResourceDesc past{};
  past.resType = cudaResourceTypeLinear;
  past.res.linear.devPtr = linear;
  past.res.linear.desc = desc;
  past.res.linear.sizeInBytes = 8192;
  checkError(cudaCreateTextureObject(&tex, &past, &texture, nullptr), cudaErrorInvalidValue,
             "cudaCreateTextureObject past the allocation");

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
  checkHostCallbacks(stream, b, pinned);
  check3D();
  checkArrays();
  checkDeviceSettings();
  checkStreamOrderedAllocation(stream);

  checkError(cudaStreamDestroy(stream), cudaSuccess, "cudaStreamDestroy");
  checkError(cudaStreamSynchronize(stream), cudaErrorInvalidResourceHandle, "destroyed stream is stale");
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  checkError(cudaStreamIsCapturing(stream, &status), cudaErrorInvalidResourceHandle,
             "cudaStreamIsCapturing(destroyed stream)");
  checkError(cudaFreeHost(pinned), cudaSuccess, "cudaFreeHost");
  checkError(cudaDeviceSynchronize(), cudaSuccess, "cudaDeviceSynchronize");
  checkError(cudaMallocManaged(&a, 64), cudaErrorNotSupported, "unsupported call fails closed");

  std::printf("%d failed\n", gFailures);
  return gFailures == 0 ? 0 : 1;
}
