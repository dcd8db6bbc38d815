// parseModulePool: the `modules` array of the daemon config, read as strictly as the rest of it
// (scheduler/daemon_config.cpp): every member is claimed by a read, anything else is an error.
#include <nlohmann/json.hpp>

#include "modules/catalog/json_object_reader.h"
#include "modules/catalog/module_manifest.h"
#include "modules/catalog/module_pool_checks.h"

namespace agileos::modules {
namespace {

using nlohmann::json;

std::string checkNameValue(std::string_view name) { return checkModuleName(name); }

std::string checkServiceValue(std::string_view service) { return detail::checkServiceName(service); }

std::string checkPathValue(std::string_view path) {
  return path.empty() ? "" : detail::checkArtifactPath(path);
}

std::string checkVersionValue(std::string_view text) {
  std::string error;
  return parseVersion(text, &error).has_value() ? "" : error;
}

std::string checkRequirementValue(std::string_view text) {
  std::string error;
  return parseRequirement(text, &error).has_value() ? "" : error;
}

Dependency parseDependency(const json& object, const std::string& path, std::vector<std::string>* errors) {
  Dependency dependency;
  JsonObjectReader reader(object, path, errors);
  reader.readRequiredString("name", &dependency.name, checkNameValue);
  std::string requirement;
  if (reader.readString("version", &requirement, checkRequirementValue)) {
    dependency.requirement = *parseRequirement(requirement);
  }
  reader.finish();
  return dependency;
}

// One entry; *version_known is false when its version is absent or invalid.
ModuleEntry parseEntry(const json& object, const std::string& path, std::vector<std::string>* errors,
                       bool* version_known) {
  ModuleEntry entry;
  JsonObjectReader reader(object, path, errors);
  reader.readRequiredString("name", &entry.name, checkNameValue);
  std::string version;
  *version_known = reader.readRequiredString("version", &version, checkVersionValue);
  if (*version_known) entry.version = *parseVersion(version);
  if (const json* depends = reader.readArray("depends"); depends != nullptr) {
    for (std::size_t i = 0; i < depends->size(); ++i) {
      const std::string item_path = reader.childPath("depends") + "[" + std::to_string(i) + "]";
      const json& item = (*depends)[i];
      if (!item.is_object()) {
        errors->push_back(item_path + ": expected an object {\"name\", \"version\"}, got " +
                          describeJson(item));
        continue;
      }
      entry.depends.push_back(parseDependency(item, item_path, errors));
    }
  }
  const std::size_t errors_before_paths = errors->size();
  reader.readString("ptx", &entry.ptx_path, checkPathValue);
  reader.readString("host_library", &entry.host_library_path, checkPathValue);
  // Only when neither path was refused: a refused one is not "absent".
  if (errors->size() == errors_before_paths && entry.ptx_path.empty() && entry.host_library_path.empty()) {
    errors->push_back(path + ": needs at least one artifact (ptx or host_library)");
  }
  reader.readString("service", &entry.service, checkServiceValue);
  reader.readString("description", &entry.description);
  reader.finish();
  return entry;
}

}  // namespace

ModulePool parseModulePool(const json& array, const std::string& path, std::vector<std::string>* errors) {
  ModulePool pool;
  if (!array.is_array()) {
    errors->push_back(path + ": expected an array of module entries, got " + describeJson(array));
    return pool;
  }
  std::vector<bool> version_known;
  for (std::size_t i = 0; i < array.size(); ++i) {
    const std::string item_path = path + "[" + std::to_string(i) + "]";
    const json& item = array[i];
    if (!item.is_object()) {
      errors->push_back(item_path + ": expected an object, got " + describeJson(item));
      // An empty placeholder keeps indices aligned with the config; its empty name is skipped.
      pool.modules.emplace_back();
      version_known.push_back(false);
      continue;
    }
    bool known = false;
    pool.modules.push_back(parseEntry(item, item_path, errors, &known));
    version_known.push_back(known);
  }
  detail::checkPoolGraph(pool, path, version_known, errors);
  return pool;
}

}  // namespace agileos::modules
