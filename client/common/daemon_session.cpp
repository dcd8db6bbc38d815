#include "client/common/daemon_session.h"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <optional>

#include "client/common/log.h"
#include "client/common/reply_trace.h"

namespace agileos::client {
namespace {

std::string programName() {
  std::ifstream comm("/proc/self/comm");
  std::string name;
  std::getline(comm, name);
  return name;
}

std::string_view trimBlanks(std::string_view text) {
  constexpr std::string_view kBlanks = " \t";
  const std::size_t first = text.find_first_not_of(kBlanks);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(kBlanks) - first + 1);
}

}  // namespace

std::vector<v1::ModuleRequest> parseModuleRequests(std::string_view text) {
  std::vector<v1::ModuleRequest> requests;
  while (!text.empty()) {
    const std::size_t end = text.find(';');
    const std::string_view entry = trimBlanks(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
    if (entry.empty()) continue;
    const std::size_t at = entry.find('@');
    v1::ModuleRequest& request = requests.emplace_back();
    request.set_name(std::string(trimBlanks(entry.substr(0, at))));
    if (at != std::string_view::npos) request.set_version(std::string(trimBlanks(entry.substr(at + 1))));
  }
  return requests;
}

std::optional<std::uint64_t> parseMemoryQuota(std::string_view text) {
  text = trimBlanks(text);
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0 || digits > 19) return std::nullopt;
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < digits; ++i) value = value * 10 + static_cast<std::uint64_t>(text[i] - '0');
  const std::string_view suffix = text.substr(digits);
  static constexpr std::pair<std::string_view, unsigned> kSuffixes[] = {
      {"", 0},     {"K", 10},   {"M", 20},   {"G", 30},  {"T", 40},
      {"KiB", 10}, {"MiB", 20}, {"GiB", 30}, {"TiB", 40}};
  for (const auto& [name, shift] : kSuffixes) {
    if (suffix != name) continue;
    if (value == 0 || (shift != 0 && value > (~std::uint64_t{0} >> shift))) return std::nullopt;
    return value << shift;
  }
  return std::nullopt;
}

DaemonSession::Result DaemonSession::open(const std::string& socketPath) {
  Result result;
  std::uint64_t memoryQuota = 0;
  if (const char* quota = std::getenv("AGILEOS_MEMORY_QUOTA"); quota != nullptr) {
    const std::optional<std::uint64_t> parsed = parseMemoryQuota(quota);
    if (!parsed) {
      result.message = std::string("AGILEOS_MEMORY_QUOTA=\"") + quota +
                       "\" is not a size (bytes, or a number with K, M, G or T)";
      return result;
    }
    memoryQuota = *parsed;
  }
  std::optional<std::int32_t> device;
  if (const char* text = std::getenv("AGILEOS_DEVICE"); text != nullptr) {
    char* end = nullptr;
    errno = 0;
    const long value = std::strtol(text, &end, 10);
    if (*text == '\0' || *end != '\0' || errno != 0 || value < 0 || value > INT32_MAX) {
      result.message =
          std::string("AGILEOS_DEVICE=\"") + text + "\" is not a device ordinal (an integer >= 0)";
      return result;
    }
    device = static_cast<std::int32_t>(value);
  }
  channel_ = grpc::CreateChannel("unix:" + socketPath, grpc::InsecureChannelCredentials());
  stub_ = v1::Daemon::NewStub(channel_);
  context_ = std::make_unique<grpc::ClientContext>();
  stream_ = stub_->Session(context_.get());

  v1::SessionUp up;
  v1::Hello* hello = up.mutable_hello();
  hello->set_protocol_version(v1::PROTOCOL_VERSION_CURRENT);
  hello->set_program(programName());
  hello->set_pid(static_cast<std::uint32_t>(::getpid()));
  // The kernel memory guard policy this program asks for; the daemon admits it or refuses
  // the session (guard.allowed_policies). Unset: the daemon's default.
  if (const char* policy = std::getenv("AGILEOS_GUARD_POLICY"); policy != nullptr)
    hello->set_guard_policy(policy);
  // The protected modules it asks for; the daemon admits them all (with their dependencies) or
  // refuses the session with the reason.
  if (const char* modules = std::getenv("AGILEOS_MODULES"); modules != nullptr) {
    for (v1::ModuleRequest& request : parseModuleRequests(modules))
      *hello->add_modules() = std::move(request);
  }
  // The device memory it asks for; the daemon grants at most its own quota (memory.quota_bytes).
  hello->set_memory_quota_bytes(memoryQuota);
  // The daemon's GPU it asks for; unset: the daemon places it by free capacity.
  if (device) hello->set_device(*device);
  v1::SessionDown down;
  if (!stream_->Write(up) || !stream_->Read(&down)) {
    const grpc::Status status = stream_->Finish();
    result.message = "cannot reach agileosd at " + socketPath + ": " + status.error_message();
    return result;
  }
  traceReply(down);
  switch (down.msg_case()) {
    case v1::SessionDown::kAssignment:
      if (down.assignment().protocol_version() != v1::PROTOCOL_VERSION_CURRENT) {
        result.message =
            "agileosd speaks protocol version " + std::to_string(down.assignment().protocol_version());
        return result;
      }
      result.assigned = true;
      result.assignment = down.assignment();
      watcher_ = std::thread([this] { watch(); });
      watcher_.detach();  // lives as long as the process; the session ends with it
      return result;
    case v1::SessionDown::kRefusal:
      result.busy = down.refusal().reason() == v1::Refusal::BUSY;
      result.message = "agileosd refused the session: " + down.refusal().message();
      return result;
    default:
      result.message = "agileosd sent an unexpected first message";
      return result;
  }
}

void DaemonSession::watch() {
  v1::SessionDown down;
  while (stream_->Read(&down)) {
    traceReply(down);
    if (down.has_ended()) {
      AGILEOS_LOG_ERROR("agileosd ended the session: %s", down.ended().reason().c_str());
      break;
    }
  }
  ended_ = true;
}

}  // namespace agileos::client
