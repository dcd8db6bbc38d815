// agileos-storage-service's command line:
//   agileos-storage-service --socket PATH --root DIR [--threads N] [--device ORDINAL]
//                           [--buffer-backend cuda|host] [--log-level LEVEL] [--help]
// Each option also accepts the --name=value form. The daemon passes --socket, then the
// service's configured arguments.
//
// Thread-safety: plain functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace agileos::services::storage {

inline constexpr std::uint32_t kMaxPollerThreads = 64;

struct ServiceOptions {
  std::string socket_path;
  std::string root;
  std::uint32_t threads = 4;  // pollers per lease, 1..kMaxPollerThreads
  int device = 0;             // CUDA device ordinal (cuda backend)
  std::string buffer_backend = "cuda";
  std::string log_level = "info";  // spdlog level name
  bool help = false;
};

// Parses argv[1..]. False with *error for an unknown or repeated option, a missing or bad
// value, or a missing --socket / --root (unless --help).
bool parseServiceOptions(const std::vector<std::string>& args, ServiceOptions* out, std::string* error);

const char* serviceUsageText();

}  // namespace agileos::services::storage
