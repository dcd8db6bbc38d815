#include "modules/catalog/json_object_reader.h"

#include <limits>

#include "modules/catalog/message_text.h"

namespace agileos::modules {

using nlohmann::json;

namespace {
// Long enough to recognise a value, short enough to keep a message on one line.
constexpr std::size_t kMaxShownBytes = 40;
}  // namespace

std::string describeJson(const json& value) {
  switch (value.type()) {
    case json::value_t::string:
      return quoteText(value.get_ref<const std::string&>(), kMaxShownBytes) + " (a string)";
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

std::string joinJsonPath(const std::string& parent, std::string_view key) {
  return parent.empty() ? std::string(key) : parent + "." + std::string(key);
}

JsonObjectReader::JsonObjectReader(const json& object, std::string path, std::vector<std::string>* errors)
    : object_(object), path_(std::move(path)), errors_(errors) {}

bool JsonObjectReader::readString(std::string_view key, std::string* out, Check check) {
  return readStringValue(key, false, out, check);
}

bool JsonObjectReader::readRequiredString(std::string_view key, std::string* out, Check check) {
  return readStringValue(key, true, out, check);
}

bool JsonObjectReader::readStringValue(std::string_view key, bool required, std::string* out, Check check) {
  const json* value = claim(key);
  if (value == nullptr) {
    if (required) fail(key, "missing (required)");
    return false;
  }
  if (!value->is_string()) {
    fail(key, "expected a string, got " + describeJson(*value));
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

bool JsonObjectReader::readIntegerValue(std::string_view key, std::int64_t min, std::int64_t max,
                                        std::int64_t* out) {
  const json* value = claim(key);
  if (value == nullptr) return false;
  const std::string expected =
      "expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "], got ";
  if (!value->is_number_integer()) {
    fail(key, expected + describeJson(*value));
    return false;
  }
  // Unsigned values above INT64_MAX are out of every range we accept.
  if (value->is_number_unsigned() &&
      value->get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    fail(key, expected + value->dump());
    return false;
  }
  const std::int64_t number = value->get<std::int64_t>();
  if (number < min || number > max) {
    fail(key, expected + value->dump());
    return false;
  }
  *out = number;
  return true;
}

bool JsonObjectReader::readStringArray(std::string_view key, std::vector<std::string>* out, Check check) {
  const json* value = claim(key);
  if (value == nullptr) return false;
  if (!value->is_array()) {
    fail(key, "expected an array of strings, got " + describeJson(*value));
    return false;
  }
  std::vector<std::string> items;
  bool all_ok = true;
  for (std::size_t i = 0; i < value->size(); ++i) {
    const std::string item_key = std::string(key) + "[" + std::to_string(i) + "]";
    const json& item = (*value)[i];
    if (!item.is_string()) {
      fail(item_key, "expected a string, got " + describeJson(item));
      all_ok = false;
      continue;
    }
    const std::string& text = item.get_ref<const std::string&>();
    if (check != nullptr) {
      if (std::string problem = check(text); !problem.empty()) {
        fail(item_key, problem);
        all_ok = false;
        continue;
      }
    }
    items.push_back(text);
  }
  if (all_ok) *out = std::move(items);
  return all_ok;
}

const json* JsonObjectReader::readValue(std::string_view key) { return claim(key); }

const json* JsonObjectReader::readObject(std::string_view key) {
  return claimOfType(key, json::value_t::object, "an object");
}

const json* JsonObjectReader::readArray(std::string_view key) {
  return claimOfType(key, json::value_t::array, "an array");
}

const json* JsonObjectReader::claimOfType(std::string_view key, json::value_t type, const char* expected) {
  const json* value = claim(key);
  if (value == nullptr) return nullptr;
  if (value->type() != type) {
    fail(key, std::string("expected ") + expected + ", got " + describeJson(*value));
    return nullptr;
  }
  return value;
}

std::string JsonObjectReader::childPath(std::string_view key) const { return joinJsonPath(path_, key); }

void JsonObjectReader::fail(std::string_view key, const std::string& problem) {
  errors_->push_back(childPath(key) + ": " + problem);
}

void JsonObjectReader::finish() {
  for (const auto& [key, value] : object_.items()) {
    if (claimed_.count(key) != 0) continue;
    std::string known;
    for (const std::string& name : claimed_order_) known += (known.empty() ? "" : ", ") + name;
    fail(key, "unknown key (expected one of: " + known + ")");
  }
}

const json* JsonObjectReader::claim(std::string_view key) {
  claimed_.emplace(key);
  claimed_order_.emplace_back(key);
  const auto it = object_.find(key);
  return it == object_.end() ? nullptr : &*it;
}

}  // namespace agileos::modules
