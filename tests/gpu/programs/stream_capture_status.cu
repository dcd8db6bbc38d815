// Stream capture status with no capture in progress: every stream (created,
// non-blocking, legacy, per-thread) reports cudaStreamCaptureStatusNone through
// cudaStreamIsCapturing and cudaStreamGetCaptureInfo, and the thread's capture
// interaction mode is swapped by cudaThreadExchangeStreamCaptureMode.
#include "check.cuh"
#include "graph_names.cuh"

__global__ void spin(unsigned* out, int rounds) {
  unsigned value = threadIdx.x;
  for (int i = 0; i < rounds; ++i) value = mix32(value);
  out[threadIdx.x] = value;
}

int main() {
  cudaStream_t blocking, nonBlocking;
  CHECK_CUDA(cudaStreamCreate(&blocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&nonBlocking, cudaStreamNonBlocking));
  unsigned* out = nullptr;
  CHECK_CUDA(cudaMalloc(&out, 256 * sizeof(unsigned)));
  spin<<<1, 256, 0, blocking>>>(out, 1 << 16);  // busy or not, the stream is not capturing
  CHECK_CUDA(cudaGetLastError());

  const struct {
    const char* label;
    cudaStream_t stream;
  } streams[] = {{"created", blocking},
                 {"non-blocking", nonBlocking},
                 {"0", nullptr},
                 {"cudaStreamLegacy", cudaStreamLegacy},
                 {"cudaStreamPerThread", cudaStreamPerThread}};
  for (const auto& entry : streams) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusActive;
    CHECK_CUDA(cudaStreamIsCapturing(entry.stream, &status));
    std::printf("cudaStreamIsCapturing(%s) = %s\n", entry.label, captureStatusName(status));
    status = cudaStreamCaptureStatusActive;
    unsigned long long id = 0;
    CHECK_CUDA(cudaStreamGetCaptureInfo(entry.stream, &status, &id));
    std::printf("cudaStreamGetCaptureInfo(%s) = %s\n", entry.label, captureStatusName(status));
  }
  EXPECT_ERROR("cudaStreamIsCapturing(null status)", cudaStreamIsCapturing(blocking, nullptr),
               cudaErrorInvalidValue);

  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  CHECK_CUDA(cudaThreadExchangeStreamCaptureMode(&mode));
  std::printf("initial capture mode: %s\n", captureModeName(mode));
  mode = cudaStreamCaptureModeThreadLocal;
  CHECK_CUDA(cudaThreadExchangeStreamCaptureMode(&mode));
  std::printf("mode before ThreadLocal: %s\n", captureModeName(mode));
  mode = cudaStreamCaptureModeGlobal;
  CHECK_CUDA(cudaThreadExchangeStreamCaptureMode(&mode));
  std::printf("mode before Global: %s\n", captureModeName(mode));

  CHECK_CUDA(cudaStreamSynchronize(blocking));
  CHECK_CUDA(cudaStreamDestroy(blocking));
  CHECK_CUDA(cudaStreamDestroy(nonBlocking));
  CHECK_CUDA(cudaFree(out));
  std::printf("stream_capture_status OK\n");
  return 0;
}
