// The worker's call counts (worker/call_statistics.h): every call counted, only waited-for calls
// timed, each timed call in exactly one bucket, bytes only for successful copies.
#include "worker/call_statistics.h"

#include <gtest/gtest.h>

#include <numeric>

namespace agileos::worker {
namespace {

using namespace std::chrono_literals;

const v1::internal::OperationCalls* find(const v1::internal::WorkerUsage& usage, const std::string& name) {
  for (const auto& operation : usage.operations())
    if (operation.operation() == name) return &operation;
  return nullptr;
}

TEST(CallStatistics, CallsAreCountedAndOnlyWaitedForCallsTimed) {
  CallStatistics statistics;
  v1::CallRequest launch;
  launch.mutable_launch_kernel();
  v1::CallReply ok;
  ok.set_error(0);
  statistics.record(launch, ok, 3us);
  statistics.record(launch, ok, std::nullopt);
  statistics.record(launch, ok, 2ms);
  v1::internal::WorkerUsage usage;
  statistics.report(&usage);
  const auto* launches = find(usage, "launch_kernel");
  ASSERT_NE(launches, nullptr);
  EXPECT_EQ(launches->calls(), 3u);
  EXPECT_EQ(launches->latency_ns_sum(), 2003000u);
  ASSERT_EQ(static_cast<std::size_t>(launches->latency_buckets_size()), CallStatistics::kBuckets);
  EXPECT_EQ(std::accumulate(launches->latency_buckets().begin(), launches->latency_buckets().end(), 0ull),
            2ull)
      << "the untimed call is in no bucket";
  EXPECT_EQ(launches->latency_buckets(0), 1u) << "3 us <= 5 us";
  EXPECT_EQ(find(usage, "memset"), nullptr) << "operations never called are left out";
}

TEST(CallStatistics, BytesCountOnlyForCopiesThatSucceeded) {
  CallStatistics statistics;
  v1::CallRequest copy;
  copy.mutable_memcpy_htod()->set_data(std::string(100, 'x'));
  v1::CallReply ok, failed;
  ok.set_error(0);
  failed.set_error(1);
  statistics.record(copy, ok, 1us);
  statistics.record(copy, failed, 1us);
  v1::CallRequest back;
  back.mutable_memcpy_dtoh()->set_size(64);
  statistics.record(back, ok, std::nullopt);
  v1::internal::WorkerUsage usage;
  statistics.report(&usage);
  EXPECT_EQ(usage.bytes_host_to_device(), 100u);
  EXPECT_EQ(usage.bytes_device_to_host(), 64u);
  EXPECT_EQ(find(usage, "memcpy_htod")->errors(), 1u);
}

}  // namespace
}  // namespace agileos::worker
