#include "services/storage/service_options.h"

#include <charconv>
#include <set>
#include <string_view>

namespace agileos::services::storage {
namespace {

// A whole decimal number in [min, max].
bool parseNumber(std::string_view text, long min, long max, long* out) {
  long value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < min || value > max) return false;
  *out = value;
  return true;
}

}  // namespace

bool parseServiceOptions(const std::vector<std::string>& args, ServiceOptions* out, std::string* error) {
  *out = ServiceOptions{};
  std::set<std::string_view> seen;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    const std::size_t eq = arg.find('=');
    const std::string_view name = arg.substr(0, eq);
    if (name == "--help" || name == "-h") {
      out->help = true;
      continue;
    }
    if (name != "--socket" && name != "--root" && name != "--threads" && name != "--device" &&
        name != "--buffer-backend" && name != "--log-level") {
      *error = "unknown option '" + args[i] + "'";
      return false;
    }
    if (!seen.insert(name).second) {
      *error = std::string(name) + " given more than once";
      return false;
    }
    std::string value;
    if (eq != std::string_view::npos) {
      value = arg.substr(eq + 1);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      *error = std::string(name) + " needs a value";
      return false;
    }
    long number = 0;
    if (name == "--socket") {
      out->socket_path = value;
    } else if (name == "--root") {
      out->root = value;
    } else if (name == "--threads") {
      if (!parseNumber(value, 1, kMaxPollerThreads, &number)) {
        *error = "--threads: '" + value + "' is not a number in 1.." + std::to_string(kMaxPollerThreads);
        return false;
      }
      out->threads = static_cast<std::uint32_t>(number);
    } else if (name == "--device") {
      if (!parseNumber(value, 0, 1 << 20, &number)) {
        *error = "--device: '" + value + "' is not a device ordinal";
        return false;
      }
      out->device = static_cast<int>(number);
    } else if (name == "--buffer-backend") {
      if (value != "cuda" && value != "host") {
        *error = "--buffer-backend: '" + value + "' is neither cuda nor host";
        return false;
      }
      out->buffer_backend = value;
    } else {
      static const std::set<std::string_view> kLevels = {"trace", "debug",    "info", "warn",
                                                         "error", "critical", "off"};
      if (!kLevels.contains(value)) {
        *error = "--log-level: '" + value + "' is not one of trace|debug|info|warn|error|critical|off";
        return false;
      }
      out->log_level = value;
    }
  }
  if (out->help) return true;
  if (out->socket_path.empty()) {
    *error = "--socket is required";
    return false;
  }
  if (out->root.empty()) {
    *error = "--root is required";
    return false;
  }
  return true;
}

const char* serviceUsageText() {
  return "usage: agileos-storage-service --socket PATH --root DIR [--threads N] [--device ORDINAL]\n"
         "                               [--buffer-backend cuda|host] [--log-level LEVEL]\n"
         "\n"
         "  --socket PATH          unix SOCK_SEQPACKET socket to listen on (created mode 0600)\n"
         "  --root DIR             files are opened beneath DIR only\n"
         "  --threads N            poller threads per lease, 1..64 (default 4)\n"
         "  --device ORDINAL       CUDA device of the data buffers (default 0)\n"
         "  --buffer-backend B     cuda (default): buffers are exported device memory;\n"
         "                         host: buffers are mappable files (CPU tests)\n"
         "  --log-level L          trace|debug|info|warn|error|critical|off (default info)\n";
}

}  // namespace agileos::services::storage
