// The module pool: the protected modules this daemon can load into a client's context, as the
// operator lists them in the daemon config (`modules`, an array of entries).
//
// One entry, every key but name and version optional:
//   {"name": "kvstore", "version": "1.2.0",
//    "depends": [{"name": "queue", "version": "^1.0"}],   // version defaults to "*"
//    "ptx": "/opt/agileos/modules/kvstore.ptx",
//    "host_library": "/opt/agileos/modules/libkvstore.so",
//    "service": "", "description": "..."}
//
// Invariants of a pool that validateModulePool accepts (and parseModulePool returns without
// errors), which admission (module_admission.h) relies on:
//   - names match ^[a-z][a-z0-9_]{0,62}$ and are unique: one version of each module per pool;
//   - each entry has at least one artifact; ptx and host_library are absolute paths or empty;
//   - every dependency names another entry whose version satisfies the dependency's requirement,
//     and no entry lists the same dependency twice;
//   - the dependency graph has no cycle, so a load order exists;
//   - service is empty or a name of the same syntax.
//
// Parsing is strict like the rest of the daemon config (scheduler/daemon_config.h): an unknown
// key, a wrong type or a bad value is an error naming its path ("modules[2].depends[0].version"),
// and every error is reported, not only the first.
//
// Thread-safety: plain values and functions; no shared state.
#pragma once

#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "modules/catalog/module_version.h"

namespace agileos::modules {

// Longest module (and service) name; also the limit on names in client requests.
inline constexpr std::size_t kMaxModuleNameBytes = 63;
// Longest artifact path.
inline constexpr std::size_t kMaxArtifactPathBytes = 4096;

struct Dependency {
  std::string name;
  Requirement requirement;  // "*" when the config gives no version
};

struct ModuleEntry {
  std::string name;
  Version version;
  std::vector<Dependency> depends;
  std::string ptx_path;           // device code, guarded like a client's own PTX; may be empty
  std::string host_library_path;  // lib<name>.so run in the worker; may be empty
  std::string service;            // the service process backing the module; may be empty
  std::string description;
};

struct ModulePool {
  std::vector<ModuleEntry> modules;

  // The entry named `name`, or null. Pointers stay valid while `modules` is not modified.
  const ModuleEntry* find(std::string_view name) const;
};

// "" if `name` is a valid module or service name, else the problem.
std::string checkModuleName(std::string_view name);

// Every violation of the invariants above, each "<path>[i].<key>: <problem>" (or "<path>: ..."
// for a dependency cycle, which names the modules, e.g. "a -> b -> a"). Empty when valid.
std::vector<std::string> validateModulePool(const ModulePool& pool, const std::string& path);

// Parses the JSON array at `path` ("modules") and validates the result. Appends every error to
// *errors; the returned pool is meaningful only if none was appended. Never throws.
ModulePool parseModulePool(const nlohmann::json& array, const std::string& path,
                           std::vector<std::string>* errors);

}  // namespace agileos::modules
