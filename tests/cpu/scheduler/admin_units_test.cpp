// The admin API's pure parts: who is an administrator, the usage report's rules, the session
// registry, and agileosctl's tables.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "proto/wire/call_latency_buckets.h"
#include "scheduler/admin_access.h"
#include "scheduler/agileosctl/tables.h"
#include "scheduler/session_registry.h"
#include "scheduler/worker_usage.h"

namespace agileos::scheduler {
namespace {

using ::testing::HasSubstr;

std::vector<gid_t> noGroups(pid_t) { return {}; }

TEST(AdminAccess, RootTheDaemonsUidAndTheAdminGroupAreAdministrators) {
  const uid_t daemon = 4242;
  EXPECT_TRUE(isAdministrator({100, 0, 100}, 500, daemon, noGroups));
  EXPECT_TRUE(isAdministrator({100, daemon, 100}, 500, daemon, noGroups));
  EXPECT_TRUE(isAdministrator({100, 1000, 500}, 500, daemon, noGroups)) << "primary group";
  EXPECT_TRUE(isAdministrator({100, 1000, 1000}, 500, daemon, [](pid_t pid) {
    return pid == 100 ? std::vector<gid_t>{20, 500} : std::vector<gid_t>{};
  })) << "supplementary group";
  EXPECT_FALSE(isAdministrator({100, 1000, 1000}, 500, daemon, [](pid_t) {
    return std::vector<gid_t>{20, 501};
  }));
  EXPECT_FALSE(isAdministrator({0, 1000, 1000}, 500, daemon, [](pid_t) { return std::vector<gid_t>{500}; }))
      << "no pid: no groups are read";
}

TEST(AdminAccess, TheSupplementaryGroupsOfThisProcessAreRead) {
  const std::vector<gid_t> groups = supplementaryGroupsOf(::getpid());
  std::vector<gid_t> expected(static_cast<std::size_t>(::getgroups(0, nullptr)));
  ::getgroups(static_cast<int>(expected.size()), expected.data());
  EXPECT_EQ(groups, expected);
}

v1::internal::WorkerUsage reportOf(ClientId client, const std::string& operation, int buckets) {
  v1::internal::WorkerUsage report;
  auto* usage = report.add_clients();
  usage->set_client_id(client);
  usage->set_device_memory_bytes(10);
  usage->set_guard_hits(1);
  auto* calls = report.add_operations();
  calls->set_operation(operation);
  calls->set_calls(2);
  for (int i = 0; i < buckets; ++i) calls->add_latency_buckets(i == 1 ? 2 : 0);
  return report;
}

constexpr int kBuckets = static_cast<int>(wire::kCallLatencyBoundsMicros.size()) + 1;

TEST(WorkerUsage, AReportByTheRulesIsKept) {
  std::string error;
  const auto parsed = parseWorkerUsage(reportOf(7, "launch_kernel", kBuckets), {7}, &error);
  ASSERT_TRUE(parsed) << error;
  EXPECT_EQ(parsed->clients.at(7).device_memory_bytes, 10u);
  EXPECT_EQ(parsed->calls.operations.at("launch_kernel").latency_buckets.at(1), 2u);
}

TEST(WorkerUsage, ReportsThatBreakTheRulesAreRefused) {
  std::string error;
  EXPECT_FALSE(parseWorkerUsage(reportOf(8, "launch_kernel", kBuckets), {7}, &error));
  EXPECT_THAT(error, HasSubstr("does not hold"));
  EXPECT_FALSE(parseWorkerUsage(reportOf(7, "format_disk", kBuckets), {7}, &error));
  EXPECT_THAT(error, HasSubstr("wire table"));
  EXPECT_FALSE(parseWorkerUsage(reportOf(7, "launch_kernel", kBuckets + 1), {7}, &error));
  EXPECT_THAT(error, HasSubstr("latency buckets"));
  EXPECT_FALSE(parseWorkerUsage(reportOf(7, "launch_kernel", 0), {7}, &error));
}

TEST(WorkerUsage, AClientOrOperationReportedTwiceIsRefused) {
  std::string error;
  v1::internal::WorkerUsage twice = reportOf(7, "memset", kBuckets);
  *twice.add_clients() = twice.clients(0);
  EXPECT_FALSE(parseWorkerUsage(twice, {7}, &error));
  EXPECT_THAT(error, HasSubstr("twice"));
  twice = reportOf(7, "memset", kBuckets);
  *twice.add_operations() = twice.operations(0);
  EXPECT_FALSE(parseWorkerUsage(twice, {7}, &error));
  EXPECT_THAT(error, HasSubstr("memset twice"));
}

TEST(WorkerUsage, CumulativeCountsNeverGoBack) {
  CallTotals before, after;
  before.operations["mem_alloc"] = {5, 0, 100, {3, 2}};
  after.operations["mem_alloc"] = {6, 0, 120, {4, 2}};
  EXPECT_TRUE(neverDecreases(before, after));
  EXPECT_TRUE(neverDecreases({}, after)) << "the first report";
  after.operations["mem_alloc"].latency_buckets = {2, 4};
  EXPECT_FALSE(neverDecreases(before, after)) << "a bucket went back";
  EXPECT_FALSE(neverDecreases(before, CallTotals{})) << "an operation vanished";
  CallTotals bytes = before;
  before.bytes_device_to_host = 10;
  EXPECT_FALSE(neverDecreases(before, bytes));
}

TEST(WorkerUsage, TotalsAddPerOperationAndBucket) {
  CallTotals a, b;
  a.operations["mem_alloc"] = {2, 1, 100, {1, 1}};
  b.operations["mem_alloc"] = {3, 0, 50, {0, 2, 1}};
  b.operations["memset"] = {1, 0, 5, {1}};
  b.bytes_device_to_host = 9;
  a.add(b);
  EXPECT_EQ(a.operations.at("mem_alloc").calls, 5u);
  EXPECT_EQ(a.operations.at("mem_alloc").errors, 1u);
  EXPECT_EQ(a.operations.at("mem_alloc").latency_buckets, (std::vector<std::uint64_t>{1, 3, 1}));
  EXPECT_EQ(a.operations.at("memset").calls, 1u);
  EXPECT_EQ(a.bytes_device_to_host, 9u);
}

TEST(SessionRegistry, ListsEndsAndCountsSessions) {
  SessionRegistry registry;
  std::string ended;
  registry.add(SessionInfo{3, PeerCredentials{11, 1000, 1000}, "prog", "trap", 0, {}, 2, {}},
               [&](const std::string& reason) { ended = reason; });
  ASSERT_EQ(registry.list().size(), 1u);
  EXPECT_EQ(registry.list().at(0).program, "prog");
  EXPECT_FALSE(registry.end(4, "nobody"));
  EXPECT_TRUE(registry.end(3, "maintenance"));
  EXPECT_EQ(ended, "maintenance");
  registry.remove(3);
  EXPECT_TRUE(registry.list().empty());
  EXPECT_FALSE(registry.end(3, "gone")) << "a removed session's callback is never called";
  registry.countRefusal("BUSY");
  registry.countRefusal("BUSY");
  registry.countGuardHits("trap", 4);
  registry.countPlacementWait(std::chrono::milliseconds(300));
  registry.countPlacementWait(std::chrono::hours(1));
  const SessionCounters counters = registry.counters();
  EXPECT_EQ(counters.started, 1u);
  EXPECT_EQ(counters.ended, 1u);
  EXPECT_EQ(counters.ended_by_admin, 1u);
  EXPECT_EQ(counters.refused.at("BUSY"), 2u);
  EXPECT_EQ(counters.guard_hits.at("trap"), 4u);
  EXPECT_EQ(counters.placement_waits, 2u);
  EXPECT_EQ(counters.placement_wait_buckets.at(3), 1u) << "0.3 s falls in the (0.1, 0.5] bucket";
  EXPECT_EQ(counters.placement_wait_buckets.back(), 1u) << "an hour is beyond every bound";
}

TEST(AgileosctlTables, ColumnsAlignAndBytesReadAsPeopleWriteThem) {
  EXPECT_EQ(ctl::renderTable({{"A", "BB"}, {"CCC", "D"}}), "A    BB\nCCC  D\n");
  EXPECT_EQ(ctl::humanBytes(0), "0 B");
  EXPECT_EQ(ctl::humanBytes(1536), "1.5 KiB");
  EXPECT_EQ(ctl::humanBytes(64ull << 20), "64.0 MiB");
  v1::admin::Status status;
  auto* client = status.add_clients();
  client->set_id(5);
  client->set_state("attached");
  client->set_worker(2);
  client->set_uid(1000);
  client->set_pid(77);
  client->set_program("train");
  client->set_usage_reported(true);
  client->set_device_memory_bytes(3ull << 30);
  client->set_guard_policy("trap");
  const std::string table = ctl::clientsTable(status);
  EXPECT_THAT(table, HasSubstr("3.0 GiB"));
  EXPECT_THAT(table, HasSubstr("train"));
  client->set_usage_reported(false);
  EXPECT_THAT(ctl::clientsTable(status), ::testing::Not(HasSubstr("3.0 GiB")))
      << "no report yet: unknown, not zero";
}

}  // namespace
}  // namespace agileos::scheduler
