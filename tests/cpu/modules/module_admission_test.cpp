// Admission of module requests (modules/catalog/module_admission.h): the pool, the policy, the
// version requirements, the transitive closure and its load and teardown order, and the limits on
// untrusted requests.
#include "modules/catalog/module_admission.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace agileos::modules {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

const std::vector<std::string> kAll = {"*"};

ModuleEntry entry(std::string name, Version version,
                  std::vector<std::pair<std::string, std::string>> depends = {}) {
  ModuleEntry e;
  e.name = std::move(name);
  e.version = version;
  for (auto& [dependency, requirement] : depends)
    e.depends.push_back({dependency, *parseRequirement(requirement)});
  e.host_library_path = "/opt/agileos/modules/lib" + e.name + ".so";
  return e;
}

// kv 1.0.0 -> queue ^1.0 -> alloc; queue is 1.4.0; log stands alone.
ModulePool kvPool() {
  ModulePool pool;
  pool.modules.push_back(entry("kv", {1, 0, 0}, {{"queue", "^1.0"}}));
  pool.modules.push_back(entry("queue", {1, 4, 0}, {{"alloc", "*"}}));
  pool.modules.push_back(entry("alloc", {0, 3, 1}));
  pool.modules.push_back(entry("log", {2, 1, 0}));
  EXPECT_THAT(validateModulePool(pool, "modules"), IsEmpty());
  return pool;
}

// a -> b, a -> c, b -> d, c -> d; listed out of order on purpose.
ModulePool diamondPool() {
  ModulePool pool;
  pool.modules.push_back(entry("c", {1, 0, 0}, {{"d", "*"}}));
  pool.modules.push_back(entry("a", {1, 0, 0}, {{"c", "*"}, {"b", "*"}}));
  pool.modules.push_back(entry("d", {1, 0, 0}));
  pool.modules.push_back(entry("b", {1, 0, 0}, {{"d", "*"}}));
  EXPECT_THAT(validateModulePool(pool, "modules"), IsEmpty());
  return pool;
}

std::vector<std::string> names(const AdmissionResult& result) {
  std::vector<std::string> out;
  for (const ModuleEntry& e : result.load_order) out.push_back(e.name);
  return out;
}

std::string refusal(const ModulePool& pool, const std::vector<std::string>& allowed,
                    const std::vector<ModuleRequest>& requests) {
  const AdmissionResult result = admitModules(pool, allowed, requests);
  EXPECT_FALSE(result.admitted());
  EXPECT_THAT(result.load_order, IsEmpty());
  return result.error;
}

TEST(ModuleAdmission, AdmitsTheTransitiveClosureInLoadOrder) {
  const AdmissionResult result = admitModules(kvPool(), kAll, {{"kv", ">=1"}});
  ASSERT_TRUE(result.admitted()) << result.error;
  EXPECT_THAT(names(result), ElementsAre("alloc", "queue", "kv"));
  EXPECT_EQ(result.load_order[1].version, (Version{1, 4, 0}));
  EXPECT_EQ(result.load_order[2].host_library_path, "/opt/agileos/modules/libkv.so");
  EXPECT_THAT(teardownOrder(result.load_order), ElementsAre("kv", "queue", "alloc"));
}

TEST(ModuleAdmission, DiamondLoadsEachModuleOnceDependenciesFirstTiesByName) {
  const AdmissionResult result = admitModules(diamondPool(), kAll, {{"a", ""}});
  ASSERT_TRUE(result.admitted()) << result.error;
  EXPECT_THAT(names(result), ElementsAre("d", "b", "c", "a"));
  EXPECT_THAT(teardownOrder(result.load_order), ElementsAre("a", "c", "b", "d"));
  // The order depends on the set of names requested, not on the order of the requests.
  const AdmissionResult again = admitModules(diamondPool(), kAll, {{"c", ""}, {"a", ""}, {"b", "1.0.0"}});
  ASSERT_TRUE(again.admitted()) << again.error;
  EXPECT_THAT(names(again), ElementsAre("d", "b", "c", "a"));
}

TEST(ModuleAdmission, IndependentRequestsAreOrderedByName) {
  const AdmissionResult result = admitModules(kvPool(), {"log", "alloc"}, {{"log", ""}, {"alloc", ""}});
  ASSERT_TRUE(result.admitted()) << result.error;
  EXPECT_THAT(names(result), ElementsAre("alloc", "log"));
}

TEST(ModuleAdmission, NoRequestsAdmitsNothing) {
  const AdmissionResult result = admitModules(kvPool(), {}, {});
  EXPECT_TRUE(result.admitted());
  EXPECT_THAT(result.load_order, IsEmpty());
  EXPECT_THAT(teardownOrder(result.load_order), IsEmpty());
}

TEST(ModuleAdmission, RefusesAModuleNotInThePool) {
  EXPECT_EQ(refusal(kvPool(), kAll, {{"log", ""}, {"x", ""}}), "module 'x' is not in the pool");
}

TEST(ModuleAdmission, RefusesAModuleThePolicyDoesNotAllow) {
  EXPECT_EQ(refusal(kvPool(), {"kv", "queue", "alloc"}, {{"log", ""}}),
            "module 'log' is not allowed by the policy");
  EXPECT_EQ(refusal(kvPool(), {}, {{"log", ""}}), "module 'log' is not allowed by the policy");
}

TEST(ModuleAdmission, RefusesAVersionThatDoesNotSatisfyTheRequest) {
  EXPECT_EQ(refusal(kvPool(), kAll, {{"kv", ">=2"}}), "module 'kv' 1.0.0 does not satisfy '>=2' (requested)");
  EXPECT_EQ(refusal(kvPool(), kAll, {{"alloc", "^0.4"}}),
            "module 'alloc' 0.3.1 does not satisfy '^0.4' (requested)");
  EXPECT_EQ(refusal(kvPool(), kAll, {{"log", "~2.0"}}),
            "module 'log' 2.1.0 does not satisfy '~2.0' (requested)");
}

TEST(ModuleAdmission, RefusesAMalformedRequirement) {
  EXPECT_EQ(refusal(kvPool(), kAll, {{"kv", ">=x"}}),
            "requirement '>=x' of module 'kv': clause 1 '>=x': a version starts with a digit, got 'x'");
  EXPECT_EQ(refusal(kvPool(), kAll, {{"kv", " "}}), "requirement ' ' of module 'kv': empty requirement");
  EXPECT_EQ(refusal(kvPool(), kAll, {{"kv", std::string(129, '1')}}),
            "requirement of module 'kv' is 129 bytes; at most 128");
  // 128 bytes is within the limit (and then an ordinary parse error).
  EXPECT_THAT(refusal(kvPool(), kAll, {{"kv", std::string(128, '1')}}),
              ::testing::StartsWith("requirement '1111"));
}

TEST(ModuleAdmission, RefusesADependencyWhoseVersionDoesNotSatisfy) {
  // A pool that did not pass validation still gets a refusal, not a load.
  ModulePool pool = kvPool();
  pool.modules[0].depends[0].requirement = *parseRequirement("^2.0");
  EXPECT_EQ(refusal(pool, kAll, {{"kv", ""}}), "module 'kv' depends on 'queue' ^2.0 but the pool has 1.4.0");
}

TEST(ModuleAdmission, RefusesAMissingDependency) {
  ModulePool pool = kvPool();
  pool.modules.erase(pool.modules.begin() + 2);  // alloc
  EXPECT_EQ(refusal(pool, kAll, {{"kv", ""}}), "module 'queue' depends on 'alloc', which is not in the pool");
}

TEST(ModuleAdmission, RefusesADependencyThePolicyDoesNotAllow) {
  EXPECT_EQ(refusal(kvPool(), {"kv", "alloc"}, {{"kv", ""}}),
            "module 'kv' needs 'queue', which the policy does not allow");
  EXPECT_EQ(refusal(kvPool(), {"kv", "queue"}, {{"kv", ""}}),
            "module 'queue' needs 'alloc', which the policy does not allow");
  const AdmissionResult result = admitModules(kvPool(), {"kv", "queue", "alloc"}, {{"kv", ""}});
  EXPECT_TRUE(result.admitted()) << result.error;
}

TEST(ModuleAdmission, DuplicateRequests) {
  // Compatible repeats are merged.
  const AdmissionResult merged =
      admitModules(kvPool(), kAll, {{"queue", ">=1"}, {"queue", "<2"}, {"queue", ""}});
  ASSERT_TRUE(merged.admitted()) << merged.error;
  EXPECT_THAT(names(merged), ElementsAre("alloc", "queue"));
  // Incompatible ones are refused whatever the pool holds.
  EXPECT_EQ(refusal(kvPool(), kAll, {{"queue", "^1"}, {"queue", ">=2"}}),
            "module 'queue' is requested twice with incompatible requirements '^1' and '>=2'");
  EXPECT_EQ(refusal(kvPool(), kAll, {{"queue", "=1.4.0"}, {"queue", "=1.5.0"}}),
            "module 'queue' is requested twice with incompatible requirements '=1.4.0' and '=1.5.0'");
  // Each repeat is checked against every earlier one, not only the first.
  EXPECT_EQ(refusal(kvPool(), kAll, {{"queue", ">=1"}, {"queue", "<2"}, {"queue", "^2"}}),
            "module 'queue' is requested twice with incompatible requirements '<2' and '^2'");
  // Compatible with each other but not with the pool's version.
  EXPECT_EQ(refusal(kvPool(), kAll, {{"queue", ">=1"}, {"queue", ">1.4"}}),
            "module 'queue' 1.4.0 does not satisfy '>1.4' (requested)");
}

TEST(ModuleAdmission, LimitsUntrustedRequests) {
  std::vector<ModuleRequest> requests(kMaxModuleRequests, ModuleRequest{"log", ""});
  EXPECT_TRUE(admitModules(kvPool(), kAll, requests).admitted());
  requests.push_back({"log", ""});
  EXPECT_EQ(refusal(kvPool(), kAll, requests), "too many module requests (65); at most 64");

  EXPECT_EQ(refusal(kvPool(), kAll, {{std::string(64, 'a'), ""}}),
            "invalid module name: expected a name matching ^[a-z][a-z0-9_]{0,62}$, got '" +
                std::string(64, 'a') + "'");
  EXPECT_EQ(refusal(kvPool(), kAll, {{std::string(65, 'a'), ""}}),
            "invalid module name: expected a name matching ^[a-z][a-z0-9_]{0,62}$, got '" +
                std::string(64, 'a') + "'...");
  EXPECT_EQ(refusal(kvPool(), kAll, {{"*", ""}}),
            "invalid module name: expected a name matching ^[a-z][a-z0-9_]{0,62}$, got '*'");
  EXPECT_EQ(refusal(kvPool(), kAll, {{"kv\n'", ""}}),
            "invalid module name: expected a name matching ^[a-z][a-z0-9_]{0,62}$, got 'kv\\x0a\\x27'");
  EXPECT_EQ(refusal(kvPool(), kAll, {{"", ""}}),
            "invalid module name: expected a name matching ^[a-z][a-z0-9_]{0,62}$, got ''");
}

TEST(ModuleAdmission, RefusesACycleInAPoolThatWasNotValidated) {
  ModulePool pool = diamondPool();
  pool.modules[2].depends.push_back({"a", Requirement{}});  // d -> a closes a -> b -> d -> a
  EXPECT_EQ(refusal(pool, kAll, {{"b", ""}}),
            "the module pool has a dependency cycle among 'a', 'b', 'c', 'd'");
}

}  // namespace
}  // namespace agileos::modules
