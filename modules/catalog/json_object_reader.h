// Strict reading of the JSON objects of the daemon config: the config itself
// (scheduler/daemon_config.cpp) and its module pool (module_manifest_json.cpp) share this reader,
// so both refuse the same mistakes with the same words.
//
// Invariant: every member of an object must be claimed by a read*() call; finish() reports each
// one that was not (a misspelt key is an error, never silently ignored). Every error names the
// member by its path ("worker.args[2]") and, where a value was wrong, shows it bounded and quoted
// (describeJson), so a hostile config can neither forge log lines nor make a message huge.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace agileos::modules {

// A short rendering of a JSON value's type (and value, bounded) for error messages: "'kv' (a
// string)", "2 (a number)", "true (a boolean)", "null", "an object", "an array".
std::string describeJson(const nlohmann::json& value);

// "parent.key", or "key" at the root (an empty parent).
std::string joinJsonPath(const std::string& parent, std::string_view key);

class JsonObjectReader {
 public:
  // "" when a value is acceptable, else the problem, which is reported under the member's path.
  using Check = std::string (*)(std::string_view);

  JsonObjectReader(const nlohmann::json& object, std::string path, std::vector<std::string>* errors);

  // True when *out was set from a string that `check` accepts; false when absent or refused.
  bool readString(std::string_view key, std::string* out, Check check = nullptr);
  // The same, and absence is an error.
  bool readRequiredString(std::string_view key, std::string* out, Check check = nullptr);

  // True when *out was set from an integer in [min, max]; false when absent or refused.
  template <typename T>
  bool readInteger(std::string_view key, std::int64_t min, std::int64_t max, T* out) {
    std::int64_t number = 0;
    if (!readIntegerValue(key, min, max, &number)) return false;
    *out = static_cast<T>(number);
    return true;
  }

  // True when *out was set: an array of strings that `check` accepts, all of them (one refused
  // item leaves *out as it was and reports each refused item).
  bool readStringArray(std::string_view key, std::vector<std::string>* out, Check check = nullptr);

  // The value under `key` whatever its type, or null when absent: for callers that check the type
  // themselves.
  const nlohmann::json* readValue(std::string_view key);
  // The object / array under `key`, or null when absent or of another type (an error then).
  const nlohmann::json* readObject(std::string_view key);
  const nlohmann::json* readArray(std::string_view key);

  // The path of member `key`, for errors about its contents.
  std::string childPath(std::string_view key) const;
  // Reports `problem` under member `key`.
  void fail(std::string_view key, const std::string& problem);
  // Reports every member no read*() call claimed, naming the keys that were expected.
  void finish();

 private:
  bool readStringValue(std::string_view key, bool required, std::string* out, Check check);
  bool readIntegerValue(std::string_view key, std::int64_t min, std::int64_t max, std::int64_t* out);
  const nlohmann::json* claim(std::string_view key);
  // The member under `key` if it has `type`; reports "expected <expected>, got ..." otherwise.
  const nlohmann::json* claimOfType(std::string_view key, nlohmann::json::value_t type, const char* expected);

  const nlohmann::json& object_;
  std::string path_;
  std::vector<std::string>* errors_;
  std::set<std::string, std::less<>> claimed_;
  std::vector<std::string> claimed_order_;
};

}  // namespace agileos::modules
