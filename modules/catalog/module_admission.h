// Admission of a client's module requests against the daemon's module pool and policy.
//
// A client asks for modules by name, each with an optional version requirement. The request is
// admitted as a whole or refused as a whole: either every requested module and every module they
// need (transitively) is in the pool, allowed by the policy and of a satisfying version, or the
// result names the first module that is not and why. The admitted modules come in load order:
// each after all of its dependencies, ties broken by name, so the order is a function of the
// pool and the set of requested names alone (not of the order of the requests).
//
// Requests come from untrusted clients: their count, name length and requirement length are
// bounded before anything else is done with them, and refusals quote client text through
// quoteText (bounded, printable).
//
// Thread-safety: plain values and functions; the pool is only read.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "modules/catalog/module_manifest.h"

namespace agileos::modules {

inline constexpr std::size_t kMaxModuleRequests = 64;
inline constexpr std::size_t kMaxRequirementBytes = 128;

struct ModuleRequest {
  std::string name;
  std::string version_requirement;  // module_version.h syntax; "" = any version
};

struct AdmissionResult {
  // When admitted: the requested modules and their dependencies, dependencies first.
  std::vector<ModuleEntry> load_order;
  // When refused: why, e.g. "module 'kv' is not allowed by the policy"; load_order is empty.
  std::string error;

  bool admitted() const { return error.empty(); }
};

// `allowed` is the policy: the module names clients of this daemon may use, or "*" for every
// module of the pool. It applies to dependencies as well: a module is usable only if everything
// it needs is. No requests is admitted, with an empty load order. The pool is expected to have
// passed validateModulePool; a pool that has not is still handled safely (a missing dependency
// or a cycle is a refusal).
AdmissionResult admitModules(const ModulePool& pool, const std::vector<std::string>& allowed,
                             const std::vector<ModuleRequest>& requests);

// The names of `load_order` in the order to unload them: the reverse, so every module goes before
// the modules it depends on.
std::vector<std::string> teardownOrder(const std::vector<ModuleEntry>& load_order);

}  // namespace agileos::modules
