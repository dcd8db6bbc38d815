// agileos-storage-service: the storage module's trusted helper process (storage_server.h).
// Started and supervised by agileosd with `--socket PATH` plus the configured arguments.
// Exit status: 0 after SIGTERM/SIGINT, 1 when it cannot start, 2 for a bad command line.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <string>
#include <vector>

#include "services/storage/service_options.h"
#include "services/storage/storage_server.h"

int main(int argc, char** argv) {
  using namespace agileos::services::storage;
  ServiceOptions options;
  std::string error;
  if (!parseServiceOptions(std::vector<std::string>(argv + 1, argv + argc), &options, &error)) {
    std::fprintf(stderr, "agileos-storage-service: %s\n%s", error.c_str(), serviceUsageText());
    return 2;
  }
  if (options.help) {
    std::fputs(serviceUsageText(), stdout);
    return 0;
  }
  spdlog::set_default_logger(spdlog::stderr_color_mt("storage-service"));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e [%n] [%l] %v");
  spdlog::set_level(spdlog::level::from_str(options.log_level));
  return runStorageService(options);
}
