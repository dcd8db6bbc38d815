#include "client/common/log.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

namespace agileos::client {
namespace {

LogLevel levelFromEnvironment() {
  const char* value = std::getenv("AGILEOS_LOG");
  if (value == nullptr) return LogLevel::kWarn;
  if (std::strcmp(value, "error") == 0) return LogLevel::kError;
  if (std::strcmp(value, "info") == 0) return LogLevel::kInfo;
  if (std::strcmp(value, "debug") == 0) return LogLevel::kDebug;
  return LogLevel::kWarn;
}

LogLevel threshold() {
  static const LogLevel level = levelFromEnvironment();
  return level;
}

}  // namespace

bool firstTime(const std::string& key) {
  static std::mutex mutex;
  static auto* seen = new std::set<std::string>();
  std::lock_guard lock(mutex);
  return seen->insert(key).second;
}

bool logEnabled(LogLevel level) { return static_cast<int>(level) <= static_cast<int>(threshold()); }

void logf(LogLevel level, const char* format, ...) {
  if (!logEnabled(level)) return;
  static const char* const kNames[] = {"error", "warn", "info", "debug"};
  char line[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(line, sizeof line, format, args);
  va_end(args);
  std::fprintf(stderr, "[agileos %s] %s\n", kNames[static_cast<int>(level)], line);
}

}  // namespace agileos::client
