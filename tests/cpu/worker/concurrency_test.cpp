// Calls racing each other and the release of their session.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "tests/cpu/worker/support/worker_harness.h"

namespace agileos::worker::testing {
namespace {

using memmgr::DevicePtr;
using CallStatus = WorkerRuntime::CallStatus;

// Each thread works on its own objects, so every authenticated call must succeed.
void exerciseUntilUnauthenticated(TestClient client, std::atomic<int>* failures, std::atomic<int>* calls) {
  bool released = false;
  auto step = [&](const v1::CallRequest& request, v1::CallReply* reply) {
    v1::CallReply local;
    v1::CallReply& out = reply != nullptr ? *reply : local;
    const CallStatus status = client.callStatus(request, &out);
    ++*calls;
    if (status == CallStatus::kUnauthenticated) {
      released = true;
      return false;
    }
    if (released || out.error() != 0) ++*failures;  // a call after release was served, or failed
    return true;
  };
  for (int i = 0; i < 100000 && !released; ++i) {
    v1::CallReply reply;
    if (!step(requests::memAlloc(256 + static_cast<std::uint64_t>(i % 7) * 1000), &reply)) break;
    const DevicePtr p = reply.device_pointer().dptr();
    if (!step(requests::memcpyHtoD(p, std::string(256, 'x')), nullptr)) break;
    if (!step(requests::memcpyDtoH(p, 256), nullptr)) break;
    if (!step(requests::streamCreate(), &reply)) break;
    const std::uint64_t stream = reply.token().token();
    if (!step(requests::memset(p, 1, 256, stream, true), nullptr)) break;
    if (!step(requests::streamDestroy(stream), nullptr)) break;
    if (!step(requests::memFree(p), nullptr)) break;
  }
  // Once unauthenticated, always unauthenticated.
  for (int i = 0; i < 10; ++i) {
    if (client.callStatus(requests::memAlloc(256)) != CallStatus::kUnauthenticated) ++*failures;
  }
}

TEST(WorkerConcurrency, ReleaseWhileCallsAreInFlightIsClean) {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  TestClient bystander = worker.attach(2);
  const DevicePtr kept = bystander.malloc(4096);
  bystander.write(kept, "still here");
  std::atomic<int> failures{0}, calls{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) threads.emplace_back(exerciseUntilUnauthenticated, client, &failures, &calls);
  while (calls.load() < 200) std::this_thread::yield();
  ASSERT_TRUE(worker.runtime().release(1));
  for (std::thread& thread : threads) thread.join();

  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(worker.memory().bytesInUse(1), 0u);
  EXPECT_EQ(worker.memory().table().bytesOwnedBy(1), 0u);
  EXPECT_EQ(worker.gpu().liveStreams(), 0u);
  EXPECT_EQ(bystander.read(kept, 10), "still here");
  EXPECT_TRUE(worker.gpu().misuse().empty());
}

// Runs `racing` on another thread from inside the driver call of `victimCall`
// (after the worker validated its arguments), gives it up to half a second, and
// returns whether it finished while that driver call was still pending.
bool racesInsideTheDriverCall(WorkerHarness& worker,
                              const std::function<bool(const FakeTransfer&)>& isTheCall,
                              const std::function<void()>& racing, const std::function<void()>& victimCall) {
  std::atomic<bool> racingDone{false};
  // Measured inside the driver call, after the wait: once the victim returns, the
  // racer is free to finish, so reading racingDone later would race with it.
  std::atomic<bool> overtaken{false};
  std::thread racer;
  std::once_flag once;
  worker.gpu().setBeforeTransferHook([&](const FakeTransfer& transfer) {
    if (!isTheCall(transfer)) return;
    std::call_once(once, [&] {
      racer = std::thread([&] {
        racing();
        racingDone = true;
      });
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
      while (!racingDone && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      overtaken = racingDone.load();
    });
  });
  victimCall();
  if (racer.joinable()) racer.join();
  worker.gpu().setBeforeTransferHook(nullptr);
  return overtaken.load();
}

// memmgr/memory_manager.h: "A caller that checks a pointer and then uses it must
// itself keep the client's free() from running in between (the worker serializes
// each client's calls)". A client can issue calls concurrently (the gRPC server is
// multi-threaded), so its cudaFree must not run between its copy's validation and
// the copy itself: the freed range could be mapped for another client by then.
TEST(WorkerConcurrency, AFreeCannotRunBetweenACopysValidationAndTheCopy) {
  WorkerHarness worker;
  TestClient alice = worker.attach(1);
  TestClient bob = worker.attach(2);
  constexpr std::uint64_t kSize = 4u << 20;
  const DevicePtr p = alice.malloc(kSize);
  DevicePtr bobs = 0;
  v1::CallReply copy;

  const bool overtaken = racesInsideTheDriverCall(
      worker, [&](const FakeTransfer& transfer) { return transfer.dst == p; },
      [&] {
        TestClient sameSession = alice;  // another transport thread of the same client
        v1::CallReply freed;
        sameSession.callStatus(requests::memFree(p), &freed);
        v1::CallReply allocated;
        bob.callStatus(requests::memAlloc(kSize), &allocated);
        bobs = allocated.device_pointer().dptr();
      },
      [&] { copy = alice.call(requests::memcpyHtoD(p, std::string(4096, 'A'))); });

  EXPECT_FALSE(overtaken) << "cudaFree of client 1 ran while its copy to the same memory was in the driver";
  if (bobs == p) {
    EXPECT_EQ(bob.read(bobs, 4096).find('A'), std::string::npos)
        << "client 1's copy wrote into the allocation client 2 received at the same address";
  }
  EXPECT_TRUE(worker.gpu().misuse().empty()) << worker.gpu().misuse().front();
}

// The same for handles: a stream destroyed by one call of a client while another
// of its calls is about to use it reaches the driver as a dangling CUstream (a
// use-after-free inside libcuda).
TEST(WorkerConcurrency, AStreamCannotBeDestroyedWhileACallIsUsingIt) {
  WorkerHarness worker;
  TestClient client = worker.attach(1);
  const DevicePtr p = client.malloc(4096);
  const std::uint64_t stream = client.createStream();
  v1::CallReply memset;

  const bool overtaken = racesInsideTheDriverCall(
      worker, [&](const FakeTransfer& transfer) { return transfer.kind == FakeTransfer::Kind::kMemset; },
      [&] {
        TestClient sameSession = client;
        sameSession.callStatus(requests::streamDestroy(stream));
      },
      [&] { memset = client.call(requests::memset(p, 7, 4096, stream, true)); });

  EXPECT_FALSE(overtaken) << "cudaStreamDestroy ran while a memset on that stream was in the driver";
  EXPECT_EQ(memset.error(), 0) << describe(memset);
  const auto misuse = worker.gpu().misuse();
  EXPECT_TRUE(misuse.empty()) << misuse.front();
}

}  // namespace
}  // namespace agileos::worker::testing
