// agileos-worker-fake: a worker process on FakeGpuBackend (host-emulated GPU),
// started by agileosd in CPU end-to-end tests. TEST-ONLY: it runs no kernels.
#include "worker/testing/fake_gpu/fake_gpu_backend.h"
#include "worker/worker_process.h"

int main(int argc, char** argv) {
  return agileos::worker::runWorkerProcess(argc, argv, std::make_unique<agileos::worker::FakeGpuBackend>());
}
