// The worker process: command line, start-up order and shutdown, independent of
// which GpuBackend it drives (the real one in agileos-worker, a fake in tests).
//
// Command line (written by the daemon, see scheduler/):
//   --control-fd=N --endpoint=unix:PATH --device=D --worker-id=ID [--log-level=L]
//
// Start-up order: capture stdout for device printf, create the context, reserve
// the memory layout, listen for calls, then report ready. Any failure is
// reported to the daemon as WorkerFailed with its reason, and the process exits 1.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "worker/adapters/library_adapter.h"
#include "worker/backend/gpu_backend.h"

namespace agileos::worker {

// Makes the trusted library adapters the worker hosts, once its context and cache exist.
using AdapterFactory = std::function<std::vector<std::unique_ptr<LibraryAdapter>>(const AdapterEnvironment&)>;

int runWorkerProcess(int argc, char** argv, std::unique_ptr<GpuBackend> backend,
                     const AdapterFactory& adapters = {});

}  // namespace agileos::worker
