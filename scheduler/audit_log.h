// AuditLog: the daemon's audit trail, one JSON object per line (JSON lines) in a file of its own
// (config `audit_log`), apart from the operational log: who started a session as the kernel
// identifies them (SO_PEERCRED, not the Hello's claims), which sessions were refused and why,
// and when sessions ended. Every event is {"time": UTC ISO 8601 with milliseconds, "event": ...,
// fields}; each line is flushed when written, so a crash loses no recorded event.
//
// Thread-safety: record() may be called from any thread (spdlog's _mt file sink).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

namespace spdlog {
class logger;
}

namespace agileos::scheduler {

class AuditLog {
 public:
  // Appends to `path` (created 0640 if missing). Null, with *error, if it cannot be opened.
  static std::shared_ptr<AuditLog> open(const std::string& path, std::string* error);

  // Writes `event` ("event" names it) with the time added.
  void record(nlohmann::json event);

 private:
  explicit AuditLog(std::shared_ptr<spdlog::logger> logger) : logger_(std::move(logger)) {}
  std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace agileos::scheduler
