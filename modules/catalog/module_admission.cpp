#include "modules/catalog/module_admission.h"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>

#include "modules/catalog/message_text.h"

namespace agileos::modules {
namespace {

AdmissionResult refuse(std::string reason) {
  AdmissionResult result;
  result.error = std::move(reason);
  return result;
}

bool allowedByPolicy(const std::vector<std::string>& allowed, std::string_view name) {
  return std::any_of(allowed.begin(), allowed.end(),
                     [&](const std::string& a) { return a == "*" || a == name; });
}

// The requirement of one request, or an error. Checks the length before parsing.
bool parseRequested(const ModuleRequest& request, Requirement* out, std::string* error) {
  const std::string& text = request.version_requirement;
  if (text.empty()) {
    *out = Requirement{};
    return true;
  }
  if (text.size() > kMaxRequirementBytes) {
    *error = "requirement of module " + quoteText(request.name) + " is " + std::to_string(text.size()) +
             " bytes; at most " + std::to_string(kMaxRequirementBytes);
    return false;
  }
  std::string problem;
  std::optional<Requirement> parsed = parseRequirement(text, &problem);
  if (!parsed) {
    *error = "requirement " + quoteText(text) + " of module " + quoteText(request.name) + ": " + problem;
    return false;
  }
  *out = std::move(*parsed);
  return true;
}

// Orders `included` so that each module follows its dependencies, smallest ready name first
// (Kahn's algorithm). False if some modules remain: they lie on a cycle, which a validated pool
// cannot have.
bool loadOrder(const ModulePool& pool, const std::map<std::string, const ModuleEntry*>& included,
               std::vector<ModuleEntry>* out, std::string* error) {
  std::map<std::string_view, std::size_t> waiting_on;  // module -> dependencies not yet ordered
  std::map<std::string_view, std::vector<std::string_view>> dependents;
  std::set<std::string_view> ready;
  for (const auto& [name, entry] : included) {
    std::set<std::string_view> needs;  // distinct: an invalid pool may list a dependency twice
    for (const Dependency& dependency : entry->depends) needs.insert(dependency.name);
    for (std::string_view need : needs) dependents[need].push_back(name);
    waiting_on[name] = needs.size();
    if (needs.empty()) ready.insert(name);
  }
  while (!ready.empty()) {
    const std::string_view name = *ready.begin();
    ready.erase(ready.begin());
    out->push_back(*pool.find(name));
    for (std::string_view dependent : dependents[name]) {
      if (--waiting_on[dependent] == 0) ready.insert(dependent);
    }
  }
  if (out->size() == included.size()) return true;
  std::string stuck;
  for (const auto& [name, count] : waiting_on) {
    if (count > 0) stuck += (stuck.empty() ? "" : ", ") + quoteText(name);
  }
  *error = "the module pool has a dependency cycle among " + stuck;
  out->clear();
  return false;
}

}  // namespace

AdmissionResult admitModules(const ModulePool& pool, const std::vector<std::string>& allowed,
                             const std::vector<ModuleRequest>& requests) {
  if (requests.size() > kMaxModuleRequests) {
    return refuse("too many module requests (" + std::to_string(requests.size()) + "); at most " +
                  std::to_string(kMaxModuleRequests));
  }

  // 1. The requested modules themselves. Repeats of a name are merged when their requirements
  //    can hold together; each requirement must still hold for the pool's version. Checking each
  //    new requirement against every earlier one suffices: requirements are intervals of one
  //    total order, and intervals that intersect pairwise share a point.
  std::map<std::string, std::vector<Requirement>> requested;
  std::vector<const ModuleEntry*> roots;
  for (const ModuleRequest& request : requests) {
    if (std::string problem = checkModuleName(request.name); !problem.empty()) {
      return refuse("invalid module name: " + problem);
    }
    const ModuleEntry* entry = pool.find(request.name);
    if (entry == nullptr) return refuse("module " + quoteText(request.name) + " is not in the pool");
    if (!allowedByPolicy(allowed, request.name)) {
      return refuse("module " + quoteText(request.name) + " is not allowed by the policy");
    }
    Requirement requirement;
    if (std::string error; !parseRequested(request, &requirement, &error)) return refuse(std::move(error));
    std::vector<Requirement>& earlier = requested[request.name];
    if (earlier.empty()) roots.push_back(entry);
    for (const Requirement& previous : earlier) {
      if (!satisfiableTogether(previous, requirement)) {
        return refuse("module " + quoteText(request.name) +
                      " is requested twice with incompatible requirements " + quoteText(previous.text) +
                      " and " + quoteText(requirement.text));
      }
    }
    if (!requirement.matches(entry->version)) {
      return refuse("module " + quoteText(request.name) + " " + entry->version.toString() +
                    " does not satisfy " + quoteText(requirement.text) + " (requested)");
    }
    earlier.push_back(std::move(requirement));
  }

  // 2. Their transitive dependencies, each checked where it is first needed (depth-first in the
  //    order of the requests and of each entry's `depends`, so the reported refusal is stable).
  std::map<std::string, const ModuleEntry*> included;
  std::vector<const ModuleEntry*> pending(roots.rbegin(), roots.rend());
  for (const ModuleEntry* root : roots) included.emplace(root->name, root);
  while (!pending.empty()) {
    const ModuleEntry* entry = pending.back();
    pending.pop_back();
    std::vector<const ModuleEntry*> found;
    for (const Dependency& dependency : entry->depends) {
      const ModuleEntry* target = pool.find(dependency.name);
      const std::string who = "module " + quoteText(entry->name);
      if (target == nullptr) {
        return refuse(who + " depends on " + quoteText(dependency.name) + ", which is not in the pool");
      }
      if (!allowedByPolicy(allowed, dependency.name)) {
        return refuse(who + " needs " + quoteText(dependency.name) + ", which the policy does not allow");
      }
      if (!dependency.requirement.matches(target->version)) {
        return refuse(who + " depends on " + quoteText(dependency.name) + " " + dependency.requirement.text +
                      " but the pool has " + target->version.toString());
      }
      if (included.emplace(target->name, target).second) found.push_back(target);
    }
    pending.insert(pending.end(), found.rbegin(), found.rend());  // the first found is visited next
  }

  // 3. The load order.
  AdmissionResult result;
  if (!loadOrder(pool, included, &result.load_order, &result.error)) return refuse(std::move(result.error));
  return result;
}

std::vector<std::string> teardownOrder(const std::vector<ModuleEntry>& load_order) {
  std::vector<std::string> names;
  names.reserve(load_order.size());
  for (auto it = load_order.rbegin(); it != load_order.rend(); ++it) names.push_back(it->name);
  return names;
}

}  // namespace agileos::modules
