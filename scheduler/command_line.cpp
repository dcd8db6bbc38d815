#include "scheduler/command_line.h"

#include <string_view>

namespace agileos::scheduler {
namespace {

// Splits "--name=value" into name and value; "--name" yields no value.
struct OptionToken {
  std::string_view name;
  std::optional<std::string_view> inline_value;
};

OptionToken splitOption(std::string_view arg) {
  const std::size_t eq = arg.find('=');
  if (eq == std::string_view::npos) return {arg, std::nullopt};
  return {arg.substr(0, eq), arg.substr(eq + 1)};
}

}  // namespace

bool parseCommandLine(const std::vector<std::string>& args, CommandLine* out, std::string* error) {
  *out = CommandLine{};
  for (std::size_t i = 0; i < args.size(); ++i) {
    const OptionToken token = splitOption(args[i]);
    std::optional<std::string>* target = nullptr;
    if (token.name == "--config") {
      target = &out->config_path;
    } else if (token.name == "--socket") {
      target = &out->socket_path;
    } else if (token.name == "--log-level") {
      target = &out->log_level;
    } else if (token.name == "--cdi-shim-dir") {
      target = &out->cdi_shim_dir;
    } else if (token.name == "--check-config" || token.name == "--cdi-spec" || token.name == "--help" ||
               token.name == "-h") {
      if (token.inline_value) {
        *error = std::string(token.name) + " takes no value";
        return false;
      }
      (token.name == "--check-config" ? out->check_config
       : token.name == "--cdi-spec"   ? out->cdi_spec
                                      : out->help) = true;
      continue;
    } else {
      *error = "unknown option '" + args[i] + "'";
      return false;
    }
    if (target->has_value()) {
      *error = std::string(token.name) + " given more than once";
      return false;
    }
    if (token.inline_value) {
      *target = std::string(*token.inline_value);
    } else if (i + 1 < args.size()) {
      *target = args[++i];
    } else {
      *error = std::string(token.name) + " needs a value";
      return false;
    }
  }
  if (out->cdi_shim_dir && !out->cdi_spec) {
    *error = "--cdi-shim-dir needs --cdi-spec";
    return false;
  }
  if (out->cdi_spec && out->check_config) {
    *error = "--cdi-spec and --check-config are two different outputs; give one";
    return false;
  }
  return true;
}

std::vector<std::string> applyOverrides(const CommandLine& command_line, DaemonConfig* config) {
  std::vector<std::string> errors;
  if (command_line.socket_path) {
    if (std::string problem = checkSocketPath(*command_line.socket_path); !problem.empty()) {
      errors.push_back("--socket: " + problem);
    } else {
      config->socket_path = *command_line.socket_path;
    }
  }
  if (command_line.log_level) {
    if (std::string problem = checkLogLevel(*command_line.log_level); !problem.empty()) {
      errors.push_back("--log-level: " + problem);
    } else {
      config->log_level = *command_line.log_level;
    }
  }
  return errors;
}

const char* usageText() {
  return "usage: agileosd [--config FILE] [--socket PATH] [--log-level trace|debug|info|warn|error]\n"
         "                [--check-config] [--cdi-spec [--cdi-shim-dir DIR]] [--help]\n"
         "\n"
         "  --config FILE     JSON configuration (see docs/operations.md); defaults apply without it\n"
         "  --socket PATH     overrides socket_path from the config\n"
         "  --log-level L     overrides log_level from the config\n"
         "  --check-config    validate the configuration, print the effective config, exit 0 or 1\n"
         "  --cdi-spec        print the Container Device Interface spec (kind agileos.io/gpu) for this\n"
         "                    configuration and the installed shims (docs/containers.md), exit 0 or 1\n"
         "  --cdi-shim-dir DIR  the shim directory --cdi-spec names (default: the installation's,\n"
         "                    lib/agileos/shim beside this agileosd's bin/)\n";
}

}  // namespace agileos::scheduler
