// The module pool (modules/catalog/module_manifest.h): parsing the config's `modules` array
// strictly, and validating a pool: names, paths, dependencies and cycles.
#include "modules/catalog/module_manifest.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace agileos::modules {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;

std::vector<std::string> parseErrors(std::string_view text) {
  std::vector<std::string> errors;
  parseModulePool(json::parse(text), "modules", &errors);
  return errors;
}

ModuleEntry entry(std::string name, Version version, std::vector<Dependency> depends = {}) {
  ModuleEntry e;
  e.name = std::move(name);
  e.version = version;
  e.depends = std::move(depends);
  e.ptx_path = "/opt/agileos/modules/" + e.name + ".ptx";
  return e;
}

Dependency dep(std::string name, std::string_view requirement = "*") {
  return {std::move(name), *parseRequirement(requirement)};
}

TEST(ModuleManifest, ParsesAFullEntry) {
  std::vector<std::string> errors;
  const ModulePool pool = parseModulePool(json::parse(R"([
    {"name": "kvstore", "version": "1.2.0",
     "depends": [{"name": "queue", "version": "^1.0"}, {"name": "alloc"}],
     "ptx": "/opt/agileos/modules/kvstore.ptx",
     "host_library": "/opt/agileos/modules/libkvstore.so",
     "service": "kv_service", "description": "a key-value store"},
    {"name": "queue", "version": "1.4.0", "ptx": "/opt/agileos/modules/queue.ptx"},
    {"name": "alloc", "version": "0.1.0", "host_library": "/opt/agileos/modules/liballoc.so", "service": ""}
  ])"),
                                          "modules", &errors);
  ASSERT_TRUE(errors.empty()) << errors.front();
  ASSERT_EQ(pool.modules.size(), 3u);
  const ModuleEntry* kv = pool.find("kvstore");
  ASSERT_NE(kv, nullptr);
  EXPECT_EQ(kv->version, (Version{1, 2, 0}));
  ASSERT_EQ(kv->depends.size(), 2u);
  EXPECT_EQ(kv->depends[0].name, "queue");
  EXPECT_EQ(kv->depends[0].requirement.text, "^1.0");
  EXPECT_TRUE(kv->depends[0].requirement.matches(Version{1, 9, 0}));
  EXPECT_FALSE(kv->depends[0].requirement.matches(Version{2, 0, 0}));
  EXPECT_EQ(kv->depends[1].name, "alloc");
  EXPECT_TRUE(kv->depends[1].requirement.isAny());
  EXPECT_EQ(kv->ptx_path, "/opt/agileos/modules/kvstore.ptx");
  EXPECT_EQ(kv->host_library_path, "/opt/agileos/modules/libkvstore.so");
  EXPECT_EQ(kv->service, "kv_service");
  EXPECT_EQ(kv->description, "a key-value store");
  EXPECT_EQ(pool.find("alloc")->ptx_path, "");
  EXPECT_EQ(pool.find("missing"), nullptr);
  EXPECT_TRUE(validateModulePool(pool, "modules").empty());
}

TEST(ModuleManifest, AnEmptyPoolIsValid) {
  EXPECT_TRUE(parseErrors("[]").empty());
  EXPECT_TRUE(validateModulePool(ModulePool{}, "modules").empty());
}

TEST(ModuleManifest, ReportsEveryStructuralErrorWithItsPath) {
  EXPECT_THAT(parseErrors(R"({"name": "kv"})"),
              ElementsAre("modules: expected an array of module entries, got an object"));
  EXPECT_THAT(
      parseErrors(R"([
        "kv",
        {"version": "1.0.0", "ptx": "/a.ptx", "size": 3},
        {"name": "b", "version": 2, "ptx": "/b.ptx",
         "depends": [{"name": "c", "versoin": "1"}, "c", {"version": "^1"}]},
        {"name": "c", "version": "1.0.0", "ptx": "/c.ptx", "depends": {"name": "a"}}
      ])"),
      ElementsAre("modules[0]: expected an object, got 'kv' (a string)",
                  "modules[1].name: missing (required)",
                  "modules[1].size: unknown key (expected one of: name, version, depends, ptx, host_library, "
                  "service, description)",
                  "modules[2].version: expected a string, got 2 (a number)",
                  "modules[2].depends[0].versoin: unknown key (expected one of: name, version)",
                  "modules[2].depends[1]: expected an object {\"name\", \"version\"}, got 'c' (a string)",
                  "modules[2].depends[2].name: missing (required)",
                  "modules[3].depends: expected an array, got an object"));
}

TEST(ModuleManifest, RefusesBadValues) {
  EXPECT_THAT(
      parseErrors(R"([
        {"name": "Kv", "version": "1.0", "ptx": "relative/kv.ptx", "host_library": "", "service": "Bad-Service"},
        {"name": "b", "version": "1.0.0-beta"},
        {"name": "c", "version": "1.0.0", "ptx": "/c.ptx", "depends": [{"name": "b", "version": ">=x"}]},
        {"name": "d", "version": "1.0.0", "host_library": "/libd.so", "description": 7}
      ])"),
      ElementsAre("modules[0].name: expected a name matching ^[a-z][a-z0-9_]{0,62}$, got 'Kv'",
                  "modules[0].version: invalid version '1.0': expected MAJOR.MINOR.PATCH, got 2 parts",
                  "modules[0].ptx: expected an absolute path, got 'relative/kv.ptx'",
                  "modules[0].service: expected a name matching ^[a-z][a-z0-9_]{0,62}$, got 'Bad-Service'",
                  "modules[1].version: invalid version '1.0.0-beta': pre-release versions are not supported "
                  "('-beta')",
                  "modules[1]: needs at least one artifact (ptx or host_library)",
                  "modules[2].depends[0].version: clause 1 '>=x': a version starts with a digit, got 'x'",
                  "modules[3].description: expected a string, got 7 (a number)"));
}

TEST(ModuleManifest, NameSyntax) {
  EXPECT_EQ(checkModuleName("a"), "");
  EXPECT_EQ(checkModuleName("kv_store2"), "");
  EXPECT_EQ(checkModuleName(std::string(63, 'a')), "");
  EXPECT_NE(checkModuleName(std::string(64, 'a')), "");
  EXPECT_NE(checkModuleName(""), "");
  EXPECT_NE(checkModuleName("2kv"), "");
  EXPECT_NE(checkModuleName("_kv"), "");
  EXPECT_NE(checkModuleName("kv-store"), "");
  EXPECT_NE(checkModuleName("kv.store"), "");
  EXPECT_NE(checkModuleName("*"), "");
}

TEST(ModuleManifest, DuplicateNamesAndDependencyErrors) {
  EXPECT_THAT(
      parseErrors(R"([
        {"name": "queue", "version": "1.4.0", "ptx": "/q.ptx"},
        {"name": "queue", "version": "2.0.0", "ptx": "/q2.ptx"},
        {"name": "kv", "version": "1.0.0", "ptx": "/kv.ptx",
         "depends": [{"name": "queue", "version": "^2.0"}, {"name": "log"}, {"name": "queue"}]}
      ])"),
      ElementsAre(
          "modules[1].name: 'queue' is already the name of modules[0] (one version of each module per pool)",
          "modules[2].depends[0].version: 'queue' 1.4.0 does not satisfy '^2.0'",
          "modules[2].depends[1].name: 'log' is not a module of the pool",
          "modules[2].depends[2].name: 'queue' is listed twice"));
}

TEST(ModuleManifest, ADependencyOnAModuleWithABadVersionIsNotCheckedAgainstIt) {
  // The bad version is reported once; "does not satisfy" against a made-up 0.0.0 would only mislead.
  EXPECT_THAT(parseErrors(R"([
        {"name": "queue", "version": "x", "ptx": "/q.ptx"},
        {"name": "kv", "version": "1.0.0", "ptx": "/kv.ptx", "depends": [{"name": "queue", "version": ">=1"}]}
      ])"),
              ElementsAre("modules[0].version: invalid version 'x': a version starts with a digit, got 'x'"));
}

TEST(ModuleManifest, ReportsCycles) {
  EXPECT_THAT(parseErrors(R"([
        {"name": "c", "version": "1.0.0", "ptx": "/c.ptx", "depends": [{"name": "a"}]},
        {"name": "a", "version": "1.0.0", "ptx": "/a.ptx", "depends": [{"name": "b"}]},
        {"name": "b", "version": "1.0.0", "ptx": "/b.ptx", "depends": [{"name": "c"}]},
        {"name": "d", "version": "1.0.0", "ptx": "/d.ptx", "depends": [{"name": "a"}]}
      ])"),
              ElementsAre("modules: dependency cycle a -> b -> c -> a"));
  EXPECT_THAT(
      parseErrors(R"([{"name": "a", "version": "1.0.0", "ptx": "/a.ptx", "depends": [{"name": "a"}]}])"),
      ElementsAre("modules: dependency cycle a -> a"));
  EXPECT_THAT(parseErrors(R"([
        {"name": "a", "version": "1.0.0", "ptx": "/a.ptx", "depends": [{"name": "b"}]},
        {"name": "b", "version": "1.0.0", "ptx": "/b.ptx", "depends": [{"name": "a"}]}
      ])"),
              ElementsAre("modules: dependency cycle a -> b -> a"));
}

TEST(ModuleManifest, ValidatesAPoolBuiltInCode) {
  ModulePool pool;
  pool.modules.push_back(entry("a", {1, 0, 0}, {dep("b", ">=2")}));
  pool.modules.push_back(entry("b", {1, 5, 0}, {dep("c")}));
  pool.modules.push_back(entry("c", {1, 0, 0}, {dep("a"), dep("Bad")}));
  pool.modules.push_back(entry("a", {3, 0, 0}));
  pool.modules.push_back(entry("no_artifact", {1, 0, 0}));
  pool.modules.back().ptx_path.clear();
  pool.modules.push_back(entry("rel", {1, 0, 0}));
  pool.modules.back().ptx_path = "rel.ptx";
  pool.modules.back().host_library_path = "lib/librel.so";
  pool.modules.push_back(entry("big", {kMaxVersionPart + 1u, 0, 0}));
  pool.modules.back().service = "x y";
  EXPECT_THAT(
      validateModulePool(pool, "pool"),
      ElementsAre("pool[2].depends[1].name: expected a name matching ^[a-z][a-z0-9_]{0,62}$, got 'Bad'",
                  "pool[4]: needs at least one artifact (ptx or host_library)",
                  "pool[5].ptx: expected an absolute path, got 'rel.ptx'",
                  "pool[5].host_library: expected an absolute path, got 'lib/librel.so'",
                  "pool[6].version: a part exceeds 2147483647",
                  "pool[6].service: expected a name matching ^[a-z][a-z0-9_]{0,62}$, got 'x y'",
                  "pool[3].name: 'a' is already the name of pool[0] (one version of each module per pool)",
                  "pool[0].depends[0].version: 'b' 1.5.0 does not satisfy '>=2'",
                  "pool[2].depends[1].name: 'Bad' is not a module of the pool",
                  "pool: dependency cycle a -> b -> c -> a"));
}

}  // namespace
}  // namespace agileos::modules
