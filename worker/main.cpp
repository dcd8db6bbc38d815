// agileos-worker: a worker process on the real CUDA driver, hosting the trusted library
// adapters (cuFFT, NVRTC). Started by agileosd.
#include "worker/adapters/cufft/cufft_adapter.h"
#include "worker/adapters/nvrtc/nvrtc_adapter.h"
#include "worker/backend/cuda_gpu_backend.h"
#include "worker/worker_process.h"

namespace {

std::vector<std::unique_ptr<agileos::worker::LibraryAdapter>> makeAdapters(
    const agileos::worker::AdapterEnvironment& environment) {
  std::vector<std::unique_ptr<agileos::worker::LibraryAdapter>> adapters;
  adapters.push_back(agileos::adapters::cufft::makeCufftAdapter(environment));
  adapters.push_back(agileos::adapters::nvrtc::makeNvrtcAdapter(environment));
  return adapters;
}

}  // namespace

int main(int argc, char** argv) {
  return agileos::worker::runWorkerProcess(argc, argv, std::make_unique<agileos::worker::CudaGpuBackend>(),
                                           makeAdapters);
}
