// agileosd's command line:
//   agileosd [--config FILE] [--socket PATH] [--log-level LEVEL] [--check-config]
//            [--cdi-spec [--cdi-shim-dir DIR]] [--help]
// Each option also accepts the --name=value form. Values given here override the config file.
//
// Thread-safety: plain functions; no shared state.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "scheduler/daemon_config.h"

namespace agileos::scheduler {

struct CommandLine {
  std::optional<std::string> config_path;  // absent: built-in defaults only
  std::optional<std::string> socket_path;
  std::optional<std::string> log_level;
  bool check_config = false;  // validate, print the effective config, exit 0 (valid) or 1
  bool cdi_spec = false;      // print the CDI spec (scheduler/cdi_spec.h) for the config, exit 0 or 1
  std::optional<std::string> cdi_shim_dir;  // --cdi-spec's shim directory; absent: the installed one
  bool help = false;
};

// Parses argv[1..]. Returns false and sets *error for an unknown option, a missing value or a
// repeated option.
bool parseCommandLine(const std::vector<std::string>& args, CommandLine* out, std::string* error);

// Applies the command-line overrides to `config` and re-runs the checks they could break.
// Returns the errors (empty on success); on error `config` may be partly updated.
std::vector<std::string> applyOverrides(const CommandLine& command_line, DaemonConfig* config);

const char* usageText();

}  // namespace agileos::scheduler
