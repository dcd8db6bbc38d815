// agileos-worker-fake: a worker process on FakeGpuBackend (host-emulated GPU),
// started by agileosd in CPU end-to-end tests. TEST-ONLY: it runs no kernels.
// Built twice: agileos-worker-fake loads PTX only; agileos-worker-fake-sass
// (AGILEOS_FAKE_GPU_LOADS_SASS) loads SASS-only images too.
#include "worker/testing/fake_gpu/fake_gpu_backend.h"
#include "worker/worker_process.h"

int main(int argc, char** argv) {
  agileos::worker::FakeGpuConfig config;
  // A host of four GPUs, so that one daemon serving several devices (worker.devices) can be
  // tested end to end; each worker process emulates the device it was started for.
  config.deviceCount = 4;
#ifdef AGILEOS_FAKE_GPU_LOADS_SASS
  config.acceptElfImages = true;
#endif
  return agileos::worker::runWorkerProcess(argc, argv,
                                           std::make_unique<agileos::worker::FakeGpuBackend>(config));
}
