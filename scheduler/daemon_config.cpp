#include "scheduler/daemon_config.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "modules/catalog/json_object_reader.h"
#include "modules/catalog/message_text.h"
#include "proto/adapters/adapter_declaration.h"
#include "scheduler/runtime_files.h"

namespace agileos::scheduler {
namespace {

using agileos::modules::describeJson;
using agileos::modules::joinJsonPath;
using agileos::modules::JsonObjectReader;
using nlohmann::json;

constexpr std::array<std::string_view, 5> kLogLevels = {"trace", "debug", "info", "warn", "error"};
constexpr std::array<std::string_view, 1> kPlacements = {"dedicated"};
// Flags the daemon itself puts on every worker command line; worker.args must not repeat them.
constexpr std::array<std::string_view, 7> kDaemonOwnedWorkerFlags = {
    "--control-fd",       "--endpoint",          "--device", "--worker-id", "--log-level",
    "--module-cache-dir", "--module-cache-bytes"};
constexpr std::array<std::string_view, 6> kGuardPolicies = {"off",  "trap",     "poison",
                                                            "sink", "remap_or", "report"};
constexpr std::array<std::string_view, 2> kSassOnly = {"allow", "refuse"};
constexpr std::array<std::string_view, 2> kGuardRequire = {"protected_state", "always"};
constexpr std::int64_t kMaxCacheBytes = std::int64_t{1} << 40;
constexpr std::int64_t kMaxClientsPerUid = 1 << 20;
constexpr std::int64_t kMaxMemoryBytes = std::int64_t{1} << 50;  // 1 PiB: far beyond any device
constexpr std::int64_t kMaxWorkersLimit = 1024;
// Ids below 2^31 - 1: (uid_t)-1 means "unchanged" to the kernel, and ids above 2^31 confuse tools.
constexpr std::int64_t kMaxUnprivilegedId = (std::int64_t{1} << 31) - 2;
constexpr std::int64_t kMaxWorkerUids = 65536;
constexpr std::int64_t kMaxStartTimeoutMs = 3600 * 1000;
constexpr std::int64_t kMaxServiceRestarts = 1000;
constexpr std::int64_t kMaxRestartWindowSeconds = 24 * 3600;
// The flag the daemon itself puts on every service command line.
constexpr std::string_view kDaemonOwnedServiceFlag = "--socket";

// memory.per_uid: {"<decimal uid>": bytes, ...}.
void readPerUidQuotas(const json& object, const std::string& path,
                      std::map<std::uint32_t, std::uint64_t>* out, std::vector<std::string>* errors) {
  for (const auto& [key, value] : object.items()) {
    const std::string where = agileos::modules::joinJsonPath(path, key);
    // Canonical decimal only: "7" and "07" would otherwise name one uid twice, the later silently
    // winning.
    const bool decimal = !key.empty() && key.size() <= 10 && (key == "0" || key[0] != '0') &&
                         std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; });
    const std::uint64_t uid = decimal ? std::stoull(key) : 0;
    if (!decimal || uid > static_cast<std::uint64_t>(kMaxUnprivilegedId)) {
      errors->push_back(where + ": expected a decimal uid (no leading zeros) as the key");
      continue;
    }
    if (!value.is_number_unsigned() ||
        value.get<std::uint64_t>() > static_cast<std::uint64_t>(kMaxMemoryBytes)) {
      errors->push_back(where + ": expected a quota in bytes (0.." + std::to_string(kMaxMemoryBytes) +
                        "), got " + agileos::modules::describeJson(value));
      continue;
    }
    (*out)[static_cast<std::uint32_t>(uid)] = value.get<std::uint64_t>();
  }
}

// The id ranges of privileges: worker uids, service uids and the shared gid must not meet
// (a worker's gid equals its uid, so a service's or the shared group's id inside the worker
// range would put a worker in that group).
void checkPrivileges(const DaemonConfig& config, std::vector<std::string>* errors) {
  const PrivilegesSection& p = config.privileges;
  if (!p.enabled) return;
  const std::uint64_t workers_begin = p.worker_uid_base;
  const std::uint64_t workers_end = workers_begin + p.worker_uid_count;
  const std::uint64_t services_begin = p.service_uid_base;
  const std::uint64_t services_end = services_begin + config.services.size();
  auto inWorkers = [&](std::uint64_t id) { return id >= workers_begin && id < workers_end; };
  if (workers_end - 1 > static_cast<std::uint64_t>(kMaxUnprivilegedId)) {
    errors->push_back("privileges.worker_uid_count: the range passes " + std::to_string(kMaxUnprivilegedId));
  }
  if (p.worker_uid_count < 2ull * config.worker.max_workers) {
    errors->push_back("privileges.worker_uid_count: " + std::to_string(p.worker_uid_count) +
                      " uids cannot serve worker.max_workers = " + std::to_string(config.worker.max_workers) +
                      " (a retiring worker keeps its uid until it is gone: at least twice as many)");
  }
  if (services_begin < workers_end && workers_begin < services_end) {
    errors->push_back("privileges.service_uid_base: the service uids meet the worker uids");
  }
  if (inWorkers(p.shared_gid) || (p.shared_gid >= services_begin && p.shared_gid < services_end)) {
    errors->push_back("privileges.shared_gid: " + std::to_string(p.shared_gid) +
                      " is also a worker's or a service's own id");
  }
}

template <std::size_t N>
std::string listOf(const std::array<std::string_view, N>& names) {
  std::string out;
  for (std::string_view name : names) {
    if (!out.empty()) out += '|';
    out.append(name);
  }
  return out;
}

// "" if `value` is one of `names`, else the problem ("expected one of a|b, got \"c\"").
template <std::size_t N>
std::string checkOneOf(const std::array<std::string_view, N>& names, std::string_view value) {
  for (std::string_view name : names) {
    if (name == value) return "";
  }
  return "expected one of " + listOf(names) + ", got " + agileos::modules::quoteText(value);
}

std::string checkAbsolutePath(std::string_view value, std::size_t max_bytes) {
  if (value.empty() || value.front() != '/') return "expected an absolute path";
  if (value.find('\0') != std::string_view::npos) return "must not contain NUL characters";
  if (value.size() > max_bytes) {
    return "path is " + std::to_string(value.size()) + " bytes; at most " + std::to_string(max_bytes) +
           " fit in a unix socket address";
  }
  return "";
}

std::string checkPlacement(std::string_view value) { return checkOneOf(kPlacements, value); }

std::string checkSassOnly(std::string_view value) { return checkOneOf(kSassOnly, value); }

std::string checkGuardRequire(std::string_view value) { return checkOneOf(kGuardRequire, value); }

std::string checkCacheDir(std::string_view value) {
  if (value.empty()) return "";
  return checkAbsolutePath(value, 4096);
}

std::string checkRuntimeDir(std::string_view value) { return checkAbsolutePath(value, kMaxRuntimeDirBytes); }

std::string checkAuditLog(std::string_view value) {
  return value.empty() ? "" : checkAbsolutePath(value, kMaxRuntimeDirBytes);
}

std::string checkExecutable(std::string_view value) {
  if (value.empty()) return "expected a non-empty path";
  if (value.find('\0') != std::string_view::npos) return "must not contain NUL characters";
  return "";
}

std::string checkWorkerArg(std::string_view value) {
  if (value.find('\0') != std::string_view::npos) return "must not contain NUL characters";
  if (value == "--guard" || value.starts_with("--guard=") || value.starts_with("--guard-sass-only")) {
    return "the kernel memory guard is set in the guard section (guard.policy, guard.sass_only), not here";
  }
  for (std::string_view flag : kDaemonOwnedWorkerFlags) {
    if (value == flag ||
        (value.size() > flag.size() && value.substr(0, flag.size()) == flag && value[flag.size()] == '=')) {
      return std::string(flag) + " is set by the daemon and must not appear in worker.args";
    }
  }
  return "";
}

// "" if `value` may stand in modules.allowed: "*" or a valid module name.
std::string checkAllowedModule(std::string_view value) {
  if (value == "*") return "";
  const std::string problem = agileos::modules::checkModuleName(value);
  return problem.empty() ? "" : "expected \"*\" or a module name: " + problem;
}

std::string checkServiceArg(std::string_view value) {
  if (value.find('\0') != std::string_view::npos) return "must not contain NUL characters";
  const std::string_view flag = kDaemonOwnedServiceFlag;
  if (value == flag || (value.starts_with(flag) && value.size() > flag.size() && value[flag.size()] == '=')) {
    return std::string(flag) + " is set by the daemon (<runtime_dir>-services/service-<name>.sock)";
  }
  return "";
}

// The `services` array: one object per service (ServiceConfig), names unique.
void readServices(const json& array, const std::string& path, std::vector<ServiceConfig>* out,
                  std::vector<std::string>* errors) {
  if (!array.is_array()) {
    errors->push_back(path + ": expected an array of service entries, got " + describeJson(array));
    return;
  }
  std::map<std::string, std::size_t> first_index;  // name -> the entry that has it
  for (std::size_t i = 0; i < array.size(); ++i) {
    const std::string entry_path = path + "[" + std::to_string(i) + "]";
    const json& entry = array[i];
    if (!entry.is_object()) {
      errors->push_back(entry_path + ": expected an object, got " + describeJson(entry));
      continue;
    }
    ServiceConfig service;
    JsonObjectReader reader(entry, entry_path, errors);
    reader.readString("name", &service.name, agileos::modules::checkModuleName);
    reader.readString("executable", &service.executable, checkExecutable);
    reader.readStringArray("args", &service.args, checkServiceArg);
    reader.readInteger("start_timeout_ms", 1, kMaxStartTimeoutMs, &service.start_timeout_ms);
    reader.readInteger("max_restarts", 0, kMaxServiceRestarts, &service.max_restarts);
    reader.readInteger("restart_window_s", 1, kMaxRestartWindowSeconds, &service.restart_window_s);
    reader.finish();
    for (const char* required : {"name", "executable"}) {
      if (!entry.contains(required)) errors->push_back(joinJsonPath(entry_path, required) + ": required");
    }
    if (!service.name.empty()) {
      const auto [it, inserted] = first_index.emplace(service.name, i);
      if (!inserted) {
        errors->push_back(joinJsonPath(entry_path, "name") + ": duplicate service " +
                          agileos::modules::quoteText(service.name) + " (also " + path + "[" +
                          std::to_string(it->second) + "])");
      }
    }
    out->push_back(std::move(service));
  }
}

json servicesToJson(const std::vector<ServiceConfig>& services) {
  json out = json::array();
  for (const ServiceConfig& service : services) {
    out.push_back(json{{"name", service.name},
                       {"executable", service.executable},
                       {"args", service.args},
                       {"start_timeout_ms", service.start_timeout_ms},
                       {"max_restarts", service.max_restarts},
                       {"restart_window_s", service.restart_window_s}});
  }
  return out;
}

// Every allowed name must be a module of the pool: a name that is not is a typo (or a module
// the operator removed), which must not pass silently.
void checkAllowedInPool(const ModulesSection& modules, const std::string& path,
                        std::vector<std::string>* errors) {
  for (std::size_t i = 0; i < modules.allowed.size(); ++i) {
    const std::string& name = modules.allowed[i];
    if (name == "*" || modules.pool.find(name) != nullptr) continue;
    errors->push_back(path + ".allowed[" + std::to_string(i) + "]: " + agileos::modules::quoteText(name) +
                      " is not a module of " + path + ".pool");
  }
}

// The `modules` section: {"pool": [entries as parseModulePool reads them], "allowed": [...]}.
void readModulesSection(const json& section, const std::string& path, ModulesSection* out,
                        std::vector<std::string>* errors) {
  const std::size_t errors_before = errors->size();
  JsonObjectReader reader(section, path, errors);
  if (const json* pool = reader.readValue("pool"); pool != nullptr) {
    const std::size_t before_pool = errors->size();
    out->pool = agileos::modules::parseModulePool(*pool, reader.childPath("pool"), errors);
    // parseModulePool validates as it reads; validateModulePool states the invariants admission
    // relies on, so a clean parse is checked against it too (it finds nothing unless they drift).
    if (errors->size() == before_pool) {
      for (std::string& error : agileos::modules::validateModulePool(out->pool, reader.childPath("pool"))) {
        errors->push_back(std::move(error));
      }
    }
  }
  reader.readStringArray("allowed", &out->allowed, checkAllowedModule);
  reader.finish();
  // Only against a pool that parsed cleanly: otherwise every name would add a misleading error.
  if (errors->size() == errors_before) checkAllowedInPool(*out, path, errors);
}

// One pool entry in the format parseModulePool reads, every key written (empty ones included).
json moduleEntryToJson(const agileos::modules::ModuleEntry& entry) {
  json depends = json::array();
  for (const agileos::modules::Dependency& dependency : entry.depends) {
    depends.push_back(json{{"name", dependency.name}, {"version", dependency.requirement.text}});
  }
  return json{{"name", entry.name},
              {"version", entry.version.toString()},
              {"depends", std::move(depends)},
              {"ptx", entry.ptx_path},
              {"host_library", entry.host_library_path},
              {"service", entry.service},
              {"description", entry.description}};
}

json modulesToJson(const ModulesSection& modules) {
  json pool = json::array();
  for (const agileos::modules::ModuleEntry& entry : modules.pool.modules)
    pool.push_back(moduleEntryToJson(entry));
  return json{{"pool", std::move(pool)}, {"allowed", modules.allowed}};
}

// Reports keys that appear twice in one object (the JSON library would silently keep the last).
class DuplicateKeyDetector {
 public:
  explicit DuplicateKeyDetector(std::vector<std::string>* errors) : errors_(errors) {}

  bool operator()(int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        frames_.push_back({childPath(), true, {}, {}});
        break;
      case json::parse_event_t::array_start:
        frames_.push_back({childPath(), false, {}, {}});
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!frames_.empty()) frames_.pop_back();
        break;
      case json::parse_event_t::key: {
        if (frames_.empty()) break;
        Frame& frame = frames_.back();
        frame.last_key = parsed.get<std::string>();
        if (!frame.keys.insert(frame.last_key).second) {
          errors_->push_back(joinJsonPath(frame.path, frame.last_key) + ": duplicate key");
        }
        break;
      }
      case json::parse_event_t::value:
        break;
    }
    return true;
  }

 private:
  struct Frame {
    std::string path;
    bool is_object;
    std::set<std::string> keys;
    std::string last_key;
  };

  std::string childPath() const {
    if (frames_.empty()) return "";
    const Frame& parent = frames_.back();
    return parent.is_object ? joinJsonPath(parent.path, parent.last_key) : parent.path + "[]";
  }

  std::vector<std::string>* errors_;
  std::vector<Frame> frames_;
};

}  // namespace

std::string checkLogLevel(std::string_view value) { return checkOneOf(kLogLevels, value); }

std::string checkSocketPath(std::string_view value) {
  return checkAbsolutePath(value, kMaxUnixSocketPathBytes);
}

std::string checkGuardPolicy(std::string_view value) { return checkOneOf(kGuardPolicies, value); }

bool admitGuardPolicy(const GuardSection& guard, const std::string& requested, std::string* policy,
                      std::string* error) {
  if (requested.empty() || requested == guard.policy) {
    *policy = guard.policy;
    return true;
  }
  if (!checkGuardPolicy(requested).empty()) {
    *error = "unknown kernel memory guard policy \"" + requested.substr(0, 32) + "\"";
    return false;
  }
  for (const std::string& allowed : guard.allowed_policies) {
    if (allowed == requested) {
      *policy = requested;
      return true;
    }
  }
  *error = "kernel memory guard policy \"" + requested + "\" is not allowed here (guard.allowed_policies)";
  return false;
}

std::vector<std::string> admittedAdapterOperations(const AdaptersSection& adapters) {
  std::vector<std::string> out;
  for (const auto& [library, operations] : adapters.admitted) {
    for (const std::string& operation : operations) out.push_back(library + "." + operation);
  }
  return out;
}

std::vector<int> servedDevices(const DaemonConfig& config) {
  return config.worker.devices.empty() ? std::vector<int>{config.worker.device} : config.worker.devices;
}

std::string adminSocketPath(const DaemonConfig& config) {
  return config.admin.socket_path.empty() ? config.runtime_dir + "-admin/admin.sock"
                                          : config.admin.socket_path;
}

namespace {

// "host:port" with a port in 1..65535, or "".
std::string checkListenAddress(std::string_view value) {
  if (value.empty()) return "";
  const std::size_t colon = value.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return "expected \"host:port\", e.g. \"127.0.0.1:9464\"";
  const std::string_view port = value.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string_view::npos ||
      std::stoi(std::string(port)) == 0 || std::stoi(std::string(port)) > 65535) {
    return "expected a port in 1..65535 after the last ':'";
  }
  return "";
}

// The admin socket must not be where clients can reach it: the clients' socket directory and
// the runtime directory are bind-mounted into sandboxes and containers (the CDI spec mounts the
// socket's directory). The default, <runtime_dir>-admin, is a sibling of both.
void checkAdminSocket(const DaemonConfig& config, std::vector<std::string>* errors) {
  if (!config.admin.enabled) return;
  const std::string path = adminSocketPath(config);
  if (path.size() > kMaxUnixSocketPathBytes) {
    errors->push_back("admin.socket_path: " + path + " is longer than a unix socket address holds");
  }
  const std::string dir = parentDirectory(path);
  const auto within = [](const std::string& inner, const std::string& outer) {
    return inner == outer || inner.starts_with(outer + "/");
  };
  if (dir == parentDirectory(config.socket_path) || within(dir, config.runtime_dir)) {
    errors->push_back("admin.socket_path: " + path +
                      " is in a directory clients can see (the clients' socket directory or runtime_dir); "
                      "give it a directory of its own");
  }
}

}  // namespace

std::vector<std::string> checkConsistency(const DaemonConfig& config) {
  std::vector<std::string> errors;
  if (config.worker.prestart > config.worker.max_workers) {
    errors.push_back("worker.prestart: " + std::to_string(config.worker.prestart) +
                     " ready workers cannot be kept with worker.max_workers = " +
                     std::to_string(config.worker.max_workers));
  }
  checkPrivileges(config, &errors);
  checkAdminSocket(config, &errors);
  if (config.memory.pinned_total_bytes != 0 &&
      config.memory.pinned_per_client_bytes > config.memory.pinned_total_bytes) {
    errors.push_back(
        "memory.pinned_per_client_bytes: " + std::to_string(config.memory.pinned_per_client_bytes) +
        " exceeds memory.pinned_total_bytes (" + std::to_string(config.memory.pinned_total_bytes) +
        "), so no client could be admitted");
  }
  std::set<std::string, std::less<>> service_names;
  for (std::size_t i = 0; i < config.services.size(); ++i) {
    const ServiceConfig& service = config.services[i];
    service_names.insert(service.name);
    const std::string socket = serviceSocketPath(config.runtime_dir, service.name);
    if (socket.size() > kMaxUnixSocketPathBytes) {
      errors.push_back("services[" + std::to_string(i) + "].name: its socket " + socket + " is " +
                       std::to_string(socket.size()) + " bytes; at most " +
                       std::to_string(kMaxUnixSocketPathBytes) +
                       " fit in a unix socket address (shorten the name or runtime_dir)");
    }
  }
  const std::vector<agileos::modules::ModuleEntry>& modules = config.modules.pool.modules;
  for (std::size_t i = 0; i < modules.size(); ++i) {
    const std::string& service = modules[i].service;
    if (service.empty() || service_names.count(service) != 0) continue;
    errors.push_back("modules.pool[" + std::to_string(i) + "].service: " +
                     agileos::modules::quoteText(service) + " is not a configured service (services[].name)");
  }
  return errors;
}

ConfigResult parseDaemonConfig(std::string_view json_text) {
  ConfigResult result;
  json root;
  try {
    root = json::parse(json_text.begin(), json_text.end(), DuplicateKeyDetector(&result.errors),
                       /*allow_exceptions=*/true, /*ignore_comments=*/true);
  } catch (const json::parse_error& error) {
    result.errors.push_back(std::string("invalid JSON: ") + error.what());
    return result;
  }
  if (!root.is_object()) {
    result.errors.push_back("(root): expected a JSON object, got " + describeJson(root));
    return result;
  }

  DaemonConfig config;
  JsonObjectReader top(root, "", &result.errors);
  top.readString("socket_path", &config.socket_path, checkSocketPath);
  top.readString("runtime_dir", &config.runtime_dir, checkRuntimeDir);
  top.readString("log_level", &config.log_level, checkLogLevel);
  top.readString("placement", &config.placement, checkPlacement);
  top.readString("audit_log", &config.audit_log, checkAuditLog);
  if (const json* worker = top.readObject("worker"); worker != nullptr) {
    WorkerConfig& w = config.worker;
    JsonObjectReader reader(*worker, top.childPath("worker"), &result.errors);
    reader.readString("executable", &w.executable, checkExecutable);
    reader.readInteger("device", 0, std::numeric_limits<int>::max(), &w.device);
    reader.readInteger("prestart", 0, kMaxWorkersLimit, &w.prestart);
    reader.readInteger("max_workers", 1, kMaxWorkersLimit, &w.max_workers);
    reader.readInteger("start_timeout_ms", 1, kMaxStartTimeoutMs, &w.start_timeout_ms);
    reader.readInteger("queue_wait_ms", 0, kMaxStartTimeoutMs, &w.queue_wait_ms);
    reader.readInteger("max_clients_per_uid", 0, kMaxClientsPerUid, &w.max_clients_per_uid);
    reader.readStringArray("args", &w.args, checkWorkerArg);
    if (const json* devices = reader.readArray("devices"); devices != nullptr) {
      const std::string path = reader.childPath("devices");
      for (std::size_t i = 0; i < devices->size(); ++i) {
        const json& item = (*devices)[i];
        const std::string where = path + "[" + std::to_string(i) + "]";
        if (!item.is_number_integer() || item.get<std::int64_t>() < 0 ||
            item.get<std::int64_t>() > std::numeric_limits<int>::max()) {
          result.errors.push_back(where + ": expected a device ordinal (an integer >= 0), got " +
                                  describeJson(item));
          continue;
        }
        const int device = item.get<int>();
        if (std::find(w.devices.begin(), w.devices.end(), device) != w.devices.end()) {
          result.errors.push_back(where + ": device " + std::to_string(device) + " is listed twice");
          continue;
        }
        w.devices.push_back(device);
      }
      if (w.device != 0 && !w.devices.empty()) {
        result.errors.push_back(path + ": give worker.devices or worker.device, not both");
      }
    }
    reader.finish();
  }
  if (const json* guard = top.readObject("guard"); guard != nullptr) {
    GuardSection& g = config.guard;
    JsonObjectReader reader(*guard, top.childPath("guard"), &result.errors);
    reader.readString("policy", &g.policy, checkGuardPolicy);
    reader.readStringArray("allowed_policies", &g.allowed_policies, checkGuardPolicy);
    reader.readString("sass_only", &g.sass_only, checkSassOnly);
    reader.readString("require", &g.require, checkGuardRequire);
    reader.readString("cache_dir", &g.cache_dir, checkCacheDir);
    reader.readInteger("cache_max_bytes", 1, kMaxCacheBytes, &g.cache_max_bytes);
    reader.finish();
  }
  if (const json* memory = top.readObject("memory"); memory != nullptr) {
    JsonObjectReader reader(*memory, top.childPath("memory"), &result.errors);
    reader.readInteger("quota_bytes", 0, kMaxMemoryBytes, &config.memory.quota_bytes);
    reader.readInteger("reserve_bytes", 0, kMaxMemoryBytes, &config.memory.reserve_bytes);
    reader.readInteger("pinned_total_bytes", 0, kMaxMemoryBytes, &config.memory.pinned_total_bytes);
    reader.readInteger("pinned_per_client_bytes", 0, kMaxMemoryBytes, &config.memory.pinned_per_client_bytes);
    if (const json* per_uid = reader.readObject("per_uid"); per_uid != nullptr) {
      readPerUidQuotas(*per_uid, reader.childPath("per_uid"), &config.memory.per_uid, &result.errors);
    }
    reader.finish();
  }
  if (const json* section = top.readObject("privileges"); section != nullptr) {
    PrivilegesSection& p = config.privileges;
    JsonObjectReader reader(*section, top.childPath("privileges"), &result.errors);
    if (const json* enabled = reader.readValue("enabled"); enabled != nullptr) {
      if (enabled->is_boolean()) {
        p.enabled = enabled->get<bool>();
      } else {
        reader.fail("enabled", "expected true or false, got " + agileos::modules::describeJson(*enabled));
      }
    }
    reader.readInteger("worker_uid_base", 1, kMaxUnprivilegedId, &p.worker_uid_base);
    reader.readInteger("worker_uid_count", 1, kMaxWorkerUids, &p.worker_uid_count);
    reader.readInteger("service_uid_base", 1, kMaxUnprivilegedId, &p.service_uid_base);
    reader.readInteger("shared_gid", 1, kMaxUnprivilegedId, &p.shared_gid);
    reader.finish();
  }
  if (const json* section = top.readObject("admin"); section != nullptr) {
    JsonObjectReader reader(*section, top.childPath("admin"), &result.errors);
    if (const json* enabled = reader.readValue("enabled"); enabled != nullptr) {
      if (enabled->is_boolean()) {
        config.admin.enabled = enabled->get<bool>();
      } else {
        reader.fail("enabled", "expected true or false, got " + agileos::modules::describeJson(*enabled));
      }
    }
    reader.readString("socket_path", &config.admin.socket_path, [](std::string_view value) {
      return value.empty() ? std::string() : checkSocketPath(value);
    });
    reader.readInteger("gid", 0, kMaxUnprivilegedId, &config.admin.gid);
    reader.finish();
  }
  if (const json* section = top.readObject("metrics"); section != nullptr) {
    JsonObjectReader reader(*section, top.childPath("metrics"), &result.errors);
    reader.readString("listen", &config.metrics.listen, checkListenAddress);
    reader.finish();
  }
  if (const json* section = top.readObject("adapters"); section != nullptr) {
    config.adapters.admitted.clear();
    JsonObjectReader reader(*section, top.childPath("adapters"), &result.errors);
    for (const adapters::LibraryDecl& library : adapters::knownLibraries()) {
      const std::string name(library.name);
      if (!section->contains(name)) {
        reader.readStringArray(name, nullptr);  // claims the key, so finish() names it as expected
        continue;
      }
      std::vector<std::string> operations;
      reader.readStringArray(name, &operations);
      for (const std::string& operation : operations) {
        if (operation != "*" && adapters::findOperation(library, operation) < 0) {
          result.errors.push_back(top.childPath("adapters") + "." + name + ": unknown operation \"" +
                                  operation.substr(0, 64) + "\"");
        }
      }
      config.adapters.admitted[name] = std::move(operations);
    }
    reader.finish();
  }
  if (const json* section = top.readObject("modules"); section != nullptr) {
    readModulesSection(*section, top.childPath("modules"), &config.modules, &result.errors);
  }
  if (const json* services = top.readValue("services"); services != nullptr) {
    readServices(*services, top.childPath("services"), &config.services, &result.errors);
  }
  top.finish();

  if (result.errors.empty()) {
    for (std::string& error : checkConsistency(config)) result.errors.push_back(std::move(error));
  }
  if (result.errors.empty()) result.config = std::move(config);
  return result;
}

PinnedHostBudget resolvePinnedHostBudget(const MemorySection& memory, std::uint64_t host_memory_bytes,
                                         std::uint32_t max_workers) {
  constexpr std::uint64_t kMaxDefaultShare = 32ull << 30;
  PinnedHostBudget budget;
  budget.total_bytes = memory.pinned_total_bytes != 0 ? memory.pinned_total_bytes : host_memory_bytes / 2;
  budget.per_client_bytes =
      memory.pinned_per_client_bytes != 0
          ? memory.pinned_per_client_bytes
          : std::min(kMaxDefaultShare, budget.total_bytes / std::max<std::uint32_t>(max_workers, 1));
  budget.per_client_bytes = std::min(budget.per_client_bytes, budget.total_bytes);
  return budget;
}

std::uint64_t memoryQuotaFor(const MemorySection& memory, std::optional<std::uint32_t> peer_uid) {
  if (peer_uid) {
    if (auto found = memory.per_uid.find(*peer_uid); found != memory.per_uid.end()) return found->second;
  }
  return memory.quota_bytes;
}

std::uint64_t admitMemoryQuota(const MemorySection& memory, std::uint64_t requested,
                               std::optional<std::uint32_t> peer_uid) {
  const std::uint64_t quota = memoryQuotaFor(memory, peer_uid);
  if (requested == 0) return quota;
  if (quota == 0) return requested;
  return std::min(requested, quota);
}

ConfigResult loadDaemonConfig(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    ConfigResult result;
    result.errors.push_back(path + ": cannot open the config file");
    return result;
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    ConfigResult result;
    result.errors.push_back(path + ": cannot read the config file");
    return result;
  }
  return parseDaemonConfig(text.str());
}

json memoryToJson(const MemorySection& memory) {
  json per_uid = json::object();
  for (const auto& [uid, quota] : memory.per_uid) per_uid[std::to_string(uid)] = quota;
  return {{"quota_bytes", memory.quota_bytes},
          {"reserve_bytes", memory.reserve_bytes},
          {"per_uid", per_uid},
          {"pinned_total_bytes", memory.pinned_total_bytes},
          {"pinned_per_client_bytes", memory.pinned_per_client_bytes}};
}

std::string toJsonText(const DaemonConfig& config) {
  const json out = {
      {"socket_path", config.socket_path},
      {"runtime_dir", config.runtime_dir},
      {"log_level", config.log_level},
      {"placement", config.placement},
      {"audit_log", config.audit_log},
      {"worker",
       {{"executable", config.worker.executable},
        {"device", config.worker.device},
        {"prestart", config.worker.prestart},
        {"max_workers", config.worker.max_workers},
        {"start_timeout_ms", config.worker.start_timeout_ms},
        {"queue_wait_ms", config.worker.queue_wait_ms},
        {"max_clients_per_uid", config.worker.max_clients_per_uid},
        {"devices", config.worker.devices},
        {"args", config.worker.args}}},
      {"guard",
       {{"policy", config.guard.policy},
        {"allowed_policies", config.guard.allowed_policies},
        {"sass_only", config.guard.sass_only},
        {"require", config.guard.require},
        {"cache_dir", config.guard.cache_dir},
        {"cache_max_bytes", config.guard.cache_max_bytes}}},
      {"memory", memoryToJson(config.memory)},
      {"privileges",
       {{"enabled", config.privileges.enabled},
        {"worker_uid_base", config.privileges.worker_uid_base},
        {"worker_uid_count", config.privileges.worker_uid_count},
        {"service_uid_base", config.privileges.service_uid_base},
        {"shared_gid", config.privileges.shared_gid}}},
      {"adapters", config.adapters.admitted},
      {"modules", modulesToJson(config.modules)},
      {"services", servicesToJson(config.services)},
      {"admin",
       {{"enabled", config.admin.enabled},
        {"socket_path", config.admin.socket_path},
        {"gid", config.admin.gid}}},
      {"metrics", {{"listen", config.metrics.listen}}},
  };
  return out.dump(2);
}

}  // namespace agileos::scheduler
