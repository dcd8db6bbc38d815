#include "scheduler/daemon_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "modules/catalog/module_admission.h"
#include "tests/cpu/scheduler/test_support.h"

namespace agileos::scheduler {
namespace {

using ::testing::HasSubstr;

std::string joined(const std::vector<std::string>& errors) {
  std::string out;
  for (const auto& e : errors) out += e + "\n";
  return out;
}

TEST(DaemonConfig, EmptyObjectGivesDocumentedDefaults) {
  const ConfigResult result = parseDaemonConfig("{}");
  ASSERT_TRUE(result.ok()) << joined(result.errors);
  const DaemonConfig& c = *result.config;
  EXPECT_EQ(c.socket_path, "/run/agileos/agileosd.sock");
  EXPECT_EQ(c.runtime_dir, "/run/agileos");
  EXPECT_EQ(c.log_level, "info");
  EXPECT_EQ(c.placement, "dedicated");
  EXPECT_EQ(c.worker.executable, "agileos-worker");
  EXPECT_EQ(c.worker.device, 0);
  EXPECT_EQ(c.worker.prestart, 1u);
  EXPECT_EQ(c.worker.max_workers, 4u);
  EXPECT_EQ(c.worker.start_timeout_ms, 60000u);
  EXPECT_TRUE(c.worker.args.empty());
  EXPECT_EQ(c.guard.policy, "trap");
  EXPECT_TRUE(c.guard.allowed_policies.empty());
  EXPECT_EQ(c.guard.sass_only, "allow");
  EXPECT_EQ(c.guard.require, "protected_state");
  EXPECT_EQ(c.guard.cache_dir, "/var/cache/agileos/modules");
  EXPECT_EQ(c.guard.cache_max_bytes, 1ull << 30);
}

TEST(DaemonConfig, AdminAndMetricsSections) {
  const ConfigResult defaults = parseDaemonConfig("{}");
  ASSERT_TRUE(defaults.ok()) << joined(defaults.errors);
  EXPECT_TRUE(defaults.config->admin.enabled);
  EXPECT_EQ(adminSocketPath(*defaults.config), "/run/agileos-admin/admin.sock")
      << "a sibling of the runtime directory, which clients see";
  EXPECT_EQ(defaults.config->admin.gid, 0u);
  EXPECT_EQ(defaults.config->metrics.listen, "");

  const ConfigResult set = parseDaemonConfig(
      R"({"admin": {"socket_path": "/run/agileos-ops/a.sock", "gid": 1234}, "metrics": {"listen": "127.0.0.1:9464"}})");
  ASSERT_TRUE(set.ok()) << joined(set.errors);
  EXPECT_EQ(adminSocketPath(*set.config), "/run/agileos-ops/a.sock");
  EXPECT_EQ(set.config->admin.gid, 1234u);
  EXPECT_EQ(set.config->metrics.listen, "127.0.0.1:9464");
  EXPECT_THAT(toJsonText(*set.config), HasSubstr("\"listen\": \"127.0.0.1:9464\""));
}

TEST(DaemonConfig, OneDaemonServesTheDevicesItIsGiven) {
  const ConfigResult defaults = parseDaemonConfig("{}");
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(servedDevices(*defaults.config), (std::vector<int>{0}));
  const ConfigResult one = parseDaemonConfig(R"({"worker": {"device": 2}})");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(servedDevices(*one.config), (std::vector<int>{2}));
  const ConfigResult several = parseDaemonConfig(R"({"worker": {"devices": [1, 0, 3]}})");
  ASSERT_TRUE(several.ok()) << joined(several.errors);
  EXPECT_EQ(servedDevices(*several.config), (std::vector<int>{1, 0, 3})) << "in the configured order";
  EXPECT_THAT(toJsonText(*several.config), HasSubstr("\"devices\""));
  for (const auto& [text, expected] : std::vector<std::pair<std::string, std::string>>{
           {R"({"worker": {"devices": [0, 0]}})", "worker.devices[1]: device 0 is listed twice"},
           {R"({"worker": {"devices": [-1]}})", "worker.devices[0]: expected a device ordinal"},
           {R"({"worker": {"devices": ["0"]}})", "worker.devices[0]: expected a device ordinal"},
           {R"({"worker": {"devices": 0}})", "worker.devices"},
           {R"({"worker": {"device": 1, "devices": [0, 1]}})", "not both"}}) {
    const ConfigResult result = parseDaemonConfig(text);
    EXPECT_FALSE(result.ok()) << text;
    EXPECT_THAT(joined(result.errors), HasSubstr(expected)) << text;
  }
}

TEST(DaemonConfig, TheAdminSocketMayNotBeWhereClientsCanReachIt) {
  for (const char* path : {"/run/agileos/admin.sock", "/run/agileos/worker-9/admin.sock"}) {
    const ConfigResult result =
        parseDaemonConfig(std::string(R"({"admin": {"socket_path": ")") + path + R"("}})");
    EXPECT_FALSE(result.ok()) << path;
    EXPECT_THAT(joined(result.errors), HasSubstr("admin.socket_path")) << path;
  }
  EXPECT_TRUE(
      parseDaemonConfig(R"({"admin": {"enabled": false, "socket_path": "/run/agileos/admin.sock"}})").ok())
      << "a disabled admin API has no socket";
}

TEST(DaemonConfig, MetricsListenIsHostAndPort) {
  for (const char* bad : {"9464", ":9464", "localhost:", "localhost:0", "localhost:70000", "localhost:9x"}) {
    const ConfigResult result =
        parseDaemonConfig(std::string(R"({"metrics": {"listen": ")") + bad + R"("}})");
    EXPECT_FALSE(result.ok()) << bad;
    EXPECT_THAT(joined(result.errors), HasSubstr("metrics.listen")) << bad;
  }
  EXPECT_TRUE(parseDaemonConfig(R"({"metrics": {"listen": "[::1]:9464"}})").ok());
}

TEST(DaemonConfig, GuardPolicyAdmission) {
  GuardSection guard;
  guard.policy = "trap";
  guard.allowed_policies = {"poison", "report"};
  std::string policy, error;
  EXPECT_TRUE(admitGuardPolicy(guard, "", &policy, &error));
  EXPECT_EQ(policy, "trap") << "no request: the default";
  EXPECT_TRUE(admitGuardPolicy(guard, "trap", &policy, &error));
  EXPECT_TRUE(admitGuardPolicy(guard, "report", &policy, &error));
  EXPECT_EQ(policy, "report");
  EXPECT_FALSE(admitGuardPolicy(guard, "off", &policy, &error));
  EXPECT_THAT(error, HasSubstr("not allowed here (guard.allowed_policies)"));
  EXPECT_FALSE(admitGuardPolicy(guard, "Trap", &policy, &error));
  EXPECT_THAT(error, HasSubstr("unknown kernel memory guard policy"));
}

TEST(DaemonConfig, MemoryQuotaSectionAndAdmission) {
  EXPECT_EQ(parseDaemonConfig("{}").config->memory.quota_bytes, 0u) << "no quota by default";
  const ConfigResult result =
      parseDaemonConfig(R"({"memory": {"quota_bytes": 8589934592, "reserve_bytes": 1024}})");
  ASSERT_TRUE(result.ok()) << joined(result.errors);
  EXPECT_EQ(result.config->memory.quota_bytes, 8ull << 30);
  EXPECT_EQ(result.config->memory.reserve_bytes, 1024u);
  EXPECT_THAT(toJsonText(*result.config), HasSubstr("\"quota_bytes\": 8589934592"));
  for (const char* bad : {R"({"memory": {"quota_bytes": -1}})", R"({"memory": {"quota": 1}})",
                          R"({"memory": {"reserve_bytes": "1G"}})"}) {
    EXPECT_FALSE(parseDaemonConfig(bad).ok()) << bad;
  }
  MemorySection memory;
  EXPECT_EQ(admitMemoryQuota(memory, 0), 0u);
  EXPECT_EQ(admitMemoryQuota(memory, 5), 5u) << "a client may limit itself";
  memory.quota_bytes = 100;
  EXPECT_EQ(admitMemoryQuota(memory, 0), 100u);
  EXPECT_EQ(admitMemoryQuota(memory, 40), 40u) << "asking for less is granted";
  EXPECT_EQ(admitMemoryQuota(memory, 400), 100u) << "asking for more gets the daemon's quota";
}

// The host-wide pinned memory budget: by default half of the host, shared among the worker slots
// (at most 32 GiB each); both numbers can be set, and a share above the total is an error.
TEST(DaemonConfig, PinnedHostBudget) {
  constexpr std::uint64_t kGiB = 1ull << 30;
  const MemorySection defaults = parseDaemonConfig("{}").config->memory;
  PinnedHostBudget budget = resolvePinnedHostBudget(defaults, 128 * kGiB, 6);
  EXPECT_EQ(budget.total_bytes, 64 * kGiB);
  EXPECT_EQ(budget.per_client_bytes, 64 * kGiB / 6);
  budget = resolvePinnedHostBudget(defaults, 2048 * kGiB, 4);
  EXPECT_EQ(budget.per_client_bytes, 32 * kGiB) << "the default share is at most 32 GiB";
  EXPECT_EQ(resolvePinnedHostBudget(defaults, 0, 4).per_client_bytes, 0u) << "unknown host: nothing pinned";

  const ConfigResult set =
      parseDaemonConfig(R"({"memory": {"pinned_total_bytes": 1000, "pinned_per_client_bytes": 300}})");
  ASSERT_TRUE(set.ok()) << joined(set.errors);
  budget = resolvePinnedHostBudget(set.config->memory, 128 * kGiB, 6);
  EXPECT_EQ(budget.total_bytes, 1000u);
  EXPECT_EQ(budget.per_client_bytes, 300u);
  EXPECT_THAT(toJsonText(*set.config), HasSubstr("\"pinned_total_bytes\": 1000"));
  const ConfigResult onlyTotal = parseDaemonConfig(R"({"memory": {"pinned_total_bytes": 1200}})");
  ASSERT_TRUE(onlyTotal.ok()) << joined(onlyTotal.errors);
  EXPECT_EQ(resolvePinnedHostBudget(onlyTotal.config->memory, 128 * kGiB, 4).per_client_bytes, 300u);

  const ConfigResult tooBig =
      parseDaemonConfig(R"({"memory": {"pinned_total_bytes": 100, "pinned_per_client_bytes": 300}})");
  EXPECT_FALSE(tooBig.ok());
  EXPECT_THAT(joined(tooBig.errors), HasSubstr("memory.pinned_per_client_bytes"));
  EXPECT_FALSE(parseDaemonConfig(R"({"memory": {"pinned_total_bytes": -1}})").ok());
}

TEST(DaemonConfig, PerUidQuotasOverrideTheDefault) {
  const ConfigResult result =
      parseDaemonConfig(R"({"memory": {"quota_bytes": 100, "per_uid": {"200001": 300, "200002": 0}}})");
  ASSERT_TRUE(result.ok()) << joined(result.errors);
  const MemorySection& memory = result.config->memory;
  EXPECT_EQ(memoryQuotaFor(memory, std::nullopt), 100u) << "credentials unknown: the default";
  EXPECT_EQ(memoryQuotaFor(memory, 7u), 100u);
  EXPECT_EQ(memoryQuotaFor(memory, 200001u), 300u) << "a bigger share for that tenant";
  EXPECT_EQ(memoryQuotaFor(memory, 200002u), 0u) << "no quota for that tenant";
  EXPECT_EQ(admitMemoryQuota(memory, 50, 200001u), 50u) << "asking for less is still granted";
  EXPECT_EQ(admitMemoryQuota(memory, 500, 200001u), 300u);
  EXPECT_EQ(admitMemoryQuota(memory, 500, 9u), 100u);
  EXPECT_THAT(toJsonText(*result.config), HasSubstr("\"200001\": 300"));
  for (const char* bad : {R"({"memory": {"per_uid": {"alice": 1}}})", R"({"memory": {"per_uid": {"-1": 1}}})",
                          R"({"memory": {"per_uid": {"5": -1}}})", R"({"memory": {"per_uid": {"5": "1G"}}})",
                          R"({"memory": {"per_uid": [1]}})", R"({"memory": {"per_uid": {"07": 1}}})",
                          R"({"memory": {"per_uid": {"7": 1, "007": 2}}})"}) {
    EXPECT_FALSE(parseDaemonConfig(bad).ok()) << bad;
  }
}

TEST(DaemonConfig, PrivilegesSectionAndItsRanges) {
  const DaemonConfig defaults = *parseDaemonConfig("{}").config;
  EXPECT_TRUE(defaults.privileges.enabled) << "a root daemon drops its children's privileges by default";
  const ConfigResult result = parseDaemonConfig(
      R"({"privileges": {"enabled": true, "worker_uid_base": 300000, "worker_uid_count": 16,
                         "service_uid_base": 310000, "shared_gid": 320000}})");
  ASSERT_TRUE(result.ok()) << joined(result.errors);
  EXPECT_EQ(result.config->privileges.worker_uid_base, 300000u);
  EXPECT_EQ(result.config->privileges.worker_uid_count, 16u);
  EXPECT_THAT(toJsonText(*result.config), HasSubstr("\"shared_gid\": 320000"));

  auto errorsOf = [](const char* text) { return joined(parseDaemonConfig(text).errors); };
  EXPECT_THAT(errorsOf(R"({"privileges": {"enabled": "yes"}})"), HasSubstr("privileges.enabled"));
  EXPECT_THAT(errorsOf(R"({"privileges": {"worker_uid_base": 0}})"), HasSubstr("privileges.worker_uid_base"))
      << "uid 0 is no unprivileged id";
  EXPECT_THAT(errorsOf(R"({"worker": {"max_workers": 8}, "privileges": {"worker_uid_count": 15}})"),
              HasSubstr("at least twice"));
  EXPECT_THAT(errorsOf(R"({"privileges": {"shared_gid": 199100}})"), HasSubstr("privileges.shared_gid"))
      << "the shared group may not be a worker's own gid";
  EXPECT_THAT(errorsOf(R"({"services": [{"name": "s", "executable": "/bin/true"}],
                           "privileges": {"service_uid_base": 199150}})"),
              HasSubstr("privileges.service_uid_base"));
  EXPECT_TRUE(parseDaemonConfig(R"({"privileges": {"enabled": false, "shared_gid": 199100}})").ok())
      << "ranges are not checked when nothing is dropped";
}

TEST(DaemonConfig, ReadsEveryField) {
  const ConfigResult result = parseDaemonConfig(R"({
    "socket_path": "/tmp/x/d.sock",
    "runtime_dir": "/tmp/x",
    "log_level": "debug",
    "placement": "dedicated",
    "worker": {
      "executable": "/opt/agileos/bin/agileos-worker",
      "device": 3,
      "prestart": 0,
      "max_workers": 16,
      "start_timeout_ms": 1500,
      "args": ["--test-guard-canary", "-v"]
    },
    "guard": {
      "policy": "poison",
      "allowed_policies": ["trap", "report"],
            "sass_only": "refuse",
      "require": "always",
      "cache_dir": "",
      "cache_max_bytes": 4096
    }
  })");
  ASSERT_TRUE(result.ok()) << joined(result.errors);
  const DaemonConfig& c = *result.config;
  EXPECT_EQ(c.socket_path, "/tmp/x/d.sock");
  EXPECT_EQ(c.runtime_dir, "/tmp/x");
  EXPECT_EQ(c.log_level, "debug");
  EXPECT_EQ(c.worker.executable, "/opt/agileos/bin/agileos-worker");
  EXPECT_EQ(c.worker.device, 3);
  EXPECT_EQ(c.worker.prestart, 0u);
  EXPECT_EQ(c.worker.max_workers, 16u);
  EXPECT_EQ(c.worker.start_timeout_ms, 1500u);
  EXPECT_EQ(c.worker.args, (std::vector<std::string>{"--test-guard-canary", "-v"}));
  EXPECT_EQ(c.guard.policy, "poison");
  EXPECT_EQ(c.guard.allowed_policies, (std::vector<std::string>{"trap", "report"}));
  EXPECT_EQ(c.guard.sass_only, "refuse");
  EXPECT_EQ(c.guard.require, "always");
  EXPECT_EQ(c.guard.cache_dir, "");
  EXPECT_EQ(c.guard.cache_max_bytes, 4096u);
}

TEST(DaemonConfig, PartialWorkerObjectKeepsOtherDefaults) {
  const ConfigResult result = parseDaemonConfig(R"({"worker": {"max_workers": 8}})");
  ASSERT_TRUE(result.ok()) << joined(result.errors);
  EXPECT_EQ(result.config->worker.max_workers, 8u);
  EXPECT_EQ(result.config->worker.prestart, 1u);
  EXPECT_EQ(result.config->worker.executable, "agileos-worker");
}

TEST(DaemonConfig, AcceptsComments) {
  const ConfigResult result = parseDaemonConfig(R"({
    // the log level
    "log_level": "warn" /* trailing */
  })");
  ASSERT_TRUE(result.ok()) << joined(result.errors);
  EXPECT_EQ(result.config->log_level, "warn");
}

TEST(DaemonConfig, EffectiveConfigTextRoundTrips) {
  DaemonConfig config;
  config.socket_path = "/tmp/a.sock";
  config.worker.args = {"--x=1"};
  config.worker.max_workers = 7;
  const ConfigResult again = parseDaemonConfig(toJsonText(config));
  ASSERT_TRUE(again.ok()) << joined(again.errors);
  EXPECT_EQ(again.config->socket_path, "/tmp/a.sock");
  EXPECT_EQ(again.config->worker.args, config.worker.args);
  EXPECT_EQ(again.config->worker.max_workers, 7u);
}

struct BadConfig {
  const char* name;
  const char* json;
  const char* expected_error;  // the one error, or a part of it
};

void PrintTo(const BadConfig& config, std::ostream* out) { *out << config.name; }

class DaemonConfigRejects : public ::testing::TestWithParam<BadConfig> {};

TEST_P(DaemonConfigRejects, WithOneErrorNamingTheKey) {
  const ConfigResult result = parseDaemonConfig(GetParam().json);
  EXPECT_FALSE(result.ok());
  ASSERT_EQ(result.errors.size(), 1u) << joined(result.errors);
  EXPECT_THAT(result.errors[0], HasSubstr(GetParam().expected_error));
}

const BadConfig kBadConfigs[] = {
    {"InvalidJson", R"({"log_level": })", "invalid JSON"},
    {"TrailingGarbage", R"({} x)", "invalid JSON"},
    {"RootIsArray", R"([1, 2])", "(root): expected a JSON object, got an array"},
    {"RootIsString", R"("x")", "(root): expected a JSON object"},
    {"UnknownTopLevelKey", R"({"sockt_path": "/a.sock"})",
     "sockt_path: unknown key (expected one of: socket_path"},
    {"UnknownWorkerKey", R"({"worker": {"max_worker": 2}})", "worker.max_worker: unknown key"},
    {"DuplicateKey", R"({"log_level": "info", "log_level": "debug"})", "log_level: duplicate key"},
    {"DuplicateNestedKey", R"({"worker": {"device": 0, "device": 1}})", "worker.device: duplicate key"},
    {"SocketPathNotString", R"({"socket_path": 5})", "socket_path: expected a string, got 5"},
    {"SocketPathRelative", R"({"socket_path": "run/d.sock"})", "socket_path: expected an absolute path"},
    {"SocketPathEmpty", R"({"socket_path": ""})", "socket_path: expected an absolute path"},
    {"SocketPathTooLong",
     R"({"socket_path": "/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.sock"})",
     "socket_path: path is 116 bytes; at most 107"},
    {"SocketPathWithNul", R"({"socket_path": "/a\u0000b"})", "socket_path: must not contain NUL"},
    {"RuntimeDirRelative", R"({"runtime_dir": "agileos"})", "runtime_dir: expected an absolute path"},
    {"RuntimeDirTooLong",
     R"({"runtime_dir": "/rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr"})",
     "runtime_dir: path is 77 bytes; at most 65"},
    {"LogLevelUnknown", R"({"log_level": "verbose"})",
     "log_level: expected one of trace|debug|info|warn|error, got 'verbose'"},
    {"LogLevelWrongCase", R"({"log_level": "INFO"})", "log_level: expected one of"},
    {"LogLevelNull", R"({"log_level": null})", "log_level: expected a string, got null"},
    {"PlacementUnknown", R"({"placement": "shared"})", "placement: expected one of dedicated, got 'shared'"},
    {"WorkerNotObject", R"({"worker": "agileos-worker"})",
     "worker: expected an object, got 'agileos-worker' (a string)"},
    {"ExecutableEmpty", R"({"worker": {"executable": ""}})", "worker.executable: expected a non-empty path"},
    {"ExecutableNotString", R"({"worker": {"executable": ["a"]}})",
     "worker.executable: expected a string, got an array"},
    {"DeviceString", R"({"worker": {"device": "0"}})",
     "worker.device: expected an integer in [0, 2147483647], got '0' (a string)"},
    {"DeviceFloat", R"({"worker": {"device": 1.5}})",
     "worker.device: expected an integer in [0, 2147483647], got 1.5"},
    {"DeviceNegative", R"({"worker": {"device": -1}})",
     "worker.device: expected an integer in [0, 2147483647], got -1"},
    {"DeviceTooLarge", R"({"worker": {"device": 2147483648}})", "worker.device: expected an integer"},
    {"DeviceBoolean", R"({"worker": {"device": true}})",
     "worker.device: expected an integer in [0, 2147483647], got true"},
    {"PrestartTooLarge", R"({"worker": {"prestart": 1025, "max_workers": 1024}})",
     "worker.prestart: expected an integer in [0, 1024], got 1025"},
    {"MaxWorkersZero", R"({"worker": {"max_workers": 0}})",
     "worker.max_workers: expected an integer in [1, 1024], got 0"},
    {"MaxWorkersHuge", R"({"worker": {"max_workers": 18446744073709551615}})",
     "worker.max_workers: expected an integer in [1, 1024], got 18446744073709551615"},
    {"StartTimeoutZero", R"({"worker": {"start_timeout_ms": 0}})",
     "worker.start_timeout_ms: expected an integer in [1, 3600000], got 0"},
    {"StartTimeoutTooLong", R"({"worker": {"start_timeout_ms": 3600001}})",
     "worker.start_timeout_ms: expected"},
    {"ArgsNotArray", R"({"worker": {"args": "--x"}})",
     "worker.args: expected an array of strings, got '--x' (a string)"},
    {"ArgsElementNotString", R"({"worker": {"args": ["--x", 3]}})",
     "worker.args[1]: expected a string, got 3"},
    {"ArgsReservedFlag", R"({"worker": {"args": ["--device=2"]}})",
     "worker.args[0]: --device is set by the daemon and must not appear in worker.args"},
    {"ArgsReservedFlagWithoutValue", R"({"worker": {"args": ["--control-fd"]}})",
     "worker.args[0]: --control-fd is set"},
    {"GuardPolicyUnknown", R"({"guard": {"policy": "strict"}})",
     "guard.policy: expected one of off|trap|poison|sink|remap_or|report, got 'strict'"},
    {"GuardAllowedUnknown", R"({"guard": {"allowed_policies": ["trap", "paranoid"]}})",
     "guard.allowed_policies[1]: expected one of"},
    {"GuardSassOnlyUnknown", R"({"guard": {"sass_only": "maybe"}})",
     "guard.sass_only: expected one of allow|refuse"},
    {"GuardRequireUnknown", R"({"guard": {"require": "sometimes"}})",
     "guard.require: expected one of protected_state|always"},
    {"GuardCacheDirRelative", R"({"guard": {"cache_dir": "cache"}})",
     "guard.cache_dir: expected an absolute path"},
    {"GuardCacheBytesZero", R"({"guard": {"cache_max_bytes": 0}})",
     "guard.cache_max_bytes: expected an integer"},
    {"GuardUnknownKey", R"({"guard": {"polcy": "trap"}})", "guard.polcy: unknown key"},
    {"ArgsOldGuardFlag", R"({"worker": {"args": ["--guard=trap"]}})",
     "worker.args[0]: the kernel memory guard is set in the guard section"},
    {"ArgsCacheFlag", R"({"worker": {"args": ["--module-cache-dir=/tmp"]}})",
     "worker.args[0]: --module-cache-dir is set by the daemon"},
    {"PrestartAboveMaxWorkers", R"({"worker": {"prestart": 5, "max_workers": 4}})",
     "worker.prestart: 5 ready workers cannot be kept with worker.max_workers = 4"},
    {"ModulesNotObject", R"({"modules": []})", "modules: expected an object, got an array"},
    {"ModulesUnknownKey", R"({"modules": {"pools": []}})",
     "modules.pools: unknown key (expected one of: pool, allowed)"},
    {"ModulesPoolNotArray", R"({"modules": {"pool": {}}})",
     "modules.pool: expected an array of module entries, got an object"},
    {"ModulesEntryUnknownKey",
     R"({"modules": {"pool": [{"name": "a", "version": "1.0.0", "ptx": "/m/a.ptx", "path": "/m"}]}})",
     "modules.pool[0].path: unknown key"},
    {"ModulesEntryBadVersion",
     R"({"modules": {"pool": [{"name": "a", "version": "1.0", "ptx": "/m/a.ptx"}]}})",
     "modules.pool[0].version: "},
    {"ModulesEntryWithoutArtifact", R"({"modules": {"pool": [{"name": "a", "version": "1.0.0"}]}})",
     "modules.pool[0]: needs at least one artifact"},
    {"ModulesMissingDependency",
     R"({"modules": {"pool": [{"name": "a", "version": "1.0.0", "ptx": "/m/a.ptx", "depends": [{"name": "b"}]}],
                     "allowed": ["a", "c"]}})",
     "modules.pool[0].depends[0].name: 'b' is not a module of the pool"},
    {"ModulesAllowedNotArray", R"({"modules": {"allowed": "*"}})",
     "modules.allowed: expected an array of strings, got '*' (a string)"},
    {"ModulesAllowedBadName", R"({"modules": {"allowed": ["Kv"]}})",
     "modules.allowed[0]: expected \"*\" or a module name: expected a name matching"},
    {"ModulesAllowedNotInPool",
     R"({"modules": {"pool": [{"name": "a", "version": "1.0.0", "ptx": "/m/a.ptx"}], "allowed": ["a", "b"]}})",
     "modules.allowed[1]: 'b' is not a module of modules.pool"},
    {"ModuleUsesAnUnknownService",
     R"({"services": [{"name": "storage", "executable": "s"}],
         "modules": {"pool": [{"name": "a", "version": "1.0.0", "ptx": "/m/a.ptx"},
                              {"name": "b", "version": "1.0.0", "ptx": "/m/b.ptx", "service": "kv"}]}})",
     "modules.pool[1].service: 'kv' is not a configured service (services[].name)"},
    {"ServicesNotArray", R"({"services": {"name": "kv"}})",
     "services: expected an array of service entries, got an object"},
    {"ServiceNotObject", R"({"services": ["kv"]})", "services[0]: expected an object, got 'kv' (a string)"},
    {"ServiceUnknownKey", R"({"services": [{"name": "kv", "executable": "/s", "restarts": 3}]})",
     "services[0].restarts: unknown key (expected one of: name, executable, args, start_timeout_ms, "
     "max_restarts, restart_window_s)"},
    {"ServiceBadName", R"({"services": [{"name": "Key-Value", "executable": "/s"}]})",
     "services[0].name: expected a name matching ^[a-z][a-z0-9_]{0,62}$, got 'Key-Value'"},
    {"ServiceDuplicateName",
     R"({"services": [{"name": "kv", "executable": "/s"}, {"name": "kv", "executable": "/t"}]})",
     "services[1].name: duplicate service 'kv' (also services[0])"},
    {"ServiceWithoutName", R"({"services": [{"executable": "/s"}]})", "services[0].name: required"},
    {"ServiceWithoutExecutable", R"({"services": [{"name": "kv"}]})", "services[0].executable: required"},
    {"ServiceExecutableEmpty", R"({"services": [{"name": "kv", "executable": ""}]})",
     "services[0].executable: expected a non-empty path"},
    {"ServiceArgsNotStrings", R"({"services": [{"name": "kv", "executable": "/s", "args": [1]}]})",
     "services[0].args[0]: expected a string, got 1"},
    {"ServiceArgsSocketFlag",
     R"({"services": [{"name": "kv", "executable": "/s", "args": ["--socket=/x"]}]})",
     "services[0].args[0]: --socket is set by the daemon"},
    {"ServiceStartTimeoutZero",
     R"({"services": [{"name": "kv", "executable": "/s", "start_timeout_ms": 0}]})",
     "services[0].start_timeout_ms: expected an integer in [1, 3600000], got 0"},
    {"ServiceMaxRestartsNegative",
     R"({"services": [{"name": "kv", "executable": "/s", "max_restarts": -1}]})",
     "services[0].max_restarts: expected an integer in [0, 1000], got -1"},
    {"ServiceRestartWindowZero",
     R"({"services": [{"name": "kv", "executable": "/s", "restart_window_s": 0}]})",
     "services[0].restart_window_s: expected an integer in [1, 86400], got 0"},
    {"ServiceSocketPathTooLong",
     R"({"runtime_dir": "/rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr",
         "services": [{"name": "a_rather_long_service_name", "executable": "/s"}]})",
     "services[0].name: its socket /rrrr"},
};

INSTANTIATE_TEST_SUITE_P(AllErrorPaths, DaemonConfigRejects, ::testing::ValuesIn(kBadConfigs),
                         [](const ::testing::TestParamInfo<BadConfig>& info) { return info.param.name; });

TEST(DaemonConfigServices, DefaultIsNoService) {
  const ConfigResult result = parseDaemonConfig("{}");
  ASSERT_TRUE(result.ok()) << joined(result.errors);
  EXPECT_TRUE(result.config->services.empty());
}

TEST(DaemonConfigServices, ReadsEveryFieldAndDefaultsTheOptionalOnes) {
  const ConfigResult result = parseDaemonConfig(R"({"services": [
    {"name": "storage", "executable": "/opt/agileos/bin/agileos-storage-service",
     "args": ["--root", "/srv/agileos/files", "--socketish"], "start_timeout_ms": 2500, "max_restarts": 0,
     "restart_window_s": 30},
    {"name": "kv", "executable": "agileos-kv-service"}
  ],
  "modules": {"pool": [{"name": "files", "version": "1.0.0", "ptx": "/m/f.ptx", "service": "storage"},
                       {"name": "plain", "version": "1.0.0", "ptx": "/m/p.ptx", "service": ""}]}})");
  ASSERT_TRUE(result.ok()) << joined(result.errors);
  const std::vector<ServiceConfig>& services = result.config->services;
  ASSERT_EQ(services.size(), 2u);
  EXPECT_EQ(services[0].name, "storage");
  EXPECT_EQ(services[0].executable, "/opt/agileos/bin/agileos-storage-service");
  EXPECT_EQ(services[0].args, (std::vector<std::string>{"--root", "/srv/agileos/files", "--socketish"}));
  EXPECT_EQ(services[0].start_timeout_ms, 2500u);
  EXPECT_EQ(services[0].max_restarts, 0u);
  EXPECT_EQ(services[0].restart_window_s, 30u);
  EXPECT_EQ(services[1].name, "kv");
  EXPECT_EQ(services[1].executable, "agileos-kv-service") << "resolved at start, not here";
  EXPECT_TRUE(services[1].args.empty());
  EXPECT_EQ(services[1].start_timeout_ms, 10000u);
  EXPECT_EQ(services[1].max_restarts, 5u);
  EXPECT_EQ(services[1].restart_window_s, 60u);
}

TEST(DaemonConfigServices, EffectiveConfigTextRoundTrips) {
  DaemonConfig config;
  config.services.push_back({"storage", "/s", {"--root", "/srv"}, 1234, 2, 9});
  const ConfigResult again = parseDaemonConfig(toJsonText(config));
  ASSERT_TRUE(again.ok()) << joined(again.errors);
  ASSERT_EQ(again.config->services.size(), 1u);
  const ServiceConfig& service = again.config->services[0];
  EXPECT_EQ(service.name, "storage");
  EXPECT_EQ(service.executable, "/s");
  EXPECT_EQ(service.args, (std::vector<std::string>{"--root", "/srv"}));
  EXPECT_EQ(service.start_timeout_ms, 1234u);
  EXPECT_EQ(service.max_restarts, 2u);
  EXPECT_EQ(service.restart_window_s, 9u);
}

TEST(DaemonConfig, ArgsThatMerelyStartLikeAReservedFlagAreAccepted) {
  const ConfigResult result =
      parseDaemonConfig(R"({"worker": {"args": ["--devices-extra=1", "--endpointish"]}})");
  EXPECT_TRUE(result.ok()) << joined(result.errors);
}

TEST(DaemonConfig, ReportsEveryErrorAtOnce) {
  const ConfigResult result =
      parseDaemonConfig(R"({"log_level": 1, "bogus": true, "worker": {"device": -2, "typo": 1}})");
  EXPECT_FALSE(result.ok());
  const std::string all = joined(result.errors);
  EXPECT_EQ(result.errors.size(), 4u) << all;
  EXPECT_THAT(all, HasSubstr("log_level: expected a string"));
  EXPECT_THAT(all, HasSubstr("bogus: unknown key"));
  EXPECT_THAT(all, HasSubstr("worker.device: expected an integer"));
  EXPECT_THAT(all, HasSubstr("worker.typo: unknown key"));
}

TEST(DaemonConfig, LoadNamesAMissingFile) {
  const ConfigResult result = loadDaemonConfig("/nonexistent/agileosd.json");
  EXPECT_FALSE(result.ok());
  ASSERT_EQ(result.errors.size(), 1u);
  EXPECT_THAT(result.errors[0], HasSubstr("/nonexistent/agileosd.json: cannot open"));
}

TEST(DaemonConfig, LoadReadsAFile) {
  testing::TempDir dir;
  testing::writeFile(dir.file("c.json"), R"({"worker": {"prestart": 2}})");
  const ConfigResult result = loadDaemonConfig(dir.file("c.json"));
  ASSERT_TRUE(result.ok()) << joined(result.errors);
  EXPECT_EQ(result.config->worker.prestart, 2u);
}

}  // namespace
}  // namespace agileos::scheduler

namespace agileos::scheduler {
namespace {

TEST(DaemonConfigAdapters, DefaultAdmitsEveryDeclaredLibrary) {
  const auto result = parseDaemonConfig("{}");
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(admittedAdapterOperations(result.config->adapters),
            (std::vector<std::string>{"cufft.*", "nvrtc.*"}));
}

TEST(DaemonConfigAdapters, ListsOperationsPerLibraryAndOmittedLibrariesAreNotAdmitted) {
  const auto result =
      parseDaemonConfig(R"({"adapters": {"cufft": ["create", "make_plan", "exec", "destroy"]}})");
  ASSERT_TRUE(result.ok()) << result.errors.front();
  EXPECT_EQ(admittedAdapterOperations(result.config->adapters),
            (std::vector<std::string>{"cufft.create", "cufft.make_plan", "cufft.exec", "cufft.destroy"}));
  const auto none = parseDaemonConfig(R"({"adapters": {}})");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(admittedAdapterOperations(none.config->adapters).empty());
}

TEST(DaemonConfigAdapters, RefusesUnknownLibrariesAndOperations) {
  const auto library = parseDaemonConfig(R"({"adapters": {"cublas": ["*"]}})");
  ASSERT_FALSE(library.ok());
  EXPECT_NE(library.errors.front().find("adapters.cublas: unknown key"), std::string::npos)
      << library.errors.front();
  const auto operation = parseDaemonConfig(R"({"adapters": {"cufft": ["exec", "xtSetCallback"]}})");
  ASSERT_FALSE(operation.ok());
  EXPECT_NE(operation.errors.front().find("unknown operation \"xtSetCallback\""), std::string::npos)
      << operation.errors.front();
  EXPECT_FALSE(parseDaemonConfig(R"({"adapters": {"nvrtc": "compile"}})").ok());
}

}  // namespace
}  // namespace agileos::scheduler

namespace agileos::scheduler {
namespace {

// Two modules, kvstore needing queue, both allowed; kvstore uses the service kv.
constexpr const char* kTwoModules = R"({
"services": [{"name": "kv", "executable": "/opt/agileos/bin/kv-service"}],
"modules": {
  "pool": [
    {"name": "kvstore", "version": "1.2.0",
     "depends": [{"name": "queue", "version": "^1.0"}],
     "host_library": "/opt/agileos/modules/libkvstore.so",
     "service": "kv", "description": "a key-value store"},
    {"name": "queue", "version": "1.0.3", "ptx": "/opt/agileos/modules/queue.ptx"}
  ],
  "allowed": ["kvstore", "queue"]
}})";

TEST(DaemonConfigModules, DefaultIsAnEmptyPoolAndNothingAllowed) {
  const auto result = parseDaemonConfig("{}");
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result.config->modules.pool.modules.empty());
  EXPECT_TRUE(result.config->modules.allowed.empty());
  const auto empty = parseDaemonConfig(R"({"modules": {}})");
  ASSERT_TRUE(empty.ok()) << joined(empty.errors);
  EXPECT_TRUE(empty.config->modules.pool.modules.empty());
}

TEST(DaemonConfigModules, ReadsAPoolWithDependenciesAndTheAllowedNames) {
  const auto result = parseDaemonConfig(kTwoModules);
  ASSERT_TRUE(result.ok()) << joined(result.errors);
  const ModulesSection& modules = result.config->modules;
  ASSERT_EQ(modules.pool.modules.size(), 2u);
  const agileos::modules::ModuleEntry* kv = modules.pool.find("kvstore");
  ASSERT_NE(kv, nullptr);
  EXPECT_EQ(kv->version.toString(), "1.2.0");
  ASSERT_EQ(kv->depends.size(), 1u);
  EXPECT_EQ(kv->depends[0].name, "queue");
  EXPECT_EQ(kv->depends[0].requirement.text, "^1.0");
  EXPECT_EQ(kv->host_library_path, "/opt/agileos/modules/libkvstore.so");
  EXPECT_EQ(kv->service, "kv");
  EXPECT_EQ(modules.pool.find("queue")->ptx_path, "/opt/agileos/modules/queue.ptx");
  EXPECT_EQ(modules.allowed, (std::vector<std::string>{"kvstore", "queue"}));

  const auto admitted = agileos::modules::admitModules(modules.pool, modules.allowed, {{"kvstore", ">=1.1"}});
  ASSERT_TRUE(admitted.admitted()) << admitted.error;
  ASSERT_EQ(admitted.load_order.size(), 2u);
  EXPECT_EQ(admitted.load_order[0].name, "queue");
  EXPECT_EQ(admitted.load_order[1].name, "kvstore");
}

TEST(DaemonConfigModules, StarAllowsEveryModule) {
  const auto result =
      parseDaemonConfig(R"({"modules": {"pool": [{"name": "a", "version": "0.1.0", "ptx": "/m/a.ptx"}],
                                        "allowed": ["*"]}})");
  ASSERT_TRUE(result.ok()) << joined(result.errors);
  EXPECT_EQ(result.config->modules.allowed, (std::vector<std::string>{"*"}));
  EXPECT_TRUE(
      agileos::modules::admitModules(result.config->modules.pool, result.config->modules.allowed, {{"a", ""}})
          .admitted());
}

TEST(DaemonConfigModules, EffectiveConfigTextRoundTripsThePool) {
  const auto first = parseDaemonConfig(kTwoModules);
  ASSERT_TRUE(first.ok()) << joined(first.errors);
  const std::string text = toJsonText(*first.config);
  const auto again = parseDaemonConfig(text);
  ASSERT_TRUE(again.ok()) << joined(again.errors) << text;
  const ModulesSection& modules = again.config->modules;
  ASSERT_EQ(modules.pool.modules.size(), 2u);
  const agileos::modules::ModuleEntry& kv = modules.pool.modules[0];
  EXPECT_EQ(kv.name, "kvstore");
  EXPECT_EQ(kv.version.toString(), "1.2.0");
  ASSERT_EQ(kv.depends.size(), 1u);
  EXPECT_EQ(kv.depends[0].requirement.text, "^1.0");
  EXPECT_EQ(kv.host_library_path, "/opt/agileos/modules/libkvstore.so");
  EXPECT_EQ(kv.ptx_path, "");
  EXPECT_EQ(kv.service, "kv");
  EXPECT_EQ(kv.description, "a key-value store");
  EXPECT_EQ(modules.pool.modules[1].ptx_path, "/opt/agileos/modules/queue.ptx");
  EXPECT_EQ(modules.allowed, first.config->modules.allowed);
  EXPECT_EQ(toJsonText(*again.config), text) << "the effective config is a fixed point";
}

TEST(DaemonConfigModules, ReportsEveryPoolErrorWithItsPath) {
  const auto result = parseDaemonConfig(R"({"modules": {"pool": [
    {"name": "a", "version": "1.0.0", "ptx": "relative.ptx"},
    {"name": "a", "version": "2.0.0", "host_library": "/m/liba.so", "depends": [{"name": "b", "version": ">=3"}]},
    {"name": "b", "version": "1.0.0", "ptx": "/m/b.ptx", "colour": "red"}
  ], "allowed": ["zzz"]}})");
  ASSERT_FALSE(result.ok());
  const std::string all = joined(result.errors);
  EXPECT_THAT(all, HasSubstr("modules.pool[0].ptx: expected an absolute path"));
  EXPECT_THAT(all, HasSubstr("modules.pool[1].name: 'a' is already the name of modules.pool[0]"));
  EXPECT_THAT(all, HasSubstr("modules.pool[1].depends[0].version: 'b' 1.0.0 does not satisfy '>=3'"));
  EXPECT_THAT(all, HasSubstr("modules.pool[2].colour: unknown key"));
  EXPECT_THAT(all, ::testing::Not(HasSubstr("modules.allowed")))
      << "allowed names are checked only against a pool that parsed";
}

}  // namespace
}  // namespace agileos::scheduler
