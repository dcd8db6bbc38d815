// parseModulePool: the `modules` array of the daemon config, read as strictly as the rest of it
// (scheduler/daemon_config.cpp): every member is claimed by a read, anything else is an error.
#include <nlohmann/json.hpp>
#include <set>

#include "modules/catalog/message_text.h"
#include "modules/catalog/module_manifest.h"
#include "modules/catalog/module_pool_checks.h"

namespace agileos::modules {
namespace {

using nlohmann::json;

// A short rendering of a JSON value's type (and value, bounded) for error messages.
std::string describe(const json& value) {
  switch (value.type()) {
    case json::value_t::string:
      return quoteText(value.get_ref<const std::string&>()) + " (a string)";
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "an array";
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return value.dump() + " (a boolean)";
    default:
      return value.dump() + " (a number)";
  }
}

// Reads the members of one JSON object. Records an error for each member of the wrong type, each
// value its check refuses, each required member that is absent and (on finish()) each member no
// read claimed.
class ObjectReader {
 public:
  using Check = std::string (*)(std::string_view);

  ObjectReader(const json& object, std::string path, std::vector<std::string>* errors)
      : object_(object), path_(std::move(path)), errors_(errors) {}

  // True when *out was set from a valid value; false when absent (an error if required) or invalid.
  bool readString(std::string_view key, bool required, std::string* out, Check check = nullptr) {
    const json* value = claim(key);
    if (value == nullptr) {
      if (required) fail(key, "missing (required)");
      return false;
    }
    if (!value->is_string()) {
      fail(key, "expected a string, got " + describe(*value));
      return false;
    }
    const std::string& text = value->get_ref<const std::string&>();
    if (check != nullptr) {
      if (std::string problem = check(text); !problem.empty()) {
        fail(key, problem);
        return false;
      }
    }
    *out = text;
    return true;
  }

  // The array under `key`, or null if absent or not an array (an error then).
  const json* readArray(std::string_view key) {
    const json* value = claim(key);
    if (value == nullptr) return nullptr;
    if (!value->is_array()) {
      fail(key, "expected an array, got " + describe(*value));
      return nullptr;
    }
    return value;
  }

  std::string childPath(std::string_view key) const { return path_ + "." + std::string(key); }

  void fail(std::string_view key, const std::string& problem) {
    errors_->push_back(childPath(key) + ": " + problem);
  }

  void finish() {
    for (const auto& [key, value] : object_.items()) {
      if (claimed_.count(key) != 0) continue;
      std::string known;
      for (const std::string& name : claimed_order_) known += (known.empty() ? "" : ", ") + name;
      fail(key, "unknown key (expected one of: " + known + ")");
    }
  }

 private:
  const json* claim(std::string_view key) {
    claimed_.emplace(key);
    claimed_order_.emplace_back(key);
    const auto it = object_.find(key);
    return it == object_.end() ? nullptr : &*it;
  }

  const json& object_;
  std::string path_;
  std::vector<std::string>* errors_;
  std::set<std::string, std::less<>> claimed_;
  std::vector<std::string> claimed_order_;
};

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
  ObjectReader reader(object, path, errors);
  reader.readString("name", true, &dependency.name, checkNameValue);
  std::string requirement;
  if (reader.readString("version", false, &requirement, checkRequirementValue)) {
    dependency.requirement = *parseRequirement(requirement);
  }
  reader.finish();
  return dependency;
}

// One entry; *version_known is false when its version is absent or invalid.
ModuleEntry parseEntry(const json& object, const std::string& path, std::vector<std::string>* errors,
                       bool* version_known) {
  ModuleEntry entry;
  ObjectReader reader(object, path, errors);
  reader.readString("name", true, &entry.name, checkNameValue);
  std::string version;
  *version_known = reader.readString("version", true, &version, checkVersionValue);
  if (*version_known) entry.version = *parseVersion(version);
  if (const json* depends = reader.readArray("depends"); depends != nullptr) {
    for (std::size_t i = 0; i < depends->size(); ++i) {
      const std::string item_path = reader.childPath("depends") + "[" + std::to_string(i) + "]";
      const json& item = (*depends)[i];
      if (!item.is_object()) {
        errors->push_back(item_path + ": expected an object {\"name\", \"version\"}, got " + describe(item));
        continue;
      }
      entry.depends.push_back(parseDependency(item, item_path, errors));
    }
  }
  const std::size_t errors_before_paths = errors->size();
  reader.readString("ptx", false, &entry.ptx_path, checkPathValue);
  reader.readString("host_library", false, &entry.host_library_path, checkPathValue);
  // Only when neither path was refused: a refused one is not "absent".
  if (errors->size() == errors_before_paths && entry.ptx_path.empty() && entry.host_library_path.empty()) {
    errors->push_back(path + ": needs at least one artifact (ptx or host_library)");
  }
  reader.readString("service", false, &entry.service, checkServiceValue);
  reader.readString("description", false, &entry.description);
  reader.finish();
  return entry;
}

}  // namespace

ModulePool parseModulePool(const json& array, const std::string& path, std::vector<std::string>* errors) {
  ModulePool pool;
  if (!array.is_array()) {
    errors->push_back(path + ": expected an array of module entries, got " + describe(array));
    return pool;
  }
  std::vector<bool> version_known;
  for (std::size_t i = 0; i < array.size(); ++i) {
    const std::string item_path = path + "[" + std::to_string(i) + "]";
    const json& item = array[i];
    if (!item.is_object()) {
      errors->push_back(item_path + ": expected an object, got " + describe(item));
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
