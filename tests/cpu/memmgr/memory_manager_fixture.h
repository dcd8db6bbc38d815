// Shared fixture: a MemoryManager over a FakeVmmBackend. Every test ends by
// destroying the manager and asserting that the fake is left with no handle,
// mapping or reservation and recorded no violation (so each test also checks
// that teardown is complete and that every unmapped page was scrubbed).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "memmgr/memory_manager.h"
#include "tests/cpu/memmgr/fake_vmm_backend.h"

namespace agileos::memmgr::testing {

inline constexpr std::uint64_t kMiB = 1ull << 20;
// The clients the tests allocate for.
inline constexpr ClientId kAlice = 1;
inline constexpr ClientId kBob = 2;
// The fake's physical granularity: the size of one chunk of small allocations.
inline constexpr std::uint64_t kChunk = FakeVmmBackend::kDefaultGranularity;

class MemoryManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    manager = MemoryManager::create(fake, &error);
    ASSERT_NE(manager, nullptr) << error;
  }

  void TearDown() override {
    manager.reset();
    EXPECT_EQ(fake.liveHandles(), 0u);
    EXPECT_EQ(fake.liveMappings(), 0u);
    EXPECT_EQ(fake.liveReservations(), 0u);
    EXPECT_TRUE(fake.violations().empty()) << joined(fake.violations());
  }

  // Allocates or fails the test; returns 0 on failure.
  DevicePtr allocate(ClientId client, std::uint64_t size) {
    DevicePtr p = 0;
    const CUresult result = manager->allocate(client, size, &p);
    EXPECT_EQ(result, CUDA_SUCCESS) << "allocate(" << client << ", " << size << ")";
    return p;
  }

  FakeVmmBackend fake;
  std::unique_ptr<MemoryManager> manager;
};

}  // namespace agileos::memmgr::testing
