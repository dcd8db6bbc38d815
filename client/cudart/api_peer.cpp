// Peer access (cudart exports) on the one-device virtual GPU a client sees.
//
// A client has exactly one device, ordinal 0, so no device has a peer: every
// query answers as native CUDA does on a machine with one GPU (a device is not its
// own peer), and a peer copy between device 0 and itself is an ordinary
// device-to-device copy.
#include <cuda_runtime_api.h>

#include "client/session/copy_engine.h"
#include "client/session/error_state.h"
#include "client/session/streams.h"
#include "client/session/worker_calls.h"
#include "cudart_api.gen.h"  // checks the _ptsz/_ptds and __cuda* definitions

using namespace agileos::client;

namespace {

cudaError_t memcpyPeer(void* dst, int dstDevice, const void* src, int srcDevice, size_t count,
                       cudaStream_t stream, bool async) {
  if (cudaError_t error = checkDeviceOrdinal(dstDevice); error != cudaSuccess) return recordError(error);
  if (cudaError_t error = checkDeviceOrdinal(srcDevice); error != cudaSuccess) return recordError(error);
  if (count == 0) return cudaSuccess;
  CopyTarget target;
  target.async = async;
  target.returnsEarly = async;
  if (cudaError_t error = resolveStream(stream, DefaultStream::kLegacy, &target.stream);
      error != cudaSuccess) {
    return recordError(error);
  }
  return recordError(copyDeviceToDevice(reinterpret_cast<std::uint64_t>(dst),
                                        reinterpret_cast<std::uint64_t>(src), count, target));
}

}  // namespace

extern "C" {

cudaError_t cudaDeviceCanAccessPeer(int* canAccessPeer, int device, int peerDevice) {
  if (canAccessPeer == nullptr) return recordError(cudaErrorInvalidValue);
  if (cudaError_t error = checkDeviceOrdinal(device); error != cudaSuccess) return recordError(error);
  if (cudaError_t error = checkDeviceOrdinal(peerDevice); error != cudaSuccess) return recordError(error);
  *canAccessPeer = 0;  // the only valid pair is (0, 0), and a device is not its own peer
  return cudaSuccess;
}

// Every peer is either the current device itself or no device at all, and
// cudaDeviceCanAccessPeer says 0 for both: cudaErrorInvalidDevice, as documented.
cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags) {
  (void)peerDevice;
  (void)flags;
  if (cudaError_t error = checkDeviceOrdinal(0); error != cudaSuccess) return recordError(error);
  return recordError(cudaErrorInvalidDevice);
}

cudaError_t cudaDeviceDisablePeerAccess(int peerDevice) {
  (void)peerDevice;
  if (cudaError_t error = checkDeviceOrdinal(0); error != cudaSuccess) return recordError(error);
  return recordError(cudaErrorInvalidDevice);
}

// The driver answers cudaErrorInvalidDevice for a device paired with itself, and
// a one-device client has no other pair.
cudaError_t cudaDeviceGetP2PAttribute(int* value, enum cudaDeviceP2PAttr attr, int srcDevice, int dstDevice) {
  (void)attr;
  if (value == nullptr) return recordError(cudaErrorInvalidValue);
  if (cudaError_t error = checkDeviceOrdinal(srcDevice); error != cudaSuccess) return recordError(error);
  if (cudaError_t error = checkDeviceOrdinal(dstDevice); error != cudaSuccess) return recordError(error);
  return recordError(cudaErrorInvalidDevice);
}

cudaError_t cudaMemcpyPeer(void* dst, int dstDevice, const void* src, int srcDevice, size_t count) {
  return memcpyPeer(dst, dstDevice, src, srcDevice, count, nullptr, false);
}

cudaError_t cudaMemcpyPeerAsync(void* dst, int dstDevice, const void* src, int srcDevice, size_t count,
                                cudaStream_t stream) {
  return memcpyPeer(dst, dstDevice, src, srcDevice, count, stream, true);
}

}  // extern "C"
