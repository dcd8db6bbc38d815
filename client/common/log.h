// Client-side logging (untrusted side). Writes "[agileos] ..." lines to stderr.
// Level from AGILEOS_LOG (error|warn|info|debug; default warn). The shim must not
// pull in the application's logging stack, so this is deliberately tiny.
#pragma once

#include <cstdarg>
#include <string>

namespace agileos::client {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

bool logEnabled(LogLevel level);
// True the first time `key` is given in this process: what says a thing once ("fail closed and log
// once") asks it with a key naming the thing. Thread-safe; the set is never destroyed, since calls
// come from the program's exit handlers too.
bool firstTime(const std::string& key);
void logf(LogLevel level, const char* format, ...) __attribute__((format(printf, 2, 3)));

}  // namespace agileos::client

#define AGILEOS_LOG_ERROR(...) ::agileos::client::logf(::agileos::client::LogLevel::kError, __VA_ARGS__)
#define AGILEOS_LOG_WARN(...) ::agileos::client::logf(::agileos::client::LogLevel::kWarn, __VA_ARGS__)
#define AGILEOS_LOG_INFO(...) ::agileos::client::logf(::agileos::client::LogLevel::kInfo, __VA_ARGS__)
#define AGILEOS_LOG_DEBUG(...) ::agileos::client::logf(::agileos::client::LogLevel::kDebug, __VA_ARGS__)
