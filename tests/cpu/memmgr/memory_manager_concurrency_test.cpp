// Smoke test: several clients allocate, check and free at once while another thread
// probes random addresses. Run it under the tsan preset to look for data races.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "tests/cpu/memmgr/memory_manager_fixture.h"

namespace agileos::memmgr::testing {
namespace {

struct Live {
  DevicePtr p;
  std::uint64_t size;
};

using MemoryManagerConcurrency = MemoryManagerTest;

TEST_F(MemoryManagerConcurrency, ClientsAllocateCheckAndFreeInParallel) {
  constexpr int kClients = 4;
  constexpr int kIterations = 1500;
  std::atomic<bool> stop{false};
  std::atomic<int> wrongVerdicts{0};

  // Probes addresses near the start of the user range. An address may be anyone's,
  // but a range with a protected byte must always be refused.
  std::thread prober([&] {
    std::mt19937_64 random(7);
    while (!stop.load()) {
      const DevicePtr p = kUserRange.begin + random() % (64 * kMiB);
      manager->check(1 + random() % kClients, p, random() % 4096);
      if (manager->check(1, kModuleRange.end() - 1, 2) != PointerCheck::kProtected) ++wrongVerdicts;
    }
  });

  std::vector<std::thread> clients;
  for (ClientId client = 1; client <= kClients; ++client) {
    clients.emplace_back([&, client] {
      std::mt19937_64 random(client);
      std::vector<Live> live;
      for (int i = 0; i < kIterations; ++i) {
        if (live.empty() || random() % 3 != 0) {
          const std::uint64_t size = random() % 16 == 0 ? kMiB + random() % (3 * kMiB) : 1 + random() % 20000;
          DevicePtr p = 0;
          if (manager->allocate(client, size, &p) != CUDA_SUCCESS || p % kAllocationAlignment != 0) {
            ++wrongVerdicts;
            continue;
          }
          live.push_back({p, size});
        } else {
          const std::size_t victim = random() % live.size();
          if (manager->free(client, live[victim].p) != CUDA_SUCCESS) ++wrongVerdicts;
          live[victim] = live.back();
          live.pop_back();
        }
        for (const Live& allocation : live) {
          if (manager->check(client, allocation.p, allocation.size) != PointerCheck::kOk) ++wrongVerdicts;
          if (manager->check(client + kClients, allocation.p, 1) != PointerCheck::kForeign) ++wrongVerdicts;
        }
      }
      if (client % 2 == 0) {
        manager->releaseClient(client);
      } else {
        for (const Live& allocation : live) {
          if (manager->free(client, allocation.p) != CUDA_SUCCESS) ++wrongVerdicts;
        }
      }
    });
  }
  for (std::thread& client : clients) client.join();
  stop = true;
  prober.join();

  EXPECT_EQ(wrongVerdicts.load(), 0);
  EXPECT_EQ(manager->table().size(), 0u);
  for (ClientId client = 1; client <= kClients; ++client) {
    EXPECT_LE(manager->bytesInUse(client), kEmptyChunksCachedPerClient * manager->granularity());
  }
  EXPECT_TRUE(fake.violations().empty()) << joined(fake.violations());
}

}  // namespace
}  // namespace agileos::memmgr::testing
