// agileos-worker: a worker process on the real CUDA driver. Started by agileosd.
#include "worker/backend/cuda_gpu_backend.h"
#include "worker/worker_process.h"

int main(int argc, char** argv) {
  return agileos::worker::runWorkerProcess(argc, argv, std::make_unique<agileos::worker::CudaGpuBackend>());
}
