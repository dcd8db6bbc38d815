#include "scheduler/agileosctl/tables.h"

#include <algorithm>
#include <cstdio>

namespace agileos::ctl {
namespace {

namespace admin = agileos::v1::admin;

std::string joined(const google::protobuf::RepeatedPtrField<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out.empty() ? "-" : out;
}

std::string joinedIds(const google::protobuf::RepeatedField<std::uint64_t>& ids) {
  std::string out;
  for (std::uint64_t id : ids) out += (out.empty() ? "" : ",") + std::to_string(id);
  return out.empty() ? "-" : out;
}

std::string orDash(const std::string& text) { return text.empty() ? "-" : text; }

}  // namespace

std::string renderTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()));
    for (std::size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    out += line + "\n";
  }
  return out;
}

std::string humanBytes(std::uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  if (unit == 0) {
    std::snprintf(text, sizeof text, "%llu B", static_cast<unsigned long long>(bytes));
  } else {
    std::snprintf(text, sizeof text, "%.1f %s", value, kUnits[unit]);
  }
  return text;
}

std::string clientsTable(const admin::Status& status) {
  std::vector<std::vector<std::string>> rows = {{"CLIENT", "STATE", "WORKER", "DEVICE", "UID", "PID",
                                                 "PROGRAM", "MEMORY", "QUOTA", "CALLS", "GUARD", "HITS",
                                                 "MODULES"}};
  for (const admin::Client& c : status.clients()) {
    const bool reported = c.usage_reported();
    rows.push_back(
        {std::to_string(c.id()),
         c.state() == "queued" ? "queued " + std::to_string(c.queued_ms()) + " ms" : c.state(),
         c.worker() == 0 ? "-" : std::to_string(c.worker()),
         c.has_device() ? std::to_string(c.device()) : "-", c.has_uid() ? std::to_string(c.uid()) : "?",
         c.has_pid() ? std::to_string(c.pid()) : "?", orDash(c.program()),
         reported ? humanBytes(c.device_memory_bytes()) : "?",
         c.memory_quota_bytes() == 0 ? "none" : humanBytes(c.memory_quota_bytes()),
         reported ? std::to_string(c.calls()) : "?", orDash(c.guard_policy()),
         reported ? std::to_string(c.guard_hits()) + (c.guard_poisoned() ? " (poisoned)" : "") : "?",
         joined(c.modules())});
  }
  return renderTable(rows);
}

std::string workersTable(const admin::Status& status) {
  std::vector<std::vector<std::string>> rows = {
      {"WORKER", "PID", "PHASE", "DEVICE", "UID", "CLIENTS", "CALLS", "STATE"}};
  for (const admin::Worker& w : status.workers()) {
    std::string state = "ok";
    if (w.tainted()) state = "tainted: " + w.taint_reason();
    if (w.draining()) state = "draining: " + w.drain_reason();
    rows.push_back({std::to_string(w.id()), std::to_string(w.pid()), w.phase(), std::to_string(w.device()),
                    w.has_uid() ? std::to_string(w.uid()) : "daemon's", joinedIds(w.clients()),
                    std::to_string(w.calls()), state});
  }
  return renderTable(rows);
}

std::string servicesTable(const admin::Status& status) {
  std::vector<std::vector<std::string>> rows = {
      {"SERVICE", "STATE", "PID", "RESTARTS", "LAST EXIT", "SOCKET"}};
  for (const admin::Service& s : status.services()) {
    rows.push_back({s.name(), s.state(), s.pid() == 0 ? "-" : std::to_string(s.pid()),
                    std::to_string(s.restarts()), orDash(s.last_exit()), s.socket_path()});
  }
  return renderTable(rows);
}

std::string modulesTable(const admin::Status& status) {
  std::vector<std::vector<std::string>> rows = {{"MODULE", "VERSION", "ALLOWED", "SERVICE", "DEPENDS"}};
  for (const admin::Module& m : status.modules()) {
    rows.push_back(
        {m.name(), m.version(), m.allowed() ? "yes" : "no", orDash(m.service()), joined(m.depends())});
  }
  return renderTable(rows);
}

std::string statusText(const admin::Status& status) {
  std::size_t attached = 0;
  for (const admin::Client& c : status.clients()) attached += c.state() == "attached" ? 1 : 0;
  std::string devices;
  for (int device : status.devices()) devices += (devices.empty() ? "" : ",") + std::to_string(device);
  std::string out = "device(s) " + devices + ": " + std::to_string(attached) + " client(s) attached, " +
                    std::to_string(status.queued()) + " queued; " + std::to_string(status.workers_size()) +
                    " worker(s) of at most " + std::to_string(status.max_workers()) + "\n\n";
  out += clientsTable(status) + "\n" + workersTable(status);
  if (status.services_size() != 0) out += "\n" + servicesTable(status);
  if (status.modules_size() != 0) out += "\n" + modulesTable(status);
  return out;
}

}  // namespace agileos::ctl
