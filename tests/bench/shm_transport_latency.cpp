// CPU microbenchmark of the call transports: round-trip latency of a small call
// (get_device_info) and the throughput of 4 MiB host-to-device copies, over gRPC and over
// the shared-memory transport, against a worker process on the fake GPU backend. It
// measures the transports, not a GPU; the GPU numbers come from agileos_bench.
//
// Usage: shm_transport_latency [--calls N] [--spin-us US]
// The worker is a forked child (a WorkerRuntime over FakeGpuBackend with both servers);
// the parent is the client. Prints one line per transport and workload.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "client/common/grpc_call_transport.h"
#include "client/common/shm_call_transport.h"
#include "memmgr/memory_manager.h"
#include "worker/device_output.h"
#include "worker/testing/fake_gpu/fake_gpu_backend.h"
#include "worker/transport/grpc_call_server.h"
#include "worker/transport/shm_call_server.h"
#include "worker/worker_runtime.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr char kToken[] = "bench-session-token-0123456789ab";

[[noreturn]] void runWorker(const std::string& grpcEndpoint, const std::string& shmPath) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  using namespace agileos::worker;
  FakeGpuBackend gpu{FakeGpuConfig{}};
  std::string error;
  if (gpu.init(0, &error) != CUDA_SUCCESS)
    std::exit((std::fprintf(stderr, "fake init: %s\n", error.c_str()), 1));
  auto memory = agileos::memmgr::MemoryManager::create(gpu, &error);
  if (!memory) std::exit((std::fprintf(stderr, "memory manager: %s\n", error.c_str()), 1));
  // As in agileos-worker: device output captured, the worker's spin policy.
  DeviceOutputCapture output;
  output.start();
  WorkerRuntime runtime(gpu, *memory, &output, nullptr);
  runtime.attach(1, kToken);
  GrpcCallServer grpcServer(runtime);
  agileos::shm::WaitPolicy policy;
  policy.spin = agileos::shm::WaitPolicy::kWorkerSpin;
  ShmCallServer shmServer(runtime, agileos::shm::RegionSizes{}, policy);
  if (!grpcServer.start(grpcEndpoint, &error) || !shmServer.start(shmPath, &error)) {
    std::fprintf(stderr, "worker: %s\n", error.c_str());
    std::exit(1);
  }
  for (;;) ::pause();  // killed by the parent
}

struct Stats {
  double p50, p99, mean;
};

Stats summarize(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  double sum = 0;
  for (double s : samples) sum += s;
  auto rank = [&](double q) {
    return samples[std::min(samples.size() - 1, static_cast<std::size_t>(q * samples.size()))];
  };
  return {rank(0.50), rank(0.99), sum / samples.size()};
}

void bench(const char* name, agileos::client::CallTransport& transport, int calls) {
  using namespace agileos;
  v1::CallRequest info;
  info.mutable_get_device_info();
  v1::CallReply reply;
  for (int i = 0; i < calls / 10; ++i) transport.call(info, &reply);  // warm-up
  std::vector<double> samples;
  samples.reserve(calls);
  for (int i = 0; i < calls; ++i) {
    const auto start = Clock::now();
    if (transport.call(info, &reply) != client::TransportStatus::kOk)
      std::exit((std::fprintf(stderr, "%s: call failed\n", name), 1));
    samples.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  const Stats small = summarize(samples);
  std::printf("%-5s get_device_info      p50 %8.2f us   p99 %8.2f us   mean %8.2f us   (%d calls)\n", name,
              small.p50, small.p99, small.mean, calls);

  v1::CallRequest alloc;
  constexpr std::uint64_t kBytes = 4 << 20;
  alloc.mutable_mem_alloc()->set_size(kBytes);
  transport.call(alloc, &reply);
  if (reply.error() != 0) std::exit((std::fprintf(stderr, "%s: alloc failed\n", name), 1));
  v1::CallRequest copy;
  auto* h = copy.mutable_memcpy_htod();
  h->set_dst(reply.device_pointer().dptr());
  h->set_total_size(kBytes);
  h->set_data(std::string(kBytes, 'x'));
  std::vector<double> copies;
  for (int i = 0; i < 40; ++i) {
    const auto start = Clock::now();
    transport.call(copy, &reply);
    if (reply.error() != 0)
      std::exit((std::fprintf(stderr, "%s: copy failed: %s\n", name, reply.error_detail().c_str()), 1));
    copies.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  const Stats big = summarize(copies);
  std::printf("%-5s memcpy_htod 4 MiB    p50 %8.1f us   throughput at p50 %6.2f GB/s\n", name, big.p50 * 1e6,
              kBytes / big.p50 / 1e9);

  // Calls sent without waiting (CallTransport::send; a plain call over gRPC): 4-byte async
  // memsets, then one call that waits; the cost per call is what the worker's loop adds to
  // each launch-like call.
  v1::CallRequest memset;
  auto* m = memset.mutable_memset();
  m->set_dst(h->dst());
  m->set_size(4);
  m->set_async(true);
  constexpr int kBatch = 10000;
  std::vector<double> perCall;
  for (int round = 0; round < 6; ++round) {
    const auto start = Clock::now();
    for (int i = 0; i < kBatch; ++i) {
      bool replied = false;
      if (transport.send(memset, &reply, &replied) != client::TransportStatus::kOk) std::exit(1);
    }
    transport.call(info, &reply);
    if (round > 0)
      perCall.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count() / kBatch);
  }
  const Stats sent = summarize(perCall);

  // A 4-byte device-to-host copy as the shim makes it over shared memory (through a staging
  // chunk), or inline over gRPC.
  std::vector<double> small4;
  for (int i = 0; i < calls; ++i) {
    const auto start = Clock::now();
    std::unique_ptr<client::StagedCalls> staged = transport.stage();
    v1::CallRequest d2h;
    auto* d = d2h.mutable_memcpy_dtoh();
    d->set_src(h->dst());
    d->set_total_size(4);
    d->set_size(4);
    if (staged) staged->describeChunk(0, 4, d->mutable_destination());
    if (staged ? staged->submit(d2h) != client::TransportStatus::kOk ||
                     staged->next(&reply) != client::TransportStatus::kOk
               : transport.call(d2h, &reply) != client::TransportStatus::kOk) {
      std::exit(1);
    }
    if (reply.error() != 0)
      std::exit((std::fprintf(stderr, "%s: d2h failed: %s\n", name, reply.error_detail().c_str()), 1));
    if (i >= calls / 10)
      small4.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  const Stats tiny = summarize(small4);
  std::printf("%-5s memcpy_dtoh 4 B      p50 %8.2f us   p99 %8.2f us\n", name, tiny.p50, tiny.p99);
  std::printf("%-5s memset sent, no wait p50 %8.2f us per call (%d calls, then one that waits)\n", name,
              sent.p50, kBatch);
}

}  // namespace

int main(int argc, char** argv) {
  int calls = 20000;
  long spinUs = 30;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--calls") == 0) calls = std::max(100, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--spin-us") == 0) spinUs = std::atol(argv[i + 1]);
  }
  char dirTemplate[] = "/tmp/agileos-shm-bench.XXXXXX";
  if (::mkdtemp(dirTemplate) == nullptr) return 1;
  const std::string dir = dirTemplate;
  const std::string grpcEndpoint = "unix:" + dir + "/worker-1.sock";
  const std::string shmPath = dir + "/worker-1.shm.sock";
  const pid_t worker = ::fork();
  if (worker == 0) runWorker(grpcEndpoint, shmPath);
  struct stat st {};
  for (int i = 0; i < 200 && ::stat(shmPath.c_str(), &st) != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(25));

  agileos::client::GrpcCallTransport grpc(grpcEndpoint, kToken);
  agileos::shm::WaitPolicy policy;
  policy.spin = std::chrono::microseconds(spinUs);
  std::string error;
  auto shmTransport = agileos::client::ShmCallTransport::connect(shmPath, kToken, policy, nullptr, &error);
  if (!shmTransport) {
    std::fprintf(stderr, "shm connect: %s\n", error.c_str());
    ::kill(worker, SIGKILL);
    return 1;
  }
  std::printf("worker: fake GPU in a child process; client spin %ld us; %u CPUs online\n", spinUs,
              std::thread::hardware_concurrency());
  bench("grpc", grpc, calls);
  bench("shm", *shmTransport, calls);
  shmTransport.reset();
  ::kill(worker, SIGKILL);
  ::waitpid(worker, nullptr, 0);
  ::unlink(shmPath.c_str());
  ::unlink(grpcEndpoint.substr(5).c_str());
  ::rmdir(dir.c_str());
  return 0;
}
