#include "modules/catalog/module_manifest.h"

#include <algorithm>
#include <map>

#include "modules/catalog/message_text.h"
#include "modules/catalog/module_pool_checks.h"

namespace agileos::modules {
namespace {

std::string entryPath(const std::string& path, std::size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

// Depth-first search of the dependency graph that reports every back edge as a cycle. The graph
// is small (a trusted config), so recursion depth is bounded by the pool size.
class CycleFinder {
 public:
  CycleFinder(const ModulePool& pool, const std::map<std::string_view, std::size_t>& index_of,
              const std::string& path, std::vector<std::string>* errors)
      : pool_(pool),
        index_of_(index_of),
        path_(path),
        errors_(errors),
        state_(pool.modules.size(), kUnvisited) {}

  // Starts from every module in name order, so the reported cycles do not depend on the order
  // of the config's entries.
  void run() {
    for (const auto& [name, index] : index_of_) {
      if (state_[index] == kUnvisited) visit(index);
    }
  }

 private:
  enum State { kUnvisited, kOnStack, kDone };

  void visit(std::size_t index) {
    state_[index] = kOnStack;
    stack_.push_back(index);
    for (const Dependency& dependency : pool_.modules[index].depends) {
      const auto it = index_of_.find(dependency.name);
      if (it == index_of_.end()) continue;  // unknown: reported by checkPoolGraph
      const std::size_t next = it->second;
      if (state_[next] == kOnStack) {
        report(next);
      } else if (state_[next] == kUnvisited) {
        visit(next);
      }
    }
    stack_.pop_back();
    state_[index] = kDone;
  }

  // The cycle is the part of the stack from `first` to the top, closed by the edge back to `first`.
  void report(std::size_t first) {
    std::string cycle;
    const auto start = std::find(stack_.begin(), stack_.end(), first);
    for (auto it = start; it != stack_.end(); ++it) cycle += pool_.modules[*it].name + " -> ";
    cycle += pool_.modules[first].name;
    errors_->push_back(path_ + ": dependency cycle " + cycle);
  }

  const ModulePool& pool_;
  const std::map<std::string_view, std::size_t>& index_of_;
  const std::string& path_;
  std::vector<std::string>* errors_;
  std::vector<State> state_;
  std::vector<std::size_t> stack_;
};

}  // namespace

const ModuleEntry* ModulePool::find(std::string_view name) const {
  for (const ModuleEntry& entry : modules) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

std::string checkModuleName(std::string_view name) {
  const auto problem = [&] {
    return "expected a name matching ^[a-z][a-z0-9_]{0,62}$, got " + quoteText(name);
  };
  if (name.empty() || name.size() > kMaxModuleNameBytes) return problem();
  if (name.front() < 'a' || name.front() > 'z') return problem();
  for (const char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return problem();
  }
  return "";
}

namespace detail {

std::string checkArtifactPath(std::string_view path) {
  if (path.empty() || path.front() != '/') return "expected an absolute path, got " + quoteText(path);
  if (path.find('\0') != std::string_view::npos) return "must not contain NUL characters";
  if (path.size() > kMaxArtifactPathBytes) {
    return "path is " + std::to_string(path.size()) + " bytes; at most " +
           std::to_string(kMaxArtifactPathBytes);
  }
  return "";
}

std::string checkServiceName(std::string_view service) {
  return service.empty() ? "" : checkModuleName(service);
}

void checkPoolGraph(const ModulePool& pool, const std::string& path, const std::vector<bool>& version_known,
                    std::vector<std::string>* errors) {
  // The first entry of each name; later ones are reported as duplicates and otherwise ignored.
  std::map<std::string_view, std::size_t> index_of;
  for (std::size_t i = 0; i < pool.modules.size(); ++i) {
    const std::string& name = pool.modules[i].name;
    if (name.empty()) continue;
    const auto [it, inserted] = index_of.emplace(name, i);
    if (!inserted) {
      errors->push_back(entryPath(path, i) + ".name: " + quoteText(name) + " is already the name of " +
                        entryPath(path, it->second) + " (one version of each module per pool)");
    }
  }
  for (std::size_t i = 0; i < pool.modules.size(); ++i) {
    const ModuleEntry& entry = pool.modules[i];
    std::map<std::string_view, std::size_t> seen;
    for (std::size_t d = 0; d < entry.depends.size(); ++d) {
      const Dependency& dependency = entry.depends[d];
      const std::string dependency_path = entryPath(path, i) + ".depends[" + std::to_string(d) + "]";
      if (dependency.name.empty()) continue;
      if (!seen.emplace(dependency.name, d).second) {
        errors->push_back(dependency_path + ".name: " + quoteText(dependency.name) + " is listed twice");
        continue;
      }
      const auto it = index_of.find(dependency.name);
      if (it == index_of.end()) {
        errors->push_back(dependency_path + ".name: " + quoteText(dependency.name) +
                          " is not a module of the pool");
        continue;
      }
      const ModuleEntry& target = pool.modules[it->second];
      if (it->second < version_known.size() && !version_known[it->second]) continue;
      if (!dependency.requirement.matches(target.version)) {
        errors->push_back(dependency_path + ".version: " + quoteText(dependency.name) + " " +
                          target.version.toString() + " does not satisfy " +
                          quoteText(dependency.requirement.text));
      }
    }
  }
  CycleFinder(pool, index_of, path, errors).run();
}

}  // namespace detail

std::vector<std::string> validateModulePool(const ModulePool& pool, const std::string& path) {
  std::vector<std::string> errors;
  for (std::size_t i = 0; i < pool.modules.size(); ++i) {
    const ModuleEntry& entry = pool.modules[i];
    const std::string at = entryPath(path, i);
    if (std::string problem = checkModuleName(entry.name); !problem.empty()) {
      errors.push_back(at + ".name: " + problem);
    }
    for (const std::uint32_t part : {entry.version.major, entry.version.minor, entry.version.patch}) {
      if (part > kMaxVersionPart) {
        errors.push_back(at + ".version: a part exceeds " + std::to_string(kMaxVersionPart));
        break;
      }
    }
    for (std::size_t d = 0; d < entry.depends.size(); ++d) {
      if (std::string problem = checkModuleName(entry.depends[d].name); !problem.empty()) {
        errors.push_back(at + ".depends[" + std::to_string(d) + "].name: " + problem);
      }
    }
    if (entry.ptx_path.empty() && entry.host_library_path.empty()) {
      errors.push_back(at + ": needs at least one artifact (ptx or host_library)");
    }
    if (!entry.ptx_path.empty()) {
      if (std::string problem = detail::checkArtifactPath(entry.ptx_path); !problem.empty()) {
        errors.push_back(at + ".ptx: " + problem);
      }
    }
    if (!entry.host_library_path.empty()) {
      if (std::string problem = detail::checkArtifactPath(entry.host_library_path); !problem.empty()) {
        errors.push_back(at + ".host_library: " + problem);
      }
    }
    if (std::string problem = detail::checkServiceName(entry.service); !problem.empty()) {
      errors.push_back(at + ".service: " + problem);
    }
  }
  detail::checkPoolGraph(pool, path, {}, &errors);
  return errors;
}

}  // namespace agileos::modules
