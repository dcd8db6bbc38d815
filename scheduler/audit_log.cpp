#include "scheduler/audit_log.h"

#include <fcntl.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>

namespace agileos::scheduler {
namespace {

std::string utcNow() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm utc{};
  ::gmtime_r(&seconds, &utc);
  char text[40];
  const std::size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
  std::snprintf(text + n, sizeof text - n, ".%03lldZ", static_cast<long long>(millis));
  return text;
}

}  // namespace

std::shared_ptr<AuditLog> AuditLog::open(const std::string& path, std::string* error) {
  // Created here with its mode (the sink would create it with the umask's): the trail names
  // users and programs, so only root and the file's group read it.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
  if (fd < 0) {
    *error = "audit_log: cannot open " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  ::close(fd);
  try {
    auto sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path, /*truncate=*/false);
    auto logger = std::make_shared<spdlog::logger>("agileosd-audit", std::move(sink));
    logger->set_pattern("%v");
    logger->set_level(spdlog::level::info);
    logger->flush_on(spdlog::level::info);
    return std::shared_ptr<AuditLog>(new AuditLog(std::move(logger)));
  } catch (const spdlog::spdlog_ex& e) {
    *error = std::string("audit_log: ") + e.what();
    return nullptr;
  }
}

void AuditLog::record(nlohmann::json event) {
  nlohmann::json line = {{"time", utcNow()}};
  line.update(event);
  // dump's replace mode: bytes a client chose (its program name) never break the line's JSON.
  logger_->info(line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace agileos::scheduler
