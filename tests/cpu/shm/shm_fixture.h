// ShmServerFixture: a WorkerHarness (real WorkerRuntime over the fake GPU) served by a
// real ShmCallServer on a private socket path.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "tests/cpu/shm/raw_region_client.h"
#include "tests/cpu/worker/support/worker_harness.h"
#include "worker/transport/shm_call_server.h"

namespace agileos::worker::testing {

inline std::string uniqueSocketPath() {
  static std::atomic<int> counter{0};
  return "/tmp/agileos-shm-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + ".sock";
}

class ShmServerFixture : public ::testing::Test {
 protected:
  void startServer(shm::RegionSizes sizes = shm::testing::smallRegionSizes()) {
    server_ = std::make_unique<ShmCallServer>(harness_.runtime(), sizes);
    std::string error;
    ASSERT_TRUE(server_->start(path_, &error)) << error;
  }
  void SetUp() override { startServer(); }
  void TearDown() override {
    if (server_) server_->shutdown();
  }

  // Waits up to 5 s for the server's connection count to become `count`.
  bool awaitConnections(std::size_t count) {
    for (int i = 0; i < 500; ++i) {
      if (server_->connectionCount() == count) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  WorkerHarness harness_;
  std::string path_ = uniqueSocketPath();
  std::unique_ptr<ShmCallServer> server_;
};

}  // namespace agileos::worker::testing
